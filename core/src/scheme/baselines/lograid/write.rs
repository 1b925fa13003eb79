//! User writes, trims and write-zeroes: appending to the log, acknowledging, failing for space.

use super::{Job, LogRaid, Slot};
use crate::engine::ctx::Ctx;
use crate::scheme::baselines::logbase::{PS, UserWrite};

impl LogRaid {
    pub(super) fn start_write(&mut self, ctx: &mut Ctx, h: u64) {
        let w = self.user_write(h);
        if w.unmaps() {
            let (vol, first, pages) = (w.vol, w.first_page(), w.pages() as u64);
            self.log.unmap(vol, first, pages);
            self.finish_write(ctx, h);
            self.kick(ctx);
            return;
        }
        if !self.append_write(ctx, h) {
            self.log.waiters.push_back(h);
            self.check_stuck(ctx);
        }
    }

    fn user_write(&self, h: u64) -> &UserWrite {
        match self.jobs.get(h) {
            Some(Job::Write { w, .. }) => w,
            _ => unreachable!(),
        }
    }

    /// Append what is left of a user write. False: blocked for space.
    pub(super) fn append_write(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        loop {
            let Some(Job::Write { w, appended, .. }) = self.jobs.get(h) else {
                unreachable!()
            };
            let (appended, fua) = (*appended, w.fua);
            if appended == w.pages() {
                if fua
                    && self
                        .open
                        .as_ref()
                        .is_some_and(|o| o.writers.iter().any(|w| w.job == h))
                {
                    self.seal(ctx);
                }
                return true;
            }
            if !self.ensure_open(ctx, false) {
                return false;
            }
            let w = self.user_write(h);
            let lpa = self.log.lpa(w.vol, w.first_page() + appended as u64);
            let page: Option<Vec<u8>> = w.bytes_from(appended).map(|b| b[..PS].to_vec());
            if let Some(Job::Write {
                appended,
                outstanding,
                ..
            }) = self.jobs.get_mut(h)
            {
                *appended += 1;
                *outstanding += 1;
            }
            self.push_page(ctx, Slot { lpa, from: None }, page.as_deref(), Some(h), fua);
        }
    }

    pub(super) fn finish_write(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Write { w, .. }) = self.jobs.remove(h) else {
            unreachable!()
        };
        w.finish(ctx, &mut self.locks, &mut self.ready);
    }

    /// No free segment, nothing that could free one: fail the waiting writes.
    pub(super) fn check_stuck(&mut self, ctx: &mut Ctx) {
        if self.log.may_free_space()
            || self.inflight_segs > 0
            || !self.sealed.is_empty()
            || self.open.is_some()
            || !self.core.is_idle()
        {
            return;
        }
        while let Some(h) = self.log.waiters.pop_front() {
            // Pages already appended are being written; the rest never will be. The write
            // fails once the appended ones are back.
            let Some(Job::Write {
                w,
                appended,
                outstanding,
            }) = self.jobs.get_mut(h)
            else {
                unreachable!()
            };
            w.no_space();
            *appended = w.pages();
            if *outstanding == 0 {
                self.finish_write(ctx, h);
            }
        }
    }
}
