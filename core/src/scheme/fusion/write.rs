//! Two-phase writes (paper §4.2). A write is cut into per-block pieces; the pieces of each
//! *logical stripe* (a run of `data columns` user blocks) take one of two paths:
//! - more than `threshold` whole blocks: a fresh full stripe, untouched columns zero-padded,
//!   parity computed in memory (no device reads);
//! - otherwise: each piece into a replica slot, 2 or 3 copies on distinct disks.
//!
//! Sub-block pieces are written into the next free pages of a pack (or at their own page
//! positions in a stripe) and recorded as patches. No path ever reads old data to write new
//! data.

use super::FusionScheme;
use super::jobs::{Dest, FlushJob, Job, JobId, Piece, Rider, WriteJob, WriteKind, part_at};
use super::offload::Offload;
use super::offload::slots::Extent as LogExtent;
use super::pairs::{SlotRef, SlotState};
use super::stripe_parity::stripe_columns;
use super::vol::{Parked, Vol};
use super::write_plan::{Extent, PackRun, Planner, Span, Taken};
use crate::engine::api::{Data, DevOp, IoResult, ReqError, SharedBytes};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::space::StripeState;
use crate::types::{DiskId, PAGE_SIZE};
use crate::volume::{Loc, sums};

enum Planned {
    Issued,
    NoIo,
    NoSpace,
}

impl FusionScheme {
    pub(super) fn start_write(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        id: u64,
        offset: u64,
        kind: WriteKind,
        fua: bool,
    ) {
        let bs = self.vols[vol].zone.block_size();
        let len = kind.len();
        let blocks = offset / bs..(offset + len).div_ceil(bs);
        self.start_job(
            ctx,
            WriteJob::new(vol, id, ctx.now, fua, offset, kind, blocks),
        );
    }

    /// Run write `job` once no earlier write to its blocks is in flight.
    pub(super) fn start_job(&mut self, ctx: &mut Ctx, job: WriteJob) {
        let (vol, ub_first, ub_end) = (job.vol, job.ub_first, job.ub_end);
        let h = self.jobs.insert(Job::Write(job));
        if self.vols[vol]
            .locks
            .acquire(ub_first, ub_end, Parked { job: h })
            .is_some()
        {
            self.run_write(ctx, h);
        }
    }

    pub(super) fn run_write(&mut self, ctx: &mut Ctx, h: JobId) {
        match self.plan_write(ctx, h) {
            Planned::Issued => {}
            Planned::NoIo => self.finish_write(ctx, h),
            Planned::NoSpace => {
                let vol = self.write_job(h).vol;
                self.vols[vol].space_waiters.push(h);
                self.wake_background();
                self.vols[vol].waiters_mark = self.vols[vol].space_mark();
                // Held stripes come back with the next journal commit (which waiting writes
                // trigger at once): see `FusionScheme::room_on_the_way`.
                if !self.background_possible(vol) && !self.room_on_the_way(vol) {
                    // Nothing running or startable can free a stripe: fail rather than hang.
                    self.vols[vol].space_waiters.retain(|&x| x != h);
                    let e = self.no_room_error();
                    self.fail_write(ctx, h, e);
                }
            }
        }
    }

    pub(super) fn write_job(&mut self, h: JobId) -> &mut WriteJob {
        match self.jobs.get_mut(h) {
            Some(Job::Write(w)) => w,
            _ => panic!("write job {h:#x} missing"),
        }
    }

