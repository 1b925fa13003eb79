//! Replacing a failed member while stripes still hold data on it.
//!
//! The rebuild normally empties a failed member first (rebuild.rs): its columns go to donor
//! blocks, its replicated blocks to stripes clear of it, and only then may a blank device
//! take its slot. That can not finish when no stripe can be whole without the member (a
//! volume as wide as the surviving members), and it may be slow on a full pool. A blank
//! device may then take the slot at once: every column the member held for a stripe in use
//! becomes *stale* (space/stale.rs), the member is healthy again (new writes go to it), and
//! the same rebuild sweep restores what is stale, writing RAID columns in place onto the
//! new device.

use super::FusionScheme;
use crate::engine::ctx::Ctx;
use crate::space::StripeState;
use crate::types::{DiskId, Nanos};

impl FusionScheme {
    /// A blank device took the slot of failed member `disk` while stripes still hold data
    /// there: mark every column of a stripe in use on it stale and restart the rebuild.
    ///
    /// No `MemberReplaced` record is written: the checkpoint forced next holds the stale
    /// columns, the failed members without `disk` and its new slot `generation` together. A crash before it is durable
    /// recovers the member as failed (the device must be put in again); a record alone
    /// would bring it back healthy with no stale columns, and reads would trust the blank
    /// device.
    pub(super) fn replace_in_place(&mut self, ctx: &mut Ctx, disk: DiskId, generation: u32) {
        self.failed_members.remove(&(disk.0 as u16));
        crate::meta::image::set_generation(&mut self.slot_generations, disk.0 as u16, generation);
        for v in &mut self.vols {
            for s in 0..v.zone.stripes() as u32 {
                // A free stripe holds nothing; a donor's lent columns are the stale columns
                // of the stripes that borrowed them (`Zone::disk` follows remaps).
                if matches!(v.stripes.state(s), StripeState::Free | StripeState::Donor) {
                    continue;
                }
                // The tabulated layout answers without a placement per column.
                let mask = v
                    .zone
                    .stripe_disk_list(s)
                    .iter()
                    .enumerate()
                    .filter(|&(_, &d)| d == disk)
                    .fold(0u32, |m, (c, _)| m | 1 << c);
                v.stripes.stale_columns_mut().mark(s, mask);
            }
        }
        self.begin_rebuild(ctx.now);
    }

    /// After recovery: stale columns are left (a restart cut a rebuild in place short, its
    /// progress not durable): the rebuild starts over, or they would stay stale for good.
    pub(super) fn resume_rebuild_in_place(&mut self, now: Nanos) {
        if self
            .vols
            .iter()
            .any(|v| !v.stripes.stale_columns().is_empty())
        {
            self.begin_rebuild(now);
        }
    }
}
