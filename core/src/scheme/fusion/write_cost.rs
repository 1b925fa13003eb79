//! What sustained small random overwrites cost a volume in device I/O, as a function of its
//! spare share: the model behind `fusionraid plan` (the device side is in the `devices`
//! crate, the combination in `sim::plan`).
//!
//! Per 4 KiB page a user writes, the engine writes `copies` replica pages (the write path),
//! later the conversion reads the page back once and writes its share of parity
//! (`nparity / dcols` pages), and the cleaner moves `m` pages of other data, each read once
//! and written again with its share of parity. `m` depends on how full the stripes the
//! cleaner picks from are, which the spare share sets:
//!
//! - the zone has `Z` stripes (`sizing::zone_stripes`: data, the replicated area's cap,
//!   the spare share or its floor); how many of them hold neither RAID data nor garbage
//!   depends on the [`Regime`]: writes that outrun the background keep conversion running
//!   (writers wait for room, so it runs whatever the other triggers say) and the replicated
//!   area nearly empty, while free stripes sit at the writers' reserve
//!   (`Vol::reserve_stripes`); writes the background keeps up with leave the replicated area
//!   at its cap (conversion pauses under foreground load) and the free stripes at the
//!   low-water mark (cleaning starts below it);
//! - the RAID stripes left hold the volume's data less what sits in replica slots:
//!   utilisation `alpha = (V - R P / copies) / ((Z - R - F) P)` for `V` pages of data, `P`
//!   pages per stripe, `R` replica stripes and `F` free ones;
//! - at that utilisation, the cleaner (greedy: the stripe with the fewest live pages,
//!   page-granular, its live pages rewritten densely) moves `m(alpha, P)` pages per page
//!   written under uniformly random overwrites. No closed form is exact for greedy cleaning of
//!   small blocks, so [`greedy_moves_per_write`] measures it with a small deterministic Monte
//!   Carlo of exactly that cleaner (same seed, same answer). The closed form for oldest-first
//!   cleaning (`(1 - u) / -ln u = alpha`, `m = u / (1 - u)`) is an upper bound on it.
//!
//! Left out: pages overwritten again while still in replica slots (at most the replicated
//! area's share of the writes, up to 10% by default, they cost no conversion), and
//! sub-block writes spanning several pages (the model is for 4 KiB writes).

use super::config::{ConversionPolicy, FusionConfig, VolumeConfig};
use super::sizing::zone_stripes;
use crate::rng::Rng;
use crate::space::zone::blocks_per_disk;

/// Bytes of a page, the unit of user writes the model prices.
const PAGE: u64 = 4096;

/// Journal bytes per user page when the mapping is journaled: a mapping record per write,
/// batched into commits (`cargo bench -p fusionraid-core --bench small_writes`: 0.04 of the
/// written bytes per user byte, docs/BENCHMARKS.md "Sustained random overwrites").
pub const JOURNAL_PAGES_PER_WRITE: f64 = 0.04;

/// Highest cleaner utilisation priced: beyond it the cleaner moves about a stripe of pages
/// per page written and the estimate is only "very slow".
pub const MAX_UTILISATION: f64 = 0.995;

/// Where the replicated area and the free stripes settle under sustained overwrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regime {
    /// Writes arrive faster than the background frees room (a saturating load: the
    /// sustained rate is what the background allows): replicated area empty, free stripes
    /// at the writers' reserve.
    Saturated,
    /// Writes at a pace the background keeps up with (members much faster than the load, as
    /// in `cargo bench --bench small_writes`): replicated area at its cap, free stripes at
    /// the low-water mark.
    Paced,
}

/// Device I/O per user page written, at steady state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WriteCost {
    /// Pages written to the members (replicas, parity, cleaning, journal).
    pub written: f64,
    /// Pages read from the members (conversion and cleaning).
    pub read: f64,
    /// Of `written`: the write path's replica pages.
    pub replicas: f64,
    /// Pages the cleaner moves per page written.
    pub moves: f64,
    /// Live share of the RAID stripes the cleaner picks from.
    pub utilisation: f64,
    /// Blocks of the volume's zone on every member.
    pub zone_blocks_per_member: u64,
}

