//! ToleRAID (Kim et al.): RAID5 arrays whose reads of a block on a busy member are rebuilt from
//! the rest of the stripe instead of queueing behind the member; writes are unchanged. Here it
//! is the 4-RAID5 layout (one array per volume) with [`ReadPolicy::Tolerant`].
//!
//! A member counts as busy when the engine's spike detector marks it unresponsive, or when its
//! queue is much deeper than its group peers': at least `queue_min` I/Os in flight and at least
//! `queue_factor` times the peers' mean. A read is only redirected when no other member of the
//! stripe is busy or failed beyond what parity can rebuild (see `RaidCore::read`).

use super::array::{RaidCore, ReadPolicy};
use super::config::BaselineConfig;
use super::geom::place_volumes;
use super::inplace::InPlace;

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
