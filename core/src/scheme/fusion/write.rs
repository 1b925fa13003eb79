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
use super::jobs::{Dest, FlushJob, Job, Piece, WriteJob, WriteKind};
use super::pack;
use super::pairs::{PairSet, Slot, SlotState, match_columns};
use super::stripe_parity::stripe_columns;
use super::vol::{Parked, Vol};
use crate::engine::api::{Data, DevOp, IoResult, ReqError, SharedBytes};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::policy::{Members, WritePlacement};
use crate::space::StripeState;
use crate::types::{DiskId, PAGE_SIZE};
use crate::volume::{Loc, sums};

enum Planned {
    Issued,
    NoIo,
    NoSpace,
}

/// Whether new placements pass a member over while other room exists: failed always, and
/// whatever the placement policy steers clear of.
fn avoid(ctx: &Ctx, placement: &dyn WritePlacement, d: DiskId) -> bool {
    ctx.is_failed(d) || placement.steer_clear(&ctx.members(), d)
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
        let ub_first = offset / bs;
        let ub_end = (offset + len).div_ceil(bs);
        let job = WriteJob {
            vol,
            id,
            at: ctx.now,
            fua,
            offset,
            kind,
            ub_first,
            ub_end,
            pieces: Vec::new(),
            stripes: Vec::new(),
            pending: 0,
            failed: false,
            tries: 0,
            may_wait: true,
        };
        let h = self.jobs.insert(Job::Write(job));
        if self.vols[vol]
            .locks
            .acquire(ub_first, ub_end, Parked { job: h })
            .is_some()
        {
            self.run_write(ctx, h);
        }
    }

    pub(super) fn run_write(&mut self, ctx: &mut Ctx, h: u64) {
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

    fn write_job(&mut self, h: u64) -> &mut WriteJob {
        match self.jobs.get_mut(h) {
            Some(Job::Write(w)) => w,
            _ => panic!("write job {h:#x} missing"),
        }
    }

    /// Cut the write into pieces, choose their destinations and issue the device writes.
    fn plan_write(&mut self, ctx: &mut Ctx, h: u64) -> Planned {
        let (vol, offset, len, is_trim, is_zero) = {
            let w = self.write_job(h);
            let (t, z) = match w.kind {
                WriteKind::Trim(_) => (true, false),
                WriteKind::Zeroes(_) => (false, true),
                WriteKind::Data(_) => (false, false),
            };
            (w.vol, w.offset, w.kind.len(), t, z)
        };
        let threshold = self.threshold(&self.vols[vol]);
        // Patches may wait for room only while background work can make some.
        let may_wait = self.write_job(h).may_wait
            && self.cfg.conversion.enabled
            && self.background_possible(vol);
        let placement = &*self.policy.placement;
        let steers = placement.steers();
        let v = &mut self.vols[vol];
        let bs = v.zone.block_size();
        let ppb = v.pages_per_block;
        let dcols = v.zone.dcols() as u64;
        let end = offset + len;
        // At most one piece per user block; the lists come from (and go back to) the
        // write buffers.
        let bufs = &mut self.write_bufs;
        let mut pieces: Vec<Piece> = bufs.pieces((end.div_ceil(bs) - offset / bs) as usize);
        let mut stripes: Vec<u32> = bufs.stripes();
        let mut slots_taken = std::mem::take(&mut bufs.slots);
        // Pack pages reserved: (slot, first page there, pages).
        let mut packed = std::mem::take(&mut bufs.packed);
        let mut raw = std::mem::take(&mut bufs.raw);
        let mut no_space = false;
        let mut ub = offset / bs;
        while ub * bs < end {
            let ls = ub / dcols;
            let chunk_end = ((ls + 1) * dcols).min(end.div_ceil(bs));
            raw.clear();
            for b in ub..chunk_end {
                let lo = offset.max(b * bs);
                let hi = end.min((b + 1) * bs);
                let first = ((lo - b * bs) / PAGE_SIZE) as u16;
                let count = ((hi - lo) / PAGE_SIZE) as u16;
                raw.push((b, first, count));
            }
            ub = chunk_end;
            if is_trim || is_zero {
                for &(b, first, count) in &raw {
                    if count == ppb {
                        pieces.push(Piece {
                            ub: b,
                            first,
                            count,
                            at: first,
                            dest: Dest::Unmap,
                        });
                    }
                }
                if is_trim {
                    continue;
                }
                raw.retain(|&(_, _, c)| c != ppb);
                if raw.is_empty() {
                    continue;
                }
            }
            let full = raw.iter().filter(|r| r.2 == ppb).count();
            let mut use_stripe = full > threshold;
            let needed = full
                + v.packs
                    .slots_needed(raw.iter().filter(|r| r.2 < ppb).map(|r| r.2));
            if !use_stripe && !ensure_slots(ctx, v, needed, placement) {
                // The replicated area is at its configured size (or spare stripes are
                // short): wait for conversion to make room. A zero-padded stripe (the write
                // that needs no reads) would spend a whole stripe on a few blocks or pages,
                // and relocation would have to compact it again; it is the fallback when
                // waiting can not help, as when no pair set could be formed from the spare
                // stripes there are (their disks could not be matched).
                // Waiting helps only the first chunk of a write: slots that earlier chunks
                // hold would be given back, and the replicated area may be too small to
                // hold them all at once, so the write would wait forever.
                let holds_slots = !slots_taken.is_empty() || !packed.is_empty();
                if may_wait && !holds_slots && replicated_area_full(v) {
                    no_space = true;
                    break;
                }
                use_stripe = true;
            }
            if !use_stripe {
                // Replicated: each piece into a pack or a slot of its own. If some piece
                // finds no room after all (the slots counted above sit on members to avoid),
                // this chunk is undone and takes the stripe path.
                let (np, ns, nk) = (pieces.len(), slots_taken.len(), packed.len());
                let mut placed = true;
                for &(b, first, count) in &raw {
                    let partial = count < ppb;
                    // Whether this piece was steered away from a member to avoid: an open
                    // pack with room, or spare slots, passed over for it (counted once).
                    let mut redirected = false;
                    if partial {
                        let (pairs, zone) = (&v.pairs, &v.zone);
                        let (got, refused) = v.packs.reserve(count, |r| {
                            let (cp, n) = pairs.copies_array(r);
                            cp[..n]
                                .iter()
                                .all(|&(s, c)| !avoid(ctx, placement, zone.disk(s, c)))
                        });
                        redirected = refused && steers;
                        if let Some((r, at)) = got {
                            ctx.stats.redirected_writes += u64::from(redirected);
                            packed.push((r, at, count));
                            pieces.push(Piece {
                                ub: b,
                                first,
                                count,
                                at,
                                dest: Dest::Slot(r),
                            });
                            continue;
                        }
                    }
                    let mut strict = v
                        .pairs
                        .take_spare(&v.zone, |ds| ds.iter().all(|&d| !avoid(ctx, placement, d)));
                    if strict.is_none() && open_pair_set_if_room(ctx, v, placement) {
                        // Every spare slot touches a disk to avoid: a fresh pair set, drawn
                        // from stripes away from it, is the redirection target.
                        redirected = true;
                        strict = v
                            .pairs
                            .take_spare(&v.zone, |ds| ds.iter().all(|&d| !avoid(ctx, placement, d)))
                            .map(|(r, _)| (r, 0));
                    }
                    let r = match strict {
                        Some((r, skipped)) => {
                            redirected |= skipped > 0 && steers;
                            ctx.stats.redirected_writes += u64::from(redirected);
                            Some(r)
                        }
                        None => v
                            .pairs
                            .take_spare(&v.zone, |ds| ds.iter().all(|&d| !ctx.is_failed(d)))
                            .or_else(|| {
                                v.pairs
                                    .take_spare(&v.zone, |ds| ds.iter().any(|&d| !ctx.is_failed(d)))
                            })
                            .map(|x| x.0),
                    };
                    let Some(r) = r else {
                        placed = false;
                        break;
                    };
                    if partial {
                        // A new pack for this piece and the patches that follow it.
                        if v.packs.open_count() >= pack::MAX_OPEN
                            && let Some(old) = v.packs.fullest()
                        {
                            let st = v.packs.close(old);
                            v.pack_changed(old, st, ctx.now);
                        }
                        v.pairs.set_mut(r.set).slots[r.slot as usize].state = SlotState::Packing;
                        v.packs.start(r, count);
                        packed.push((r, 0, count));
                    } else {
                        slots_taken.push(r);
                    }
                    pieces.push(Piece {
                        ub: b,
                        first,
                        count,
                        // A new pack's first pages; a whole block's own.
                        at: if partial { 0 } else { first },
                        dest: Dest::Slot(r),
                    });
                }
                if !placed {
                    pieces.truncate(np);
                    for r in slots_taken.drain(ns..) {
                        v.pairs.untake(r);
                    }
                    for (r, at, count) in packed.drain(nk..) {
                        v.packs.unreserve(r, at, count);
                    }
                    // Room exists, only on members to avoid: a fresh stripe away from them
                    // is the redirection target (waiting would wait out the stall).
                    use_stripe = true;
                }
            }
            if use_stripe {
                if !v.user_may_take(1) {
                    no_space = true;
                    break;
                }
                let taken = v.stripes.take_spare(|s| {
                    // The stripe's disks from the layout table in one lookup, not one per
                    // column (each a division by the layout's period).
                    v.zone
                        .stripe_disk_list(s)
                        .iter()
                        .all(|&d| !avoid(ctx, placement, d))
                });
                let taken = taken.map(|(s, skipped)| {
                    if skipped > 0 && steers {
                        ctx.stats.redirected_writes += 1;
                    }
                    s
                });
                let taken = taken.or_else(|| {
                    v.stripes
                        .take_spare(|s| {
                            (0..v.zone.width()).all(|c| !ctx.is_failed(v.zone.disk(s, c)))
                        })
                        .map(|x| x.0)
                });
                // Degraded: every spare stripe touches a failed member. Writing the surviving
                // columns keeps the data recoverable from parity, as a degraded md array does.
                let taken = taken.or_else(|| {
                    v.stripes
                        .take_spare(|s| v.zone.parity_covers(s, |d| ctx.is_failed(d)))
                        .map(|x| x.0)
                });
                let Some(s) = taken else {
                    no_space = true;
                    break;
                };
                stripes.push(s);
                for &(b, first, count) in &raw {
                    pieces.push(Piece {
                        ub: b,
                        first,
                        count,
                        at: first,
                        dest: Dest::Stripe {
                            stripe: s,
                            col: (b % dcols) as usize,
                        },
                    });
                }
            }
        }
        if no_space {
            for s in stripes.drain(..) {
                v.stripes.untake(s);
            }
            for r in slots_taken.drain(..) {
                v.pairs.untake(r);
            }
            for (r, at, count) in packed.drain(..) {
                v.packs.unreserve(r, at, count);
            }
            pieces.clear();
            self.write_bufs.recycle(pieces, stripes);
            self.put_scratch(raw, slots_taken, packed);
            return Planned::NoSpace;
        }
        self.put_scratch(raw, slots_taken, packed);
        // Issue the device writes.
        // Under a journal the commit flushes the data before the FUA write is answered, so
        // the device writes need no FUA of their own.
        let fua = self.write_job(h).fua && self.durable().is_none();
        // The payload becomes shared: every replica write refers to it (no copy each), and
        // the job keeps a reference too, from which completion computes the checksums.
        let data: Option<SharedBytes> = match &mut self.write_job(h).kind {
            WriteKind::Data(d) if d.bytes().is_some() => {
                let shared = std::mem::replace(d, Data::Size(0))
                    .into_shared()
                    .expect("bytes");
                *d = Data::Shared(shared.clone());
                Some(shared)
            }
            WriteKind::Zeroes(n) if !ctx.size_only => {
                Some(SharedBytes::new(vec![0u8; *n as usize]))
            }
            _ => None,
        };
        let v = &mut self.vols[vol];
        let mut n_io = 0u32;
        let piece_range = |p: &Piece| -> (usize, usize) {
            let start = (p.ub * bs + p.first as u64 * PAGE_SIZE - offset) as usize;
            (start, p.count as usize * PAGE_SIZE as usize)
        };
        for &s in &stripes {
            let width = v.zone.width();
            let cols: Option<Vec<Data>> = data.as_ref().map(|d| {
                stripe_columns(s, width, v.zone.nparity(), bs, &pieces, |p| {
                    let (start, len) = piece_range(p);
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
                ctx.issue(
                    disk,
                    DevOp::Write {
                        offset: off,
                        data: payload,
                        fua,
                    },
                    IoTag { job: h, part: n_io },
                    false,
                );
                n_io += 1;
            }
            ctx.stats.full_stripe_writes += 1;
        }
        for p in &pieces {
            if let Dest::Slot(r) = p.dest {
                let (cp, ncp) = v.pairs.copies_array(r);
                for &(stripe, col) in &cp[..ncp] {
                    let (disk, off) = v.zone.device_offset(stripe, col, p.at as u64 * PAGE_SIZE);
                    if ctx.is_failed(disk) {
                        continue; // degraded: the surviving copies carry the data
                    }
                    let payload = match &data {
                        Some(d) => {
                            let (start, len) = piece_range(p);
                            Data::Shared(d.range(start, len))
                        }
                        None => Data::Size(p.count as u64 * PAGE_SIZE),
                    };
                    ctx.issue(
                        disk,
                        DevOp::Write {
                            offset: off,
                            data: payload,
                            fua,
                        },
                        IoTag { job: h, part: n_io },
                        false,
                    );
                    n_io += 1;
                }
                ctx.stats.replicated_block_writes += 1;
                v.pairs.touch(r.set, ctx.now);
            }
        }
        if n_io > 0 {
            v.writes_in_flight += 1;
        }
        let w = self.write_job(h);
        w.pieces = pieces;
        w.stripes = stripes;
        w.pending = n_io;
        w.failed = false;
        if n_io == 0 {
            Planned::NoIo
        } else {
            Planned::Issued
        }
    }

    /// The planner's scratch lists go back to the write buffers, emptied.
    fn put_scratch(
        &mut self,
        mut raw: Vec<(u64, u16, u16)>,
        mut slots: Vec<super::pairs::SlotRef>,
        mut packed: Vec<(super::pairs::SlotRef, u16, u16)>,
    ) {
        raw.clear();
        slots.clear();
        packed.clear();
        let b = &mut self.write_bufs;
        (b.raw, b.slots, b.packed) = (raw, slots, packed);
    }

    pub(super) fn write_io_done(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        let w = self.write_job(tag.job);
        assert!(w.pending > 0);
        w.pending -= 1;
        if result.is_err() {
            w.failed = true;
        }
        if w.pending > 0 {
            return;
        }
        let vol = w.vol;
        self.vols[vol].writes_in_flight -= 1;
        let w = self.write_job(tag.job);
        if !w.failed {
            return self.finish_write(ctx, tag.job);
        }
        // A member failed under this write. Its blocks are abandoned (never mapped) and the
        // whole write is placed again away from failed members.
        w.tries += 1;
        let tries = w.tries;
        let vol = w.vol;
        let stripes = std::mem::take(&mut w.stripes);
        let pieces = std::mem::take(&mut w.pieces);
        let v = &mut self.vols[vol];
        for s in stripes {
            v.stripes.set_state(s, StripeState::Free);
        }
        for p in pieces {
            if let Dest::Slot(r) = p.dest {
                if v.pairs.set(r.set).slots[r.slot as usize].state == SlotState::Packing {
                    v.pack_write_done(r, false, ctx.now);
                    continue;
                }
                v.pairs.set_mut(r.set).slots[r.slot as usize].state = SlotState::Dead;
                v.settle_set(r.set, ctx.now);
            }
        }
        ctx.stats.write_retries += 1;
        if tries > 3 {
            return self.fail_write(
                ctx,
                tag.job,
                ReqError::Io("write failed on every placement tried".into()),
            );
        }
        self.run_write(ctx, tag.job);
    }

    /// All device writes are done: publish the new mapping, answer, and wake waiters.
    fn finish_write(&mut self, ctx: &mut Ctx, h: u64) {
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
                WriteKind::Data(d) => d.bytes().map(|b| {
                    let start = (p.ub * bs + p.first as u64 * PAGE_SIZE - w.offset) as usize;
                    sums::sums_of(&b[start..start + p.count as usize * PAGE_SIZE as usize])
                }),
                WriteKind::Zeroes(_) if !ctx.size_only => {
                    Some(vec![zero_sum.expect("zeroes"); p.count as usize])
                }
                _ => None,
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
        if !(w.fua && self.wait_durable(w.id, w.at)) {
            ctx.reply(w.id, w.at, Ok(None));
        }
        self.unlock(ctx, w.vol, w.ub_first, w.ub_end);
    }

    pub(super) fn fail_write(&mut self, ctx: &mut Ctx, h: u64, e: ReqError) {
        let Some(Job::Write(w)) = self.jobs.remove(h) else {
            panic!("write job missing")
        };
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
                ctx.issue(d, DevOp::Flush, IoTag { job: h, part: d.0 }, false);
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
        let Some(Job::Flush(f)) = self.jobs.get_mut(tag.job) else {
            unreachable!()
        };
        f.pending -= 1;
        if f.pending == 0 {
            let Some(Job::Flush(f)) = self.jobs.remove(tag.job) else {
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
    job: u64,
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
            IoTag {
                job,
                part: col as u32,
            },
            true,
        );
        n += 1;
    }
    n
}

/// Make sure `needed` spare replica slots exist, opening new pair sets while the replicated
/// area is below its configured size. Returns false when the area is full.
fn ensure_slots(
    ctx: &mut Ctx,
    v: &mut Vol,
    needed: usize,
    placement: &dyn WritePlacement,
) -> bool {
    while v.pairs.spare_slots() < needed {
        if !open_pair_set_if_room(ctx, v, placement) {
            return false;
        }
    }
    true
}

/// Does the replicated area's cap (or the spare-stripe reserve) keep new pair sets out?
fn replicated_area_full(v: &Vol) -> bool {
    let copies = v.copies() as u64;
    v.stripes.count(StripeState::Replica) + copies > v.max_replica_stripes
        || !v.user_may_take(copies)
}

/// Open one more pair set if the replicated area and the reserve allow it.
fn open_pair_set_if_room(ctx: &mut Ctx, v: &mut Vol, placement: &dyn WritePlacement) -> bool {
    !replicated_area_full(v) && open_pair_set(ctx, v, placement)
}

/// Open a new pair set: draw 4 random spare stripes, keep the 2 (or 3) whose data columns
/// share the fewest disks (power of two choices), and match their columns into slots.
/// Runs every few small writes: candidates, their disks and the combinations live in fixed
/// arrays (a stripe has at most 32 columns), not in `Vec`s per draw.
fn open_pair_set(ctx: &mut Ctx, v: &mut Vol, placement: &dyn WritePlacement) -> bool {
    let copies = v.copies();
    let dcols = v.zone.dcols();
    let mut cand = [0u32; 4];
    // Candidates drawn away from an unresponsive member (a stripe on it was turned down):
    // the writes of a set made of them are steered around it.
    let mut steered = [false; 4];
    let mut ncand = 0;
    // The member states, borrowed apart from the RNG the draws use.
    let (rng, members) = (&mut *ctx.rng, Members::new(&*ctx.disks, ctx.now));
    let failed = |d: DiskId| members.failed(d);
    let avoided = std::cell::Cell::new(false);
    let bad = |d: DiskId| {
        if members.failed(d) {
            return true;
        }
        let steered = placement.steer_clear(&members, d);
        if steered {
            avoided.set(true);
        }
        steered
    };
    for _ in 0..4 {
        let zone = &v.zone;
        avoided.set(false);
        let pick = v
            .stripes
            .take_random_spare(rng, |s| zone.stripe_disk_list(s).iter().all(|&d| !bad(d)));
        steered[ncand] = pick.is_some() && avoided.get();
        let pick = pick.or_else(|| {
            v.stripes
                .take_random_spare(rng, |s| (0..zone.width()).all(|c| !failed(zone.disk(s, c))))
        });
        let pick = pick.or_else(|| {
            v.stripes
                .take_random_spare(rng, |s| zone.parity_covers(s, failed))
        });
        match pick {
            Some(s) => {
                cand[ncand] = s;
                ncand += 1;
            }
            None => break,
        }
    }
    let cand = &cand[..ncand];
    if cand.len() < copies {
        for &s in cand {
            v.stripes.untake(s);
        }
        return false;
    }
    let mut disks = [[DiskId(0); 32]; 4];
    for (i, &s) in cand.iter().enumerate() {
        let list = v.zone.stripe_disk_list(s);
        disks[i][..list.len()].copy_from_slice(&list);
    }
    // All combinations of `copies` candidates, in the order a, b (, c) ascending; pick the
    // cheapest for the placement policy (the first of equals).
    let mut best: Option<(usize, [usize; 3])> = None;
    let n = cand.len();
    for a in 0..n {
        for b in a + 1..n {
            let thirds = if copies == 2 { a..a + 1 } else { b + 1..n };
            for c in thirds {
                let lists = [&disks[a][..], &disks[b][..], &disks[c][..]];
                let cost = placement.pair_set_cost(&members, &lists[..copies], dcols);
                if best.as_ref().is_none_or(|(s, _)| cost < *s) {
                    best = Some((cost, [a, b, c]));
                }
            }
        }
    }
    let (_, chosen) = best.expect("at least one combination");
    let chosen = &chosen[..copies];
    let chosen_disks = [
        disks[chosen[0]],
        disks[chosen[1]],
        disks[chosen[2 % copies]],
    ];
    let Some(matching) = match_columns(&chosen_disks[..copies], dcols) else {
        for &s in cand {
            v.stripes.untake(s);
        }
        return false;
    };
    let mut stripes = [0u32; 3];
    for (i, &c) in chosen.iter().enumerate() {
        stripes[i] = cand[c];
    }
    for (i, &s) in cand.iter().enumerate() {
        if chosen.contains(&i) {
            v.stripes.set_state(s, StripeState::Replica);
        } else {
            v.stripes.untake(s);
        }
    }
    v.record(|vol| crate::meta::Record::SetCreate {
        vol,
        stripes: stripes[..copies].to_vec(),
        cols: matching.clone(),
    });
    let set = PairSet {
        stripes,
        copies: copies as u8,
        slots: matching
            .into_iter()
            .map(|cols| Slot {
                cols,
                state: SlotState::Spare,
            })
            .collect(),
        last_access: ctx.now,
        converting: false,
        convert_after: 0,
        in_lru: false,
    };
    v.pairs.insert(set, ctx.now);
    if chosen.iter().any(|&c| steered[c]) {
        ctx.stats.steered_pair_sets += 1;
    }
    true
}
