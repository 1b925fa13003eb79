//! Reads (paper §4.3): each requested page comes from its newest location (a patch or the
//! base). A replicated block is read from the copy on the least troubled disk; a RAID block on
//! a failed or unresponsive disk is rebuilt from the rest of its stripe (as ToleRAID does);
//! optionally a slow replicated read is hedged to another copy.

use super::FusionScheme;
use super::jobs::{BAD_RAID, BAD_REBUILD, Job, PartMode, ReadJob, ReadPart, ReadPurpose};
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::parity;
use crate::types::{DiskId, Nanos, PAGE_SIZE};
use crate::volume::patch::{Seg, segments};
use crate::volume::{Loc, PageSums};

/// IoTag.part = part index * PART_STRIDE + code. Codes below DIRECT are the columns of a
/// rebuild; DIRECT + i is a plain read of copy i (0 for a RAID block).
const PART_STRIDE: u32 = 64;
const DIRECT: u32 = 32;
const MAX_TRIES: u8 = 4;

impl FusionScheme {
    fn read_job(&mut self, h: u64) -> &mut ReadJob {
        match self.jobs.get_mut(h) {
            Some(Job::Read(r)) => r,
            _ => panic!("read job {h:#x} missing"),
        }
    }

    pub(super) fn start_read(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        purpose: ReadPurpose,
        offset: u64,
        len: u64,
    ) -> u64 {
        let v = &self.vols[vol];
        let bs = v.zone.block_size();
        let end = offset + len;
        // One part per block unless a block is patched.
        let mut parts = Vec::with_capacity((end.div_ceil(bs) - offset / bs) as usize);
        let mut b = offset / bs;
        while b * bs < end {
            let lo = offset.max(b * bs);
            let hi = end.min((b + 1) * bs);
            let first = ((lo - b * bs) / PAGE_SIZE) as u16;
            let count = ((hi - lo) / PAGE_SIZE) as u16;
            let e = v.bmt.get(b);
            // Most blocks carry no patches: one segment, no allocation.
            let patched;
            let segs: &[Seg] = if e.patched {
                patched = segments(e.base, v.patches.get(b), first, count);
                &patched
            } else {
                &[Seg {
                    first,
                    count,
                    loc: e.base,
                    at: first,
                }]
            };
            for g in segs {
                let buf_off = (b * bs + g.first as u64 * PAGE_SIZE - offset) as usize;
                parts.push(ReadPart {
                    ub: b,
                    first: g.first,
                    count: g.count,
                    at: g.at,
                    buf_off,
                    loc: g.loc,
                    mode: PartMode::Done,
                    tries: 0,
                    inflight: 0,
                    issued_at: ctx.now,
                    hedged: false,
                    pins: Vec::new(),
                    expect: Vec::new(),
                    bad: 0,
                    lost_copy: None,
                });
            }
            b += 1;
        }
        let n = parts.len();
        let job = ReadJob {
            vol,
            purpose,
            buf: None,
            len: len as usize,
            parts,
            pending: n,
            error: None,
            lost: false,
        };
        let h = self.jobs.insert(Job::Read(job));
        for i in 0..n {
            self.plan_part(ctx, h, i);
        }
        if self.read_job(h).pending == 0 {
            self.finish_read(ctx, h);
        }
        h
    }

