//! What one seed runs: a baseline scheme's configuration, pushed hard (small buffers and
//! logs, batching delays, aggressive slow-disk detection), and the load, spikes and member
//! failures it meets. Each scheme salts the seed, so the schemes' scenarios differ.

use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::baselines::{self, BaselineConfig};

use crate::common;

#[derive(Debug, Clone)]
pub struct Scenario {
    pub scheme: &'static str,
    pub seed: u64,
    pub cfg: BaselineConfig,
    pub ops: usize,
    pub queue_depth: usize,
    pub spikes: bool,
    pub failures: usize,
}

pub fn scheme_salt(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

pub fn scenario(scheme: &'static str, seed: u64) -> Scenario {
    let mut r = Rng::new(seed ^ scheme_salt(scheme));
    let groups = 1 + r.below(3) as usize;
    let mirrored = matches!(scheme, "4-raidm" | "sandook");
    let nparity = if !mirrored && r.below(4) == 0 { 2 } else { 1 };
    let width = nparity + 2 + r.below(3) as usize;
    let disks = groups * width + r.below(2) as usize;
    let block_size = [4096u64, 8192, 16384, 65536][r.below(4) as usize];
    let nvol = 1 + r.below(groups as u64 + 1) as usize;
    let volumes: Vec<u64> = (0..nvol).map(|_| (8 + r.below(40)) * block_size).collect();
    let mut cfg = BaselineConfig::new(disks, 0, block_size, width, volumes);
    cfg.nparity = nparity;
    cfg.data_offset = [0, 4096][r.below(2) as usize];
    cfg.max_request_bytes = 8 * block_size;
    if r.below(2) == 0 {
        cfg.raid5.batch_delay_ns = Some(20_000 + r.below(300_000));
    }
    cfg.lograid.flush_delay_ns = r.below(300_000);
    cfg.lograid.spare_fraction = [0.1, 0.3, 1.0][r.below(3) as usize];
    cfg.lograid.gc_low_water = [0.05, 0.3][r.below(2) as usize];
    cfg.lograid.max_inflight_segments = 1 + r.below(6) as usize;
    cfg.lograid.cleaners = 1 + r.below(2) as usize;
    cfg.nvraid.buffer_bytes = cfg.max_request_bytes * (1 + r.below(4));
    cfg.nvraid.max_flushes = 1 + r.below(6) as usize;
    cfg.nvraid.high_water = [0.0, 0.5, 0.9][r.below(3) as usize];
    cfg.nvraid.max_age_ns = [None, Some(200_000)][r.below(2) as usize];
    cfg.nvraid.write_ns_per_line = [0, 100][r.below(2) as usize];
    cfg.raidm.spare_fraction = [0.1, 0.3, 1.0][r.below(3) as usize];
    cfg.raidm.gc_low_water = [0.05, 0.3][r.below(2) as usize];
    cfg.raidm.heads = r.below(4) as usize;
    cfg.toleraid.queue_min = 1 + r.below(4) as u32;
    cfg.toleraid.queue_factor = [1.5, 4.0][r.below(2) as usize];
    cfg.sitout.check_interval_ns = 200_000 + r.below(1_000_000);
    cfg.sitout.sit_out_ns = 500_000 + r.below(5_000_000);
    cfg.sitout.insensitivity = [1.5, 3.0, 50.0][r.below(3) as usize];
    cfg.sitout.min_samples = 2 + r.below(6);
    let tolerance = if mirrored { 1 } else { nparity };
    steering(&mut cfg, disks, seed);
    let rows = baselines::rows_needed(scheme, &cfg).expect("rows");
    cfg.disk_bytes = cfg.data_offset + rows * block_size;
    Scenario {
        scheme,
        seed,
        cfg,
        ops: 150 + r.below(150) as usize,
        queue_depth: 1 + r.below(12) as usize,
        spikes: r.below(2) == 0,
        failures: if r.below(3) == 0 {
            1 + r.below(tolerance as u64) as usize
        } else {
            0
        },
    }
}

/// Sandook's steering pushed hard ([`common::steering`]), with its own generator so the other
/// schemes' scenarios do not change with it.
fn steering(cfg: &mut BaselineConfig, disks: usize, seed: u64) {
    let (steer, curves) = common::steering(seed, disks);
    cfg.sandook.steer = steer;
    cfg.sandook.curves = curves;
}
