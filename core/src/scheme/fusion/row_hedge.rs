//! Hedged parity rows. A row waits for every column of its stripe, so a member that stalls
//! holds up every row in flight on it: several times as many writes as the two or three
//! members of a replicated write span. Redirection keeps new rows off the member once the
//! detector marks it unresponsive (rows.rs takes a stripe clear of it), but the detector
//! needs a few slow completions first. So a row whose columns have all landed but one
//! (RAID6: two) is written a second time, as a *twin* row in a stripe clear of the members
//! it waits on, once it has waited `FusionConfig::write_hedge_ns` (or [`ROW_HEDGE_NS`]
//! without hedged writes): the classic hedged request, on the time alone. Whichever row
//! lands first maps its pages and answers; the other is abandoned, its writes land in rows
//! no mapping names (its stripe stays allocated until they have), as for hedged writes
//! (write_hedge.rs).

use super::FusionScheme;
use super::jobs::{Job, JobId, RowJob, RowPart};
use crate::engine::ctx::Ctx;
use crate::types::{DiskId, Nanos};

/// How long a row waits on an unresponsive member before it is hedged when hedged writes
/// are off: rows are hedged whenever they are on, since a stall catches many more of them
/// than of replicated writes.
pub(super) const ROW_HEDGE_NS: Nanos = 400_000;

impl FusionScheme {
    /// Write a second time every row stuck on an unresponsive member long enough.
    pub(super) fn hedge_rows(&mut self, ctx: &mut Ctx) {
        // No row in flight (the usual case at light load): no scan of the jobs.
        if self.cfg.row_ns.is_none() || self.vols.iter().all(|v| v.rows.inflight.is_empty()) {
            return;
        }
        let delay = self.cfg.write_hedge_ns.unwrap_or(ROW_HEDGE_NS);
        let due: Vec<JobId> = self
            .jobs
            .handles()
            .into_iter()
            .filter(|&h| match self.jobs.get(h) {
                Some(Job::Row(r)) => {
                    r.issued_at + delay <= ctx.now && may_hedge(r) && self.stuck(r)
                }
                _ => false,
            })
            .collect();
        for h in due {
            self.hedge_row(ctx, h);
        }
    }

    /// At most parity-many columns of `r` still outstanding: the rest landed long ago, so
    /// those members are slow now (the detector may not have seen it yet).
    fn stuck(&self, r: &RowJob) -> bool {
        let zone = &self.vols[r.vol].zone;
        let outstanding = zone.width() as u32 - r.landed.count_ones();
        (1..=zone.nparity() as u32).contains(&outstanding)
    }

    fn hedge_row(&mut self, ctx: &mut Ctx, h: JobId) {
        let Some(Job::Row(r)) = self.jobs.get_mut(h) else {
            return;
        };
        r.hedged = true;
        let (vol, pages, stripe, landed) = (r.vol, r.pages, r.stripe, r.landed);
        let parts: Vec<RowPart> = r.parts.iter().map(RowPart::again).collect();
        // The open stripe is the stuck one, or clear of the unresponsive members: only a
        // different stripe can help.
        if self.vols[vol].rows.open.is_some_and(|(s, _)| s == stripe) {
            self.close_row_stripe(ctx, vol);
        }
        let zone = &self.vols[vol].zone;
        let slow: Vec<DiskId> = (0..zone.width())
            .filter(|&c| landed & (1 << c) == 0)
            .map(|c| zone.device_offset(stripe, c, 0).0)
            .collect();
        if let Ok(t) = self.launch_row(ctx, vol, pages, parts, Some(h), &slow) {
            if self.jobs.get(t).is_some() {
                let Some(Job::Row(r)) = self.jobs.get_mut(h) else {
                    unreachable!("the hedged row is in flight")
                };
                r.twin = Some(t);
            }
            ctx.stats.hedged_writes += 1;
        }
    }
}

/// In flight, carrying user writes, and neither hedged nor a hedge.
fn may_hedge(r: &RowJob) -> bool {
    r.pending > 0 && !r.parts.is_empty() && !r.abandoned && !r.hedged && r.twin.is_none()
}