    /// Choose how to serve part `i` and issue its device reads. Unmapped parts finish at once.
    fn plan_part(&mut self, ctx: &mut Ctx, h: u64, i: usize) {
        let (vol, loc, ub, first, count, at, background, bad) = {
            let job = self.read_job(h);
            let p = &job.parts[i];
            (
                job.vol,
                p.loc,
                p.ub,
                p.first,
                p.count,
                p.at,
                matches!(job.purpose, ReadPurpose::Reloc { .. }),
                p.bad,
            )
        };
        if loc != Loc::Unmapped && !ctx.size_only {
            let expect = self.vols[vol].sums.get(ub, first, count);
            self.read_job(h).parts[i].expect = expect;
        }
        let routing = &*self.policy.routing;
        let v = &mut self.vols[vol];
        let page_off = at as u64 * PAGE_SIZE;
        let len = count as u64 * PAGE_SIZE;
        let part_tag = |col: u32| IoTag {
            job: h,
            part: i as u32 * PART_STRIDE + col,
        };
        let mode = match loc {
            Loc::Unmapped => None,
            Loc::Rep(key) => {
                let r = v
                    .pairs
                    .lookup(&v.zone, key)
                    .expect("replica key without a pair set");
                v.pairs.touch(r.set, ctx.now);
                // At most 3 copies: fixed arrays instead of two vectors per read.
                let (copies, n) = v.pairs.copies_array(r);
                let copies = &copies[..n];
                let mut alive = [(0u32, 0usize, DiskId(0)); 3];
                let mut n_alive = 0;
                for (ci, &(s, c)) in copies.iter().enumerate() {
                    let d = v.zone.disk(s, c);
                    if !ctx.is_failed(d) && bad & (1 << ci) == 0 {
                        alive[n_alive] = (s, c, d);
                        n_alive += 1;
                    }
                }
                let alive = &alive[..n_alive];
                let pick = (!alive.is_empty()).then(|| {
                    let mut disks = [DiskId(0); 3];
                    for (k, a) in alive.iter().enumerate() {
                        disks[k] = a.2;
                    }
                    alive[routing.pick_copy(&ctx.members(), &disks[..n_alive])]
                });
                match pick {
                    None if bad != 0 => {
                        ctx.stats.unrecoverable_pages += count as u64;
                        self.part_lost(
                            ctx,
                            h,
                            i,
                            "every readable copy of a replicated block failed its checksum",
                        );
                        return;
                    }
                    None => {
                        self.part_failed(
                            ctx,
                            h,
                            i,
                            "every copy of a replicated block is on a failed member",
                        );
                        return;
                    }
                    Some((s, c, d)) => {
                        if (s, c) != copies[0] && ctx.avoid(v.zone.disk(copies[0].0, copies[0].1)) {
                            ctx.stats.redirected_reads += 1;
                        }
                        let ci = copies
                            .iter()
                            .position(|&x| x == (s, c))
                            .expect("picked copy") as u32;
                        let (disk, off) = v.zone.device_offset(s, c, page_off);
                        assert_eq!(disk, d);
                        v.stripes.pin(s);
                        ctx.issue(
                            disk,
                            DevOp::Read { offset: off, len },
                            part_tag(DIRECT + ci),
                            background,
                        );
                        Some((PartMode::Direct { stripe: s }, vec![(DIRECT + ci, s)], 1))
                    }
                }
            }
            Loc::Raid(f) => {
                let (s, c) = v.zone.split(f);
                let width = v.zone.width();
                let disk = v.zone.disk(s, c);
                // The other columns are looked at only when the target's state asks for it:
                // most reads go straight to a healthy member.
                let others_fine = || {
                    (0..width)
                        .filter(|&x| x != c)
                        .all(|x| !ctx.avoid(v.zone.disk(s, x)))
                };
                let rebuild = ctx.is_failed(disk)
                    || bad & BAD_RAID != 0
                    || (routing.reconstruct_around(&ctx.members(), disk)
                        && bad & BAD_REBUILD == 0
                        && others_fine());
                if !rebuild {
                    let (dk, off) = v.zone.device_offset(s, c, page_off);
                    v.stripes.pin(s);
                    ctx.issue(
                        dk,
                        DevOp::Read { offset: off, len },
                        part_tag(DIRECT),
                        background,
                    );
                    Some((PartMode::Direct { stripe: s }, vec![(DIRECT, s)], 1))
                } else {
                    let mut missing: Vec<usize> = (0..width)
                        .filter(|&x| ctx.is_failed(v.zone.disk(s, x)))
                        .collect();
                    if !missing.contains(&c) {
                        missing.push(c);
                    }
                    if missing.len() > v.zone.nparity() {
                        self.part_failed(
                            ctx,
                            h,
                            i,
                            "more members of a stripe failed than its parity covers",
                        );
                        return;
                    }
                    if !ctx.is_failed(disk) && bad & BAD_RAID == 0 {
                        ctx.stats.redirected_reads += 1;
                    }
                    ctx.stats.reconstructed_reads += 1;
                    let mut n = 0;
                    let mut pins = Vec::new();
                    for x in (0..width).filter(|x| !missing.contains(x)) {
                        let (dk, off) = v.zone.device_offset(s, x, page_off);
                        v.stripes.pin(s);
                        pins.push((x as u32, s));
                        ctx.issue(
                            dk,
                            DevOp::Read { offset: off, len },
                            part_tag(x as u32),
                            background,
                        );
                        n += 1;
                    }
                    Some((
                        PartMode::Rebuild {
                            target: c,
                            missing,
                            cols: vec![None; width],
                            waiting: n,
                        },
                        pins,
                        n,
                    ))
                }
            }
        };
        let now = ctx.now;
        let job = self.read_job(h);
        let p = &mut job.parts[i];
        match mode {
            None => {
                p.mode = PartMode::Done;
                job.pending -= 1;
            }
            Some((m, pins, n)) => {
                p.mode = m;
                p.pins.extend(pins);
                p.inflight += n;
                p.issued_at = now;
            }
        }
    }