    /// Cut the write into pieces, choose their destinations and issue the device writes.
    fn plan_write(&mut self, ctx: &mut Ctx, h: JobId) -> Planned {
        let (vol, extent) = {
            let w = self.write_job(h);
            let extent = Extent {
                offset: w.offset,
                len: w.kind.len(),
                trim: matches!(w.kind, WriteKind::Trim(_)),
                zeroes: matches!(w.kind, WriteKind::Zeroes(_)),
            };
            (w.vol, extent)
        };
        let threshold = self.threshold(&self.vols[vol]);
        // Patches may wait for room only while background work can make some.
        let may_wait = self.write_job(h).may_wait && self.background_possible(vol);
        let bs = self.vols[vol].zone.block_size();
        let end = extent.offset + extent.len;
        // At most one piece per user block; the lists come from (and go back to) the
        // write buffers.
        let bufs = &mut self.write_bufs;
        let mut taken = Taken {
            pieces: bufs.pieces((end.div_ceil(bs) - extent.offset / bs) as usize),
            stripes: bufs.stripes(),
            slots: std::mem::take(&mut bufs.slots),
            packed: std::mem::take(&mut bufs.packed),
        };
        let mut raw = std::mem::take(&mut bufs.raw);
        let mut planner = Planner {
            v: &mut self.vols[vol],
            placement: &self.policy.placement,
            threshold,
            may_wait,
        };
        let placed = planner.place(ctx, extent, &mut taken, &mut raw);
        if !placed {
            taken.undo(planner.v);
        }
        let Taken {
            pieces,
            stripes,
            slots,
            packed,
        } = taken;
        self.put_scratch(raw, slots, packed);
        if !placed {
            self.write_bufs.recycle(pieces, stripes);
            return Planned::NoSpace;
        }
        self.issue_write(ctx, h, pieces, stripes)
    }

    /// Issue the device writes of a placed write: every column of its full stripes, every
    /// copy of its replicated pieces.
    fn issue_write(
        &mut self,
        ctx: &mut Ctx,
        h: JobId,
        pieces: Vec<Piece>,
        stripes: Vec<u32>,
    ) -> Planned {
        // Under a journal the commit flushes the data before the FUA write is answered, so
        // the device writes need no FUA of their own.
        let fua = self.write_job(h).fua && self.durable().is_none();
        let data = self.share_payload(ctx, h);
        let w = self.write_job(h);
        let (vol, offset) = (w.vol, w.offset);
        // The member of each device write, kept only when writes may be hedged.
        let mut io_disks = std::mem::take(&mut w.io_disks);
        io_disks.clear();
        let out = Outgoing {
            job: h,
            offset,
            data: data.as_ref(),
            fua,
        };
        let mut parts = Parts {
            next: 0,
            disks: self.cfg.write_hedge_ns.map(|_| &mut io_disks),
        };
        let v = &mut self.vols[vol];
        // Offload only while every member works: an offloaded copy is read back only
        // through the copy that stays on an SSD (offload/mod.rs).
        let mut offload = self
            .offload
            .as_mut()
            .filter(|_| !v.cfg.level.is_mirror() && ctx.failed_disks() == 0);
        for &s in &stripes {
            out.stripe(ctx, v, s, &pieces, &mut parts);
        }
        for p in &pieces {
            if let Dest::Slot(r) = p.dest {
                out.replicas(ctx, v, r, p, offload.as_deref_mut(), &mut parts);
            }
        }
        let n_io = parts.next;
        if n_io > 0 {
            v.writes_in_flight += 1;
        }
        let w = self.write_job(h);
        w.pieces = pieces;
        w.stripes = stripes;
        w.pending = n_io;
        w.failed = false;
        w.issued_at = ctx.now;
        w.landed.clear();
        w.landed.resize(io_disks.len(), false);
        w.io_disks = io_disks;
        if n_io == 0 {
            Planned::NoIo
        } else {
            Planned::Issued
        }
    }

    /// The payload becomes shared: every replica write refers to it (no copy each), and the
    /// job keeps a reference too, from which completion computes the checksums. None in
    /// size-only mode and for trims.
    fn share_payload(&mut self, ctx: &Ctx, h: JobId) -> Option<Payload> {
        fn share(d: &mut Data) -> Option<SharedBytes> {
            d.bytes()?;
            let shared = std::mem::replace(d, Data::Size(0))
                .into_shared()
                .expect("bytes");
            *d = Data::Shared(shared.clone());
            Some(shared)
        }
        match &mut self.write_job(h).kind {
            WriteKind::Data(d) => share(d).map(Payload::One),
            WriteKind::Gathered(parts) => parts
                .iter_mut()
                .map(share)
                .collect::<Option<Vec<_>>>()
                .map(Payload::Chain),
            WriteKind::Zeroes(n) if !ctx.size_only => {
                Some(Payload::One(SharedBytes::new(vec![0u8; *n as usize])))
            }
            _ => None,
        }
    }

