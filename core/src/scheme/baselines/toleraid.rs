//! ToleRAID (Kim et al.): RAID5 arrays whose reads of a block on a busy member are rebuilt from
//! the rest of the stripe instead of queueing behind the member; writes are unchanged. Here it
//! is the 4-RAID5 layout (one array per volume) with [`ReadPolicy::Tolerant`].
//!
//! A member counts as busy when the engine's spike detector marks it unresponsive, or when its
//! queue is much deeper than its group peers': at least `queue_min` I/Os in flight and at least
//! `queue_factor` times the peers' mean. A read is only redirected when no other member of the
//! stripe is busy or failed beyond what parity can rebuild (see `RaidCore::read`).

use super::BaselineConfig;
use super::array::{RaidCore, ReadPolicy};
use super::geom::{ArrayGeom, place_volumes};
use super::inplace::InPlace;
use crate::engine::ctx::Ctx;
use crate::types::DiskId;

#[derive(Debug, Clone)]
pub struct TolerConfig {
    pub queue_factor: f64,
    pub queue_min: u32,
}

impl Default for TolerConfig {
    fn default() -> Self {
        TolerConfig {
            queue_factor: 4.0,
            queue_min: 8,
        }
    }
}

impl TolerConfig {
    pub fn busy(&self, ctx: &Ctx, geo: &ArrayGeom, disk: DiskId) -> bool {
        if ctx.is_unresponsive(disk) {
            return true;
        }
        let q = ctx.inflight(disk);
        if q < self.queue_min {
            return false;
        }
        let g = disk.index() / geo.width;
        let (mut sum, mut n) = (0u64, 0u64);
        for d in geo
            .group_disks(g)
            .filter(|&d| d != disk && !ctx.is_failed(d))
        {
            sum += ctx.inflight(d) as u64;
            n += 1;
        }
        let mean = if n == 0 { 0.0 } else { sum as f64 / n as f64 };
        q as f64 >= self.queue_factor * mean
    }
}

pub fn build(cfg: &BaselineConfig) -> Result<InPlace, String> {
    let geo = cfg.geometry()?;
    let (vols, rows) = place_volumes(&geo, &cfg.volumes, true);
    cfg.check_rows(&geo, rows)?;
    let core = RaidCore::new(
        geo,
        ReadPolicy::Tolerant(cfg.toleraid.clone()),
        cfg.raid5.batch_delay_ns,
    );
    Ok(InPlace::new("toleraid", cfg.level_name(), core, vols, cfg))
}
