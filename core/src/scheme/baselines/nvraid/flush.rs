//! Flushing buffered stripes to RAID50: full stripes first, partial ones under pressure or
//! with age.

use super::{Job, NvRaid, PS};
use crate::engine::ctx::Ctx;
use crate::scheme::baselines::array::ColWrite;
use crate::scheme::baselines::pageset::PageSet;

impl NvRaid {
    pub(super) fn pressure(&self) -> bool {
        !self.admit_q.is_empty()
            || self.used_pages() as f64 > self.cfg.high_water * self.cap_pages as f64
    }

    pub(super) fn kick_flush(&mut self, ctx: &mut Ctx) {
        while self.flushes < self.cfg.max_flushes {
            let spages = self.core.geo.stripe_pages() as u32;
            let mut pick = None;
            while let Some(s) = self.full_q.pop_front() {
                if self.buf.get(&s).is_some_and(|d| d.dirty_count == spages) {
                    pick = Some(s);
                    break;
                }
            }
            if pick.is_none()
                && let Some(&(since, s)) = self.age_q.first()
            {
                let old = self.cfg.max_age_ns.is_some_and(|a| since + a <= ctx.now);
                if old || self.pressure() {
                    pick = Some(s);
                }
            }
            let Some(s) = pick else { break };
            self.start_flush(ctx, s);
        }
    }

    pub(super) fn start_flush(&mut self, ctx: &mut Ctx, stripe: u64) {
        let geo = &self.core.geo;
        let (ppb, spages) = (geo.ppb, geo.stripe_pages() as u32);
        let sb = self.buf.get_mut(&stripe).expect("dirty stripe");
        assert!(sb.dirty_count > 0);
        self.age_q.remove(&(sb.since, stripe));
        if sb.dirty_count == spages {
            self.full_stripe_flushes += 1;
        }
        let cols = std::mem::replace(&mut sb.dirty, vec![PageSet::default(); geo.dcols()]);
        let mut writes = Vec::new();
        for (col, set) in cols.iter().enumerate() {
            for (f, n) in set.runs() {
                for p in f..f + n {
                    sb.inflight[col * ppb + p] += 1;
                }
                let data = sb
                    .data
                    .as_ref()
                    .map(|d| d[(col * ppb + f) * PS..(col * ppb + f + n) * PS].to_vec());
                writes.push(ColWrite {
                    col,
                    first: f,
                    count: n,
                    data,
                });
            }
        }
        let count = sb.dirty_count;
        sb.dirty_count = 0;
        sb.inflight_total += count;
        self.dirty_pages -= count as u64;
        self.snapshots += count as u64;
        self.flushes += 1;
        self.flushed_stripes += 1;
        let h = self.jobs.insert(Job::Flush { stripe, cols });
        self.core.write(ctx, (h, 0), stripe, writes, false, true);
    }

    pub(super) fn flush_done(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Flush { stripe, cols }) = self.jobs.remove(h) else {
            unreachable!()
        };
        let ppb = self.core.geo.ppb;
        let sb = self.buf.get_mut(&stripe).expect("flushed stripe buffered");
        let mut n = 0;
        for (col, set) in cols.iter().enumerate() {
            for p in set.iter() {
                sb.inflight[col * ppb + p] -= 1;
                n += 1;
            }
        }
        sb.inflight_total -= n;
        if sb.inflight_total == 0 && sb.dirty_count == 0 {
            self.buf.remove(&stripe);
        }
        self.snapshots -= n as u64;
        self.flushes -= 1;
        self.admit_waiting(ctx);
        self.kick_flush(ctx);
    }
}