    /// The planner's scratch lists go back to the write buffers, emptied.
    fn put_scratch(
        &mut self,
        mut raw: Vec<Span>,
        mut slots: Vec<SlotRef>,
        mut packed: Vec<PackRun>,
    ) {
        raw.clear();
        slots.clear();
        packed.clear();
        let b = &mut self.write_bufs;
        (b.raw, b.slots, b.packed) = (raw, slots, packed);
    }

    pub(super) fn write_io_done(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        let h = JobId::of(tag);
        let w = self.write_job(h);
        assert!(w.pending > 0);
        w.pending -= 1;
        if let Some(l) = w.landed.get_mut(tag.part as usize) {
            *l = true;
        }
        if result.is_err() {
            w.failed = true;
        }
        if w.pending > 0 {
            return;
        }
        let vol = w.vol;
        self.vols[vol].writes_in_flight -= 1;
        let w = self.write_job(h);
        if w.abandoned {
            // Its twin answered: nothing it wrote is mapped, and now nothing can land on it.
            self.release_placement(ctx, h);
            self.jobs.remove(h);
            return;
        }
        if !w.failed {
            if let Some(t) = w.twin.take() {
                self.abandon(ctx, t, h);
            }
            return self.finish_write(ctx, h);
        }
        // A member failed under this write. Its blocks are abandoned (never mapped) and the
        // whole write is placed again away from failed members, unless a twin placement is
        // still carrying it.
        if let Some(t) = w.twin.take() {
            self.release_placement(ctx, h);
            self.jobs.remove(h);
            self.write_job(t).twin = None;
            return;
        }
        w.tries += 1;
        let tries = w.tries;
        self.release_placement(ctx, h);
        ctx.stats.write_retries += 1;
        if tries > 3 {
            return self.fail_write(
                ctx,
                h,
                ReqError::Io("write failed on every placement tried".into()),
            );
        }
        self.run_write(ctx, h);
    }

    /// Place hedge twin `t` (write_hedge.rs); false when it found no room or nothing to
    /// write, and took nothing.
    pub(super) fn place_twin(&mut self, ctx: &mut Ctx, t: JobId) -> bool {
        match self.plan_write(ctx, t) {
            Planned::Issued => true,
            Planned::NoSpace => false,
            Planned::NoIo => {
                self.release_placement(ctx, t);
                false
            }
        }
    }

    /// Give back what the current placement of write `h` took, none of it mapped: its full
    /// stripes become free, its slots dead (pack slots count the write as failed).
    pub(super) fn release_placement(&mut self, ctx: &mut Ctx, h: JobId) {
        let w = self.write_job(h);
        let vol = w.vol;
        let stripes = std::mem::take(&mut w.stripes);
        let pieces = std::mem::take(&mut w.pieces);
        let v = &mut self.vols[vol];
        for &s in &stripes {
            v.stripes.set_state(s, StripeState::Free);
        }
        for p in &pieces {
            if let Dest::Slot(r) = p.dest {
                if v.pairs.set(r.set).slots[r.slot as usize].state == SlotState::Packing {
                    v.pack_write_done(r, false, ctx.now);
                    continue;
                }
                v.pairs.set_mut(r.set).slots[r.slot as usize].state = SlotState::Dead;
                v.settle_set(r.set, ctx.now);
            }
        }
        self.write_bufs.recycle(pieces, stripes);
    }

