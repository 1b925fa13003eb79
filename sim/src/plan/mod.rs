//! The over-provisioning planner (`fusionraid plan`): for each FusionRAID volume of a pool,
//! what sustained 4 KiB random overwrites cost and how fast they run at a range of spare
//! shares, and the share a target calls for.
//!
//! Two models meet here, each tested where it lives:
//!
//! - the engine's device I/O per user write at a spare share
//!   (`fusionraid_core::scheme::fusion::write_cost`: replicas, conversion, greedy cleaning at
//!   the zone's utilisation);
//! - each member's sustained rates (`fusionraid_devices::sustained`: dies shared by reads and
//!   writes, GC at the victims' valid fraction, command processors and link).
//!
//! Their combination is the Pitfalls study's model: a member that must write `w` pages and
//! read `r` per user write sustains `wmax / (w + r f)` user writes per second on its dies, with
//! `f = wmax / rmax`; the volume's writes spread over every member of the pool. Between two
//! shares, the speed-up is `(wmax2 / wmax1) x (w1 + r1 f1) / (w2 + r2 f2)`: the study's
//! `s_f x wmax2 / wmax1` with the engine's own `w` and `r` in place of RAID5's two and two.
//! The background engine work (conversion and cleaning jobs, at most a few in flight per
//! volume) bounds the rate too: [`engine_bound`].
//!
//! How far to trust it: [`trust`] holds the error band measured against the simulator
//! (docs/EVALUATION.md, "Over-provisioning planner").

mod render;
pub mod trust;

use fusionraid_core::scheme::fusion::FusionConfig;
use fusionraid_core::scheme::fusion::config::MIRROR_MOVES_FACTOR;
use fusionraid_core::scheme::fusion::sizing::{self, AUTO_SPARE_MAX};
use fusionraid_core::scheme::fusion::write_cost::{self, Regime, WriteCost};
use fusionraid_devices::SsdConfig;
use fusionraid_devices::sustained::{self, Bound, History, PageCosts};
use serde::Serialize;

pub use render::to_table;

/// A spare share to price: a number, or the pool's `auto` (the room the members leave).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Share {
    Fixed(f64),
    Auto,
}

impl std::fmt::Display for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Share::Fixed(x) => write!(f, "{x}"),
            Share::Auto => f.write_str("auto"),
        }
    }
}

impl std::str::FromStr for Share {
    type Err = String;
    fn from_str(s: &str) -> Result<Share, String> {
        let s = s.trim();
        if s == "auto" {
            return Ok(Share::Auto);
        }
        match s.parse::<f64>() {
            Ok(x) if (0.0..=AUTO_SPARE_MAX).contains(&x) => Ok(Share::Fixed(x)),
            _ => Err(format!(
                "'{s}' is not a spare share (a number from 0 to {AUTO_SPARE_MAX}, or auto)"
            )),
        }
    }
}

/// The shares `plan` prices unless told otherwise.
pub const DEFAULT_SHARES: [Share; 6] = [
    Share::Fixed(0.0),
    Share::Fixed(0.1),
    Share::Fixed(0.25),
    Share::Fixed(0.5),
    Share::Fixed(1.0),
    Share::Auto,
];

/// What the planner is asked about: the pool (geometry, volumes as configured, members'
/// size) and each member's drive.
#[derive(Clone, Debug)]
pub struct PlanInput {
    pub cfg: FusionConfig,
    /// Each member's drive, in member order, at the member's size.
    pub drives: Vec<SsdConfig>,
    pub history: History,
}

