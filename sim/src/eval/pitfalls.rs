//! The `pitfalls` experiment's configurations and its single-SSD measurement.
//!
//! The Pitfalls study (`shared/seeds/003_*.txt`) measured how much sustained 4 KiB
//! random-write throughput spare capacity buys: one SSD, then RAID0/1/10 and RAID5/6 arrays
//! of such SSDs, the spare being device capacity the user never writes. Here the same
//! question is asked of four configurations at a list of spare shares, on one device preset:
//!
//! - [`Config::Ssd`]: the device model alone, aged with `share` of it never written
//!   ([`AgeSpec::with_spare`]), random writes at queue depth [`SSD_QUEUE_DEPTH`] over the rest.
//!   Not a simulator run (there is no engine): [`run_ssd`] drives the model directly.
//! - [`Config::Raid5`]: the in-place RAID5 baseline (`4-raid5`, one 4+1 array over the
//!   members) whose volume covers `1 - share` of every member, the members aged with the rest
//!   never written: the study's RAID5 set-up.
//! - [`Config::Mirror`] and [`Config::Fusion`]: a FusionRAID mirror (2 copies) and RAID5 4+1
//!   volume whose spare share (spare stripes as a share of the data, `--volume-spare`) is
//!   `share`. That spare is the engine's: a fixed-size volume on members aged to the paper's
//!   state, its zone a small part of each member. Without proactive discard (off here, as in
//!   the engine's default) the drives see the engine's spare stripes as written data, so
//!   this share is not drive spare; the report says so.
//!
//! The arrays' runs are ordinary [`RunSpec`]s (the runner makes them, `runs/` keeps them).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fusionraid_core::Nanos;
use fusionraid_core::rng::Rng;
use fusionraid_devices::{AgeSpec, DeviceModel, OpKind, PAGE, SsdModel, preset};
use serde::Serialize;

use super::spec::{LoadSpec, PoolSize, RunSpec};
use crate::scenario::DATA_OFFSET;

/// Outstanding requests of the single-SSD runs (as the device calibration's Pitfalls check).
pub const SSD_QUEUE_DEPTH: usize = 32;
/// The arrays' stripe unit (the simulator's default).
const BLOCK: u64 = 64 << 10;

/// One configuration of the experiment, in report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Config {
    Ssd,
    Raid5,
    Mirror,
    Fusion,
}

impl Config {
    pub const ALL: [Config; 4] = [Config::Ssd, Config::Raid5, Config::Mirror, Config::Fusion];

    pub fn label(self) -> &'static str {
        match self {
            Config::Ssd => "single SSD",
            Config::Raid5 => "RAID5 4+1 (in place)",
            Config::Mirror => "FusionRAID mirror",
            Config::Fusion => "FusionRAID RAID5 4+1",
        }
    }

    /// What "spare" means for this configuration.
    pub fn spare_meaning(self) -> &'static str {
        match self {
            Config::Ssd | Config::Raid5 => "device capacity never written",
            Config::Mirror | Config::Fusion => "engine spare stripes / data",
        }
    }
}

/// How big the experiment is (part of [`super::Size`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PitfallsSize {
    pub devices: Vec<&'static str>,
    /// Spare shares, ascending; speed-ups are over the first.
    pub shares: Vec<f64>,
    pub disks: usize,
    pub width: usize,
    /// Capacity of every member and of the single SSD. Small members distort the models
    /// (their GC watermarks are absolute bytes), so not below 64 GiB outside tests.
    pub member_bytes: u64,
    /// The FusionRAID volumes' size.
    pub volume_bytes: u64,
    /// Offered 4 KiB writes per second: above what any configuration sustains.
    pub offered_iops: u64,
    /// In-place RAID5: arrivals stop at `raid5_ms`, measured from `raid5_warmup_ms`.
    pub raid5_warmup_ms: u64,
    pub raid5_ms: u64,
    /// FusionRAID: the same (its cleaner's steady state takes 2-3 passes over the volume).
    pub fusion_warmup_ms: u64,
    pub fusion_ms: u64,
    /// Single SSD: bytes written before the measurement starts (past the erased pool the
    /// aged drive rests with, and the footprint estimator's window), and its length.
    pub ssd_warm_bytes: u64,
    pub ssd_measure_ms: u64,
}

impl PitfallsSize {
    /// The full run's: both SATA presets, four shares, 64 GiB members.
    pub fn full() -> Self {
        PitfallsSize {
            devices: vec!["dc", "consumer"],
            shares: vec![0.0, 0.1, 0.25, 0.5],
            disks: 5,
            width: 5,
            member_bytes: 64 << 30,
            volume_bytes: 1 << 30,
            offered_iops: 160_000,
            raid5_warmup_ms: 60_000,
            raid5_ms: 75_000,
            fusion_warmup_ms: 25_000,
            fusion_ms: 40_000,
            ssd_warm_bytes: 16 << 30,
            ssd_measure_ms: 20_000,
        }
    }

    /// The in-place RAID5 volume: `1 - share` of every member's data area, whole stripes.
    pub fn raid5_volume_bytes(&self, share: f64) -> u64 {
        let dcols = (self.width - 1) as u64;
        let stripe = BLOCK * dcols;
        let usable = self.member_bytes.saturating_sub(DATA_OFFSET) as f64 * dcols as f64;
        ((usable * (1.0 - share)) as u64 / stripe).max(1) * stripe
    }

