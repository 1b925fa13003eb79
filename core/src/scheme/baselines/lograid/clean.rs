//! The cleaner: greedy victims, their live pages read and appended again.

use super::{Job, LogRaid, Slot};
use crate::engine::ctx::Ctx;
use crate::scheme::baselines::array::Outcome;
use crate::scheme::baselines::logbase::{NextRun, Victim};
use crate::types::Nanos;

impl LogRaid {
    pub(super) fn kick_cleaning(&mut self, ctx: &mut Ctx) {
        let ppb = self.core.geo.ppb as u32;
        while let Some(v) = self.log.next_victim(self.cfg.cleaners, ppb, ctx.size_only) {
            let (seg, reads) = (v.seg, v.reads.clone());
            let h = self.jobs.insert(Job::Clean(v));
            for (k, r) in reads.iter().enumerate() {
                self.core.read(
                    ctx,
                    (h, k as u32),
                    seg as u64,
                    (r.slot / ppb) as usize,
                    (r.slot % ppb) as usize,
                    r.count as usize,
                    true,
                );
            }
        }
    }

    pub(super) fn clean_read_done(&mut self, ctx: &mut Ctx, h: u64, part: u32, out: Outcome) {
        let Some(Job::Clean(v)) = self.jobs.get_mut(h) else {
            unreachable!()
        };
        match out {
            Ok(Some(b)) => v.put(part as usize, &b),
            Ok(None) => {}
            Err(_) => v.failed = true,
        }
        v.pending -= 1;
        if v.pending > 0 {
            return;
        }
        if !self.log.victim_read(v) {
            self.jobs.remove(h);
        } else if !self.append_clean(ctx, h) {
            self.log.gc_waiters.push_back(h);
        }
        // The next victim, blocked writers, the partial segment of copies.
        self.kick(ctx);
    }

    /// Append the cleaner's pages that are still live. False: blocked for space.
    pub(super) fn append_clean(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        loop {
            let Some(Job::Clean(v)) = self.jobs.get(h) else {
                unreachable!()
            };
            let run = match self.log.next_run(v, 1) {
                NextRun::Done => {
                    self.jobs.remove(h);
                    self.log.cleaning -= 1;
                    self.victims_cleaned += 1;
                    return true;
                }
                NextRun::Dead => {
                    self.victim(h).moved += 1;
                    continue;
                }
                NextRun::Live(run) => run,
            };
            if !self.ensure_open(ctx, true) {
                return false;
            }
            let v = self.victim(h);
            let page = v.bytes(&run);
            v.moved += 1;
            let from = Some(self.log.origin(run.src));
            self.push_page(
                ctx,
                Slot { lpa: run.lpa, from },
                page.as_deref(),
                None,
                false,
            );
        }
    }

    fn victim(&mut self, h: u64) -> &mut Victim {
        match self.jobs.get_mut(h) {
            Some(Job::Clean(v)) => v,
            _ => unreachable!(),
        }
    }

    /// When the flush timer seals the open segment. A segment holding only the cleaner's pages
    /// is not padded while the cleaner is still gathering: padding it would write as many
    /// segments as cleaning frees, and cleaning would never get ahead.
    pub(super) fn seal_deadline(&self) -> Option<Nanos> {
        let o = self.open.as_ref().filter(|o| o.fill > 0)?;
        if o.writers.is_empty() && self.log.cleaning_wanted() {
            return None;
        }
        Some(o.first_at + self.cfg.flush_delay_ns)
    }
}
