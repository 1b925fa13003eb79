//! Parity-row writes: small random writes that arrive together go to disk as one parity
//! row, the same pages of each data column of a stripe plus the matching parity pages,
//! instead of two or three copies each now and a conversion later.
//!
//! Parity is computed byte by byte down a stripe's columns, so the parity pages of a row
//! depend on the data pages of that row only: a stripe can be filled one row at a time and
//! every row written is as redundant as a full stripe. With `d` data columns and `p` parity
//! columns a page costs `(d + p) / d` pages written (1.25 for RAID5 4+1) where the
//! replicated path costs its copies plus the conversion's parity (2.25). Nothing is ever
//! read to write a row and no written page is written again, as on the replicated path.
//!
//! A write of 1 to [`MAX_ROW_PAGES`] pages inside one block is held for at most
//! `FusionConfig::row_ns` while writes of the same size fill the row (one per data column;
//! the row is that many pages high; each size fills rows of its own), and only when other
//! writes are in flight or the volume's previous row of that size filled: a client writing
//! one request at a time is never held. A row that does not fill in time sends its writes
//! down the replicated path, and holds of that size then pause (1 ms doubling to 128 ms) as
//! for stripe gathering. A row is begun only while writes of its size arrive fast enough to
//! fill it within half the hold (a moving average of the time between them), so a lightly
//! loaded volume never waits. A held write takes its block's write lock at once, so
//! whatever arrives later for the block is ordered behind it. Rows are hedged
//! (row_hedge.rs).
//!
//! The row stripe stays allocated while it is open or has rows in flight (rows_state.rs).
//! A stripe closed before its last row (a member failed or turned slow, or a clean stop)
//! has its unwritten rows written as zeros, with zero parity, so every row of a stripe in
//! use is consistent and a scrub finds nothing to rewrite. After a crash, rows torn or left
//! unwritten hold no mapped page (a row is mapped only once all its pages landed), and a
//! scrub rewrites their parity from whatever they hold.

use super::FusionScheme;
use super::degraded::take_least_degraded;
use super::jobs::{Job, JobId, RowJob, RowPart, WriteJob, WriteKind};
use super::rows_state::{HeldWrite, MAX_ROW_PAGES, RowFill};
use super::write_plan::avoid;
use crate::engine::api::{Data, DevOp, IoResult, SharedBytes};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::parity;
use crate::space::StripeState;
use crate::types::{DiskId, PAGE_SIZE};
use crate::volume::{Loc, sums};

/// The pause after a row that did not fill (as for stripe gathering).
use super::gather_state::{MAX_PAUSE_NS, MIN_PAUSE_NS};

impl FusionScheme {
    /// Hold a small write for a parity row (module doc). Gives the payload back when the
    /// write is not held.
    pub(super) fn hold_for_row(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        id: u64,
        offset: u64,
        data: Data,
        fua: bool,
    ) -> Option<Data> {
        let Some(hold_ns) = self.cfg.row_ns else {
            return Some(data);
        };
        if self.stopping() {
            // A clean stop closed the row stripes: none is opened again.
            return Some(data);
        }
        let v = &self.vols[vol];
        let (dcols, bs, len) = (v.zone.dcols(), v.zone.block_size(), data.len());
        let pages = (len / PAGE_SIZE) as u16;
        if v.cfg.level.is_mirror()
            || dcols < 2
            || !len.is_multiple_of(PAGE_SIZE)
            || !(1..=MAX_ROW_PAGES.min(v.pages_per_block)).contains(&pages)
            || !offset.is_multiple_of(PAGE_SIZE)
            || offset / bs != (offset + len - 1) / bs
        {
            return Some(data);
        }
        let hi = pages as usize - 1;
        let height = &mut self.rowing.vols[vol][hi];
        height.arrival(ctx.now);
        let joins = height.fill.is_some();
        let b = &height.backoff;
        // A row is begun only where writes of this size come fast enough to fill it.
        let begins = !joins
            && (v.writes_in_flight > 0 || b.deep)
            && ctx.now >= b.until
            && height.fills_within(dcols as u64 - 1, hold_ns);
        let room = v.rows.open.is_some() || v.user_may_take(1);
        if !(joins || begins) || !room {
            return Some(data);
        }
        // A stripe gathering over this block goes first: it arrived first.
        self.release_overlapping(ctx, vol, offset, len);
        let v = &mut self.vols[vol];
        let ub = offset / bs;
        if !v.locks.try_acquire(ub, ub + 1) {
            return Some(data);
        }
        let height = &mut self.rowing.vols[vol][hi];
        let fill = height.fill.get_or_insert_with(|| RowFill {
            held: Vec::with_capacity(dcols),
            deadline: ctx.now + hold_ns,
        });
        fill.held.push(HeldWrite {
            id,
            at: ctx.now,
            offset,
            data,
            fua,
        });
        if fill.held.len() == dcols {
            let fill = height.fill.take().expect("held");
            (height.backoff.pause, height.backoff.deep) = (0, true);
            self.write_row(ctx, vol, pages, fill.held);
        }
        None
    }