/// One volume at one spare share.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    /// The share as asked (`auto` resolved in `spare`).
    pub share: String,
    pub spare: f64,
    /// Whether every zone fits on the members at this share (the other volumes as
    /// configured).
    pub fits: bool,
    /// Live share of the stripes the cleaner picks from.
    pub utilisation: f64,
    /// Pages the cleaner moves per page written.
    pub moves: f64,
    /// Device pages written and read per user page (engine level).
    pub written: f64,
    pub read: f64,
    /// Flash pages programmed per page the members are sent (their GC), the busiest member.
    pub flash_wa: f64,
    /// Sustained 4 KiB random-write IOPS of the volume alone.
    pub iops: f64,
    /// What the members alone would allow (the Pitfalls model; `iops` is the lower of it
    /// and the engine's background bound).
    pub member_iops: f64,
    /// What sets it: a member resource, or the engine's background jobs.
    pub bound: String,
    /// The Pitfalls factors on the slowest member: `wmax` (pages/s at its GC state), `f`.
    pub wmax: f64,
    pub f: f64,
}

impl Point {
    /// Device bytes written per user byte, flash included (engine x flash).
    pub fn flash_bytes_per_user_byte(&self) -> f64 {
        self.written * self.flash_wa
    }
}

/// The planner's answer for one volume.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VolumePlan {
    pub volume: String,
    pub level: String,
    pub size_bytes: u64,
    /// The share configured for it (resolved when `auto`).
    pub configured: f64,
    pub points: Vec<Point>,
    /// The configured share priced, for `create`'s warning.
    pub at_configured: Point,
}

/// Prices every FusionRAID volume of `input` at `shares`.
pub fn plan(input: &PlanInput, shares: &[Share]) -> Result<Vec<VolumePlan>, String> {
    if input.drives.len() != input.cfg.pool.disks {
        return Err(format!(
            "{} drives for {} members",
            input.drives.len(),
            input.cfg.pool.disks
        ));
    }
    (0..input.cfg.volumes.len())
        .map(|vol| plan_volume(input, vol, shares))
        .collect()
}

fn plan_volume(input: &PlanInput, vol: usize, shares: &[Share]) -> Result<VolumePlan, String> {
    let v = &input.cfg.volumes[vol];
    let mut points = Vec::with_capacity(shares.len());
    for &share in shares {
        let mut cfg = input.cfg.clone();
        match share {
            Share::Fixed(x) => cfg.volumes[vol].spare_fraction = x,
            Share::Auto => {
                let auto: Vec<bool> = (0..cfg.volumes.len()).map(|i| i == vol).collect();
                sizing::fill_auto_spare(&mut cfg, &auto).map_err(|e| e.to_string())?;
            }
        }
        points.push(price(input, &cfg, vol, &share.to_string())?);
    }
    let at_configured = price(input, &input.cfg, vol, "configured")?;
    Ok(VolumePlan {
        volume: v.name.clone(),
        level: if v.level.is_mirror() {
            format!("mirror x{}", v.level.copies())
        } else {
            format!(
                "{} {}+{}",
                v.level.name(),
                v.width - v.level.nparity(),
                v.level.nparity()
            )
        },
        size_bytes: v.size_bytes,
        configured: v.spare_fraction,
        points,
        at_configured,
    })
}

/// Volume `vol` of `cfg` (its share set) on `input`'s members.
pub fn price(
    input: &PlanInput,
    cfg: &FusionConfig,
    vol: usize,
    label: &str,
) -> Result<Point, String> {
    let cost = write_cost::random_write_cost(cfg, vol, Regime::Saturated)?;
    let fits = sizing::zones_fit(cfg);
    let disks = cfg.pool.disks as f64;
    // Every member takes an equal share of the volume's device I/O (declustered layouts).
    let (w, r) = (cost.written / disks, cost.read / disks);
    let rewritten = cost.zone_blocks_per_member * cfg.pool.block_size;
    let used = sizing::bytes_used_per_member(cfg);
    let mut slowest: Option<(f64, Bound, f64, f64, f64)> = None;
    for d in &input.drives {
        let u = sustained::victim_valid_fraction(d, rewritten, used, input.history);
        let pc = PageCosts::of(d);
        let (rate, bound) = pc.units_per_s(w, r, u);
        let wmax = pc.write_rate(u);
        let f = wmax / pc.read_rate();
        let flash_wa = 1.0 / (1.0 - u);
        if slowest.is_none_or(|s| rate < s.0) {
            slowest = Some((rate, bound, wmax, f, flash_wa));
        }
    }
    let (dev_rate, bound, wmax, f, flash_wa) = slowest.ok_or("a pool without members")?;
    let engine = engine_bound(cfg, vol, &cost, &input.drives);
    let (iops, bound) = if engine < dev_rate {
        (engine, "engine background".to_string())
    } else {
        (dev_rate, format!("member {}", bound.name()))
    };
    Ok(Point {
        share: label.to_string(),
        spare: cfg.volumes[vol].spare_fraction,
        fits,
        utilisation: cost.utilisation,
        moves: cost.moves,
        written: cost.written,
        read: cost.read,
        flash_wa,
        iops,
        member_iops: dev_rate,
        bound,
        wmax,
        f,
    })
}