/// The cost of sustained 4 KiB random overwrites of volume `vol` of `cfg` (its spare share
/// as configured: resolve `auto` first).
pub fn random_write_cost(
    cfg: &FusionConfig,
    vol: usize,
    regime: Regime,
) -> Result<WriteCost, String> {
    let v = &cfg.volumes[vol];
    let pool = &cfg.pool;
    let layout = pool
        .build_layout(v.width, v.level.nparity())
        .map_err(|e| format!("volume {}: {e}", v.name))?;
    let bs = pool.block_size;
    let zone = zone_stripes(v, layout.template_stripes(), bs, cfg.max_request_bytes);
    let alpha = cleaner_utilisation(v, zone, bs, &cfg.conversion, regime);
    let dcols = (v.width - v.level.nparity()) as f64;
    let parity = v.level.nparity() as f64 / dcols;
    let pages = (dcols as u64 * bs / PAGE).max(1) as u32;
    let moves = greedy_moves_per_write(alpha, pages);
    let replicas = v.level.copies() as f64;
    let journal = if cfg.journal.is_some() {
        JOURNAL_PAGES_PER_WRITE
    } else {
        0.0
    };
    // A mirror's replicas are its final copies (its pair sets convert without I/O), and the
    // cleaner reads a page once and writes every copy.
    let (written, read) = if v.level.is_mirror() {
        (replicas * (1.0 + moves) + journal, moves)
    } else {
        (
            replicas + parity + moves * (1.0 + parity) + journal,
            1.0 + moves,
        )
    };
    Ok(WriteCost {
        written,
        read,
        replicas,
        moves,
        utilisation: alpha,
        zone_blocks_per_member: blocks_per_disk(layout.as_ref(), zone),
    })
}

/// Live share of the RAID stripes under sustained overwrites (module docs), for a zone of
/// `zone` stripes.
pub fn cleaner_utilisation(
    v: &VolumeConfig,
    zone: u64,
    bs: u64,
    conv: &ConversionPolicy,
    regime: Regime,
) -> f64 {
    let dcols = (v.width - v.level.nparity()) as u64;
    let pages_per_stripe = (dcols * bs / PAGE) as f64;
    let blocks = v.size_bytes / bs;
    let data_pages = (blocks * bs / PAGE) as f64;
    let copies = v.level.copies() as u64;
    let (rep, free) = match regime {
        // A mirror has no replicated area apart from its stripes: every stripe holds a
        // block in all its copies.
        Regime::Saturated | Regime::Paced if v.level.is_mirror() => {
            (0, (copies + 2 + (zone / 64).min(16)) as f64)
        }
        Regime::Saturated => {
            // Vol::reserve_stripes: the cleaner's reserve and up to 16 more.
            (0, (copies + 2 + (zone / 64).min(16)) as f64)
        }
        Regime::Paced => {
            // The replicated area at its cap: `copies` stripes per stripe of replicated data.
            let rep_blocks = (blocks as f64 * v.replicated_fraction).ceil() as u64;
            (
                rep_blocks.div_ceil(dcols) * copies,
                (conv.spare_low_water * zone as f64).ceil(),
            )
        }
    };
    let raid_stripes = zone as f64 - rep as f64 - free;
    let live = data_pages - rep as f64 * pages_per_stripe / copies as f64;
    if raid_stripes <= 0.0 {
        return MAX_UTILISATION;
    }
    (live / (raid_stripes * pages_per_stripe)).clamp(0.0, MAX_UTILISATION)
}

/// Pages a greedy cleaner moves per page written under uniformly random overwrites of
/// stripes of `pages` pages whose live share is `alpha`, at steady state. A deterministic
/// Monte Carlo: about 32 Ki pages in whole stripes, filled to `alpha`, overwritten four
/// times over to reach the steady state, then measured over eight more.
pub fn greedy_moves_per_write(alpha: f64, pages: u32) -> f64 {
    let alpha = alpha.clamp(0.0, MAX_UTILISATION);
    let pages = pages.max(1);
    let stripes = (32_768 / pages).max(64) as usize;
    let live = (alpha * (stripes as u64 * pages as u64) as f64) as usize;
    // At least two free stripes' worth of room, or every victim would be full.
    let live = live.min((stripes - 2) * pages as usize);
    if live == 0 {
        return 0.0;
    }
    let mut sim = Greedy::new(stripes, pages, live);
    sim.run(4 * live as u64);
    let (written, moved) = (sim.written, sim.moved);
    sim.run(8 * live as u64);
    (sim.moved - moved) as f64 / (sim.written - written) as f64
}

/// The cleaner's world: stripes of pages, each live page in one stripe.
struct Greedy {
    pages: u32,
    /// Per logical page: its stripe and its index in that stripe's list.
    at: Vec<(u32, u32)>,
    /// Per stripe: its live logical pages.
    members: Vec<Vec<u32>>,
    /// Stripes with `k` live pages (closed stripes only), and each stripe's index there.
    by_live: Vec<Vec<u32>>,
    slot: Vec<u32>,
    free: Vec<u32>,
    open: u32,
    /// Pages written into the open stripe so far (live or not).
    fill: u32,
    written: u64,
    moved: u64,
    rng: Rng,
}