    /// Send the held writes whose time is up down the replicated path, and pause holding
    /// writes of their size.
    pub(super) fn release_due_rows(&mut self, ctx: &mut Ctx) {
        for vol in 0..self.vols.len() {
            for hi in 0..self.rowing.vols[vol].len() {
                let height = &mut self.rowing.vols[vol][hi];
                if height.fill.as_ref().is_some_and(|f| f.deadline <= ctx.now) {
                    let b = &mut height.backoff;
                    b.pause = (b.pause * 2).clamp(MIN_PAUSE_NS, MAX_PAUSE_NS);
                    b.until = ctx.now + b.pause;
                    b.deep = false;
                    self.release_rows(ctx, vol, hi);
                }
            }
        }
    }

    /// Start every held write on its own (a flush, a clean stop, a member failure).
    pub(super) fn release_all_rows(&mut self, ctx: &mut Ctx) {
        for vol in 0..self.vols.len() {
            for hi in 0..self.rowing.vols[vol].len() {
                self.release_rows(ctx, vol, hi);
            }
        }
    }

    fn release_rows(&mut self, ctx: &mut Ctx, vol: usize, hi: usize) {
        let Some(fill) = self.rowing.vols[vol][hi].fill.take() else {
            return;
        };
        for p in fill.held {
            self.write_alone(ctx, vol, p.id, p.at, p.offset, p.data, p.fua);
        }
    }

    /// Place a held write by itself; it holds its block's lock already.
    #[allow(clippy::too_many_arguments)]
    fn write_alone(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        id: u64,
        at: crate::types::Nanos,
        offset: u64,
        data: Data,
        fua: bool,
    ) {
        let ub = offset / self.vols[vol].zone.block_size();
        let job = WriteJob::new(vol, id, at, fua, offset, WriteKind::Data(data), ub..ub + 1);
        let h = self.jobs.insert(Job::Write(job));
        self.run_write(ctx, h);
    }

    /// The stripe taking the next row of `vol`, `pages` high: the open one while it has
    /// room for the row, every member of it works and none is steered clear of (a slow
    /// member, a read-mode one), else a new spare stripe on such members; the open one
    /// still when no such stripe is left and its members work (closing it would only write
    /// zeros). None when no spare stripe may be taken.
    /// A hedge's twin row also keeps off `slow`, the members its first placement waits on.
    fn row_stripe(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        pages: u16,
        slow: &[DiskId],
    ) -> Option<(u32, u16)> {
        let placement = &self.policy.placement;
        let v = &mut self.vols[vol];
        let zone = &v.zone;
        let clear = |s: u32| {
            zone.stripe_disk_list(s)
                .iter()
                .all(|&d| !avoid(ctx, placement, d) && !slow.contains(&d))
        };
        let open = v
            .rows
            .open
            .filter(|&(_, page)| page + pages <= v.pages_per_block);
        if let Some((s, page)) = open
            && clear(s)
        {
            return Some((s, page));
        }
        let fresh = if v.user_may_take(1) {
            v.stripes.take_spare(clear).map(|(s, _)| s)
        } else {
            None
        };
        let fresh = match (fresh, open) {
            (Some(s), _) => Some(s),
            (None, Some((s, page))) if v.lost_mask(ctx, s) == 0 => return Some((s, page)),
            (None, _) if v.user_may_take(1) => {
                take_least_degraded(&mut v.stripes, zone, |d| ctx.is_failed(d), 0..=0)
            }
            (None, _) => None,
        };
        self.close_row_stripe(ctx, vol);
        let s = fresh?;
        self.vols[vol].rows.open = Some((s, 0));
        Some((s, 0))
    }

    /// Write `held` (one write of `pages` pages per data column) as the next parity row of
    /// `vol`, or each on its own when no stripe can take it.
    fn write_row(&mut self, ctx: &mut Ctx, vol: usize, pages: u16, held: Vec<HeldWrite>) {
        debug_assert_eq!(held.len(), self.vols[vol].zone.dcols());
        let parts: Vec<RowPart> = held
            .into_iter()
            .map(|p| RowPart {
                id: p.id,
                at: p.at,
                offset: p.offset,
                fua: p.fua,
                data: share(p.data),
            })
            .collect();
        if let Err(parts) = self.launch_row(ctx, vol, pages, parts, None, &[]) {
            for p in parts {
                self.write_alone(ctx, vol, p.id, p.at, p.offset, p.data, p.fua);
            }
        }
    }