    /// The run of configuration `c` (an array) at `share` on `device`; `None` for the SSD.
    pub fn run(&self, c: Config, device: &str, share: f64, seed: u64) -> Option<RunSpec> {
        let load = LoadSpec::RandomWrites {
            iops: self.offered_iops,
        };
        let pool = |volume_bytes| PoolSize::Array {
            disks: self.disks,
            width: self.width,
            member_bytes: self.member_bytes,
            volume_bytes,
        };
        let mut r = match c {
            Config::Ssd => return None,
            Config::Raid5 => {
                let vol = self.raid5_volume_bytes(share);
                let mut r = RunSpec::new("4-raid5", load, self.raid5_ms, seed, pool(vol));
                r.warmup_ms = self.raid5_warmup_ms;
                r.member_spare = share;
                // In place over assume-clean members: every block is read from its home
                // whether written or not, so a prefill changes nothing but the run time.
                r.prefill = false;
                r
            }
            Config::Mirror | Config::Fusion => {
                let mut r = RunSpec::new(
                    "fusionraid",
                    load,
                    self.fusion_ms,
                    seed,
                    pool(self.volume_bytes),
                );
                r.warmup_ms = self.fusion_warmup_ms;
                r.volume_spare = Some(share);
                if c == Config::Mirror {
                    r.level = Some("mirror".into());
                }
                r
            }
        };
        r.device = device.to_string();
        Some(r)
    }

    /// The single-SSD point of `device` at `share`.
    pub fn ssd_point(&self, device: &str, share: f64, seed: u64) -> SsdPoint {
        SsdPoint {
            device: device.to_string(),
            share,
            capacity_bytes: self.member_bytes,
            warm_bytes: self.ssd_warm_bytes,
            measure_ns: self.ssd_measure_ms * 1_000_000,
            seed,
        }
    }
}

/// One single-SSD measurement: sustained 4 KiB random writes over `1 - share` of an aged
/// drive whose remaining `share` was never written.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SsdPoint {
    pub device: String,
    pub share: f64,
    pub capacity_bytes: u64,
    pub warm_bytes: u64,
    pub measure_ns: Nanos,
    pub seed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SsdMeasure {
    /// Writes completed per second inside the measurement window.
    pub iops: f64,
    /// Flash bytes programmed per host byte over the window.
    pub flash_wa: f64,
    /// Mean write latency over the window, microseconds.
    pub mean_us: f64,
}

/// Runs `p` on a fresh model of its preset (deterministic: same point, same result).
pub fn run_ssd(p: &SsdPoint) -> Result<SsdMeasure, String> {
    let cfg = preset(&p.device)?
        .with_capacity(p.capacity_bytes)
        .with_seed(p.seed);
    let mut dev = SsdModel::try_new(cfg)?;
    dev.age(&AgeSpec::with_spare(p.share));
    let span = (dev.capacity_bytes() as f64 * (1.0 - p.share)) as u64 / PAGE;
    if span == 0 {
        return Err(format!("spare share {} leaves nothing to write", p.share));
    }
    let mut rng = Rng::new(p.seed ^ 0x5017_a55d);
    let submit = |dev: &mut SsdModel, now: Nanos, rng: &mut Rng| {
        dev.submit(now, OpKind::Write, rng.below(span) * PAGE, PAGE)
    };
    let mut inflight: BinaryHeap<Reverse<Nanos>> = (0..SSD_QUEUE_DEPTH)
        .map(|_| Reverse(submit(&mut dev, 0, &mut rng)))
        .collect();
    let warm_writes = (p.warm_bytes / PAGE).max(1);
    let mut written = SSD_QUEUE_DEPTH as u64;
    // The window opens at the submission of the first write past the warm-up.
    let mut window: Option<(Nanos, fusionraid_devices::DeviceStats)> = None;
    let (mut done, mut lat_ns) = (0u64, 0u128);
    while let Some(Reverse(t)) = inflight.pop() {
        if let Some((start, _)) = window {
            if t >= start + p.measure_ns {
                break;
            }
        } else if written >= warm_writes {
            window = Some((t, dev.stats()));
        }
        let c = submit(&mut dev, t, &mut rng);
        written += 1;
        // Writes submitted in the window and done inside it count (the closed loop keeps
        // the queue full, so the edges differ by at most the queue depth).
        if let Some((start, _)) = window
            && c < start + p.measure_ns
        {
            done += 1;
            lat_ns += u128::from(c - t);
        }
        inflight.push(Reverse(c));
    }
    let (_, s0) = window.ok_or("the run ended before its warm-up")?;
    let s1 = dev.stats();
    let host = s1.bytes_written.saturating_sub(s0.bytes_written).max(1);
    Ok(SsdMeasure {
        iops: done as f64 / (p.measure_ns as f64 / 1e9),
        flash_wa: s1
            .flash_bytes_written
            .saturating_sub(s0.flash_bytes_written) as f64
            / host as f64,
        mean_us: if done > 0 {
            lat_ns as f64 / done as f64 / 1e3
        } else {
            0.0
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::size::{Size, SizeName};

    /// The tiny evaluation's single-SSD points are past the aged drive's erased pool, so
    /// they show the steady state: more spare never lowers the sustained rate, and half the
    /// drive spare buys a clear speed-up (the model's, not the study's figure).
    #[test]
    fn more_spare_never_lowers_the_single_ssd_rate() {
        let p = Size::of(SizeName::Tiny).pitfalls;
        let iops: Vec<f64> = [0.0, 0.25, 0.5]
            .iter()
            .map(|&s| run_ssd(&p.ssd_point("dc", s, 1)).unwrap().iops)
            .collect();
        assert!(iops.windows(2).all(|w| w[1] >= w[0]), "{iops:?}");
        assert!(iops[2] > 2.0 * iops[0], "{iops:?}");
        let again = run_ssd(&p.ssd_point("dc", 0.25, 1)).unwrap().iops;
        assert_eq!(again, iops[1]);
    }
}
