//! Stripe gathering: a client that writes a volume sequentially in requests smaller than a
//! stripe (64 KiB writes at a queue depth of 16, say) would send every request down the
//! replicated path, two or three copies now and a conversion later, although together they
//! cover whole stripes. Such a write is held back for at most `FusionConfig::gather_ns`
//! while the rest of its logical stripe arrives; the requests then go as one full-stripe
//! write (`WriteKind::Gathered`), data plus parity once, with no conversion to follow, and
//! each is answered when that write is. What md's stripe cache does for the same pattern,
//! without reading anything.
//!
//! Only requests that can complete a stripe with their neighbours are held: whole blocks,
//! within one logical stripe, no more blocks than the replicated path takes anyway, and
//! either joining the writes held for that stripe or continuing the volume's previous write
//! while some write is still in flight (a client that keeps several writes of its stream in
//! flight sends the rest of the stripe at once; a stream written one request at a time is
//! never held, so it never waits). At most one stripe per volume is held, so the held
//! requests are bounded by the data columns. A request that overlaps what is held, a
//! flush and a clean stop start the held writes first, so requests to a range are still
//! handled in the order they arrived.

use super::FusionScheme;
use super::gather_state::{Gather, Held, MAX_PAUSE_NS, MIN_PAUSE_NS, mask};
use super::jobs::{Rider, WriteJob, WriteKind};
use crate::engine::api::Data;
use crate::engine::ctx::Ctx;

impl FusionScheme {
    /// A user write: held for its stripe when it may complete one with its neighbours
    /// (module doc), else started at once.
    pub(super) fn submit_write(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        id: u64,
        offset: u64,
        data: Data,
        fua: bool,
    ) {
        let len = data.len();
        let Some(data) = self.hold_for_row(ctx, vol, id, offset, data, fua) else {
            self.gathering.last_end[vol] = offset + len;
            return;
        };
        let Some(hold_ns) = self.cfg.gather_ns else {
            return self.start_write(ctx, vol, id, offset, WriteKind::Data(data), fua);
        };
        let prev_end = std::mem::replace(&mut self.gathering.last_end[vol], offset + len);
        let v = &self.vols[vol];
        let (bs, dcols) = (v.zone.block_size(), v.zone.dcols() as u64);
        let (b0, b1) = (offset / bs, (offset + len) / bs);
        let holdable = !v.cfg.level.is_mirror()
            && len > 0
            && offset.is_multiple_of(bs)
            && len.is_multiple_of(bs)
            && b0 / dcols == (b1 - 1) / dcols
            && (b1 - b0) as usize <= self.threshold(v)
            && dcols <= 64;
        let ls = b0 / dcols;
        let bits = if holdable {
            mask(b0 % dcols, (b1 - 1) % dcols + 1)
        } else {
            0
        };
        let open = &self.gathering.open[vol];
        let joins = holdable
            && open
                .as_ref()
                .is_some_and(|g| g.lstripe == ls && g.covered & bits == 0);
        let begins = holdable
            && !joins
            && prev_end == offset
            && (v.writes_in_flight > 0 || open.is_some() || self.gathering.backoff[vol].deep)
            && ctx.now >= self.gathering.backoff[vol].until;
        if !(joins || begins) {
            self.release_overlapping(ctx, vol, offset, len);
            return self.start_write(ctx, vol, id, offset, WriteKind::Data(data), fua);
        }
        if begins {
            // The stream moved on: what its previous stripe holds goes as it is.
            self.release_gather(ctx, vol);
        }
        let g = self.gathering.open[vol].get_or_insert_with(|| Gather {
            lstripe: ls,
            held: Vec::with_capacity(dcols as usize),
            covered: 0,
            deadline: ctx.now + hold_ns,
        });
        let at = g.held.partition_point(|h| h.offset < offset);
        g.held.insert(
            at,
            Held {
                id,
                at: ctx.now,
                offset,
                data,
                fua,
            },
        );
        g.covered |= bits;
        if g.covered == mask(0, dcols) {
            let b = &mut self.gathering.backoff[vol];
            (b.pause, b.deep) = (0, true);
            self.release_gather(ctx, vol);
        }
    }

