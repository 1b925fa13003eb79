//! Placing pages in a head's mirror unit, both copies issued, and settling each piece.

use super::{Head, Job, Placed, RaidM};
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::baselines::sparse::NONE;
use crate::types::PAGE_SIZE;

impl RaidM {
    /// Room in head `head` of `grp`, opening a fresh MU there if needed (the cleaner may use
    /// the reserve). Returns (mu, free slots).
    fn head_room(&mut self, ctx: &Ctx, grp: usize, head: usize, gc: bool) -> Option<(u32, u32)> {
        let ppb = self.ppb;
        let w = self.width as u64;
        let g = &mut self.groups[grp];
        if let Some(hd) = &g.heads[head] {
            if hd.fill < ppb {
                return Some((hd.mu, ppb - hd.fill));
            }
            let mu = hd.mu;
            g.heads[head] = None;
            g.space.release(mu);
        }
        let floor = if gc { 0 } else { g.reserve };
        if g.space.free_count() <= floor {
            return None;
        }
        let healthy: Vec<bool> = g.disks.iter().map(|&d| !ctx.is_failed(d)).collect();
        let mu = g
            .space
            .alloc(2 * w as usize, |m| {
                let p = 2 * m as u64;
                healthy[(p % w) as usize] && healthy[((p + 1) % w) as usize]
            })
            .expect("free MU");
        g.heads[head] = Some(Head { mu, fill: 0 });
        Some((mu, ppb))
    }

    /// Place pages in the head's MU and issue both copies of each piece. Returns the pieces.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn place(
        &mut self,
        ctx: &mut Ctx,
        h: u64,
        grp: usize,
        head: usize,
        gc: bool,
        lpa: u32,
        want: u32,
        src: u32,
        data: Option<&[u8]>,
        fua: bool,
        bg: bool,
    ) -> Option<Placed> {
        let (mu, room) = self.head_room(ctx, grp, head, gc)?;
        let count = want.min(room);
        let g = &mut self.groups[grp];
        let hd = g.heads[head].as_mut().expect("open head");
        let slot = hd.fill;
        hd.fill += count;
        g.space.hold(mu);
        for i in 0..count {
            g.space.set_summary(mu, slot + i, lpa + i);
        }
        let src_gen = if src == NONE {
            0
        } else {
            g.space.generation(src / self.ppb)
        };
        let piece = Placed {
            lpa,
            ppa: mu * self.ppb + slot,
            count,
            src,
            src_gen,
        };
        let pidx = match self.jobs.get(h) {
            Some(Job::Write { pieces, .. } | Job::Clean { pieces, .. }) => pieces.len() as u32,
            _ => unreachable!(),
        };
        let mut issued = 0;
        for copy in 0..2u8 {
            let (disk, off) = self.locate(grp, mu, copy, slot);
            if ctx.is_failed(disk) {
                continue;
            }
            let bytes = count as u64 * PAGE_SIZE;
            let payload = match data {
                Some(d) => Data::Bytes(d[..bytes as usize].to_vec()),
                None => Data::Size(bytes),
            };
            ctx.issue(
                disk,
                DevOp::Write {
                    offset: off,
                    data: payload,
                    fua,
                },
                IoTag {
                    job: h,
                    part: pidx * 2 + copy as u32,
                },
                bg,
            );
            issued += 1;
        }
        match self.jobs.get_mut(h) {
            Some(Job::Write {
                pieces,
                ok,
                left,
                pending,
                ..
            })
            | Some(Job::Clean {
                pieces,
                ok,
                left,
                pending,
                ..
            }) => {
                pieces.push(piece);
                ok.push(0);
                left.push(issued);
                *pending += issued as u32;
            }
            _ => unreachable!(),
        }
        if issued == 0 {
            self.settle_piece(h, pidx as usize);
        }
        Some(piece)
    }

    /// Every copy of piece `i` of job `h` is back: point the mapping at it (a cleaner's copy
    /// only if the page still lives where it was copied from) and let its MU go.
    fn settle_piece(&mut self, h: u64, i: usize) {
        let ppb = self.ppb;
        let (grp, p, ok, gc) = match self.jobs.get_mut(h) {
            Some(Job::Write {
                vol,
                pieces,
                ok,
                err,
                ..
            }) => {
                if ok[i] == 0 {
                    err.get_or_insert_with(|| "both copies of a mirrored write failed".into());
                }
                (self.vols[*vol].grp, pieces[i], ok[i], false)
            }
            Some(Job::Clean {
                grp, pieces, ok, ..
            }) => (*grp, pieces[i], ok[i], true),
            _ => unreachable!(),
        };
        if ok > 0 {
            for k in 0..p.count {
                let g = &self.groups[grp];
                let live = !gc
                    || (g.map.get((p.lpa + k) as u64) == p.src + k
                        && g.space.generation(p.src / ppb) == p.src_gen);
                if live {
                    self.remap(grp, p.lpa + k, p.ppa + k);
                    if gc {
                        self.cleaned_pages += 1;
                    }
                }
            }
        }
        self.groups[grp].space.release(p.ppa / ppb);
    }

    pub(super) fn piece_io_done(&mut self, h: u64, part: u32, result: &IoResult) {
        let i = (part / 2) as usize;
        let settled = match self.jobs.get_mut(h) {
            Some(Job::Write {
                ok, left, pending, ..
            })
            | Some(Job::Clean {
                ok, left, pending, ..
            }) => {
                if result.is_ok() {
                    ok[i] += 1;
                }
                left[i] -= 1;
                *pending -= 1;
                left[i] == 0
            }
            _ => unreachable!(),
        };
        if settled {
            self.settle_piece(h, i);
        }
    }
}
