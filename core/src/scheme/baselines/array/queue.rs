//! The per-stripe FIFO queues (md's stripe_head lock), write batching, and whole-stripe trims.

use super::{COp, RaidCore, issue};
use crate::engine::api::DevOp;
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::baselines::pageset::PageSet;

impl RaidCore {
    // ---------------------------------------------------------------- stripe queues

    pub(super) fn enqueue(&mut self, ctx: &mut Ctx, stripe: u64, h: u64) {
        self.stripes.entry(stripe).or_default().queue.push_back(h);
        self.try_start(ctx, stripe);
    }

    fn parts_cover_stripe(&self, hs: &[u64]) -> bool {
        let mut cover = vec![PageSet::default(); self.geo.dcols()];
        for &h in hs {
            if let Some(COp::Part(p)) = self.ops.get(h) {
                for w in &p.writes {
                    cover[w.col].insert_range(w.first, w.count);
                }
            }
        }
        cover.iter().all(|c| c.is_full(self.geo.ppb))
    }

    pub(super) fn try_start(&mut self, ctx: &mut Ctx, stripe: u64) {
        let Some(q) = self.stripes.get(&stripe) else {
            return;
        };
        if q.busy {
            return;
        }
        let Some(&head) = q.queue.front() else {
            if let Some(r) = q.ready_at {
                self.delayed.remove(&(r, stripe));
            }
            self.stripes.remove(&stripe);
            return;
        };
        match self.ops.get(head) {
            Some(COp::Part(_)) => {
                let hs: Vec<u64> = q
                    .queue
                    .iter()
                    .copied()
                    .take_while(|&h| matches!(self.ops.get(h), Some(COp::Part(_))))
                    .collect();
                if let Some(delay) = self.batch_delay
                    && !self.parts_cover_stripe(&hs)
                {
                    let q = self.stripes.get_mut(&stripe).expect("queue");
                    let ready = match q.ready_at {
                        Some(r) => r,
                        None => {
                            let r = ctx.now + delay;
                            q.ready_at = Some(r);
                            self.delayed.insert((r, stripe));
                            r
                        }
                    };
                    if ctx.now < ready {
                        return;
                    }
                }
                let q = self.stripes.get_mut(&stripe).expect("queue");
                if let Some(r) = q.ready_at.take() {
                    self.delayed.remove(&(r, stripe));
                }
                q.queue.drain(..hs.len());
                q.busy = true;
                self.start_stripe_job(ctx, stripe, hs);
            }
            Some(COp::Rebuild(_)) => {
                let q = self.stripes.get_mut(&stripe).expect("queue");
                q.queue.pop_front();
                q.busy = true;
                self.start_rebuild(ctx, head);
            }
            Some(COp::Trim(_)) => {
                let q = self.stripes.get_mut(&stripe).expect("queue");
                q.queue.pop_front();
                q.busy = true;
                self.start_trim(ctx, head);
            }
            _ => unreachable!("only writes, trims and rebuilds wait in stripe queues"),
        }
    }

    pub(super) fn release_stripe(&mut self, ctx: &mut Ctx, stripe: u64) {
        let q = self
            .stripes
            .get_mut(&stripe)
            .expect("stripe queue of a running op");
        assert!(q.busy);
        q.busy = false;
        self.try_start(ctx, stripe);
    }

    // ---------------------------------------------------------------- trims

    fn start_trim(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(COp::Trim(t)) = self.ops.get_mut(h) else {
            unreachable!()
        };
        let geo = &self.geo;
        let mut n = 0;
        for c in 0..geo.width {
            let (disk, off) = geo.offset(t.stripe, c, 0);
            if ctx.is_failed(disk) {
                continue;
            }
            issue(
                &mut self.io_meta,
                ctx,
                disk,
                DevOp::Trim {
                    offset: off,
                    len: geo.block_size,
                },
                IoTag { job: h, part: n },
                false,
            );
            n += 1;
        }
        t.pending = n;
        if n == 0 {
            let (tok, s) = (t.token, t.stripe);
            self.ops.remove(h);
            self.done.push_back((tok, Ok(None)));
            self.release_stripe(ctx, s);
        }
    }
}
