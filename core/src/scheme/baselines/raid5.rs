//! 4-RAID5 (md-like): independent RAID5 (or RAID6) arrays, each over its own fixed group of
//! disks, one volume per array (volume i on group i mod groups; volumes sharing a group are
//! concatenated). With the paper's pool, 29 disks in groups of 7 give four 6+1 arrays over disks
//! 0..28 and disk 28 stays an unused hot spare. Partial-stripe writes choose read-modify-write
//! or reconstruct-write per page row like md (see [`super::array`]); `raid5.batch_delay_ns`
//! enables md's stripe batching delay.

use super::array::{RaidCore, ReadPolicy};
use super::config::BaselineConfig;
use super::geom::place_volumes;
use super::inplace::InPlace;

pub fn build(cfg: &BaselineConfig) -> Result<InPlace, String> {
    let geo = cfg.geometry()?;
    let (vols, rows) = place_volumes(&geo, &cfg.volumes, true);
    cfg.check_rows(&geo, rows)?;
    let core = RaidCore::new(geo, ReadPolicy::Plain, cfg.raid5.batch_delay_ns);
    Ok(InPlace::new("4-raid5", cfg.level_name(), core, vols, cfg))
}