    /// Write `parts` as the next row of `vol` (`twin`: the row it hedges, waiting on the
    /// members `slow`). Gives the parts back when no stripe can take it.
    pub(super) fn launch_row(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        pages: u16,
        parts: Vec<RowPart>,
        twin: Option<JobId>,
        slow: &[DiskId],
    ) -> Result<JobId, Vec<RowPart>> {
        let Some((stripe, page)) = self.row_stripe(ctx, vol, pages, slow) else {
            return Err(parts);
        };
        let v = &mut self.vols[vol];
        let (width, dcols) = (v.zone.width(), v.zone.dcols());
        let mut cols: Vec<Data> = parts.iter().map(|p| same_bytes(&p.data)).collect();
        let bytes: Option<Vec<&[u8]>> = parts.iter().map(|p| p.data.bytes()).collect();
        match bytes {
            Some(b) => cols.extend(
                parity::new_parity(&b, width - dcols)
                    .into_iter()
                    .map(Data::Bytes),
            ),
            None => cols.extend((dcols..width).map(|_| Data::Size(pages as u64 * PAGE_SIZE))),
        }
        let next = page + pages;
        v.rows.open = (next < v.pages_per_block).then_some((stripe, next));
        v.rows.issued(stripe);
        v.writes_in_flight += 1;
        let h = self.jobs.insert(Job::Row(RowJob {
            vol,
            stripe,
            page,
            pages,
            parts,
            pending: 0,
            failed: false,
            issued_at: ctx.now,
            landed: 0,
            twin,
            abandoned: false,
            hedged: twin.is_some(),
            is_hedge: twin.is_some(),
        }));
        // Under a journal the commit flushes the rows before a FUA write is answered.
        let fua = self.durable().is_none() && self.row_job(h).parts.iter().any(|p| p.fua);
        let n = self.issue_row(ctx, vol, h, stripe, page, cols, fua);
        self.row_job(h).pending = n;
        ctx.stats.row_writes += 1;
        if n == 0 {
            self.row_done(ctx, h);
        }
        Ok(h)
    }

    /// Close `vol`'s open row stripe before its last row: its unwritten rows are written as
    /// zeros on every working member (zero data has zero P and Q parity).
    pub(super) fn close_row_stripe(&mut self, ctx: &mut Ctx, vol: usize) {
        let v = &mut self.vols[vol];
        let Some((stripe, page)) = v.rows.open.take() else {
            return;
        };
        let width = v.zone.width();
        let len = (v.pages_per_block - page) as u64 * PAGE_SIZE;
        v.rows.issued(stripe);
        let h = self.jobs.insert(Job::Row(RowJob {
            vol,
            stripe,
            page,
            pages: v.pages_per_block - page,
            parts: Vec::new(),
            pending: 0,
            failed: false,
            issued_at: ctx.now,
            landed: 0,
            twin: None,
            abandoned: false,
            hedged: true,
            is_hedge: false,
        }));
        let zeros = (!ctx.size_only).then(|| SharedBytes::new(vec![0u8; len as usize]));
        let cols = (0..width)
            .map(|_| match &zeros {
                Some(z) => Data::Shared(z.clone()),
                None => Data::Size(len),
            })
            .collect();
        let n = self.issue_row(ctx, vol, h, stripe, page, cols, false);
        self.row_job(h).pending = n;
        if n == 0 {
            self.row_done(ctx, h);
        }
    }

    /// Close every volume's open row stripe (a member failed, a clean stop).
    pub(super) fn close_row_stripes(&mut self, ctx: &mut Ctx) {
        for vol in 0..self.vols.len() {
            self.close_row_stripe(ctx, vol);
        }
    }

    /// Write `cols` (one per column, data columns first) at page `page` of `stripe`; a
    /// column on a failed member is skipped. Returns the writes issued.
    #[allow(clippy::too_many_arguments)]
    fn issue_row(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        h: JobId,
        stripe: u32,
        page: u16,
        cols: Vec<Data>,
        fua: bool,
    ) -> u32 {
        let zone = &self.vols[vol].zone;
        let mut n = 0;
        for (c, data) in cols.into_iter().enumerate() {
            let (disk, offset) = zone.device_offset(stripe, c, page as u64 * PAGE_SIZE);
            if ctx.is_failed(disk) {
                continue;
            }
            let op = DevOp::Write { offset, data, fua };
            ctx.issue(disk, op, h.tag(c as u32), false);
            n += 1;
        }
        n
    }

