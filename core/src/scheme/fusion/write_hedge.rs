//! Hedged writes. Redirection (paper §4.3) keeps new writes off a member once the detector
//! marks it unresponsive, but a write already queued there waits out the whole stall: a
//! consumer drive's blocking GC pass holds it for 135-270 ms. The paper suggests hedged
//! requests for the damage done before detection; for writes that means placing the
//! request a second time. A write with a device write still outstanding on an unresponsive
//! member, issued at least `write_hedge_ns` ago, is placed again as a *twin* job (the
//! placement policy keeps it off unresponsive members), once per request. Whichever
//! placement lands first maps its blocks and answers; the other is abandoned: its device
//! writes still land (its stripes and slots stay taken until then, so nothing reuses them
//! under a late write), and then everything it took is released, never mapped. The
//! journal only ever sees the winner's mapping, so crash recovery is the same as for any
//! write in flight. Stuck writes are looked for at the engine's ticks, which the detector's
//! time slots bring while a member has requests outstanding.

use super::FusionScheme;
use super::jobs::{Job, JobId, WriteJob};
use crate::engine::ctx::Ctx;
use crate::types::DiskId;

impl FusionScheme {
    /// Place a second time every write stuck on an unresponsive member long enough.
    pub(super) fn hedge_writes(&mut self, ctx: &mut Ctx) {
        let Some(delay) = self.cfg.write_hedge_ns else {
            return;
        };
        if !any_unresponsive(ctx) {
            return;
        }
        let due: Vec<JobId> = self
            .jobs
            .handles()
            .into_iter()
            .filter(|&h| match self.jobs.get(h) {
                Some(Job::Write(w)) => {
                    w.issued_at + delay <= ctx.now && may_hedge(w) && stuck(ctx, w)
                }
                _ => false,
            })
            .collect();
        for h in due {
            self.hedge_write(ctx, h);
        }
    }

    fn hedge_write(&mut self, ctx: &mut Ctx, h: JobId) {
        let w = self.write_job(h);
        w.hedged = true;
        let mut twin = WriteJob::new(
            w.vol,
            w.id,
            w.at,
            w.fua,
            w.offset,
            w.kind.clone(),
            w.ub_first..w.ub_end,
        );
        // No room now means no hedge (`may_wait` stays on, so the planner does not fall back
        // to a padded stripe): the first placement still carries the write.
        twin.tries = w.tries;
        twin.riders = w.riders.clone();
        twin.twin = Some(h);
        twin.hedged = true;
        let t = self.jobs.insert(Job::Write(twin));
        if self.place_twin(ctx, t) {
            self.write_job(h).twin = Some(t);
            ctx.stats.hedged_writes += 1;
        } else {
            self.jobs.remove(t);
        }
    }

    /// Placement `winner` of a hedged request landed first: its twin `loser` is abandoned
    /// (released when its own device writes have landed).
    pub(super) fn abandon(&mut self, ctx: &mut Ctx, loser: JobId, winner: JobId) {
        let won_at = self.write_job(winner).issued_at;
        let w = self.write_job(loser);
        assert!(
            w.pending > 0,
            "a twin in flight has device writes outstanding"
        );
        w.twin = None;
        w.abandoned = true;
        if won_at > w.issued_at {
            ctx.stats.hedged_writes_won += 1;
        }
    }
}

fn any_unresponsive(ctx: &Ctx) -> bool {
    (0..ctx.disk_count()).any(|d| ctx.is_unresponsive(DiskId(d as u32)))
}

/// In flight, carrying its request alone, and not hedged before.
fn may_hedge(w: &WriteJob) -> bool {
    w.pending > 0 && !w.abandoned && !w.hedged && w.twin.is_none()
}

/// Some device write of `w` has not landed and waits on an unresponsive member.
fn stuck(ctx: &Ctx, w: &WriteJob) -> bool {
    w.io_disks
        .iter()
        .zip(&w.landed)
        .any(|(&d, &landed)| !landed && ctx.is_unresponsive(d))
}
