//! FusionRAID pools as the targeted tests (mechanisms, offload, rebuild) set them up: the
//! geometry, the journal, a driver sized for the scheme, and failing a member and watching
//! its rebuild.

use fusionraid_core::meta::JournalConfig;
use fusionraid_core::scheme::fusion::durable::meta_layout;
use fusionraid_core::scheme::fusion::{
    FusionConfig, FusionScheme, LayoutKind, PoolGeometry, VolumeConfig,
};
use fusionraid_core::{DiskId, Engine, EngineConfig};

use super::Driver;

/// `disks` members (the `hdds` among them HDDs) of `block_size` blocks laid out by `layout`,
/// with 4 KiB of metadata before the data. Members are unbounded here: the driver gives each
/// the bytes the scheme lays out ([`driver_over`]).
pub fn pool_geometry(
    disks: usize,
    block_size: u64,
    layout: LayoutKind,
    hdds: Vec<u32>,
) -> PoolGeometry {
    PoolGeometry {
        disks,
        disk_bytes: u64::MAX / 4,
        block_size,
        data_offset: 4096,
        layout,
        hdds,
    }
}

/// Keep the pool's metadata in a journal: the data starts after the metadata region, on a
/// page boundary.
pub fn with_journal(cfg: &mut FusionConfig, journal: JournalConfig) {
    cfg.journal = Some(journal);
    let end = meta_layout(cfg).expect("journaled").end();
    cfg.pool.data_offset = end.div_ceil(4096) * 4096;
}

/// A driver over the scheme `cfg` describes (see [`driver_over`]).
pub fn fusion_driver(cfg: FusionConfig, ecfg: EngineConfig, seed: u64) -> Driver {
    driver_over(FusionScheme::new(cfg).unwrap(), ecfg, seed)
}

/// The targeted tests' small pool: 8 members of 64 KiB blocks laid out by MOLS, one volume
/// `volume`, conversion off (the tests drive the layout themselves), requests up to 24
/// blocks, the test driver's detector; `tune` adjusts the rest.
pub fn small_pool(volume: VolumeConfig, tune: impl FnOnce(&mut FusionConfig)) -> Driver {
    const BS: u64 = 65536;
    let pool = pool_geometry(8, BS, LayoutKind::Mols, Vec::new());
    let mut cfg = FusionConfig::new(pool, vec![volume]);
    cfg.conversion.enabled = false;
    cfg.max_request_bytes = 24 * BS;
    tune(&mut cfg);
    let mut ecfg = EngineConfig::new(8);
    ecfg.detector = super::driver_detector();
    fusion_driver(cfg, ecfg, 7)
}

/// A driver over `scheme`, an engine configured by `ecfg`, each member exactly as large as
/// the metadata and the blocks the scheme lays out on it.
pub fn driver_over(scheme: FusionScheme, ecfg: EngineConfig, seed: u64) -> Driver {
    let pool = &scheme.config().pool;
    let disks = pool.disks;
    let disk_bytes = pool.data_offset + scheme.blocks_per_disk() * pool.block_size;
    Driver::new(
        Engine::new(ecfg, Box::new(scheme), 0),
        disks,
        disk_bytes,
        seed,
    )
}

impl Driver {
    /// Member `disk` fails: its I/O errors from now on, the engine is told and starts its
    /// rebuild, and what that issues goes out.
    pub fn fail_member(&mut self, disk: usize) {
        self.disks[disk].failed = true;
        self.engine.fail_disk(DiskId(disk as u32), self.now);
        self.pump();
    }

    /// What `status` says of volume 0's rebuild ("" when there is none).
    pub fn rebuild_state(&self) -> String {
        self.engine
            .volume_status(0)
            .and_then(|s| s.rebuild)
            .unwrap_or_default()
    }
}