    /// Point part `i` at where its pages live now. When they are spread over several
    /// locations by now, the part is cut into one part per location. Returns the parts to
    /// plan (`i` first).
    fn reresolve_part(&mut self, h: u64, i: usize) -> Vec<usize> {
        let vol = self.read_job(h).vol;
        let (ub, first, count, buf_off) = {
            let p = &self.read_job(h).parts[i];
            (p.ub, p.first, p.count, p.buf_off)
        };
        let v = &self.vols[vol];
        let e = v.bmt.get(ub);
        let segs = segments(e.base, v.patches.get(ub), first, count);
        let job = self.read_job(h);
        let mut out = Vec::with_capacity(segs.len());
        for (k, g) in segs.iter().enumerate() {
            let off = buf_off + (g.first - first) as usize * PAGE_SIZE as usize;
            if k == 0 {
                let p = &mut job.parts[i];
                if p.loc != g.loc || p.at != g.at {
                    p.bad = 0; // the bad copies were those of the old location
                    p.lost_copy = None;
                }
                (p.first, p.count, p.at, p.buf_off, p.loc) = (g.first, g.count, g.at, off, g.loc);
                out.push(i);
            } else {
                let tries = job.parts[i].tries;
                job.parts.push(ReadPart {
                    ub,
                    first: g.first,
                    count: g.count,
                    at: g.at,
                    buf_off: off,
                    loc: g.loc,
                    mode: PartMode::Done,
                    tries,
                    inflight: 0,
                    issued_at: 0,
                    hedged: false,
                    pins: Vec::new(),
                    expect: Vec::new(),
                    bad: 0,
                    lost_copy: None,
                });
                job.pending += 1;
                out.push(job.parts.len() - 1);
            }
        }
        out
    }

    fn read_job_vol(&mut self, h: u64) -> usize {
        self.read_job(h).vol
    }

    fn part_failed(&mut self, _ctx: &mut Ctx, h: u64, i: usize, why: &str) {
        let job = self.read_job(h);
        job.parts[i].mode = PartMode::Done;
        job.pending -= 1;
        job.error.get_or_insert_with(|| why.to_string());
    }