    fn row_job(&mut self, h: JobId) -> &mut RowJob {
        match self.jobs.get_mut(h) {
            Some(Job::Row(r)) => r,
            _ => panic!("row job {h:#x} missing"),
        }
    }

    pub(super) fn row_io_done(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        let h = JobId::of(tag);
        let r = self.row_job(h);
        r.pending -= 1;
        r.failed |= result.is_err();
        r.landed |= 1 << tag.part;
        if r.pending == 0 {
            self.row_done(ctx, h);
        }
    }

    /// Every write of a row (or of a stripe's padding) is done: map and answer its pages,
    /// or, when a write failed, place each of them again on its own.
    fn row_done(&mut self, ctx: &mut Ctx, h: JobId) {
        let Some(Job::Row(r)) = self.jobs.remove(h) else {
            panic!("row job missing")
        };
        let (vol, stripe) = (r.vol, r.stripe);
        if !r.parts.is_empty() {
            self.vols[vol].writes_in_flight -= 1;
            let twin = r.twin.filter(|&t| self.jobs.get(t).is_some());
            if r.abandoned {
                // Its twin answered: nothing of this row is mapped.
            } else if let Some(t) = twin
                && r.failed
            {
                // The twin carries the writes alone now.
                self.row_job(t).twin = None;
            } else if r.failed {
                ctx.stats.write_retries += r.parts.len() as u64;
                for p in r.parts {
                    self.write_alone(ctx, vol, p.id, p.at, p.offset, p.data, p.fua);
                }
            } else {
                if let Some(t) = twin {
                    // This placement landed first: the other one's rows are never mapped.
                    let other = self.row_job(t);
                    (other.abandoned, other.twin) = (true, None);
                    ctx.stats.hedged_writes_won += u64::from(r.is_hedge);
                }
                self.map_row(ctx, &r);
                self.answer_row(ctx, r);
            }
        }
        let v = &mut self.vols[vol];
        if v.rows.landed(stripe)
            && !v.rows.protects(stripe)
            && v.stripes.state(stripe) == StripeState::Busy
        {
            // Nothing it holds is live any more, and no row will come.
            v.stripes.set_state(stripe, StripeState::Free);
        }
    }

    /// Point each write of row `r` at its place: data column `i` holds part `i`.
    fn map_row(&mut self, ctx: &mut Ctx, r: &RowJob) {
        let v = &mut self.vols[r.vol];
        let now = ctx.now;
        let bs = v.zone.block_size();
        if v.stripes.state(r.stripe) == StripeState::Busy {
            v.stripes.set_state(r.stripe, StripeState::Raid);
            v.note_stripe(ctx, r.stripe);
        }
        for (col, p) in r.parts.iter().enumerate() {
            let ub = p.offset / bs;
            let first = ((p.offset % bs) / PAGE_SIZE) as u16;
            let loc = Loc::Raid(v.zone.flbn(r.stripe, col));
            if !v.references(ub, loc) {
                v.add_raid_owner(r.stripe, col);
            }
            let sums = p.data.bytes().map(sums::sums_of);
            v.map_written(ub, first, r.pages, loc, r.page, sums, now);
        }
    }

    fn answer_row(&mut self, ctx: &mut Ctx, r: RowJob) {
        let bs = self.vols[r.vol].zone.block_size();
        for p in &r.parts {
            if !(p.fua && self.wait_durable(p.id, p.at)) {
                ctx.reply(p.id, p.at, Ok(None));
            }
        }
        for p in &r.parts {
            let ub = p.offset / bs;
            self.unlock(ctx, r.vol, ub, ub + 1);
        }
    }
}

impl RowPart {
    /// The same write again, its payload shared (a hedged row's twin).
    pub(super) fn again(&self) -> RowPart {
        RowPart {
            data: same_bytes(&self.data),
            ..*self
        }
    }
}

/// Another reference to the same payload.
fn same_bytes(d: &Data) -> Data {
    match d {
        Data::Shared(s) => Data::Shared(s.clone()),
        Data::Size(n) => Data::Size(*n),
        Data::Bytes(_) => unreachable!("row payloads are shared"),
    }
}

/// The payload as shared bytes (size-only payloads stay sizes).
fn share(d: Data) -> Data {
    match d {
        Data::Size(n) => Data::Size(n),
        d => Data::Shared(d.into_shared().expect("bytes")),
    }
}
