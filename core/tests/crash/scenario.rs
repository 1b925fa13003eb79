//! What a crash seed runs: its pool, volumes, workload shape and the failure it injects,
//! with the engine's optional paths (hedged writes, stripe gathering, parity rows) on for
//! the seeds `common::seeds` picks.

use crate::common;
use crate::common::seeds::{gathers, hedges_writes, rows};
use fusionraid_core::meta::JournalConfig;
use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::fusion::durable::meta_layout;
use fusionraid_core::scheme::fusion::{
    FusionConfig, FusionScheme, LayoutKind, Level, PoolGeometry, VolumeConfig,
};
use fusionraid_core::{Nanos, PAGE_SIZE};

#[derive(Debug, Clone)]
pub struct Scenario {
    pub seed: u64,
    pub disks: usize,
    pub layout: LayoutKind,
    pub block_size: u64,
    pub volumes: Vec<(Level, usize, u64)>,
    pub cycles: usize,
    pub ops: usize,
    pub queue_depth: usize,
    pub journal_bytes: u64,
    pub commit_interval_ns: Nanos,
    /// (cycle, member): the member fails during that cycle.
    pub failure: Option<(usize, usize)>,
    /// HDD members after the `disks` SSDs (issue 21): no stripes, metadata copies only.
    pub hdds: usize,
}

pub fn scenario(seed: u64) -> Scenario {
    let mut r = Rng::new(seed ^ 0xC4A5);
    let (disks, layout) = match r.below(3) {
        0 => (7, LayoutKind::Mols),
        1 => (6, LayoutKind::Permutation { seed }),
        _ => (8, LayoutKind::Groups),
    };
    let block_size = [4096u64, 16384, 65536][r.below(3) as usize];
    let mut volumes = Vec::new();
    for _ in 0..1 + r.below(2) {
        let level = if r.below(3) == 0 {
            Level::Raid6
        } else {
            Level::Raid5
        };
        let max_w = match layout {
            LayoutKind::Mols => disks - 1,
            LayoutKind::Groups => disks / 2,
            LayoutKind::Permutation { .. } => disks,
        };
        let min_w = level.copies() + 1;
        let width = min_w + r.below((max_w - min_w + 1) as u64) as usize;
        volumes.push((level, width, 24 + r.below(40)));
    }
    if seed % 5 == 4 {
        // A mirror volume next to the RAID ones (its own generator: the rest of the
        // scenario stays as it was).
        let mut m = Rng::new(seed ^ 0x0031_7702);
        let copies = 2 + m.below(2) as u8;
        let level = Level::Mirror { copies };
        volumes.push((level, copies as usize, 24 + m.below(40)));
    }
    // A hybrid pool on a sixth of the seeds: one HDD member, which holds journal and
    // checkpoint copies and a write-offload log, no stripes. It may be the member that
    // fails.
    let hdds = usize::from(seed % 6 == 5);
    let cycles = 2 + r.below(3) as usize;
    let failure = (r.below(2) == 0).then(|| {
        (
            r.below(cycles as u64 - 1) as usize,
            r.below((disks + hdds) as u64) as usize,
        )
    });
    Scenario {
        seed,
        disks,
        layout,
        block_size,
        volumes,
        cycles,
        failure,
        ops: 60 + r.below(240) as usize,
        queue_depth: 1 + r.below(8) as usize,
        // Small rings wrap and force checkpoints within a run.
        journal_bytes: [8 << 10, 32 << 10, 1 << 20][r.below(3) as usize],
        commit_interval_ns: [200_000, 2_000_000, 50_000_000][r.below(3) as usize],
        hdds,
    }
}

impl Scenario {
    /// Every member, SSDs and HDDs.
    pub fn members(&self) -> usize {
        self.disks + self.hdds
    }
}

pub fn config(sc: &Scenario) -> FusionConfig {
    let vols = sc
        .volumes
        .iter()
        .enumerate()
        .map(|(i, &(level, width, blocks))| {
            let mut v = VolumeConfig::new(&format!("v{i}"), level, width, blocks * sc.block_size);
            v.replicated_fraction = 0.2;
            v.spare_fraction = 0.15;
            v
        })
        .collect();
    let pool = PoolGeometry {
        disks: sc.members(),
        disk_bytes: u64::MAX / 4,
        block_size: sc.block_size,
        data_offset: 0,
        layout: sc.layout,
        hdds: (sc.disks..sc.members()).map(|d| d as u32).collect(),
    };
    let mut cfg = FusionConfig::new(pool, vols);
    cfg.trim = common::trim_policy(sc.seed);
    cfg.write_hedge_ns = hedges_writes(sc.seed).then_some(200_000);
    cfg.gather_ns = gathers(sc.seed).then_some(150_000);
    cfg.row_ns = rows(sc.seed).then_some(8_000_000);
    // The same seeds rebuild reads of RAID blocks stuck on a stalled member.
    cfg.raid_hedge_ns = hedges_writes(sc.seed).then_some(200_000);
    cfg.conversion.idle_ns = Some(1_000_000);
    cfg.conversion.pause_fg_bytes_per_sec = 1e12;
    cfg.max_request_bytes = 8 * sc.block_size;
    cfg.journal = Some(JournalConfig {
        pool_id: 0xF00D ^ sc.seed,
        journal_bytes: sc.journal_bytes,
        commit_interval_ns: sc.commit_interval_ns,
        ..Default::default()
    });
    // Sandook's policies on a third of the seeds (their own generator).
    if sc.seed % 3 == 1 {
        let (steer, curves) = common::steering(sc.seed, sc.members());
        cfg.steer = Some(steer);
        cfg.curves = curves;
    }
    if sc.hdds > 0 {
        // Offload whenever an SSD has a queue (or more than one I/O), to logs small enough
        // to wrap within a run (4 or 16 pages) or as large as the member.
        let mut o = Rng::new(sc.seed ^ 0x5E_2B);
        cfg.offload = Some(fusionraid_core::scheme::fusion::OffloadConfig {
            queue_threshold: o.below(2) as u32,
            min_outstanding: 0.0,
            log_bytes: [None, Some(4 * PAGE_SIZE), Some(16 * PAGE_SIZE)][o.below(3) as usize],
        });
    }
    let end = meta_layout(&cfg).expect("journaled").end();
    cfg.pool.data_offset = end.div_ceil(4096) * 4096;
    // Members two blocks larger than the zones need: space no volume uses, which discards
    // sweep.
    let zones = FusionScheme::new(cfg.clone())
        .expect("config")
        .blocks_per_disk();
    cfg.pool.disk_bytes = cfg.pool.data_offset + (zones + 2) * sc.block_size;
    cfg
}