/// Background job latency in block round trips (one block read and one block written on
/// the slowest member, unloaded): what a conversion or a cleaning move takes from start to
/// completion, its reads, its writes, parity and the scans between jobs. Measured, not
/// derived: the simulator's `dc` pool at spare 0.25 (docs/EVALUATION.md) ran its jobs at
/// about this many round trips; the other validation points test it.
pub const JOB_ROUND_TRIPS: f64 = 5.8;

/// User writes per second the engine's background work allows. Sustained writes wait for
/// room, which only conversion (one job per stripe of user pages) and cleaning (one job per
/// stripe of pages moved) give back, at most `max_concurrent` jobs at once per volume: a
/// stripe of `P` user pages takes `1 + moves` jobs (a mirror's, `moves`).
fn engine_bound(cfg: &FusionConfig, vol: usize, cost: &WriteCost, drives: &[SsdConfig]) -> f64 {
    let v = &cfg.volumes[vol];
    let bs = cfg.pool.block_size;
    let pages = ((v.width - v.level.nparity()) as u64 * bs / 4096) as f64;
    let trip = drives
        .iter()
        .map(|d| {
            let (r, w) = sustained::block_read_write_ns(d, bs);
            r + w
        })
        .fold(0.0, f64::max);
    let job_ns = JOB_ROUND_TRIPS * trip;
    let slots = cfg.conversion.max_concurrent.max(1) as f64;
    if v.level.is_mirror() {
        // Its conversions do no I/O; only cleaning moves, more of them at once, give room.
        let slots = slots * MIRROR_MOVES_FACTOR as f64;
        return slots * pages / (cost.moves.max(f64::MIN_POSITIVE) * job_ns) * 1e9;
    }
    slots * pages / ((1.0 + cost.moves) * job_ns) * 1e9
}

/// What a target asks of a volume.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// At least this many sustained random-write IOPS.
    Iops(f64),
    /// At most this many device bytes written per user byte (flash included).
    WriteAmp(f64),
}

