//! Slow-disk sit-out in the style of OpenZFS's RAID-Z outlier detection, over the 4-RAID5
//! layout. Every device I/O's completion latency feeds a per-member EWMA. Periodically each
//! group is checked: a member whose EWMA exceeds the Tukey fence of its peers,
//! `Q3 + insensitivity * IQR`, and is also at least `min_ratio` times the peers' median, is
//! *sat out* for `sit_out_ns`: its reads are rebuilt from parity while writes still go to it
//! (so redundancy is kept). At most `nparity` members of a group sit out at once, and none while
//! a member of the group has failed.
//!
//! The tracker is the RAID core's read policy ([`super::array::SitOutTracker`]); this file
//! builds the scheme. Thresholds (our choices, the defaults of [`super::config::SitOutConfig`]):
//! EWMA weight 0.1 per completion; checks every 100 ms while I/O completes (no timer when idle);
//! insensitivity 50, OpenZFS's default, which is large because latency distributions are
//! heavy-tailed; the 2x median floor keeps a tiny IQR among identical peers from flagging a disk
//! that is only slightly slower (Tail at Store calls a disk slow when it is more than 2x its
//! peers); sit-out lasts 5 s; a member needs 8 samples before it is judged.

use super::array::{RaidCore, ReadPolicy, SitOutTracker};
use super::config::BaselineConfig;
use super::geom::place_volumes;
use super::inplace::InPlace;

pub fn build(cfg: &BaselineConfig) -> Result<InPlace, String> {
    let geo = cfg.geometry()?;
    let (vols, rows) = place_volumes(&geo, &cfg.volumes, true);
    cfg.check_rows(&geo, rows)?;
    let tracker = SitOutTracker::new(cfg.sitout.clone(), cfg.disks);
    let core = RaidCore::new(geo, ReadPolicy::SitOut(tracker), cfg.raid5.batch_delay_ns);
    Ok(InPlace::new("sitout", cfg.level_name(), core, vols, cfg))
}
