//! RAID50: a RAID0 over the RAID5 groups. The RAID0 chunk is one full data stripe of a group, so
//! consecutive stripes of the volume go to consecutive groups (global stripe s: group s mod g).
//! Several volumes are concatenated, each starting on a stripe of group 0, so every volume is
//! spread over every group: the shared-everything organisation whose interference the paper
//! measures.

use super::array::{RaidCore, ReadPolicy};
use super::config::BaselineConfig;
use super::geom::place_volumes;
use super::inplace::InPlace;

pub fn build(cfg: &BaselineConfig) -> Result<InPlace, String> {
    let geo = cfg.geometry()?;
    let (vols, rows) = place_volumes(&geo, &cfg.volumes, false);
    cfg.check_rows(&geo, rows)?;
    let core = RaidCore::new(geo, ReadPolicy::Plain, cfg.raid5.batch_delay_ns);
    Ok(InPlace::new("raid50", cfg.level_name(), core, vols, cfg))
}