/// The smallest priced share that fits and meets `target`, if any.
pub fn recommend(p: &VolumePlan, target: Target) -> Option<&Point> {
    let mut ok: Vec<&Point> = p
        .points
        .iter()
        .filter(|x| x.fits)
        .filter(|x| match target {
            Target::Iops(n) => x.iops >= n,
            Target::WriteAmp(a) => x.flash_bytes_per_user_byte() <= a,
        })
        .collect();
    ok.sort_by(|a, b| a.spare.total_cmp(&b.spare));
    ok.first().copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusionraid_core::scheme::fusion::{LayoutKind, Level, PoolGeometry, VolumeConfig};

    fn input(device: &str, member: u64, vol: u64) -> PlanInput {
        let pool = PoolGeometry {
            disks: 8,
            disk_bytes: member,
            block_size: 64 << 10,
            data_offset: 1 << 20,
            layout: LayoutKind::Permutation { seed: 1 },
            hdds: Vec::new(),
        };
        let v = VolumeConfig::new("v", Level::Raid5, 5, vol);
        let drive = fusionraid_devices::preset(device)
            .unwrap()
            .with_capacity(member);
        PlanInput {
            cfg: FusionConfig::new(pool, vec![v]),
            drives: vec![drive; 8],
            history: History::Aged,
        }
    }

    #[test]
    fn more_spare_costs_fewer_device_writes_and_sustains_more() {
        let p = &plan(&input("dc", 4 << 30, 1 << 30), &DEFAULT_SHARES).unwrap()[0];
        assert_eq!(p.points.len(), DEFAULT_SHARES.len());
        for w in p.points.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            assert!(b.spare > a.spare, "{a:?} {b:?}");
            assert!(b.moves <= a.moves && b.written <= a.written && b.read <= a.read);
            assert!(b.iops > a.iops, "{a:?} {b:?}");
            assert!(a.fits && b.fits);
        }
        // `auto` takes what the members leave: the cap here.
        assert_eq!(p.points.last().unwrap().spare, AUTO_SPARE_MAX);
    }

    #[test]
    fn known_limits_of_the_combination() {
        let inp = input("dc", 4 << 30, 1 << 30);
        let mut cfg = inp.cfg.clone();
        cfg.volumes[0].spare_fraction = AUTO_SPARE_MAX;
        let x = price(&inp, &cfg, 0, "max").unwrap();
        // Nothing left to clean: two copies and a quarter page of parity, one read back by
        // conversion; the engine bound is its job slots over one job per stripe of pages.
        assert!(x.moves < 1e-3 && (x.written - 2.25).abs() < 1e-3 && (x.read - 1.0).abs() < 1e-3);
        let trip: f64 = {
            let (r, w) = sustained::block_read_write_ns(&inp.drives[0], 64 << 10);
            r + w
        };
        let engine = 2.0 * 64.0 / (JOB_ROUND_TRIPS * trip) * 1e9;
        assert!((x.iops / engine - 1.0).abs() < 1e-3, "{x:?}");
        // Flash a thousand times slower to program: the members bind, at the Pitfalls rate
        // (dies shared by the pages written and read: 1 / (w / wmax + r / rmax) with each
        // member's share `w`, `r` of a user write).
        let mut slow = inp.clone();
        for d in &mut slow.drives {
            d.program_ns *= 1000;
        }
        let y = price(&slow, &cfg, 0, "slow").unwrap();
        assert!(y.bound.starts_with("member"), "{y:?}");
        let pitfalls = 1.0 / (y.written / 8.0 / y.wmax + y.read / 8.0 / (y.wmax / y.f));
        assert!(
            (y.iops / pitfalls - 1.0).abs() < 0.01,
            "{} vs {pitfalls}",
            y.iops
        );
        assert_eq!(y.iops, y.member_iops);
    }

    #[test]
    fn the_recommendation_is_the_smallest_share_meeting_the_target() {
        let p = &plan(&input("dc", 4 << 30, 1 << 30), &DEFAULT_SHARES).unwrap()[0];
        let need = p.points[2].iops;
        assert_eq!(
            recommend(p, Target::Iops(need)).unwrap().spare,
            p.points[2].spare
        );
        assert_eq!(
            recommend(p, Target::Iops(need * 0.999)).unwrap().spare,
            p.points[2].spare
        );
        assert!(recommend(p, Target::Iops(1e9)).is_none());
        let wa = p.points[1].flash_bytes_per_user_byte();
        assert_eq!(
            recommend(p, Target::WriteAmp(wa)).unwrap().spare,
            p.points[1].spare
        );
        // A share that does not fit is never recommended.
        let tight = &plan(&input("dc", 256 << 20, 1 << 30), &DEFAULT_SHARES).unwrap()[0];
        assert!(tight.points[2].fits && !tight.points[3].fits, "{tight:?}");
        assert!(recommend(tight, Target::Iops(tight.points[3].iops)).is_none());
    }
}
