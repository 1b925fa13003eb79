//! What a drive sustains under a steady mix of small writes and reads, from its model's
//! parameters: the device side of `fusionraid plan` (the Pitfalls study's single-SSD rates).
//!
//! The steady state of the SSD model ([`crate::ssd`], [`crate::gc`]) is a set of resources
//! that requests occupy, each for a fixed time per 4 KiB page:
//!
//! - the dies, shared by reads and writes: a written page costs its program and, once the
//!   drive is cleaning, the erased space it consumes ([`crate::gc::GcCosts::per_freed_byte`] at
//!   the victims' valid fraction `u`); a read page costs its share of a flash-page read (the
//!   engine reads whole flash pages: blocks, runs of a block's pages);
//! - the write and the read command processors, and the two directions of the host link,
//!   each taken by one kind of request only.
//!
//! The slowest resource sets the rate. With `w` pages written and `r` read per unit of work,
//! the dies allow `1 / (w / wmax + r / rmax)` units per second, where `wmax` is the drive's
//! sustained random-write rate at `u` and `rmax` its read rate: the Pitfalls study's model,
//! whose RAID5 read-modify-write (`w = r`) gives its scalability factor
//! `(1 + f1) / (1 + f2)` between two spare capacities, `f = wmax / rmax`.
//!
//! The victims' valid fraction comes from the same analysis the model uses
//! ([`crate::flash_state`]): `alpha` = the data being rewritten over itself plus the spare flash.

use crate::PAGE;
use crate::config::SsdConfig;
use crate::flash_state::victim_valid_fraction_fast;

/// Per-page costs of one drive (ns of each resource per 4 KiB page).
#[derive(Clone, Debug, PartialEq)]
pub struct PageCosts {
    /// Die time per page written on a clean drive (its program), over all dies.
    pub die_write_ns: f64,
    /// Die time per page read in whole flash pages, over all dies.
    pub die_read_ns: f64,
    /// Die time of the GC primitives (copy per valid byte, erase per byte) on one die.
    gc: crate::gc::GcCosts,
    /// Dies working in parallel.
    dies: f64,
    pub ctrl_write_ns: f64,
    pub ctrl_read_ns: f64,
    pub link_write_ns: f64,
    pub link_read_ns: f64,
}

/// How a drive's flash was used before the pool's data: decides what counts as its spare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum History {
    /// Written in full before (the paper's aged state, and any drive not trimmed): only the
    /// factory spare is free, and the cleaner finds cold data packed, so victims come from
    /// the rewritten footprint and the spare flash.
    Aged,
    /// Trimmed (or new): everything the pool never writes is spare too.
    Fresh,
}

impl PageCosts {
    pub fn of(cfg: &SsdConfig) -> Self {
        let dies = cfg.dies() as f64;
        let page = PAGE as f64;
        let speed = cfg.speed_factor;
        let gc = cfg.gc_costs();
        PageCosts {
            die_write_ns: speed * cfg.program_ns as f64 * page
                / cfg.program_unit_bytes as f64
                / dies,
            die_read_ns: speed * cfg.die_read_ns as f64 * page / cfg.flash_page_bytes as f64 / dies,
            gc: crate::gc::GcCosts {
                copy_ns_per_byte: speed * gc.copy_ns_per_byte,
                erase_ns_per_byte: speed * gc.erase_ns_per_byte,
            },
            dies,
            ctrl_write_ns: speed * cfg.ctrl_write_ns as f64 / cfg.ctrl_write_servers as f64,
            ctrl_read_ns: speed * cfg.ctrl_read_ns as f64 / cfg.ctrl_servers as f64,
            link_write_ns: speed * page * 1e3 / cfg.write_mb_s,
            link_read_ns: speed * page * 1e3 / cfg.read_mb_s,
        }
    }

    /// Die time per page written when the victims are `u` valid (program plus GC).
    pub fn die_write_at(&self, u: f64) -> f64 {
        self.die_write_ns + self.gc.per_freed_byte(u.clamp(0.0, 0.999)) * PAGE as f64 / self.dies
    }

    /// Sustained random-write pages per second at `u` (the Pitfalls `wmax`).
    pub fn write_rate(&self, u: f64) -> f64 {
        1e9 / self
            .die_write_at(u)
            .max(self.ctrl_write_ns)
            .max(self.link_write_ns)
    }

    /// Read pages per second the dies allow (the Pitfalls `rmax` as far as reads compete
    /// with writes: on the dies; a drive whose link or command processors cap reads first
    /// measures less), reads in whole flash pages.
    pub fn read_rate(&self) -> f64 {
        1e9 / self.die_read_ns
    }

    /// Units of work per second the drive sustains, a unit being `w` pages written and `r`
    /// read, with victims `u` valid; and which resource binds.
    pub fn units_per_s(&self, w: f64, r: f64, u: f64) -> (f64, Bound) {
        let times = [
            (w * self.die_write_at(u) + r * self.die_read_ns, Bound::Dies),
            (w * self.ctrl_write_ns, Bound::WriteCommands),
            (r * self.ctrl_read_ns, Bound::ReadCommands),
            (w * self.link_write_ns, Bound::WriteLink),
            (r * self.link_read_ns, Bound::ReadLink),
        ];
        let (t, b) = times
            .into_iter()
            .fold((0.0, Bound::Dies), |a, x| if x.0 > a.0 { x } else { a });
        (if t > 0.0 { 1e9 / t } else { f64::INFINITY }, b)
    }
}

