//! Read completions: a device read comes back, its part is checked against the checksums
//! written with it, rebuilt from its stripe's columns when those are all in, delivered, or
//! planned again (elsewhere, or where its pages live by now). Then the whole read is
//! delivered.

use super::FusionScheme;
use super::jobs::{BAD_RAID, BAD_REBUILD, JobId, PartMode, ReadPurpose};
use super::read::{DIRECT, MAX_TRIES, PART_STRIDE};
use crate::engine::api::{Data, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::parity;
use crate::types::PAGE_SIZE;
use crate::volume::{Loc, PageSums};

/// What a completed device read means for its part.
enum Arrival {
    /// Nothing to do yet (a hedge or other columns still out, or a stale read).
    Wait,
    /// The part is to be read again.
    Retry,
    /// The part's bytes (None in size-only mode), not yet checked.
    Bytes(Option<Vec<u8>>),
}

/// What the checksums say about a part's bytes.
enum Verdict {
    Good(Option<Vec<u8>>),
    Retry,
    /// Bad, and another read of the part is still out: it may deliver.
    Wait,
    /// Bad beyond repair: the part was finished as lost.
    Lost,
}

impl FusionScheme {
    pub(super) fn read_io_done(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        let (h, i, col) = (
            JobId::of(tag),
            (tag.part / PART_STRIDE) as usize,
            tag.part % PART_STRIDE,
        );
        let vol = self.read_job(h).vol;
        // The device's buffer moves into the job (no copy): the result is ours.
        let ok = result.is_ok();
        let bytes = match result {
            Ok(Some(Data::Bytes(b))) => Some(b),
            _ => None,
        };
        self.release_read(h, i, col, vol);
        if matches!(self.read_job(h).parts[i].mode, PartMode::Done) {
            // The slower half of a hedged read: its pin is released; drop the job once
            // nothing of it is in flight.
            let job = self.read_job(h);
            if job.pending == 0 && job.parts.iter().all(|p| p.inflight == 0) {
                let _ = self.jobs.remove(h);
            }
            return;
        }
        let verdict = match self.arrival(ctx, h, i, col, ok, bytes) {
            Arrival::Wait => return,
            Arrival::Retry => Verdict::Retry,
            Arrival::Bytes(Some(b)) => self.verify(ctx, h, i, col, b),
            Arrival::Bytes(None) => Verdict::Good(None),
        };
        match verdict {
            Verdict::Wait => return,
            Verdict::Retry => self.retry_part(ctx, h, i),
            Verdict::Good(bytes) => {
                let p = &self.read_job(h).parts[i];
                if p.hedged && col < DIRECT && matches!(p.loc, Loc::Raid(_)) {
                    ctx.stats.hedged_raid_reads_won += 1;
                }
                self.deliver_part(h, i, bytes)
            }
            Verdict::Lost => {}
        }
        if self.read_job(h).pending == 0 {
            self.finish_read(ctx, h);
        }
    }

    /// One device read of part `i` is back: it is no longer in flight and releases the pin
    /// it took on its stripe.
    fn release_read(&mut self, h: JobId, i: usize, col: u32, vol: usize) {
        let p = &mut self.read_job(h).parts[i];
        p.inflight -= 1;
        let pos = p
            .pins
            .iter()
            .position(|&(code, _)| code == col)
            .expect("completion of a read this part did not issue");
        let (_, s) = p.pins.swap_remove(pos);
        self.vols[vol].stripes.unpin(s);
    }

    /// What the read of column or copy `col` brings to part `i` (not done yet).
    fn arrival(
        &mut self,
        ctx: &Ctx,
        h: JobId,
        i: usize,
        col: u32,
        ok: bool,
        mut bytes: Option<Vec<u8>>,
    ) -> Arrival {
        let vol = self.read_job(h).vol;
        let nparity = self.vols[vol].zone.nparity();
        let p = &mut self.read_job(h).parts[i];
        let plen = p.count as usize * PAGE_SIZE as usize;
        // Other reads of the part still out (a hedge, or the direct read a RAID hedge races):
        // a failure waits for them rather than planning the part again, so a part is never
        // planned again while a read of its old plan is in flight.
        let others = p.inflight > 0;
        match &mut p.mode {
            PartMode::Done => unreachable!("a finished part has no reads to wait for"),
            PartMode::Direct { .. } if ok => Arrival::Bytes(bytes),
            PartMode::Direct { .. } if others => Arrival::Wait,
            PartMode::Direct { .. } => Arrival::Retry,
            // The direct read a RAID hedge's rebuild races (`raid_hedge.rs`): it serves the
            // part if it delivers first.
            PartMode::Rebuild { .. } if col >= DIRECT && ok => Arrival::Bytes(bytes),
            PartMode::Rebuild { .. } if col >= DIRECT && others => Arrival::Wait,
            PartMode::Rebuild { .. } if col >= DIRECT => Arrival::Retry,
            PartMode::Rebuild {
                target,
                missing,
                cols,
                waiting,
            } => {
                *waiting -= 1;
                cols[col as usize] = ok.then(|| bytes.take().unwrap_or_default());
                if *waiting > 0 {
                    return Arrival::Wait;
                }
                let have = (0..cols.len())
                    .filter(|x| !missing.contains(x))
                    .all(|x| cols[x].is_some());
                if !have {
                    return if others {
                        Arrival::Wait
                    } else {
                        Arrival::Retry
                    };
                }
                if ctx.size_only {
                    return Arrival::Bytes(None);
                }
                let mut bufs: Vec<Vec<u8>> = cols
                    .iter_mut()
                    .map(|c| c.take().unwrap_or_else(|| vec![0u8; plen]))
                    .collect();
                let mut refs: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
                // The target is a data column: parity not read stays unread.
                parity::reconstruct_data(&mut refs, nparity, missing)
                    .expect("reconstruction within parity");
                Arrival::Bytes(Some(std::mem::take(&mut bufs[*target])))
            }
        }
    }

    /// Checks part `i`'s bytes, read from copy or column `col`, against their checksums.
    fn verify(&mut self, ctx: &mut Ctx, h: JobId, i: usize, col: u32, bytes: Vec<u8>) -> Verdict {
        let job = self.read_job(h);
        let (vol, user) = (job.vol, matches!(job.purpose, ReadPurpose::User { .. }));
        let p = &mut job.parts[i];
        if PageSums::first_mismatch(&p.expect, &bytes).is_none() {
            if p.bad & !BAD_REBUILD != 0 && user {
                // Served from a good copy: move the block off the bad one in the background
                // (a relocation of it does that already).
                let ub = p.ub;
                self.vols[vol].queue_repair(ub);
            }
            return Verdict::Good(Some(bytes));
        }
        // Silent corruption (or a torn write the device acknowledged): this copy is not the
        // data that was written. Counted once per bad copy (a copy the scrub or an earlier
        // read found is read again by the repair); a reconstruction that does not match
        // counts each time.
        // Bytes of the block's own place (a copy, or the RAID block a hedge's rebuild
        // races), not of a rebuild.
        let direct = matches!(p.mode, PartMode::Direct { .. }) || col >= DIRECT;
        let (ub, loc) = (p.ub, p.loc);
        p.lost_copy = Some(bytes);
        if direct {
            let copy = match loc {
                Loc::Rep(_) => (col - DIRECT) as u8,
                _ => 0,
            };
            self.count_bad_copy(ctx, vol, ub, loc, copy);
        } else {
            ctx.stats.checksum_errors += 1;
        }
        let p = &mut self.read_job(h).parts[i];
        match p.mode {
            PartMode::Direct { .. } => {
                p.bad |= match p.loc {
                    Loc::Rep(_) => 1 << (col - DIRECT),
                    _ => BAD_RAID,
                };
                if p.inflight > 0 {
                    Verdict::Wait // the hedged read of another copy may still deliver
                } else {
                    Verdict::Retry
                }
            }
            _ if direct => {
                // The RAID block itself is bad; the rebuild racing it may still deliver.
                p.bad |= BAD_RAID;
                if p.inflight > 0 {
                    Verdict::Wait
                } else {
                    Verdict::Retry
                }
            }
            _ if p.bad & (BAD_RAID | BAD_REBUILD) == 0 => {
                // Rebuilt around a slow member from a column that is itself bad: read the
                // block directly instead (the direct read a hedge raced may still be out).
                p.bad |= BAD_REBUILD;
                if p.inflight > 0 {
                    Verdict::Wait
                } else {
                    Verdict::Retry
                }
            }
            _ => {
                ctx.stats.unrecoverable_pages += p.count as u64;
                let why = "a block failed its checksum and its parity could not restore it";
                self.part_lost(ctx, h, i, why);
                Verdict::Lost
            }
        }
    }

    /// Reads part `i` again, unless it has been tried too often. Where the pages live may
    /// have changed while the failed read was out (conversion, relocation): look again
    /// before reading again. (Planning may finish the part at once: unmapped by now, or no
    /// copy left.)
    fn retry_part(&mut self, ctx: &mut Ctx, h: JobId, i: usize) {
        let p = &mut self.read_job(h).parts[i];
        p.tries += 1;
        if p.tries >= MAX_TRIES {
            self.part_failed(ctx, h, i, "reads failed on every member tried");
            return;
        }
        for j in self.reresolve_part(h, i) {
            self.plan_part(ctx, h, j);
        }
    }

    /// Part `i` is served: its bytes go into the job's buffer.
    fn deliver_part(&mut self, h: JobId, i: usize, bytes: Option<Vec<u8>>) {
        let job = self.read_job(h);
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

    /// Deliver the result (reply, or hand the block to its relocation) as soon as every part
    /// is served. The job itself stays while hedged duplicates are still in flight, so their
    /// stripe pins are released when they return; then it is dropped.
    pub(super) fn finish_read(&mut self, ctx: &mut Ctx, h: JobId) {
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
}
