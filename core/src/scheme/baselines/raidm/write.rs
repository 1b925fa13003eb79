//! User writes, trims and write-zeroes: head choice, placement, acknowledging, failing for space.

use super::{Job, NO_SPACE, PS, RaidM};
use crate::engine::api::{IoResult, ReqError};
use crate::engine::ctx::Ctx;
use crate::scheme::baselines::sparse::NONE;
use crate::types::PAGE_SIZE;

impl RaidM {
    // ------------------------------------------------------------------ writes

    pub(super) fn start_write(&mut self, ctx: &mut Ctx, h: u64) {
        let (vol, offset, len, unmap) = match self.jobs.get(h) {
            Some(Job::Write {
                vol,
                offset,
                len,
                unmap,
                ..
            }) => (*vol, *offset, *len, *unmap),
            _ => unreachable!(),
        };
        let grp = self.vols[vol].grp;
        if unmap {
            let base = self.vols[vol].base + offset / PAGE_SIZE;
            for i in 0..len / PAGE_SIZE {
                self.remap(grp, (base + i) as u32, NONE);
            }
            self.finish_write(ctx, h);
            self.kick(ctx, grp);
            return;
        }
        let g = &mut self.groups[grp];
        let head = g.next_head;
        g.next_head = (head + 1) % g.heads.len();
        if let Some(Job::Write { head: hd, .. }) = self.jobs.get_mut(h) {
            *hd = head;
        }
        if self.place_write(ctx, h) {
            self.maybe_complete_write(ctx, h);
        } else {
            self.groups[grp].waiters.push_back(h);
            self.check_stuck(ctx, grp);
        }
    }

    /// Place what is left of a user write. False: blocked for space.
    pub(super) fn place_write(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        loop {
            let Some(Job::Write {
                vol,
                offset,
                len,
                placed,
                head,
                fua,
                data,
                ..
            }) = self.jobs.get(h)
            else {
                unreachable!()
            };
            let total = (len / PAGE_SIZE) as u32;
            if *placed == total {
                return true;
            }
            let (vol, placed, head, fua) = (*vol, *placed, *head, *fua);
            let grp = self.vols[vol].grp;
            let lpa = (self.vols[vol].base + offset / PAGE_SIZE) as u32 + placed;
            let bytes: Option<Vec<u8>> = match data {
                Some(d) => d.bytes().map(|b| b[placed as usize * PS..].to_vec()),
                None => (!ctx.size_only).then(|| vec![0u8; (total - placed) as usize * PS]),
            };
            let Some(p) = self.place(
                ctx,
                h,
                grp,
                head,
                false,
                lpa,
                total - placed,
                NONE,
                bytes.as_deref(),
                fua,
                false,
            ) else {
                return false;
            };
            if let Some(Job::Write { placed, .. }) = self.jobs.get_mut(h) {
                *placed += p.count;
            }
        }
    }

    pub(super) fn write_io_done(&mut self, ctx: &mut Ctx, h: u64, part: u32, result: IoResult) {
        self.piece_io_done(h, part, &result);
        self.maybe_complete_write(ctx, h);
    }

    /// Once every page is placed and every copy is back (each piece switched the mapping as it
    /// settled): answer.
    pub(super) fn maybe_complete_write(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Write {
            vol,
            len,
            placed,
            pending,
            ..
        }) = self.jobs.get(h)
        else {
            unreachable!()
        };
        if *pending > 0 || (*placed as u64) < *len / PAGE_SIZE {
            return;
        }
        let grp = self.vols[*vol].grp;
        self.finish_write(ctx, h);
        self.kick(ctx, grp);
    }

    fn finish_write(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Write {
            id,
            at,
            vol,
            offset,
            len,
            err,
            ..
        }) = self.jobs.remove(h)
        else {
            unreachable!()
        };
        self.ready
            .extend(self.locks[vol].release(offset / PAGE_SIZE, (offset + len) / PAGE_SIZE));
        let r = match err {
            None => Ok(None),
            Some(e) if e == NO_SPACE => Err(ReqError::NoSpace),
            Some(e) => Err(ReqError::Io(e)),
        };
        ctx.reply(id, at, r);
    }

    pub(super) fn check_stuck(&mut self, ctx: &mut Ctx, grp: usize) {
        let g = &self.groups[grp];
        let busy = self.jobs_in_group(grp);
        if g.space.free_count() > g.reserve || g.cleaning > 0 || g.space.cleanable() > 0 || busy {
            return;
        }
        while let Some(h) = self.groups[grp].waiters.pop_front() {
            let Some(Job::Write {
                err, placed, len, ..
            }) = self.jobs.get_mut(h)
            else {
                unreachable!()
            };
            // Pieces already placed settle on their own; the rest is never placed.
            err.get_or_insert_with(|| NO_SPACE.into());
            *placed = (*len / PAGE_SIZE) as u32;
            self.maybe_complete_write(ctx, h);
        }
    }

    /// Whether any device I/O of the group is in flight (it could free space).
    fn jobs_in_group(&self, grp: usize) -> bool {
        self.jobs
            .handles()
            .into_iter()
            .any(|h| match self.jobs.get(h) {
                Some(Job::Write { vol, pending, .. }) => self.vols[*vol].grp == grp && *pending > 0,
                Some(Job::Read { grp: g, .. }) | Some(Job::Clean { grp: g, .. }) => *g == grp,
                _ => false,
            })
    }
}
