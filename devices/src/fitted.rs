//! The named fitted presets `pm1725a` and `sn200`, and the NVMe template every fit fills in.
//!
//! These two are frozen outputs of an earlier [`crate::fit::fit_profiles`] that scored P99
//! only (commit df96498); they are kept as they were so the experiments and tests built on
//! them do not move. The current fit (P90 and P99) of the same two drives is in
//! [`crate::fitted_fleet`] (`s39wna0kb01161`, `sdm00001c5d1`), which
//! `tests/calibration.rs::refit_reproduces_frozen_presets` checks.

use fusionraid_core::Nanos;

use crate::config::{ProgramSuspend, SsdConfig};
use crate::dist::{LatencyDist, PROFILE_QUANTILES};
use crate::events::InternalEvents;
use crate::fit::FitParams;
use crate::gc::GcPolicy;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Everything the profiles do not constrain, for a datacenter NVMe drive (assumptions):
/// 1.6 TB, 12% factory spare, PCIe 3.0 x8-class link (8 GB/s each way, above the 4.3 GB/s the
/// 4 KiB curves reach), 16 KiB flash pages,
/// 32 MiB blocks erased in 5 ms, a 64 MiB power-loss-protected buffer, background GC as `dc`.
/// The profiled drives were blkdiscarded before measuring, so GC never ran in them.
pub fn nvme_template(
    name: &str,
    read: LatencyDist,
    write: LatencyDist,
    p: &FitParams,
) -> SsdConfig {
    SsdConfig {
        name: name.into(),
        capacity_bytes: 1_600_000_000_000,
        factory_spare: 0.12,
        ctrl_servers: p.ctrl_servers,
        ctrl_write_servers: p.write_servers,
        ctrl_read_ns: (p.ctrl_servers as f64 * 1e9 / p.read_cap_iops).round() as Nanos,
        ctrl_write_ns: (p.write_servers as f64 * 1e9 / p.write_cap_iops).round() as Nanos,
        read_mb_s: 8000.0,
        write_mb_s: 8000.0,
        read_latency: read,
        write_latency: write,
        channels: p.dies,
        dies_per_channel: 1,
        flash_page_bytes: 16 * KIB,
        die_read_ns: p.die_read_ns,
        program_unit_bytes: p.program_unit_bytes,
        program_ns: p.program_ns,
        program_suspend: p.suspend,
        block_bytes: 32 * MIB,
        erase_ns: 5_000_000,
        buffer_bytes: 64 * MIB,
        flush_spikes: None,
        power_loss_protected: true,
        gc: GcPolicy::Background {
            start_bytes: 8 * GIB,
            critical_bytes: GIB,
            resume_bytes: GIB + 32 * MIB,
            max_share: 1.0,
            idle_share: 1.0,
            step_ns: 2_000_000,
        },
        events: InternalEvents::default(),
        speed_factor: 1.0,
        seed: seed_u64(name),
    }
}

/// A stable per-name seed.
const fn seed_u64(name: &str) -> u64 {
    let b = name.as_bytes();
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut i = 0;
    while i < b.len() {
        h = (h ^ b[i] as u64).wrapping_mul(0x100_0000_01b3);
        i += 1;
    }
    h
}

/// Lowest-load rows of the profiles (us: median, 90th, 99th, 99.9th, 99.99th), i.e. the
/// unloaded latency distributions the fit reads off directly.
const PM1725A_READ_US: [f64; 5] = [76.0, 89.0, 94.0, 135.0, 155.0]; // S39WNA0KB01161_100r.csv:2
const PM1725A_WRITE_US: [f64; 5] = [17.0, 19.0, 22.0, 35.0, 39.0]; // S39WNA0KB01161_1000w.csv:2
const SN200_READ_US: [f64; 5] = [85.0, 88.0, 109.0, 141.0, 155.0]; // SDM00001C5D1_100r.csv:2
const SN200_WRITE_US: [f64; 5] = [18.0, 20.0, 22.0, 25.0, 28.0]; // SDM00001C5D1_1000w.csv:2

pub(crate) fn table(us: [f64; 5]) -> LatencyDist {
    let q: Vec<(f64, f64)> = PROFILE_QUANTILES
        .iter()
        .zip(us)
        .map(|(&p, v)| (p, v * 1e3))
        .collect();
    LatencyDist::from_quantiles(&q).expect("profile rows are monotone")
}

/// Frozen output of the P99-only fit on Samsung PM1725a serial S39WNA0KB01161 (the drive with
/// all nine mixes). Reads: two command processors with room for 1.01x the last measured load
/// (397,577 IOPS), in front of 32 dies busy 40 us per read. Programs of 172 KiB take 2.6 ms
/// (2.2 GB/s over 32 dies) and are never suspended, so a read that meets one waits it out:
/// the mixed curves' ~2-2.7 ms P99 plateau.
pub fn pm1725a() -> SsdConfig {
    let p = FitParams {
        ctrl_servers: 2,
        write_servers: 1,
        read_cap_iops: 397_577.0 * 1.01,
        write_cap_iops: 257_711.0 * 1.01,
        dies: 32,
        die_read_ns: 40_000,
        program_ns: 2_600_000,
        program_unit_bytes: 172 * KIB,
        suspend: None,
    };
    nvme_template(
        "pm1725a",
        table(PM1725A_READ_US),
        table(PM1725A_WRITE_US),
        &p,
    )
}

/// Frozen output of the P99-only fit on WD SN200 serial SDM00001C5D1. Sixteen read command
/// processors (capacity 1.2x the last measured load, 1,055,985 IOPS), 128 dies busy 70 us
/// per read; short programs (518 us, 16 KiB: 4 GB/s) that reads may suspend twice each for
/// 200 us: the mixed curves' low ~300-700 us P99.
pub fn sn200() -> SsdConfig {
    let p = FitParams {
        ctrl_servers: 16,
        write_servers: 1,
        read_cap_iops: 1_055_985.0 * 1.2,
        write_cap_iops: 479_422.0 * 1.01,
        dies: 128,
        die_read_ns: 70_000,
        program_ns: 517_500,
        program_unit_bytes: 16 * KIB,
        suspend: Some(ProgramSuspend {
            suspend_ns: 200_000,
            max_per_program: 2,
        }),
    };
    nvme_template("sn200", table(SN200_READ_US), table(SN200_WRITE_US), &p)
}