/// Unloaded time of one read and one write of `bytes` (a FusionRAID block) on a drive of
/// `cfg`: the median latency of a page, the command processor's time for the other pages
/// and the link's for the other bytes. The background jobs of the engine (a conversion, a
/// cleaning move) are chains of such reads and writes.
pub fn block_read_write_ns(cfg: &SsdConfig, bytes: u64) -> (f64, f64) {
    let pages = bytes.div_ceil(PAGE).max(1) as f64;
    let extra = bytes.saturating_sub(PAGE) as f64;
    let speed = cfg.speed_factor;
    let read = cfg.read_latency.median()
        + (pages - 1.0) * cfg.ctrl_read_ns as f64 / cfg.ctrl_servers as f64
        + extra * 1e3 / cfg.read_mb_s;
    let write = cfg.write_latency.median()
        + (pages - 1.0) * cfg.ctrl_write_ns as f64 / cfg.ctrl_write_servers as f64
        + extra * 1e3 / cfg.write_mb_s;
    (speed * read, speed * write)
}

/// The resource that sets a drive's rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    Dies,
    WriteCommands,
    ReadCommands,
    WriteLink,
    ReadLink,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::Dies => "flash",
            Bound::WriteCommands => "write commands",
            Bound::ReadCommands => "read commands",
            Bound::WriteLink => "write link",
            Bound::ReadLink => "read link",
        }
    }
}

/// Valid fraction of GC victims on a drive of `cfg` whose host keeps rewriting `rewritten`
/// bytes of it (uniformly, at random) and has written `used` bytes of it in all, after
/// `history`: the cleaner leaves data nobody rewrites packed, so victims hold the rewritten
/// data and the spare flash (`crate::flash_state`), and that spare is the flash beyond
/// what holds valid data: all the capacity on an aged drive, what the host wrote on a fresh
/// one.
pub fn victim_valid_fraction(cfg: &SsdConfig, rewritten: u64, used: u64, history: History) -> f64 {
    let physical = cfg.physical_bytes() as f64;
    let capacity = cfg.capacity_bytes as f64;
    let rewritten = (rewritten as f64).min(capacity);
    let valid = match history {
        History::Aged => capacity,
        History::Fresh => (used as f64).clamp(rewritten, capacity),
    };
    victim_valid_fraction_fast(rewritten / (rewritten + physical - valid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;

    #[test]
    fn a_clean_dc_drive_writes_at_its_flash_rate() {
        let c = PageCosts::of(&preset("dc").unwrap());
        // 195 MB/s of programs: 47.6K pages/s; reads in whole 16 KiB flash pages on 8 dies
        // of 25 us: 1.28M pages/s, but the 560 MB/s link carries 137K.
        assert!(
            (c.write_rate(0.0) / 47_607.0 - 1.0).abs() < 0.01,
            "{}",
            c.write_rate(0.0)
        );
        assert!(
            (c.read_rate() / 1.28e6 - 1.0).abs() < 0.01,
            "{}",
            c.read_rate()
        );
        let (reads, bound) = c.units_per_s(0.0, 1.0, 0.0);
        assert_eq!(bound, Bound::ReadLink);
        assert!((reads / 136_719.0 - 1.0).abs() < 0.01, "{reads}");
    }

    #[test]
    fn spare_flash_lifts_sustained_writes_as_the_pitfalls_study_found() {
        // The consumer preset over its whole capacity (aged, nothing left unwritten) against
        // half of it: the model's drive gains about 11x (devices/tests/calibration.rs measures
        // 11.3x by simulation; the study 19x on its drive).
        let cfg = preset("consumer").unwrap();
        let c = PageCosts::of(&cfg);
        let cap = cfg.capacity_bytes;
        let full = c.write_rate(victim_valid_fraction(&cfg, cap, cap, History::Aged));
        let half = c.write_rate(victim_valid_fraction(
            &cfg,
            cap / 2,
            cap / 2,
            History::Fresh,
        ));
        assert!((8.0..16.0).contains(&(half / full)), "{full} {half}");
        // Rates only fall as victims fill.
        let mut last = f64::INFINITY;
        for u in [0.0, 0.3, 0.6, 0.9] {
            assert!(c.write_rate(u) < last || u == 0.0);
            last = c.write_rate(u);
        }
    }

    #[test]
    fn reads_and_writes_share_the_dies_as_the_pitfalls_model_says() {
        let c = PageCosts::of(&preset("dc").unwrap());
        let u = 0.8;
        // A RAID5 read-modify-write (two pages written and two read): the dies bind, and the
        // rate is wmax / (2 (1 + f)), f = wmax / rmax_dies.
        let (rate, bound) = c.units_per_s(2.0, 2.0, u);
        assert_eq!(bound, Bound::Dies);
        let wmax = c.write_rate(u);
        let f = wmax / c.read_rate();
        assert!((rate - wmax / (2.0 * (1.0 + f))).abs() < 1e-6 * rate);
        // More spare, less GC: the study's scalability factor shrinks the speed-up.
        let (fast, _) = c.units_per_s(2.0, 2.0, 0.2);
        let w2 = c.write_rate(0.2);
        let f2 = w2 / c.read_rate();
        let s_f = (1.0 + f) / (1.0 + f2);
        assert!((fast / rate - s_f * w2 / wmax).abs() < 1e-9 * fast / rate);
    }
}
