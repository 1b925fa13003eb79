//! The cleaner: greedy MU victims, their live pages read from a live copy and placed again.

use super::{Job, PS, RaidM};
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::types::PAGE_SIZE;

impl RaidM {
    // ------------------------------------------------------------------ cleaning

    pub(super) fn kick_cleaning(&mut self, ctx: &mut Ctx, grp: usize) {
        loop {
            let g = &mut self.groups[grp];
            if g.cleaning >= self.cfg.cleaners.max(1) || g.space.free_count() >= g.low_water {
                return;
            }
            let Some(mu) = g.space.pick_victim() else {
                return;
            };
            let ppb = self.ppb;
            let map = &g.map;
            let pages = g.space.still_live(mu, mu * ppb, |lpa| map.get(lpa as u64));
            g.cleaning += 1;
            g.space.pin(mu);
            let mut runs: Vec<(usize, u32, u32, u8)> = Vec::new();
            for (k, &(slot, _)) in pages.iter().enumerate() {
                if let Some(r) = runs.last_mut()
                    && r.1 + r.2 == slot
                {
                    r.2 += 1;
                    continue;
                }
                runs.push((k, slot, 1, 0));
            }
            let h = self.jobs.insert(Job::Clean {
                grp,
                mu,
                head: 0,
                data: (!ctx.size_only).then(|| vec![0u8; pages.len() * PS]),
                pages,
                runs,
                reading: true,
                failed: false,
                placed: 0,
                pieces: Vec::new(),
                ok: Vec::new(),
                left: Vec::new(),
                pending: 0,
            });
            let n = match self.jobs.get(h) {
                Some(Job::Clean { runs, .. }) => runs.len(),
                _ => unreachable!(),
            };
            if let Some(Job::Clean { pending, .. }) = self.jobs.get_mut(h) {
                *pending = n as u32;
            }
            for i in 0..n {
                self.issue_clean_read(ctx, h, i, 0);
            }
        }
    }

    fn issue_clean_read(&mut self, ctx: &mut Ctx, h: u64, i: usize, from: u8) {
        let (grp, mu, slot, count) = match self.jobs.get(h) {
            Some(Job::Clean { grp, mu, runs, .. }) => (*grp, *mu, runs[i].1, runs[i].2),
            _ => unreachable!(),
        };
        let copy = (from..2).find(|&c| !ctx.is_failed(self.locate(grp, mu, c, slot).0));
        let Some(Job::Clean {
            runs,
            pending,
            failed,
            ..
        }) = self.jobs.get_mut(h)
        else {
            unreachable!()
        };
        let Some(c) = copy else {
            *failed = true;
            *pending -= 1;
            return;
        };
        runs[i].3 = c;
        let (disk, off) = self.locate(grp, mu, c, slot);
        ctx.issue(
            disk,
            DevOp::Read {
                offset: off,
                len: count as u64 * PAGE_SIZE,
            },
            IoTag {
                job: h,
                part: i as u32,
            },
            true,
        );
    }

    pub(super) fn clean_io_done(&mut self, ctx: &mut Ctx, h: u64, part: u32, result: IoResult) {
        let Some(Job::Clean {
            grp,
            reading,
            data,
            runs,
            pending,
            ..
        }) = self.jobs.get_mut(h)
        else {
            unreachable!()
        };
        let grp = *grp;
        if !*reading {
            self.piece_io_done(h, part, &result);
            self.clean_maybe_done(ctx, h);
            return;
        }
        let (idx, _, _, copy) = runs[part as usize];
        match &result {
            Ok(Some(Data::Bytes(b))) => {
                if let Some(d) = data {
                    d[idx * PS..idx * PS + b.len()].copy_from_slice(b);
                }
                *pending -= 1;
            }
            Ok(_) => *pending -= 1,
            // That copy's disk failed: read the other one (or give up on this victim).
            Err(_) => self.issue_clean_read(ctx, h, part as usize, copy + 1),
        }
        self.clean_reads_done(ctx, h, grp);
    }

    fn clean_reads_done(&mut self, ctx: &mut Ctx, h: u64, grp: usize) {
        let Some(Job::Clean {
            mu,
            failed,
            reading,
            pending,
            ..
        }) = self.jobs.get_mut(h)
        else {
            unreachable!()
        };
        if *pending > 0 || !*reading {
            return;
        }
        *reading = false;
        let (mu, failed) = (*mu, *failed);
        self.groups[grp].space.unpin(mu);
        if failed {
            self.jobs.remove(h);
            self.groups[grp].cleaning -= 1;
            self.groups[grp].space.unvictim(mu);
            self.kick(ctx, grp);
            return;
        }
        // One head for the whole victim, so its live pages (fewer than an MU's) open at most
        // one fresh MU, and cleaning the victim frees at least as many MUs as it takes. A
        // head per run (as before) could open a fresh MU at every head for one victim: with
        // the user writes held at the reserve, each victim then took more free MUs than it
        // gave back, until the cleaner found none and the group stalled for good.
        let g = &mut self.groups[grp];
        let head = g.next_head;
        g.next_head = (head + 1) % g.heads.len();
        if let Some(Job::Clean { head: hd, .. }) = self.jobs.get_mut(h) {
            *hd = head;
        }
        if !self.place_clean(ctx, h) {
            self.groups[grp].gc_waiters.push_back(h);
        } else {
            self.clean_maybe_done(ctx, h);
        }
    }

    /// Re-append the victim's pages that are still live. False: blocked for space.
    pub(super) fn place_clean(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        let ppb = self.ppb;
        loop {
            let Some(Job::Clean {
                grp,
                mu,
                head,
                pages,
                placed,
                data,
                ..
            }) = self.jobs.get(h)
            else {
                unreachable!()
            };
            let (grp, mu, head, idx) = (*grp, *mu, *head, *placed);
            if idx == pages.len() {
                return true;
            }
            let (slot, lpa) = pages[idx];
            let src = mu * ppb + slot;
            // Runs of still-live pages that are consecutive both in the victim and logically.
            let mut n = 0u32;
            while idx + (n as usize) < pages.len() {
                let (s2, l2) = pages[idx + n as usize];
                if s2 != slot + n || l2 != lpa + n || self.groups[grp].map.get(l2 as u64) != src + n
                {
                    break;
                }
                n += 1;
            }
            if n == 0 {
                if let Some(Job::Clean { placed, .. }) = self.jobs.get_mut(h) {
                    *placed += 1;
                }
                continue;
            }
            let bytes = data
                .as_ref()
                .map(|d| d[idx * PS..(idx + n as usize) * PS].to_vec());
            let Some(p) = self.place(
                ctx,
                h,
                grp,
                head,
                true,
                lpa,
                n,
                src,
                bytes.as_deref(),
                false,
                true,
            ) else {
                return false;
            };
            if let Some(Job::Clean { placed, .. }) = self.jobs.get_mut(h) {
                *placed += p.count as usize;
            }
        }
    }

    pub(super) fn clean_maybe_done(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Clean {
            grp,
            reading: false,
            pages,
            placed,
            pending: 0,
            ..
        }) = self.jobs.get(h)
        else {
            return;
        };
        if *placed < pages.len() {
            return;
        }
        let grp = *grp;
        self.jobs.remove(h);
        self.groups[grp].cleaning -= 1;
        self.kick(ctx, grp);
    }
}
