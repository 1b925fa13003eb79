//! Reads: the first live copy of each run of mapped pages, the other copy on a failure.

use super::{Job, RPart, RaidM};
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::baselines::gather::Gather;
use crate::scheme::baselines::sparse::NONE;
use crate::types::PAGE_SIZE;

impl RaidM {
    // ------------------------------------------------------------------ reads

    pub(super) fn start_read(&mut self, ctx: &mut Ctx, id: u64, vol: usize, offset: u64, len: u64) {
        let grp = self.vols[vol].grp;
        let base = self.vols[vol].base + offset / PAGE_SIZE;
        let ppb = self.ppb;
        let mut parts: Vec<RPart> = Vec::new();
        for i in 0..len / PAGE_SIZE {
            let ppa = self.groups[grp].map.get(base + i);
            if ppa == NONE {
                continue;
            }
            let (mu, slot) = (ppa / ppb, ppa % ppb);
            if let Some(p) = parts.last_mut()
                && p.mu == mu
                && p.slot + p.count == slot
                && p.buf_off + p.count as u64 * PAGE_SIZE == i * PAGE_SIZE
            {
                p.count += 1;
                continue;
            }
            parts.push(RPart {
                buf_off: i * PAGE_SIZE,
                mu,
                slot,
                count: 1,
                copy: 0,
            });
        }
        let n = parts.len();
        let h = self.jobs.insert(Job::Read {
            g: Gather::new(ctx, id, len, n as u32),
            grp,
            parts,
        });
        for i in 0..n {
            self.issue_read(ctx, h, i, 0);
        }
        if n == 0 {
            self.finish_read(ctx, h);
        }
    }

    /// Read part `i` from the first live copy at or after `from`.
    fn issue_read(&mut self, ctx: &mut Ctx, h: u64, i: usize, from: u8) {
        let (grp, mu, slot, count) = match self.jobs.get(h) {
            Some(Job::Read { grp, parts, .. }) => {
                let p = &parts[i];
                (*grp, p.mu, p.slot, p.count)
            }
            _ => unreachable!(),
        };
        let copy = (from..2).find(|&c| !ctx.is_failed(self.locate(grp, mu, c, slot).0));
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
                self.groups[grp].space.pin(mu);
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
        let freed = self.groups[grp].space.unpin(mu);
        if !ok {
            // That copy's disk failed: try the other one.
            self.issue_read(ctx, h, i, copy + 1);
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