    /// All device writes are done: publish the new mapping, answer, and wake waiters.
    fn finish_write(&mut self, ctx: &mut Ctx, h: JobId) {
        let Some(Job::Write(w)) = self.jobs.remove(h) else {
            panic!("write job missing")
        };
        let v = &mut self.vols[w.vol];
        let now = ctx.now;
        let bs = v.zone.block_size();
        // The checksums of each piece's pages (none in size-only mode).
        let zero_sum = matches!(w.kind, WriteKind::Zeroes(_)).then(sums::zero_page_sum);
        let sums_of = |p: &Piece| -> Option<Vec<u32>> {
            match &w.kind {
                WriteKind::Zeroes(_) if !ctx.size_only => {
                    Some(vec![zero_sum.expect("zeroes"); p.count as usize])
                }
                kind => {
                    let start = (p.ub * bs + p.first as u64 * PAGE_SIZE - w.offset) as usize;
                    let len = p.count as usize * PAGE_SIZE as usize;
                    kind.bytes_at(start, len).map(sums::sums_of)
                }
            }
        };
        for &s in &w.stripes {
            v.stripes.set_state(s, StripeState::Raid);
            v.note_stripe(ctx, s);
        }
        for p in &w.pieces {
            match p.dest {
                Dest::Stripe { stripe, col } => {
                    v.raid_block_live(stripe, col);
                    let loc = Loc::Raid(v.zone.flbn(stripe, col));
                    v.map_written(p.ub, p.first, p.count, loc, p.at, sums_of(p), now);
                }
                Dest::Slot(r) => {
                    let (cp, ncp) = v.pairs.copies_array(r);
                    v.note_placement(ctx, &cp[..ncp]);
                    let key = v.pairs.key(&v.zone, r);
                    let loc = Loc::Rep(key);
                    if v.pairs.set(r.set).slots[r.slot as usize].state == SlotState::Packing {
                        // Owner first: mapping the patch may release the block's older pages.
                        v.packs.add_owner(r, p.ub);
                        v.map_written(p.ub, p.first, p.count, loc, p.at, sums_of(p), now);
                        v.pack_write_done(r, true, now);
                        continue;
                    }
                    v.pairs.set_mut(r.set).slots[r.slot as usize].state = SlotState::Live(p.ub);
                    v.map_written(p.ub, p.first, p.count, loc, p.at, sums_of(p), now);
                    v.pairs.refresh(r.set);
                }
                Dest::Unmap => v.map_whole(p.ub, Loc::Unmapped, now),
            }
        }
        // A stripe whose every piece was superseded inside this same write would be empty.
        for &s in &w.stripes {
            if v.stripes.state(s) == StripeState::Raid && v.stripes.valid(s) == 0 {
                v.stripes.set_state(s, StripeState::Free);
            }
        }
        self.write_bufs.recycle(w.pieces, w.stripes);
        // A FUA write is answered once its mapping is durable too (at once without a journal,
        // where the device writes themselves carried FUA).
        let own = Rider {
            id: w.id,
            at: w.at,
            fua: w.fua,
        };
        for r in std::iter::once(own).chain(w.riders) {
            if !(r.fua && self.wait_durable(r.id, r.at)) {
                ctx.reply(r.id, r.at, Ok(None));
            }
        }
        self.unlock(ctx, w.vol, w.ub_first, w.ub_end);
    }

    pub(super) fn fail_write(&mut self, ctx: &mut Ctx, h: JobId, e: ReqError) {
        let Some(Job::Write(w)) = self.jobs.remove(h) else {
            panic!("write job missing")
        };
        for r in &w.riders {
            ctx.reply(r.id, r.at, Err(e.clone()));
        }
        ctx.reply(w.id, w.at, Err(e));
        self.write_bufs.recycle(w.pieces, w.stripes);
        self.unlock(ctx, w.vol, w.ub_first, w.ub_end);
    }

    pub(super) fn unlock(&mut self, ctx: &mut Ctx, vol: usize, first: u64, end: u64) {
        let ready = self.vols[vol].locks.release(first, end);
        for p in ready {
            match self.jobs.get(p.job).map(|j| j.kind()) {
                Some(super::jobs::Kind::Write) => self.run_write(ctx, p.job),
                Some(super::jobs::Kind::Reloc) => unreachable!("relocations never queue for locks"),
                _ => panic!("parked job {:#x} vanished", p.job),
            }
        }
    }