    /// No copy of part `i` is good: its pages are lost. A relocation gets the bytes last
    /// read for them (`ReadPart::lost_copy`) and moves them; any other read fails with `why`.
    fn part_lost(&mut self, ctx: &mut Ctx, h: u64, i: usize, why: &str) {
        let job = self.read_job(h);
        let (vol, total) = (job.vol, job.len);
        let relocating = matches!(job.purpose, ReadPurpose::Reloc { .. });
        let p = &mut job.parts[i];
        let (ub, first, count) = (p.ub, p.first, p.count);
        let len = count as usize * PAGE_SIZE as usize;
        let copy = p.lost_copy.take().filter(|b| b.len() == len);
        // The pages to remember as lost: those of the last copy read that fail their
        // checksums (the rest of it is good), or all of the part when none was kept.
        let bad: Vec<usize> = match &copy {
            Some(b) if p.expect.len() == count as usize => {
                PageSums::mismatches(&p.expect, b).collect()
            }
            _ => (0..count as usize).collect(),
        };
        let moved = match copy {
            Some(b) if relocating => {
                p.mode = PartMode::Done;
                let off = p.buf_off;
                let buf = job.buf.get_or_insert_with(|| vec![0u8; total]);
                buf[off..off + len].copy_from_slice(&b);
                job.pending -= 1;
                job.lost = true;
                true
            }
            _ => false,
        };
        for page in bad {
            self.vols[vol].mark_lost(ub, first + page as u16, 1);
        }
        if !moved {
            self.part_failed(ctx, h, i, why);
        }
    }