impl Greedy {
    /// `live` pages laid out densely from stripe 0; the next stripe is open.
    fn new(stripes: usize, pages: u32, live: usize) -> Self {
        let mut g = Greedy {
            pages,
            at: Vec::with_capacity(live),
            members: vec![Vec::with_capacity(pages as usize); stripes],
            by_live: vec![Vec::new(); pages as usize + 1],
            slot: vec![0; stripes],
            free: Vec::new(),
            open: 0,
            fill: 0,
            written: 0,
            moved: 0,
            rng: Rng::new(0x6c65_616e),
        };
        for p in 0..live as u32 {
            g.place(p);
        }
        // The stripe being filled stays open; the rest are free.
        g.free = ((g.open + 1) as usize..stripes)
            .rev()
            .map(|s| s as u32)
            .collect();
        g
    }

    /// Writes logical page `p` into the open stripe, opening another when it is full.
    fn place(&mut self, p: u32) {
        if self.fill == self.pages {
            self.close_open();
        }
        let s = self.open;
        let idx = self.members[s as usize].len() as u32;
        self.members[s as usize].push(p);
        if (p as usize) < self.at.len() {
            self.at[p as usize] = (s, idx);
        } else {
            self.at.push((s, idx));
        }
        self.fill += 1;
    }

    fn close_open(&mut self) {
        let s = self.open;
        let k = self.members[s as usize].len();
        self.slot[s as usize] = self.by_live[k].len() as u32;
        self.by_live[k].push(s);
        // No free stripe only during set-up, which fills the stripes in order.
        self.open = self.free.pop().unwrap_or(s + 1);
        self.fill = 0;
    }

    /// Moves closed stripe `s` from the bucket of `from` live pages to `to`'s.
    fn rebucket(&mut self, s: u32, from: usize, to: usize) {
        let i = self.slot[s as usize] as usize;
        let b = &mut self.by_live[from];
        b.swap_remove(i);
        if let Some(&moved) = b.get(i) {
            self.slot[moved as usize] = i as u32;
        }
        self.slot[s as usize] = self.by_live[to].len() as u32;
        self.by_live[to].push(s);
    }

    /// Takes page `p` out of its stripe (it is being overwritten or moved).
    fn invalidate(&mut self, p: u32) {
        let (s, idx) = self.at[p as usize];
        let list = &mut self.members[s as usize];
        let before = list.len();
        list.swap_remove(idx as usize);
        if let Some(&other) = list.get(idx as usize) {
            self.at[other as usize].1 = idx;
        }
        if s != self.open {
            self.rebucket(s, before, before - 1);
        }
    }

    /// `n` user page writes, cleaning whenever the open stripe fills with no free one left.
    fn run(&mut self, n: u64) {
        let live = self.at.len() as u64;
        for _ in 0..n {
            let p = self.rng.below(live) as u32;
            self.invalidate(p);
            self.make_room();
            self.place(p);
            self.written += 1;
        }
    }