    /// Before a request over `[offset, offset + len)` of `vol` is handled: the held writes
    /// of a stripe it overlaps are started first.
    pub(super) fn release_overlapping(&mut self, ctx: &mut Ctx, vol: usize, offset: u64, len: u64) {
        let Some(g) = &self.gathering.open[vol] else {
            return;
        };
        let v = &self.vols[vol];
        let span = v.zone.block_size() * v.zone.dcols() as u64;
        let (lo, hi) = (g.lstripe * span, (g.lstripe + 1) * span);
        if offset < hi && lo < offset + len.max(1) {
            self.release_gather(ctx, vol);
        }
    }

    /// Start every held write (a flush, a clean stop).
    pub(super) fn release_all_gathers(&mut self, ctx: &mut Ctx) {
        for vol in 0..self.vols.len() {
            self.release_gather(ctx, vol);
        }
    }

    /// Start the held writes whose time is up.
    pub(super) fn release_due_gathers(&mut self, ctx: &mut Ctx) {
        for vol in 0..self.vols.len() {
            if self.gathering.open[vol]
                .as_ref()
                .is_some_and(|g| g.deadline <= ctx.now)
            {
                let covered = self.release_gather(ctx, vol);
                if covered as usize <= self.threshold(&self.vols[vol]) {
                    // Not enough of the stripe came: the stream is too shallow to wait for.
                    let b = &mut self.gathering.backoff[vol];
                    b.pause = (b.pause * 2).clamp(MIN_PAUSE_NS, MAX_PAUSE_NS);
                    b.until = ctx.now + b.pause;
                    b.deep = false;
                }
            }
        }
    }

    /// Start what `vol` holds: each run of consecutive writes that covers more blocks than
    /// the replicated path takes as one write (a full stripe), the others one by one.
    /// Returns the blocks that were held.
    fn release_gather(&mut self, ctx: &mut Ctx, vol: usize) -> u32 {
        let Some(g) = self.gathering.open[vol].take() else {
            return 0;
        };
        let bs = self.vols[vol].zone.block_size();
        let threshold = self.threshold(&self.vols[vol]) as u64;
        let mut held = g.held.into_iter().peekable();
        while let Some(first) = held.next() {
            let mut run = vec![first];
            while let Some(next) = held.next_if(|h| {
                let last = run.last().expect("run");
                last.offset + last.data.len() == h.offset
            }) {
                run.push(next);
            }
            let blocks: u64 = run.iter().map(|h| h.data.len() / bs).sum();
            if run.len() > 1 && blocks > threshold {
                ctx.stats.gathered_writes += run.len() as u64;
                self.start_gathered(ctx, vol, run);
            } else {
                for h in run {
                    self.start_write(ctx, vol, h.id, h.offset, WriteKind::Data(h.data), h.fua);
                }
            }
        }
        g.covered.count_ones()
    }

    /// One write for consecutive held requests, answering each of them.
    fn start_gathered(&mut self, ctx: &mut Ctx, vol: usize, run: Vec<Held>) {
        let bs = self.vols[vol].zone.block_size();
        let offset = run[0].offset;
        let end = run.last().map(|h| h.offset + h.data.len()).expect("run");
        let mut parts = Vec::with_capacity(run.len());
        let mut riders = Vec::with_capacity(run.len() - 1);
        let mut fua = false;
        for h in run {
            parts.push(h.data);
            riders.push(Rider {
                id: h.id,
                at: h.at,
                fua: h.fua,
            });
            fua |= h.fua;
        }
        let own = riders.remove(0);
        let mut job = WriteJob::new(
            vol,
            own.id,
            own.at,
            own.fua,
            offset,
            WriteKind::Gathered(parts),
            offset / bs..end.div_ceil(bs),
        );
        // Under a journal each request's FUA is kept by its own wait; without one the device
        // writes carry FUA when any request asked for it.
        job.fua = own.fua || (fua && self.durable.is_none());
        job.riders = riders;
        self.start_job(ctx, job);
    }
}