    pub(super) fn read_io_done(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        let i = (tag.part / PART_STRIDE) as usize;
        let col = tag.part % PART_STRIDE;
        let vol = self.read_job_vol(tag.job);
        // The device's buffer moves into the job (no copy): the result is ours.
        let ok = result.is_ok();
        let mut bytes = match result {
            Ok(Some(Data::Bytes(b))) => Some(b),
            _ => None,
        };
        let job = self.read_job(tag.job);
        let p = &mut job.parts[i];
        p.inflight -= 1;
        // Every device read pinned its stripe once; release this read's pin.
        let pos = p
            .pins
            .iter()
            .position(|&(code, _)| code == col)
            .expect("completion of a read this part did not issue");
        let (_, s) = p.pins.swap_remove(pos);
        self.vols[vol].stripes.unpin(s);
        let job = self.read_job(tag.job);
        let p = &mut job.parts[i];
        let mut replan = false;
        let mut done_bytes: Option<Option<Vec<u8>>> = None;
        match &mut p.mode {
            PartMode::Done => {
                // The slower half of a hedged read: its pin is released above; drop the job
                // once nothing of it is in flight.
                if job.pending == 0 && job.parts.iter().all(|p| p.inflight == 0) {
                    let _ = self.jobs.remove(tag.job);
                }
                return;
            }
            PartMode::Direct { .. } => {
                if ok {
                    done_bytes = Some(bytes.take());
                } else if p.inflight == 0 {
                    replan = true;
                } else {
                    return; // the hedge may still succeed
                }
            }
            PartMode::Rebuild {
                target,
                missing,
                cols,
                waiting,
            } => {
                if col >= DIRECT {
                    return; // a stale direct read from before this part was re-planned
                }
                *waiting -= 1;
                cols[col as usize] = ok.then(|| bytes.take().unwrap_or_default());
                if *waiting > 0 {
                    return;
                }
                let width = cols.len();
                let have = (0..width)
                    .filter(|x| !missing.contains(x))
                    .all(|x| cols[x].is_some());
                if !have {
                    replan = true;
                } else if ctx.size_only {
                    done_bytes = Some(None);
                } else {
                    let target = *target;
                    let plen = p.count as usize * PAGE_SIZE as usize;
                    let mut bufs: Vec<Vec<u8>> = cols
                        .iter_mut()
                        .map(|c| c.take().unwrap_or_else(|| vec![0u8; plen]))
                        .collect();
                    let nparity = self.vols[vol].zone.nparity();
                    let missing_now = {
                        let job = self.read_job(tag.job);
                        match &job.parts[i].mode {
                            PartMode::Rebuild { missing, .. } => missing.clone(),
                            _ => unreachable!(),
                        }
                    };
                    let mut refs: Vec<&mut [u8]> =
                        bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
                    parity::reconstruct(&mut refs, nparity, &missing_now)
                        .expect("reconstruction within parity");
                    done_bytes = Some(Some(std::mem::take(&mut bufs[target])));
                }
            }
        }
        if let Some(Some(bytes)) = &done_bytes {
            let job = self.read_job(tag.job);
            let user = matches!(job.purpose, ReadPurpose::User { .. });
            let p = &mut job.parts[i];
            if PageSums::first_mismatch(&p.expect, bytes).is_some() {
                // Silent corruption (or a torn write the device acknowledged): this copy
                // is not the data that was written. Counted once per bad copy (a copy the
                // scrub or an earlier read found is read again by the repair); a
                // reconstruction that does not match counts each time.
                let (ub, loc, direct) = (p.ub, p.loc, matches!(p.mode, PartMode::Direct { .. }));
                p.lost_copy = done_bytes.take().flatten();
                if direct {
                    let copy = match loc {
                        Loc::Rep(_) => (col - DIRECT) as u8,
                        _ => 0,
                    };
                    self.count_bad_copy(ctx, vol, ub, loc, copy);
                } else {
                    ctx.stats.checksum_errors += 1;
                }
                let job = self.read_job(tag.job);
                let p = &mut job.parts[i];
                match p.mode {
                    PartMode::Direct { .. } => {
                        p.bad |= match p.loc {
                            Loc::Rep(_) => 1 << (col - DIRECT),
                            _ => BAD_RAID,
                        };
                        if p.inflight > 0 {
                            return; // the hedged read of another copy may still deliver
                        }
                        replan = true;
                    }
                    _ if p.bad & (BAD_RAID | BAD_REBUILD) == 0 => {
                        // Rebuilt around a slow member from a column that is itself bad:
                        // read the block directly instead.
                        p.bad |= BAD_REBUILD;
                        replan = true;
                    }
                    _ => {
                        ctx.stats.unrecoverable_pages += p.count as u64;
                        self.part_lost(
                            ctx,
                            tag.job,
                            i,
                            "a block failed its checksum and its parity could not restore it",
                        );
                    }
                }
            } else if p.bad & !BAD_REBUILD != 0 && user {
                // Served from a good copy: move the block off the bad one in the background
                // (a relocation of it does that already).
                let ub = p.ub;
                self.vols[vol].queue_repair(ub);
            }
        }
        if replan {
            let job = self.read_job(tag.job);
            let p = &mut job.parts[i];
            p.tries += 1;
            if p.tries >= MAX_TRIES {
                self.part_failed(ctx, tag.job, i, "reads failed on every member tried");
            } else {
                // Where the pages live may have changed while the failed read was out
                // (conversion, relocation): look again before reading again.
                // (Planning may finish the part at once: unmapped by now, or no copy left.)
                for j in self.reresolve_part(tag.job, i) {
                    self.plan_part(ctx, tag.job, j);
                }
            }
        } else if let Some(bytes) = done_bytes {
            let job = self.read_job(tag.job);
            let p = &mut job.parts[i];
            p.mode = PartMode::Done;
            let off = p.buf_off;
            if let Some(b) = bytes {
                if job.buf.is_none() && off == 0 && b.len() == job.len {
                    job.buf = Some(b); // the whole job in one read: keep its buffer
                } else {
                    let len = job.len;
                    let buf = job.buf.get_or_insert_with(|| vec![0u8; len]);
                    buf[off..off + b.len()].copy_from_slice(&b);
                }
            }
            job.pending -= 1;
        }
        if self.read_job(tag.job).pending == 0 {
            self.finish_read(ctx, tag.job);
        }
    }

    /// Deliver the result (reply, or hand the block to its relocation) as soon as every part
    /// is served. The job itself stays while hedged duplicates are still in flight, so their
    /// stripe pins are released when they return; then it is dropped.
    fn finish_read(&mut self, ctx: &mut Ctx, h: u64) {
        let job = self.read_job(h);
        let purpose = std::mem::replace(&mut job.purpose, ReadPurpose::Delivered);
        let len: u64 = job.parts.iter().map(|p| p.count as u64 * PAGE_SIZE).sum();
        let error = job.error.take();
        let lost = job.lost;
        // Parts that were not read (unmapped, trimmed) read as zeros.
        let buf = job
            .buf
            .take()
            .or_else(|| (!ctx.size_only).then(|| vec![0u8; job.len]));
        if job.parts.iter().all(|p| p.inflight == 0) {
            let _ = self.jobs.remove(h);
        }
        match purpose {
            ReadPurpose::User { id, at } => {
                let result = crate::engine::api::read_result(error, buf, len);
                ctx.reply(id, at, result);
            }
            ReadPurpose::Reloc { job: r, index } => {
                let data = if error.is_some() {
                    None
                } else {
                    Some(buf.unwrap_or_default())
                };
                self.reloc_block_read(ctx, r, index, data, lost);
            }
            ReadPurpose::Delivered => {}
        }
    }

