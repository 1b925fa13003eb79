//! The cleaner: greedy MU victims, their live pages read from a live copy and placed again.

use super::place::Placement;
use super::{Job, RaidM};
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::baselines::logbase::{Copies, NextRun, Victim};
use crate::types::PAGE_SIZE;

impl RaidM {
    pub(super) fn kick_cleaning(&mut self, ctx: &mut Ctx, grp: usize) {
        while let Some(victim) =
            self.groups[grp]
                .log
                .next_victim(self.cfg.cleaners, self.ppb, ctx.size_only)
        {
            let reads = victim.reads.len();
            let h = self.jobs.insert(Job::Clean {
                grp,
                head: 0,
                victim,
                reading: true,
                copies: Copies::default(),
            });
            for i in 0..reads {
                self.issue_clean_read(ctx, h, i, None);
            }
        }
    }

    fn victim(&mut self, h: u64) -> &mut Victim {
        match self.jobs.get_mut(h) {
            Some(Job::Clean { victim, .. }) => victim,
            _ => unreachable!(),
        }
    }

    /// Read `i` of the victim from a live copy other than `tried`; with none left the victim
    /// is given up.
    fn issue_clean_read(&mut self, ctx: &mut Ctx, h: u64, i: usize, tried: Option<u8>) {
        let Some(Job::Clean { grp, victim, .. }) = self.jobs.get(h) else {
            unreachable!()
        };
        let (grp, mu, read) = (*grp, victim.seg, victim.reads[i]);
        let copy = self.pick_copy(ctx, grp, mu, read.slot, tried);
        let victim = self.victim(h);
        let Some(c) = copy else {
            victim.failed = true;
            victim.pending -= 1;
            return;
        };
        victim.reads[i].copy = c;
        let (disk, off) = self.locate(grp, mu, c, read.slot);
        let op = DevOp::Read {
            offset: off,
            len: read.count as u64 * PAGE_SIZE,
        };
        ctx.issue(
            disk,
            op,
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
            victim,
            ..
        }) = self.jobs.get_mut(h)
        else {
            unreachable!()
        };
        let grp = *grp;
        if !*reading {
            self.copy_io_done(h, part, &result);
            self.clean_maybe_done(ctx, h);
            return;
        }
        let i = part as usize;
        match &result {
            Ok(Some(Data::Bytes(b))) => {
                victim.put(i, b);
                victim.pending -= 1;
            }
            Ok(_) => victim.pending -= 1,
            // That copy's disk failed: read the other one (or give up on this victim).
            Err(_) => {
                let tried = Some(victim.reads[i].copy);
                self.issue_clean_read(ctx, h, i, tried);
            }
        }
        self.clean_reads_done(ctx, h, grp);
    }

    fn clean_reads_done(&mut self, ctx: &mut Ctx, h: u64, grp: usize) {
        let Some(Job::Clean {
            victim, reading, ..
        }) = self.jobs.get_mut(h)
        else {
            unreachable!()
        };
        if victim.pending > 0 || !*reading {
            return;
        }
        *reading = false;
        if !self.groups[grp].log.victim_read(victim) {
            self.jobs.remove(h);
            self.kick(ctx, grp);
            return;
        }
        // One head for the whole victim, so its live pages (fewer than an MU's) open at most
        // one fresh MU, and cleaning the victim frees at least as many MUs as it takes. A
        // head per run could open a fresh MU at every head for one victim: with the user
        // writes held at the reserve, each victim then took more free MUs than it gave back,
        // until the cleaner found none and the group stalled for good.
        let turn = self.groups[grp].heads.cleaner_turn();
        if let Some(Job::Clean { head, .. }) = self.jobs.get_mut(h) {
            *head = turn;
        }
        if !self.place_clean(ctx, h) {
            self.groups[grp].log.gc_waiters.push_back(h);
        } else {
            self.clean_maybe_done(ctx, h);
        }
    }

    /// Place the victim's pages that are still live again. False: blocked for space.
    pub(super) fn place_clean(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        loop {
            let Some(Job::Clean {
                grp, head, victim, ..
            }) = self.jobs.get(h)
            else {
                unreachable!()
            };
            let (grp, head) = (*grp, *head);
            let run = match self.groups[grp].log.next_run(victim, u32::MAX) {
                NextRun::Done => return true,
                NextRun::Dead => {
                    self.victim(h).moved += 1;
                    continue;
                }
                NextRun::Live(run) => run,
            };
            let bytes = victim.bytes(&run);
            let p = Placement {
                grp,
                head,
                lpa: run.lpa,
                count: run.count,
                src: Some(run.src),
                data: bytes.as_deref(),
                fua: false,
            };
            let Some(placed) = self.place(ctx, h, p) else {
                return false;
            };
            self.victim(h).moved += placed.count as usize;
        }
    }

    /// Once every live page is placed and every copy is back: the victim is done.
    pub(super) fn clean_maybe_done(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Clean {
            grp,
            reading: false,
            victim,
            copies,
            ..
        }) = self.jobs.get(h)
        else {
            return;
        };
        if copies.pending > 0 || victim.moved < victim.pages.len() {
            return;
        }
        let grp = *grp;
        self.jobs.remove(h);
        self.groups[grp].log.cleaning -= 1;
        self.kick(ctx, grp);
    }
}
