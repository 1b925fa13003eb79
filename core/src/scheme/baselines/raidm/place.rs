//! Placing pages in a head's mirror unit, both copies issued, and settling each run.

use super::{Job, Layout, RaidM};
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::baselines::logbase::{Copies, Run};
use crate::types::PAGE_SIZE;

/// Pages to place at a head of a group: `count` logical pages from `lpa` (fewer go where the
/// head's MU ends).
pub(super) struct Placement<'a> {
    pub grp: usize,
    pub head: usize,
    pub lpa: u32,
    pub count: u32,
    /// For the cleaner's copy: the physical page its first page was read from. The cleaner
    /// may take the reserve and writes in the background.
    pub src: Option<u32>,
    pub data: Option<&'a [u8]>,
    pub fua: bool,
}

impl RaidM {
    fn copies(&mut self, h: u64) -> &mut Copies {
        match self.jobs.get_mut(h) {
            Some(Job::Write { copies, .. } | Job::Clean { copies, .. }) => copies,
            _ => unreachable!(),
        }
    }

    /// Place pages in the head's MU (opening a fresh one on two healthy disks if need be)
    /// and issue both copies. Returns the run placed; None when no MU may be opened.
    pub(super) fn place(&mut self, ctx: &mut Ctx, h: u64, p: Placement) -> Option<Run> {
        let cleaner = p.src.is_some();
        let (ppb, w) = (self.ppb, self.width as u64);
        let steered = matches!(self.layout, Layout::Steered(_));
        let g = &mut self.groups[p.grp];
        let healthy: Vec<bool> = g.disks.iter().map(|&d| !ctx.is_failed(d)).collect();
        // A steered unit is placed once opened, so any free one will do.
        let scan = if steered { 1 } else { 2 * w as usize };
        let room = g.heads.room(&mut g.log, p.head, cleaner, scan, |m| {
            let q = 2 * m as u64;
            steered || (healthy[(q % w) as usize] && healthy[((q + 1) % w) as usize])
        })?;
        if room.fresh && !self.place_unit(ctx, room.seg) {
            let g = &mut self.groups[p.grp];
            g.heads.abandon(&mut g.log, p.head);
            self.reclaim(ctx);
            return None;
        }
        let g = &mut self.groups[p.grp];
        let count = p.count.min(room.free);
        let slot = g.heads.append(&mut g.log, p.head, p.lpa, count);
        let run = Run {
            lpa: p.lpa,
            ppa: room.seg * ppb + slot,
            count,
            from: p.src.map(|s| g.log.origin(s)),
        };
        let idx = self.copies(h).next();
        let mut issued = 0;
        for copy in 0..2u8 {
            let (disk, off) = self.locate(p.grp, room.seg, copy, slot);
            if ctx.is_failed(disk) {
                continue;
            }
            let bytes = count as u64 * PAGE_SIZE;
            let payload = match p.data {
                Some(d) => Data::Bytes(d[..bytes as usize].to_vec()),
                None => Data::Size(bytes),
            };
            let op = DevOp::Write {
                offset: off,
                data: payload,
                fua: p.fua,
            };
            let part = idx as u32 * 2 + copy as u32;
            ctx.issue(disk, op, IoTag { job: h, part }, cleaner);
            issued += 1;
        }
        self.copies(h).push(run, issued);
        if issued == 0 {
            self.settle(h, idx);
        }
        Some(run)
    }

    /// Every copy of run `i` of job `h` is back: point the mapping at it (a cleaner's copy
    /// only if the page still lives where it was copied from) and let its MU go.
    fn settle(&mut self, h: u64, i: usize) {
        let (grp, run, written) = match self.jobs.get_mut(h) {
            Some(Job::Write { w, copies, .. }) => {
                if !copies.written(i) {
                    w.fail("both copies of a mirrored write failed");
                }
                (self.vols[w.vol].grp, copies.runs[i], copies.written(i))
            }
            Some(Job::Clean { grp, copies, .. }) => (*grp, copies.runs[i], copies.written(i)),
            _ => unreachable!(),
        };
        let log = &mut self.groups[grp].log;
        if written {
            self.cleaned_pages += log.land(run) as u64;
        }
        log.space.release(run.ppa / self.ppb);
    }

    pub(super) fn copy_io_done(&mut self, h: u64, part: u32, result: &IoResult) {
        let i = (part / 2) as usize;
        if self.copies(h).copy_back(i, result.is_ok()) {
            self.settle(h, i);
        }
    }
}
