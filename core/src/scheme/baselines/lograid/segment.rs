//! The open segment taking pages, and sealed segments written as full stripes.

use super::{Job, LogRaid, Segment, Slot, Writer};
use crate::engine::ctx::Ctx;
use crate::scheme::baselines::array::{ColWrite, Outcome};
use crate::scheme::baselines::logbase::{PS, Run};

impl LogRaid {
    /// Room for one more page in the open segment, opening one if needed. The `cleaner` may
    /// use the reserve.
    pub(super) fn ensure_open(&mut self, ctx: &Ctx, cleaner: bool) -> bool {
        if self.open.is_some() {
            return true;
        }
        if !self.log.can_open(cleaner) {
            return false;
        }
        let seg = self.log.space.alloc(1, |_| true).expect("free segment");
        let sp = self.seg_pages() as usize;
        self.open = Some(Segment {
            seg,
            fill: 0,
            first_at: ctx.now,
            slots: Vec::with_capacity(sp),
            data: (!ctx.size_only).then(|| vec![0u8; sp * PS]),
            fua: false,
            writers: Vec::new(),
        });
        true
    }

    pub(super) fn push_page(
        &mut self,
        ctx: &mut Ctx,
        slot: Slot,
        page: Option<&[u8]>,
        writer: Option<u64>,
        fua: bool,
    ) {
        let sp = self.seg_pages();
        let o = self.open.as_mut().expect("open segment");
        o.fua |= fua;
        if o.fill == 0 {
            o.first_at = ctx.now;
        }
        let i = o.fill as usize;
        if let (Some(d), Some(p)) = (o.data.as_mut(), page) {
            d[i * PS..(i + 1) * PS].copy_from_slice(p);
        }
        o.slots.push(slot);
        self.log.space.set_summary(o.seg, o.fill, slot.lpa);
        o.fill += 1;
        if let Some(job) = writer {
            match o.writers.last_mut() {
                Some(w) if w.job == job => w.pages += 1,
                _ => o.writers.push(Writer { job, pages: 1 }),
            }
        }
        if o.fill == sp {
            self.seal(ctx);
        }
    }

    pub(super) fn seal(&mut self, ctx: &mut Ctx) {
        if let Some(o) = self.open.take() {
            if o.fill == 0 {
                self.open = Some(o);
                return;
            }
            self.sealed.push_back(o);
        }
        self.submit_sealed(ctx);
    }

    pub(super) fn submit_sealed(&mut self, ctx: &mut Ctx) {
        while self.inflight_segs < self.cfg.max_inflight_segments {
            let Some(s) = self.sealed.pop_front() else {
                break;
            };
            let geo = &self.core.geo;
            let (ppb, dcols, bs) = (geo.ppb, geo.dcols(), geo.block_size as usize);
            self.padded_pages += (self.log.seg_pages() - s.fill) as u64;
            self.segments_written += 1;
            let writes: Vec<ColWrite> = (0..dcols)
                .map(|c| ColWrite {
                    col: c,
                    first: 0,
                    count: ppb,
                    data: s.data.as_ref().map(|d| d[c * bs..(c + 1) * bs].to_vec()),
                })
                .collect();
            let (seg, fua) = (s.seg, s.fua);
            let bg = s.writers.is_empty();
            let h = self.jobs.insert(Job::SegWrite(Segment { data: None, ..s }));
            self.inflight_segs += 1;
            self.core.write(ctx, (h, 0), seg as u64, writes, fua, bg);
        }
    }

    pub(super) fn seg_written(&mut self, ctx: &mut Ctx, h: u64, out: Outcome) {
        let Some(Job::SegWrite(s)) = self.jobs.remove(h) else {
            unreachable!()
        };
        self.inflight_segs -= 1;
        let sp = self.seg_pages();
        if out.is_ok() {
            for (i, slot) in s.slots.iter().enumerate() {
                self.cleaned_pages += self.log.land(Run {
                    lpa: slot.lpa,
                    ppa: s.seg * sp + i as u32,
                    count: 1,
                    from: slot.from,
                }) as u64;
            }
        }
        for w in s.writers {
            let Some(Job::Write {
                w: write,
                appended,
                outstanding,
            }) = self.jobs.get_mut(w.job)
            else {
                unreachable!()
            };
            *outstanding -= w.pages;
            if let Err(e) = &out {
                write.fail(e);
            }
            if *outstanding == 0 && *appended == write.pages() {
                self.finish_write(ctx, w.job);
            }
        }
        self.log.space.release(s.seg);
        self.kick(ctx);
    }
}