    /// Before a page goes into a full open stripe with no free stripe to open next: clean the
    /// emptiest closed stripes until one is free.
    fn make_room(&mut self) {
        while self.fill == self.pages && self.free.is_empty() {
            let k = (0..self.by_live.len())
                .find(|&k| !self.by_live[k].is_empty())
                .expect("closed stripes exist");
            let victim = self.by_live[k].swap_remove(0);
            if let Some(&m) = self.by_live[k].first() {
                self.slot[m as usize] = 0;
            }
            let pages = std::mem::take(&mut self.members[victim as usize]);
            self.free.push(victim);
            for p in pages {
                if self.fill == self.pages {
                    self.close_open();
                }
                let s = self.open;
                let idx = self.members[s as usize].len() as u32;
                self.members[s as usize].push(p);
                self.at[p as usize] = (s, idx);
                self.fill += 1;
                self.moved += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheme::fusion::{LayoutKind, Level, PoolGeometry};

    /// Oldest-first cleaning's victims: `(1 - u) / -ln u = alpha`, moves `u / (1 - u)`.
    fn fifo_moves(alpha: f64) -> f64 {
        let g = |u: f64| (1.0 - u) / -u.ln();
        let (mut lo, mut hi) = (1e-12f64, 1.0 - 1e-12);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if g(mid) < alpha {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let u = 0.5 * (lo + hi);
        u / (1.0 - u)
    }

    #[test]
    fn greedy_cleaning_has_the_known_limits() {
        // Nothing live: nothing to move. Almost full: about a stripe per page.
        assert_eq!(greedy_moves_per_write(0.0, 64), 0.0);
        let full = greedy_moves_per_write(0.99, 64);
        assert!(full > 20.0, "{full}");
        // Greedy beats oldest-first, but not by much at high fill; and it is cheap when
        // half the room is free (dead pages concentrate in the victims).
        for a in [0.6, 0.8, 0.9] {
            let (g, f) = (greedy_moves_per_write(a, 64), fifo_moves(a));
            assert!(g < f && g > 0.5 * f, "{a}: greedy {g} fifo {f}");
        }
        assert!(greedy_moves_per_write(0.5, 64) < 0.25);
        // Same input, same answer.
        assert_eq!(
            greedy_moves_per_write(0.8, 64),
            greedy_moves_per_write(0.8, 64)
        );
    }

    #[test]
    fn greedy_moves_grow_with_utilisation() {
        let mut last = -1.0;
        for a in [0.3, 0.5, 0.7, 0.8, 0.85, 0.9, 0.95] {
            let m = greedy_moves_per_write(a, 64);
            assert!(m > last, "{a}: {m} after {last}");
            last = m;
        }
    }

    fn pool_cfg(level: Level, width: usize, spare: f64) -> FusionConfig {
        let pool = PoolGeometry {
            disks: 8,
            disk_bytes: 4 << 30,
            block_size: 64 << 10,
            data_offset: 1 << 20,
            layout: LayoutKind::Permutation { seed: 1 },
            hdds: Vec::new(),
        };
        let mut v = VolumeConfig::new("v", level, width, 2 << 30);
        v.spare_fraction = spare;
        FusionConfig::new(pool, vec![v])
    }

    #[test]
    fn cost_falls_with_the_spare_share_towards_the_write_path_floor() {
        let mut last = f64::INFINITY;
        for spare in [0.0, 0.1, 0.25, 0.5, 1.0, 4.0] {
            let c =
                random_write_cost(&pool_cfg(Level::Raid5, 5, spare), 0, Regime::Saturated).unwrap();
            assert!(c.written < last, "{spare}: {c:?}");
            assert!(c.read == 1.0 + c.moves && c.replicas == 2.0);
            last = c.written;
        }
        // At the largest share: two copies and a quarter of parity, little cleaning.
        assert!((2.25..2.5).contains(&last), "{last}");
        // RAID6 keeps three copies and half a page of parity per page.
        let r6 = random_write_cost(&pool_cfg(Level::Raid6, 6, 4.0), 0, Regime::Saturated).unwrap();
        assert!((3.5..3.8).contains(&r6.written), "{r6:?}");
    }

    #[test]
    fn paced_writes_cost_what_the_engine_bench_measures() {
        // 4+1, 25% spare, 10% replicated: zone 1.45 data; 0.2 of it replica stripes holding
        // 0.1 of the data, 5% of the zone free: (1 - 0.1) / (1.45 - 0.2 - 0.0725) = 0.764.
        let c = random_write_cost(&pool_cfg(Level::Raid5, 5, 0.25), 0, Regime::Paced).unwrap();
        assert!((c.utilisation - 0.764).abs() < 0.01, "{c:?}");
        // `small_writes` (docs/BENCHMARKS.md) measured 3.82 written and 2.15 read per user
        // byte with the journal on; the model was not fitted to them.
        let mut cfg = pool_cfg(Level::Raid5, 5, 0.25);
        cfg.journal = Some(Default::default());
        let j = random_write_cost(&cfg, 0, Regime::Paced).unwrap();
        assert!((j.written - c.written - JOURNAL_PAGES_PER_WRITE).abs() < 1e-9);
        assert!((j.written / 3.82 - 1.0).abs() < 0.1, "{j:?}");
        assert!((j.read / 2.15 - 1.0).abs() < 0.1, "{j:?}");
        // Saturated: the replicated area empties into room for the cleaner.
        let s = random_write_cost(&cfg, 0, Regime::Saturated).unwrap();
        assert!(
            s.utilisation < c.utilisation && s.written < j.written,
            "{s:?}"
        );
    }

    #[test]
    fn a_mirror_pays_its_copies_and_cleaning_but_no_conversion() {
        let c = random_write_cost(
            &pool_cfg(Level::Mirror { copies: 2 }, 2, 0.25),
            0,
            Regime::Paced,
        )
        .unwrap();
        assert!(c.read == c.moves && c.replicas == 2.0, "{c:?}");
        assert!((c.written - 2.0 * (1.0 + c.moves)).abs() < 1e-9, "{c:?}");
        // `small_writes LEVEL=mirror` (docs/BENCHMARKS.md) measured 4.04 written and 1.00 read
        // per user byte with the journal on, at this share; not fitted.
        let mut cfg = pool_cfg(Level::Mirror { copies: 2 }, 2, 0.25);
        cfg.journal = Some(Default::default());
        let j = random_write_cost(&cfg, 0, Regime::Paced).unwrap();
        assert!((j.written / 4.04 - 1.0).abs() < 0.1, "{j:?}");
        assert!((j.read / 1.00 - 1.0).abs() < 0.1, "{j:?}");
        let three = random_write_cost(
            &pool_cfg(Level::Mirror { copies: 3 }, 3, 0.25),
            0,
            Regime::Paced,
        )
        .unwrap();
        assert!(three.written > c.written, "{three:?}");
    }
}
