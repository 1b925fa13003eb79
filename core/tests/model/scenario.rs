//! What a model seed runs: its pool, volumes, request mix, injected spikes and failures
//! (the seeds that turn on the engine's optional paths: `common::seeds`).

use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::fusion::{LayoutKind, Level};

#[derive(Debug, Clone)]
pub struct Scenario {
    pub seed: u64,
    pub disks: usize,
    pub layout: LayoutKind,
    pub block_size: u64,
    pub volumes: Vec<(Level, usize, u64)>,
    pub ops: usize,
    pub queue_depth: usize,
    pub spikes: bool,
    pub failures: usize,
    pub redirect: bool,
    pub hedge: bool,
    pub replicated_fraction: f64,
    /// HDD members after the `disks` SSDs, with write offload to their logs (issue 21).
    pub hdds: usize,
}

pub fn scenario(seed: u64) -> Scenario {
    let mut r = Rng::new(seed);
    let (disks, layout) = match r.below(4) {
        0 => (8, LayoutKind::Mols),
        1 => (7, LayoutKind::Mols),
        2 => (9, LayoutKind::Permutation { seed }),
        _ => (9, LayoutKind::Groups),
    };
    let block_size = [8192u64, 16384, 65536][r.below(3) as usize];
    let nvol = 1 + r.below(2) as usize;
    let mut volumes = Vec::new();
    for _ in 0..nvol {
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
        let blocks = 16 + r.below(48);
        volumes.push((level, width, blocks));
    }
    if seed % 5 == 4 {
        // A mirror volume next to the RAID ones (its own generator: the rest of the
        // scenario stays as it was).
        let mut m = Rng::new(seed ^ 0x0031_7702);
        let copies = 2 + m.below(2) as u8;
        let level = Level::Mirror { copies };
        volumes.push((level, copies as usize, 16 + m.below(48)));
    }
    let tolerance = volumes.iter().map(|v| v.0.copies() - 1).min().unwrap_or(1);
    // A hybrid pool with write offload on a sixth of the seeds, those without a mirror
    // volume (mirrors never offload). Its failures may hit the HDDs too: an offloaded copy
    // is then lost and its blocks are moved, and an SSD failure may leave a block's only
    // readable copy in a log.
    let hybrid = seed % 6 == 5 && seed % 5 != 4;
    Scenario {
        seed,
        disks,
        layout,
        block_size,
        volumes,
        ops: 150 + r.below(150) as usize,
        queue_depth: 1 + r.below(12) as usize,
        spikes: r.below(2) == 0,
        failures: match r.below(3) {
            0 => 1 + r.below(tolerance as u64) as usize,
            _ => 0,
        },
        redirect: r.below(5) != 0,
        hedge: r.below(4) == 0,
        replicated_fraction: [0.05, 0.1, 0.3][r.below(3) as usize],
        hdds: if hybrid { 2 } else { 0 },
    }
}