    /// Issue a second read of slow replicated parts to another copy (hedged request).
    pub(super) fn hedge_reads(&mut self, ctx: &mut Ctx) {
        let Some(hedge) = self.cfg.hedge_ns else {
            return;
        };
        for h in self.jobs.handles() {
            let Some(Job::Read(job)) = self.jobs.get(h) else {
                continue;
            };
            let vol = job.vol;
            let due: Vec<usize> = job
                .parts
                .iter()
                .enumerate()
                .filter(|(_, p)| {
                    matches!(p.mode, PartMode::Direct { .. })
                        && !p.hedged
                        && p.inflight == 1
                        && matches!(p.loc, Loc::Rep(_))
                        && p.issued_at + hedge <= ctx.now
                })
                .map(|(i, _)| i)
                .collect();
            for i in due {
                let (loc, at, count, cur) = {
                    let Some(Job::Read(job)) = self.jobs.get(h) else {
                        unreachable!()
                    };
                    let p = &job.parts[i];
                    let PartMode::Direct { stripe } = p.mode else {
                        unreachable!()
                    };
                    (p.loc, p.at, p.count, stripe)
                };
                let Loc::Rep(key) = loc else { unreachable!() };
                let v = &mut self.vols[vol];
                let Some(r) = v.pairs.lookup(&v.zone, key) else {
                    continue;
                };
                let copies = v.pairs.copies(r);
                if !copies.iter().any(|&(s, _)| s == cur) {
                    // The set was converted and its first stripe reused by a new set under
                    // the same key: the copies found are another block's (the read pins
                    // `cur`, so no new set can contain it).
                    continue;
                }
                let routing = &*self.policy.routing;
                let other = copies.iter().position(|&(s, c)| {
                    s != cur && routing.may_hedge_to(&ctx.members(), v.zone.disk(s, c))
                });
                let Some(ci) = other else { continue };
                let (s, c) = copies[ci];
                let code = DIRECT + ci as u32;
                let (disk, off) = v.zone.device_offset(s, c, at as u64 * PAGE_SIZE);
                v.stripes.pin(s);
                ctx.issue(
                    disk,
                    DevOp::Read {
                        offset: off,
                        len: count as u64 * PAGE_SIZE,
                    },
                    IoTag {
                        job: h,
                        part: i as u32 * PART_STRIDE + code,
                    },
                    false,
                );
                ctx.stats.hedged_reads += 1;
                let Some(Job::Read(job)) = self.jobs.get_mut(h) else {
                    unreachable!()
                };
                let p = &mut job.parts[i];
                p.hedged = true;
                p.inflight += 1;
                p.pins.push((code, s));
            }
        }
    }

    /// The next time a replicated read becomes due for hedging. Reads already past due were
    /// hedged or could not be (no healthy other copy) at the last tick; they do not count, or
    /// the timer would fire again and again at the same instant.
    pub(super) fn hedge_deadline(&self, now: Nanos) -> Option<Nanos> {
        let hedge = self.cfg.hedge_ns?;
        let mut best: Option<Nanos> = None;
        for h in self.jobs.handles() {
            if let Some(Job::Read(job)) = self.jobs.get(h) {
                for p in &job.parts {
                    if matches!(p.mode, PartMode::Direct { .. })
                        && !p.hedged
                        && matches!(p.loc, Loc::Rep(_))
                    {
                        let t = p.issued_at + hedge;
                        if t <= now {
                            continue;
                        }
                        best = Some(best.map_or(t, |b: Nanos| b.min(t)));
                    }
                }
            }
        }
        best
    }
}
