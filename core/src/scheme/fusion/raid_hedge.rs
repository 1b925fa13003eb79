//! Hedged RAID reads: a user read of a RAID block still out after `raid_hedge_ns` is also
//! rebuilt from the other columns of its stripe, and whichever delivers first serves the
//! part (the other's reads are dropped as they come back, `read_done`). A replicated block
//! has a second copy to hedge to (`hedge.rs`); a RAID block's only other source is its
//! stripe, so the hedge costs a read on each other column, and it is sent only while every
//! one of them is on a member read routing may hedge to.
//!
//! Why: a read that reached a member just before a stall (a GC pass, a buffer flush, an FTL
//! metadata write) waits for the whole stall; redirection (paper §4.3) only moves reads
//! issued after the spike detector marked the member. The paper (§6) proposes hedged
//! requests; this is the same idea for the blocks that have no copy.

use super::FusionScheme;
use super::jobs::{Job, JobId, PartMode, ReadPart, ReadPurpose};
use super::read::{PartAt, missing_columns, rebuild_reads, skip_unneeded};
use crate::engine::ctx::Ctx;
use crate::policy::ReadRouting;
use crate::types::{Nanos, PAGE_SIZE};
use crate::volume::Loc;

/// Shortest interval between two looks at the same unhedged read.
const MIN_RECHECK_NS: Nanos = 50_000;

/// A part a RAID hedge may still be sent for: a direct read of a RAID block, alone in
/// flight, not hedged yet, with no copy known bad.
fn hedgeable(p: &ReadPart) -> bool {
    matches!(p.mode, PartMode::Direct { .. })
        && matches!(p.loc, Loc::Raid(_))
        && !p.hedged
        && p.inflight == 1
        && p.bad == 0
}

impl FusionScheme {
    /// Rebuild the user reads of RAID blocks that have been out longer than the delay.
    pub(super) fn hedge_raid_reads(&mut self, ctx: &mut Ctx) {
        let Some(delay) = self.cfg.raid_hedge_ns else {
            return;
        };
        for h in self.jobs.handles() {
            let Some(Job::Read(job)) = self.jobs.get(h) else {
                continue;
            };
            if !matches!(job.purpose, ReadPurpose::User { .. }) {
                continue;
            }
            let due: Vec<usize> = job
                .parts
                .iter()
                .enumerate()
                .filter(|(_, p)| hedgeable(p) && p.issued_at + delay <= ctx.now)
                .map(|(i, _)| i)
                .collect();
            for i in due {
                self.hedge_raid_part(ctx, h, i);
            }
        }
    }

    /// Send the rebuild of part `i` of read `h` next to its direct read, when parity can
    /// rebuild it and every other column's member may take a hedge.
    fn hedge_raid_part(&mut self, ctx: &mut Ctx, h: JobId, i: usize) {
        let (at, loc) = {
            let job = self.read_job(h);
            let p = &job.parts[i];
            let at = PartAt {
                job: h,
                part: i,
                vol: job.vol,
                page_off: p.at as u64 * PAGE_SIZE,
                len: p.count as u64 * PAGE_SIZE,
                background: false,
                bad: p.bad,
            };
            (at, p.loc)
        };
        let Loc::Raid(f) = loc else {
            unreachable!("only RAID parts are hedged here")
        };
        let v = &mut self.vols[at.vol];
        let (s, c) = v.zone.split(f);
        let members = ctx.members();
        // Only when the member looks stalled: the spike detector sees a request on it older
        // than its window (milliseconds). A read that is merely slow is queued behind
        // ordinary load, which a hedge would only add to.
        let d = v.zone.disk(s, c);
        if members.stragglers(d) == 0 && !members.unresponsive(d) {
            return;
        }
        let mut missing = missing_columns(ctx, v, s, c);
        if missing.len() > v.zone.nparity() {
            return;
        }
        let routing = &self.policy.routing;
        skip_unneeded(&v.zone, s, &mut missing, |d| {
            !routing.may_hedge_to(&members, d)
        });
        if !(0..v.zone.width())
            .filter(|x| !missing.contains(x))
            .all(|x| routing.may_hedge_to(&members, v.zone.disk(s, x)))
        {
            return;
        }
        if !self.raid_hedges.spend() {
            return;
        }
        let issued = rebuild_reads(ctx, v, at, s, c, missing);
        ctx.stats.hedged_reads += 1;
        ctx.stats.hedged_raid_reads += 1;
        ctx.stats.reconstructed_reads += 1;
        let p = &mut self.read_job(h).parts[i];
        p.mode = issued.mode;
        p.hedged = true;
        p.inflight += issued.reads;
        p.pins.extend(issued.pins);
    }

    /// The next time a user read of a RAID block is looked at for its hedge: when its delay
    /// is up, then once per delay while it is still out unhedged (its member may not look
    /// stalled yet, or the budget may be empty).
    pub(super) fn raid_hedge_deadline(&self, now: Nanos) -> Option<Nanos> {
        // A zero delay still looks again only every `MIN_RECHECK_NS`, not at every instant.
        let delay = self.cfg.raid_hedge_ns?.max(MIN_RECHECK_NS);
        let mut best: Option<Nanos> = None;
        for h in self.jobs.handles() {
            let Some(Job::Read(job)) = self.jobs.get(h) else {
                continue;
            };
            if !matches!(job.purpose, ReadPurpose::User { .. }) {
                continue;
            }
            for p in job.parts.iter().filter(|p| hedgeable(p)) {
                let waited = now.saturating_sub(p.issued_at);
                let t = p.issued_at + (waited / delay + 1) * delay;
                best = Some(best.map_or(t, |b| b.min(t)));
            }
        }
        best
    }
}
