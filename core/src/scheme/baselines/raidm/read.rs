//! Reads: the first live copy of each run of mapped pages, the other copy on a failure.

use super::{Job, RPart, RaidM, VolAt};
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::baselines::gather::Gather;
use crate::types::PAGE_SIZE;

impl RaidM {
    pub(super) fn start_read(&mut self, ctx: &mut Ctx, id: u64, vol: usize, offset: u64, len: u64) {
        let VolAt { grp, idx } = self.vols[vol];
        let ppb = self.ppb;
        let runs = self.groups[grp]
            .log
            .read_runs(idx, offset / PAGE_SIZE, len / PAGE_SIZE, ppb);
        let parts: Vec<RPart> = runs
            .iter()
            .map(|r| RPart {
                buf_off: r.page * PAGE_SIZE,
                mu: r.ppa / ppb,
                slot: r.ppa % ppb,
                count: r.count,
                copy: 0,
            })
            .collect();
        let n = parts.len();
        let h = self.jobs.insert(Job::Read {
            g: Gather::new(ctx, id, len, n as u32),
            grp,
            parts,
        });
        for i in 0..n {
            self.issue_read(ctx, h, i, None);
        }
        if n == 0 {
            self.finish_read(ctx, h);
        }
    }

    /// Read part `i` from a live copy other than `tried` (see [`RaidM::pick_copy`]).
    fn issue_read(&mut self, ctx: &mut Ctx, h: u64, i: usize, tried: Option<u8>) {
        let (grp, mu, slot, count) = match self.jobs.get(h) {
            Some(Job::Read { grp, parts, .. }) => {
                let p = &parts[i];
                (*grp, p.mu, p.slot, p.count)
            }
            _ => unreachable!(),
        };
        let copy = self.pick_copy(ctx, grp, mu, slot, tried);
        let Some(Job::Read { g, parts, .. }) = self.jobs.get_mut(h) else {
            unreachable!()
        };
        match copy {
            None => {
                g.fail("both copies of a mirrored page are lost".into());
                g.pending -= 1;
            }
            Some(c) => {
                parts[i].copy = c;
                self.groups[grp].log.space.pin(mu);
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
                    false,
                );
            }
        }
    }

    pub(super) fn read_done(&mut self, ctx: &mut Ctx, h: u64, i: usize, result: IoResult) {
        let Some(Job::Read { g, grp, parts }) = self.jobs.get_mut(h) else {
            unreachable!()
        };
        let (grp, mu, copy, off) = (*grp, parts[i].mu, parts[i].copy, parts[i].buf_off);
        let ok = result.is_ok();
        if let Ok(Some(Data::Bytes(d))) = &result {
            g.put(off, d);
        }
        let freed = self.groups[grp].log.space.unpin(mu);
        if !ok {
            // That copy's disk failed: try the other one.
            self.issue_read(ctx, h, i, Some(copy));
        } else if let Some(Job::Read { g, .. }) = self.jobs.get_mut(h) {
            g.pending -= 1;
        }
        if matches!(self.jobs.get(h), Some(Job::Read { g, .. }) if g.pending == 0) {
            self.finish_read(ctx, h);
        }
        if freed {
            self.kick(ctx, grp);
        }
    }

    fn finish_read(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Read { g, .. }) = self.jobs.remove(h) else {
            unreachable!()
        };
        g.reply(ctx);
    }
}
