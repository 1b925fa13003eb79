//! User writes, trims and write-zeroes: head choice, placement, acknowledging, failing for space.

use super::place::Placement;
use super::{Job, RaidM, VolAt};
use crate::engine::api::IoResult;
use crate::engine::ctx::Ctx;

impl RaidM {
    pub(super) fn start_write(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Write { w, .. }) = self.jobs.get(h) else {
            unreachable!()
        };
        let VolAt { grp, idx } = self.vols[w.vol];
        if w.unmaps() {
            let (first, pages) = (w.first_page(), w.pages() as u64);
            self.groups[grp].log.unmap(idx, first, pages);
            self.finish_write(ctx, h);
            self.kick(ctx, grp);
            return;
        }
        let turn = self.groups[grp].heads.turn();
        if let Some(Job::Write { head, .. }) = self.jobs.get_mut(h) {
            *head = turn;
        }
        if self.place_write(ctx, h) {
            self.maybe_complete_write(ctx, h);
        } else {
            self.groups[grp].log.waiters.push_back(h);
            self.check_stuck(ctx, grp);
        }
    }

    /// Place what is left of a user write. False: blocked for space.
    pub(super) fn place_write(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        loop {
            let Some(Job::Write {
                w, placed, head, ..
            }) = self.jobs.get(h)
            else {
                unreachable!()
            };
            let (placed, head) = (*placed, *head);
            let total = w.pages();
            if placed == total {
                return true;
            }
            let VolAt { grp, idx } = self.vols[w.vol];
            let lpa = self.groups[grp].log.lpa(idx, w.first_page()) + placed;
            let bytes: Option<Vec<u8>> = w.bytes_from(placed).map(|b| b.to_vec());
            let fua = w.fua;
            let p = Placement {
                grp,
                head,
                lpa,
                count: total - placed,
                src: None,
                data: bytes.as_deref(),
                fua,
            };
            let Some(run) = self.place(ctx, h, p) else {
                return false;
            };
            if let Some(Job::Write { placed, .. }) = self.jobs.get_mut(h) {
                *placed += run.count;
            }
        }
    }

    pub(super) fn write_io_done(&mut self, ctx: &mut Ctx, h: u64, part: u32, result: IoResult) {
        self.copy_io_done(h, part, &result);
        self.maybe_complete_write(ctx, h);
    }

    /// Once every page is placed and every copy is back (each run switched the mapping as it
    /// settled): answer.
    pub(super) fn maybe_complete_write(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Write {
            w, placed, copies, ..
        }) = self.jobs.get(h)
        else {
            unreachable!()
        };
        if copies.pending > 0 || *placed < w.pages() {
            return;
        }
        let grp = self.vols[w.vol].grp;
        self.finish_write(ctx, h);
        self.kick(ctx, grp);
    }

    fn finish_write(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Write { w, .. }) = self.jobs.remove(h) else {
            unreachable!()
        };
        w.finish(ctx, &mut self.locks, &mut self.ready);
    }

    /// No free MU, nothing in the group that could free one: fail the waiting writes.
    pub(super) fn check_stuck(&mut self, ctx: &mut Ctx, grp: usize) {
        let busy = self.jobs_in_group(grp);
        if self.groups[grp].log.may_free_space() || busy {
            return;
        }
        while let Some(h) = self.groups[grp].log.waiters.pop_front() {
            let Some(Job::Write { w, placed, .. }) = self.jobs.get_mut(h) else {
                unreachable!()
            };
            // Runs already placed settle on their own; the rest is never placed.
            w.no_space();
            *placed = w.pages();
            self.maybe_complete_write(ctx, h);
        }
    }

    /// Whether any device I/O of the group is in flight (it could free space).
    fn jobs_in_group(&self, grp: usize) -> bool {
        self.jobs
            .handles()
            .into_iter()
            .any(|h| match self.jobs.get(h) {
                Some(Job::Write { w, copies, .. }) => {
                    self.vols[w.vol].grp == grp && copies.pending > 0
                }
                Some(Job::Read { grp: g, .. }) | Some(Job::Clean { grp: g, .. }) => *g == grp,
                _ => false,
            })
    }
}
