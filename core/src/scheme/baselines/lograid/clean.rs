//! The cleaner: greedy victims, their live pages read and appended again.

use super::{Job, LogRaid, PS, Slot};
use crate::engine::ctx::Ctx;
use crate::scheme::baselines::array::Outcome;
use crate::types::Nanos;

impl LogRaid {
    // ------------------------------------------------------------------ cleaning

    pub(super) fn kick_cleaning(&mut self, ctx: &mut Ctx) {
        while self.cleaning < self.cfg.cleaners.max(1) && self.space.free_count() < self.low_water {
            let Some(seg) = self.space.pick_victim() else {
                break;
            };
            let sp = self.seg_pages();
            let ppb = self.core.geo.ppb as u32;
            let map = &self.map;
            let pages = self
                .space
                .still_live(seg, seg * sp, |lpa| map.get(lpa as u64));
            let mut runs: Vec<(usize, u32, u32)> = Vec::new(); // (index, first slot, count)
            for (k, &(slot, _)) in pages.iter().enumerate() {
                if let Some(last) = runs.last_mut()
                    && last.1 + last.2 == slot
                    && last.1 / ppb == slot / ppb
                {
                    last.2 += 1;
                    continue;
                }
                runs.push((k, slot, 1));
            }
            self.cleaning += 1;
            self.space.pin(seg);
            let h = self.jobs.insert(Job::Clean {
                seg,
                data: (!ctx.size_only).then(|| vec![0u8; pages.len() * PS]),
                pages,
                runs: runs.iter().map(|r| r.0).collect(),
                pending: runs.len() as u32,
                failed: false,
                appended: 0,
            });
            for (k, &(_, slot, count)) in runs.iter().enumerate() {
                self.core.read(
                    ctx,
                    (h, k as u32),
                    seg as u64,
                    (slot / ppb) as usize,
                    (slot % ppb) as usize,
                    count as usize,
                    true,
                );
            }
        }
    }

    pub(super) fn clean_read_done(&mut self, ctx: &mut Ctx, h: u64, part: u32, out: Outcome) {
        let Some(Job::Clean {
            data,
            runs,
            pending,
            failed,
            ..
        }) = self.jobs.get_mut(h)
        else {
            unreachable!()
        };
        match out {
            Ok(Some(b)) => {
                if let Some(d) = data {
                    let o = runs[part as usize] * PS;
                    d[o..o + b.len()].copy_from_slice(&b);
                }
            }
            Ok(None) => {}
            Err(_) => *failed = true,
        }
        *pending -= 1;
        if *pending > 0 {
            return;
        }
        let (seg, failed) = match self.jobs.get(h) {
            Some(Job::Clean { seg, failed, .. }) => (*seg, *failed),
            _ => unreachable!(),
        };
        self.space.unpin(seg);
        if failed {
            self.jobs.remove(h);
            self.cleaning -= 1;
            self.space.unvictim(seg);
        } else if !self.append_clean(ctx, h) {
            self.gc_waiters.push_back(h);
        }
        // The next victim, blocked writers, the partial segment of copies.
        self.kick(ctx);
    }

    /// Append the cleaner's pages that are still live. False: blocked for space.
    pub(super) fn append_clean(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        let sp = self.seg_pages();
        loop {
            let (seg, slot, lpa, idx, total) = match self.jobs.get(h) {
                Some(Job::Clean {
                    seg,
                    pages,
                    appended,
                    ..
                }) => {
                    if *appended == pages.len() {
                        self.jobs.remove(h);
                        self.cleaning -= 1;
                        self.victims_cleaned += 1;
                        return true;
                    }
                    let (slot, lpa) = pages[*appended];
                    (*seg, slot, lpa, *appended, pages.len())
                }
                _ => unreachable!(),
            };
            debug_assert!(idx < total);
            let src = seg * sp + slot;
            if self.map.get(lpa as u64) != src {
                if let Some(Job::Clean { appended, .. }) = self.jobs.get_mut(h) {
                    *appended += 1;
                }
                continue;
            }
            if !self.ensure_open(ctx, true) {
                return false;
            }
            let page = match self.jobs.get(h) {
                Some(Job::Clean { data: Some(d), .. }) => {
                    Some(d[idx * PS..(idx + 1) * PS].to_vec())
                }
                _ => None,
            };
            if let Some(Job::Clean { appended, .. }) = self.jobs.get_mut(h) {
                *appended += 1;
            }
            let src_gen = self.space.generation(seg);
            self.push_page(
                ctx,
                Slot { lpa, src, src_gen },
                page.as_deref(),
                None,
                false,
            );
        }
    }

    /// When the flush timer seals the open segment. A segment holding only the cleaner's pages
    /// is not padded while the cleaner is still gathering: padding it would write as many
    /// segments as cleaning frees, and cleaning would never get ahead.
    pub(super) fn seal_deadline(&self) -> Option<Nanos> {
        let o = self.open.as_ref().filter(|o| o.fill > 0)?;
        if o.writers.is_empty() && self.cleaning_wanted() {
            return None;
        }
        Some(o.first_at + self.cfg.flush_delay_ns)
    }

    pub(super) fn cleaning_wanted(&self) -> bool {
        self.space.free_count() < self.low_water
            && (self.cleaning > 0 || self.space.cleanable() > 0)
    }
}
