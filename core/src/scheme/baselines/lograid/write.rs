//! User writes, trims and write-zeroes: appending to the log, acknowledging, failing for space.

use super::{Job, LogRaid, NO_SPACE, PS, Slot};
use crate::engine::api::{Data, ReqError};
use crate::engine::ctx::Ctx;
use crate::scheme::baselines::sparse::NONE;
use crate::types::PAGE_SIZE;

impl LogRaid {
    // ------------------------------------------------------------------ writes

    pub(super) fn start_write(&mut self, ctx: &mut Ctx, h: u64) {
        let (unmap, vol, offset, len) = match self.jobs.get(h) {
            Some(Job::Write {
                unmap,
                vol,
                offset,
                len,
                ..
            }) => (*unmap, *vol, *offset, *len),
            _ => unreachable!(),
        };
        if unmap {
            let base = self.vols[vol].base + offset / PAGE_SIZE;
            for i in 0..len / PAGE_SIZE {
                self.remap((base + i) as u32, NONE);
            }
            self.finish_write(ctx, h);
            self.kick(ctx);
            return;
        }
        if !self.append_write(ctx, h) {
            self.waiters.push_back(h);
            self.check_stuck(ctx);
        }
    }

    /// Append what is left of a user write. False: blocked for space.
    pub(super) fn append_write(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        loop {
            let (vol, offset, len, appended, fua) = match self.jobs.get(h) {
                Some(Job::Write {
                    vol,
                    offset,
                    len,
                    appended,
                    fua,
                    ..
                }) => (*vol, *offset, *len, *appended, *fua),
                _ => unreachable!(),
            };
            let total = (len / PAGE_SIZE) as u32;
            if appended == total {
                if fua
                    && self
                        .open
                        .as_ref()
                        .is_some_and(|o| o.writers.iter().any(|w| w.0 == h))
                {
                    self.seal(ctx);
                }
                return true;
            }
            if !self.ensure_open(ctx, false) {
                return false;
            }
            let lpa = (self.vols[vol].base + offset / PAGE_SIZE + appended as u64) as u32;
            let page: Option<Vec<u8>> = match self.jobs.get(h) {
                Some(Job::Write {
                    data: Some(Data::Bytes(b)),
                    ..
                }) => Some(b[appended as usize * PS..(appended as usize + 1) * PS].to_vec()),
                _ => None,
            };
            if let Some(Job::Write {
                appended,
                outstanding,
                ..
            }) = self.jobs.get_mut(h)
            {
                *appended += 1;
                *outstanding += 1;
            }
            self.push_page(
                ctx,
                Slot {
                    lpa,
                    src: NONE,
                    src_gen: 0,
                },
                page.as_deref(),
                Some(h),
                fua,
            );
        }
    }

    pub(super) fn finish_write(&mut self, ctx: &mut Ctx, h: u64) {
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

    /// No free segment, nothing that could free one: fail the waiting writes.
    pub(super) fn check_stuck(&mut self, ctx: &mut Ctx) {
        if self.space.free_count() > self.reserve
            || self.cleaning > 0
            || self.space.cleanable() > 0
            || self.inflight_segs > 0
            || !self.sealed.is_empty()
            || self.open.is_some()
            || !self.core.is_idle()
        {
            return;
        }
        while let Some(h) = self.waiters.pop_front() {
            // Pages already appended are being written; the rest never will be. The write
            // fails once the appended ones are back.
            let Some(Job::Write {
                err,
                appended,
                len,
                outstanding,
                ..
            }) = self.jobs.get_mut(h)
            else {
                unreachable!()
            };
            err.get_or_insert_with(|| NO_SPACE.into());
            *appended = (*len / PAGE_SIZE) as u32;
            if *outstanding == 0 {
                self.finish_write(ctx, h);
            }
        }
    }
}