    /// Retry writes that were waiting for free stripes.
    pub(super) fn retry_space_waiters(&mut self, ctx: &mut Ctx, vol: usize) {
        let waiters = std::mem::take(&mut self.vols[vol].space_waiters);
        for h in waiters {
            self.run_write(ctx, h);
        }
    }

    pub(super) fn start_flush(&mut self, ctx: &mut Ctx, id: u64) {
        if self.wait_durable(id, ctx.now) {
            return;
        }
        let h = self.jobs.insert(Job::Flush(FlushJob {
            id,
            at: ctx.now,
            pending: 0,
        }));
        let mut n = 0;
        for d in 0..ctx.disk_count() {
            let d = DiskId(d as u32);
            if !ctx.is_failed(d) {
                ctx.issue(d, DevOp::Flush, h.tag(d.0), false);
                n += 1;
            }
        }
        if let Some(Job::Flush(f)) = self.jobs.get_mut(h) {
            f.pending = n;
        }
        if n == 0 {
            let Some(Job::Flush(f)) = self.jobs.remove(h) else {
                unreachable!()
            };
            ctx.reply(
                f.id,
                f.at,
                Err(ReqError::Io("no member left to flush".into())),
            );
        }
    }

    pub(super) fn flush_io_done(&mut self, ctx: &mut Ctx, tag: IoTag, _result: IoResult) {
        // A member failing its flush is failed by the engine; what it held is covered by
        // redundancy like any other failure, so the flush itself still succeeds.
        let Some(Job::Flush(f)) = self.jobs.get_mut(JobId::of(tag)) else {
            unreachable!()
        };
        f.pending -= 1;
        if f.pending == 0 {
            let Some(Job::Flush(f)) = self.jobs.remove(JobId::of(tag)) else {
                unreachable!()
            };
            ctx.reply(f.id, f.at, Ok(None));
        }
    }
}

/// Background writes of whole blocks to columns `first_col..` of `stripe`, one payload each,
/// tagged with their column. Columns on failed members are skipped: parity (or, for parity
/// columns, the readable data columns) covers them. Returns the writes issued.
pub(super) fn write_columns(
    ctx: &mut Ctx,
    zone: &crate::space::Zone,
    job: JobId,
    stripe: u32,
    first_col: usize,
    payloads: impl IntoIterator<Item = Data>,
) -> u32 {
    let mut n = 0;
    for (i, data) in payloads.into_iter().enumerate() {
        let col = first_col + i;
        let (disk, offset) = zone.device_offset(stripe, col, 0);
        if ctx.is_failed(disk) {
            continue;
        }
        ctx.issue(
            disk,
            DevOp::Write {
                offset,
                data,
                fua: false,
            },
            job.tag(col as u32),
            true,
        );
        n += 1;
    }
    n
}

/// The tag parts of a placed write's device writes so far, and (with write hedging on) the
/// member each went to.
struct Parts<'a> {
    next: u32,
    disks: Option<&'a mut Vec<DiskId>>,
}

/// The device writes of one placed write, and what they all share.
struct Outgoing<'a> {
    job: JobId,
    /// The write's offset in the volume: pieces' bytes are found relative to it.
    offset: u64,
    data: Option<&'a Payload>,
    fua: bool,
}

/// A placed write's bytes, shared with its device writes: one buffer, or the consecutive
/// buffers of a gathered write.
enum Payload {
    One(SharedBytes),
    Chain(Vec<SharedBytes>),
}

impl Payload {
    /// Bytes `[start, start + len)` from the write's offset (within one part: pieces never
    /// cross a block).
    fn range(&self, start: usize, len: usize) -> SharedBytes {
        match self {
            Payload::One(b) => b.range(start, len),
            Payload::Chain(parts) => {
                let (i, at) = part_at(parts.iter().map(SharedBytes::len), start, len);
                parts[i].range(at, len)
            }
        }
    }
}

