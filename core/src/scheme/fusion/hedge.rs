//! Hedged reads (paper §6, an option): a replicated read still out after the hedge delay
//! gets a second read of another copy; the first to deliver serves the part. A user read of
//! a RAID block still out after the RAID hedge delay is rebuilt from the rest of its stripe
//! meanwhile (`raid_hedge.rs`): the direct read and the rebuild race, the first to deliver
//! serves the part.

use super::FusionScheme;
use super::jobs::{Job, PartMode};
use super::read::{DIRECT, PART_STRIDE};
use crate::engine::api::DevOp;
use crate::engine::ctx::Ctx;
use crate::policy::ReadRouting;
use crate::types::{Nanos, PAGE_SIZE};
use crate::volume::Loc;

impl FusionScheme {
    /// Issue a second read of slow replicated parts to another copy (hedged request).
    pub(super) fn hedge_reads(&mut self, ctx: &mut Ctx) {
        self.hedge_raid_reads(ctx);
        let Some(hedge) = self.cfg.hedge_ns else {
            return;
        };
        for h in self.jobs.handles() {
            let Some(Job::Read(job)) = self.jobs.get(h) else {
                continue;
            };
            let vol = job.vol;
            let due: Vec<usize> = job
                .parts
                .iter()
                .enumerate()
                .filter(|(_, p)| {
                    matches!(p.mode, PartMode::Direct { .. })
                        && !p.hedged
                        && p.inflight == 1
                        && matches!(p.loc, Loc::Rep(_))
                        && p.issued_at + hedge <= ctx.now
                })
                .map(|(i, _)| i)
                .collect();
            for i in due {
                let (loc, at, count, cur) = {
                    let Some(Job::Read(job)) = self.jobs.get(h) else {
                        unreachable!()
                    };
                    let p = &job.parts[i];
                    let PartMode::Direct { stripe } = p.mode else {
                        unreachable!()
                    };
                    (p.loc, p.at, p.count, stripe)
                };
                let Loc::Rep(key) = loc else { unreachable!() };
                let v = &mut self.vols[vol];
                let Some(r) = v.pairs.lookup(&v.zone, key) else {
                    continue;
                };
                let copies = v.pairs.copies(r);
                if !copies.iter().any(|&(s, _)| s == cur) {
                    // The set was converted and its first stripe reused by a new set under
                    // the same key: the copies found are another block's (the read pins
                    // `cur`, so no new set can contain it).
                    continue;
                }
                let routing = &self.policy.routing;
                let other = copies.iter().enumerate().position(|(ci, &(s, c))| {
                    s != cur
                        && !v.offloaded.in_log(r.set, r.slot, ci)
                        && !v.column_lost(ctx, s, c)
                        && routing.may_hedge_to(&ctx.members(), v.zone.disk(s, c))
                });
                let Some(ci) = other else { continue };
                let (s, c) = copies[ci];
                let code = DIRECT + ci as u32;
                let (disk, off) = v.zone.device_offset(s, c, at as u64 * PAGE_SIZE);
                v.stripes.pin(s);
                ctx.issue(
                    disk,
                    DevOp::Read {
                        offset: off,
                        len: count as u64 * PAGE_SIZE,
                    },
                    h.tag(i as u32 * PART_STRIDE + code),
                    false,
                );
                ctx.stats.hedged_reads += 1;
                let Some(Job::Read(job)) = self.jobs.get_mut(h) else {
                    unreachable!()
                };
                let p = &mut job.parts[i];
                p.hedged = true;
                p.inflight += 1;
                p.pins.push((code, s));
            }
        }
    }

    /// The next time a replicated read becomes due for hedging. Reads already past due were
    /// hedged or could not be (no healthy other copy) at the last tick; they do not count, or
    /// the timer would fire again and again at the same instant.
    pub(super) fn hedge_deadline(&self, now: Nanos) -> Option<Nanos> {
        let raid = self.raid_hedge_deadline(now);
        let Some(hedge) = self.cfg.hedge_ns else {
            return raid;
        };
        let mut best: Option<Nanos> = raid;
        for h in self.jobs.handles() {
            if let Some(Job::Read(job)) = self.jobs.get(h) {
                for p in &job.parts {
                    if matches!(p.mode, PartMode::Direct { .. })
                        && !p.hedged
                        && matches!(p.loc, Loc::Rep(_))
                    {
                        let t = p.issued_at + hedge;
                        if t <= now {
                            continue;
                        }
                        best = Some(best.map_or(t, |b: Nanos| b.min(t)));
                    }
                }
            }
        }
        best
    }
}
