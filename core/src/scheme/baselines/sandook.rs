//! Sandook (NSDI'26; `mit-sandook/sandook`, MIT) as a baseline: a log-structured store of
//! 4 KiB pages, two replicas each, over every member, with its three mechanisms from
//! [`crate::steer`]: profile-guided weights, read/write segregation with rotation, and
//! per-member AIMD congestion control.
//!
//! It is the mirrored log of [`super::raidm`] (units of two chunks, heads appending in place,
//! a greedy cleaner) with one group over every member and a steered layout: a unit's two
//! chunks go, when it opens, to two write-mode members drawn by weight without replacement,
//! and a read goes to the copy on a read-mode member (by weight), a write-mode one only when
//! both copies are in write mode. Sandook's own code leaves cleaning out; a block device that
//! runs for ever needs it, so the cleaner here is 4-RAIDM's, and its writes obey the write set
//! like any other.
//!
//! Without curves (`SandookConfig::curves`), every member counts as equal; the write set is
//! sized with [`crate::steer::steering::UNPROFILED_PEAK_IOPS`] per member.

use super::config::BaselineConfig;
use super::raidm::RaidM;
use crate::steer::Steering;

/// The replicas of every page.
pub const REPLICAS: usize = 2;

/// Most members: the log is one group over every member, and a group's members are a bit
/// mask of 32.
pub const MAX_MEMBERS: usize = 32;

/// The pool's size, checked before anything is derived from it (a width was never given:
/// the group is the whole pool).
fn check_members(cfg: &BaselineConfig) -> Result<(), String> {
    if cfg.disks < REPLICAS {
        return Err(format!("needs at least {REPLICAS} members"));
    }
    if cfg.disks > MAX_MEMBERS {
        return Err(format!(
            "at most {MAX_MEMBERS} members ({} given): its log mirrors over one \
             group of every member, at most {MAX_MEMBERS} wide",
            cfg.disks
        ));
    }
    Ok(())
}

pub fn build(cfg: &BaselineConfig) -> Result<RaidM, String> {
    check_members(cfg)?;
    let sc = &cfg.sandook;
    if sc.curves.len() > cfg.disks {
        return Err(format!(
            "{} curve sets for {} members",
            sc.curves.len(),
            cfg.disks
        ));
    }
    let mut curves = sc.curves.clone();
    curves.resize(cfg.disks, None);
    RaidM::steered(cfg, Steering::new(sc.steer.clone(), curves, REPLICAS))
}

/// Rows per member the log needs: the volumes, the spare share and the cleaner's reserve,
/// mirrored, over every member but one, so the log still fits when a member is lost (there is
/// no rebuild: the survivors hold every unit's remaining copy and take all new writes).
pub fn rows_needed(cfg: &BaselineConfig) -> Result<u64, String> {
    check_members(cfg)?;
    let mut one = cfg.clone();
    one.group_width = cfg.disks;
    one.groups = Some(1);
    let rows = super::raidm::rows_needed(&one)?;
    let n = cfg.disks as u64;
    Ok((rows * n).div_ceil(n.saturating_sub(1).max(1)))
}