impl Outgoing<'_> {
    /// The bytes of piece `p` within the payload: (start, length).
    #[inline]
    fn range(&self, p: &Piece, bs: u64) -> (usize, usize) {
        let start = (p.ub * bs + p.first as u64 * PAGE_SIZE - self.offset) as usize;
        (start, p.count as usize * PAGE_SIZE as usize)
    }

    #[inline]
    fn write(&self, ctx: &mut Ctx, disk: DiskId, offset: u64, data: Data, parts: &mut Parts) {
        let part = parts.next;
        parts.next += 1;
        if let Some(d) = parts.disks.as_deref_mut() {
            d.push(disk);
        }
        let op = DevOp::Write {
            offset,
            data,
            fua: self.fua,
        };
        ctx.issue(disk, op, self.job.tag(part), false);
    }

    /// Every column of full stripe `s` (data columns from the pieces, zero-padded, and
    /// parity), tagged with the next parts. Columns on failed members are skipped: parity covers
    /// them.
    fn stripe(&self, ctx: &mut Ctx, v: &Vol, s: u32, pieces: &[Piece], parts: &mut Parts) {
        let (width, bs) = (v.zone.width(), v.zone.block_size());
        let cols: Option<Vec<Data>> = self.data.map(|d| {
            stripe_columns(s, width, v.zone.nparity(), bs, pieces, |p| {
                let (start, len) = self.range(p, bs);
                d.range(start, len)
            })
        });
        let mut cols = cols.map(|c| c.into_iter());
        for c in 0..width {
            let (disk, off) = v.zone.device_offset(s, c, 0);
            let payload = match cols.as_mut() {
                Some(it) => it.next().expect("column"),
                None => Data::Size(bs),
            };
            if ctx.is_failed(disk) {
                continue; // degraded stripe: parity covers this column
            }
            self.write(ctx, disk, off, payload, parts);
        }
        ctx.stats.full_stripe_writes += 1;
    }

    /// Every copy of replicated piece `p` in slot `r`, tagged with the next parts. Copies on
    /// failed members are skipped: the surviving copies carry the data.
    fn replicas(
        &self,
        ctx: &mut Ctx,
        v: &mut Vol,
        r: SlotRef,
        p: &Piece,
        mut offload: Option<&mut Offload>,
        parts: &mut Parts,
    ) {
        let bs = v.zone.block_size();
        let (cp, ncp) = v.pairs.copies_array(r);
        for (ci, &(stripe, col)) in cp[..ncp].iter().enumerate() {
            let (mut disk, mut off) = v.zone.device_offset(stripe, col, p.at as u64 * PAGE_SIZE);
            if ctx.is_failed(disk) {
                continue;
            }
            // Copy 0 becomes RAID data at conversion: only the others may go to a log.
            if ci == 0
                && let Some(o) = offload.as_deref()
                && o.ssd_busy(&ctx.members(), disk, p.count as u64 * PAGE_SIZE)
            {
                ctx.stats.offload_primary_busy += 1;
            }
            if ci > 0
                && v.offloaded.has_room(v.blocks)
                && let Some(o) = offload.as_deref_mut()
            {
                let len = p.count as u64 * PAGE_SIZE;
                if let Some((hdd, pos, log_off)) = o.redirect(&ctx.members(), ctx.now, disk, len) {
                    let e = LogExtent {
                        slot: r.slot,
                        copy: ci as u8,
                        at: p.at,
                        count: p.count,
                        hdd: hdd.0 as u16,
                        pos,
                        offset: log_off,
                    };
                    let stripe = v.pairs.set(r.set).stripes[0];
                    v.record(|vol| crate::meta::Record::Offloaded {
                        vol,
                        stripe,
                        extent: e,
                    });
                    v.offloaded.add(r.set, e);
                    (disk, off) = (hdd, log_off);
                    ctx.stats.offloaded_writes += 1;
                    ctx.stats.offloaded_bytes += len;
                }
            }
            let payload = match self.data {
                Some(d) => {
                    let (start, len) = self.range(p, bs);
                    Data::Shared(d.range(start, len))
                }
                None => Data::Size(p.count as u64 * PAGE_SIZE),
            };
            self.write(ctx, disk, off, payload, parts);
        }
        ctx.stats.replicated_block_writes += 1;
        v.pairs.touch(r.set, ctx.now);
    }
}
