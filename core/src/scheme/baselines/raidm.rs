//! 4-RAIDM (paper §5.3): the groups of 4-RAID5 (one volume per group), but every write is
//! mirrored, two copies on two disks of the group, appended log-structured; no parity, so no
//! write ever reads. It isolates the effect of replacing RAID writes with replicated writes.
//!
//! - **Mirror units (MUs).** A group's space is a sequence of chunk positions
//!   `pos = row * width + disk`; MU `m` is the two positions `2m` and `2m + 1`, i.e. the same
//!   pages on two neighbouring disks. Consecutive MUs rotate over the disk pairs, so allocating
//!   them in order spreads writes round-robin over the group.
//! - **Round-robin heads.** The group keeps `heads` open MUs (default: one per disk); each write
//!   takes the next head in turn and appends its pages there (continuing into fresh MUs),
//!   issuing both copies at once. New MUs avoid failed disks when one can; a copy aimed at a
//!   failed disk is skipped.
//! - **Mapping**: per 4 KiB page (like LogRAID), `MU * pages_per_chunk + slot`, switched when
//!   both copies are written; a write is acknowledged then.
//! - **Cleaning** as in LogRAID: greedy MU victim, live pages read and re-appended, mapping
//!   switched only if still pointing at the old copy; the last `reserve` free MUs are the
//!   cleaner's.
//! - Reads use the first copy, or the second when the first disk failed (no load-based choice:
//!   that is what Fusion-ND and FusionRAID add). Trim and write-zeroes unmap.

use std::collections::VecDeque;

use super::BaselineConfig;
use super::logspace::SegSpace;
use super::sparse::{NONE, SparseU32};
use crate::engine::api::{Data, DevOp, IoResult, Op, ReqError, Request, VolumeId};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::locks::BlockLocks;
use crate::scheme::{Scheme, VolumeStatus};
use crate::slab::Slab;
use crate::types::{DiskId, Nanos, PAGE_SIZE};

const PS: usize = PAGE_SIZE as usize;
const NO_SPACE: &str = "no space left in the group";

#[derive(Debug, Clone)]
pub struct RaidmConfig {
    /// Space beyond the group's volumes (counted once, before mirroring), as a share.
    pub spare_fraction: f64,
    /// Clean when free MUs fall below this share of the group's MUs.
    pub gc_low_water: f64,
    /// Open MUs per group taking writes in turn; 0 = one per disk.
    pub heads: usize,
    pub cleaners: usize,
}

impl Default for RaidmConfig {
    fn default() -> Self {
        RaidmConfig {
            spare_fraction: 0.25,
            gc_low_water: 0.05,
            heads: 0,
            cleaners: 1,
        }
    }
}

/// A run of pages placed in one MU: first logical page, first physical page, count; and for a
/// cleaner's copy, the physical page it came from (NONE for user data).
#[derive(Clone, Copy)]
struct Placed {
    lpa: u32,
    ppa: u32,
    count: u32,
    src: u32,
    /// Generation of the source MU when the copy was taken.
    src_gen: u32,
}

struct RPart {
    buf_off: u64,
    mu: u32,
    slot: u32,
    count: u32,
    copy: u8,
}

enum Job {
    Read {
        id: u64,
        at: Nanos,
        grp: usize,
        len: u64,
        buf: Option<Vec<u8>>,
        parts: Vec<RPart>,
        pending: u32,
        err: Option<String>,
    },
    Write {
        id: u64,
        at: Nanos,
        vol: usize,
        offset: u64,
        len: u64,
        data: Option<Data>,
        unmap: bool,
        fua: bool,
        head: usize,
        placed: u32,
        pieces: Vec<Placed>,
        /// Copies written, and copies still in flight, per piece.
        ok: Vec<u8>,
        left: Vec<u8>,
        pending: u32,
        err: Option<String>,
    },
    Clean {
        grp: usize,
        mu: u32,
        /// (slot, lpa) of the live pages.
        pages: Vec<(u32, u32)>,
        data: Option<Vec<u8>>,
        /// Reads: (index of first page, slot, count, copy).
        runs: Vec<(usize, u32, u32, u8)>,
        reading: bool,
        failed: bool,
        placed: usize,
        pieces: Vec<Placed>,
        ok: Vec<u8>,
        left: Vec<u8>,
        pending: u32,
    },
    Flush {
        id: u64,
        at: Nanos,
        pending: u32,
    },
}

struct Head {
    mu: u32,
    fill: u32,
}

struct Group {
    disks: Vec<DiskId>,
    space: SegSpace,
    map: SparseU32,
    heads: Vec<Option<Head>>,
    next_head: usize,
    waiters: VecDeque<u64>,
    gc_waiters: VecDeque<u64>,
    cleaning: usize,
    reserve: usize,
    low_water: usize,
}

struct Vol {
    name: String,
    size: u64,
    grp: usize,
    base: u64,
    mapped: u64,
}

pub struct RaidM {
    cfg: RaidmConfig,
    groups: Vec<Group>,
    vols: Vec<Vol>,
    locks: Vec<BlockLocks<u64>>,
    jobs: Slab<Job>,
    ready: VecDeque<u64>,
    block_size: u64,
    ppb: u32,
    data_offset: u64,
    width: usize,
    max_request: u64,
    pub cleaned_pages: u64,
}

/// Mirror units a group with `lp` logical pages gets: its pages plus the spare share, the
/// cleaner's reserve and the open heads.
fn group_units(rc: &RaidmConfig, lp: u64, ppb: u32, width: usize) -> u64 {
    let heads = if rc.heads == 0 { width } else { rc.heads };
    let reserve = rc.cleaners.max(1) + 2;
    ((lp as f64 * (1.0 + rc.spare_fraction)) / ppb as f64).ceil() as u64
        + (reserve + 2 * heads + 4) as u64
}

/// Rows per member the groups use.
pub fn rows_needed(cfg: &BaselineConfig) -> Result<u64, String> {
    let geo = cfg.geometry()?;
    let mut logical = vec![0u64; geo.groups];
    for (i, &size) in cfg.volumes.iter().enumerate() {
        logical[i % geo.groups] += size / PAGE_SIZE;
    }
    Ok(logical
        .iter()
        .map(|&lp| {
            (2 * group_units(&cfg.raidm, lp, geo.ppb as u32, geo.width)).div_ceil(geo.width as u64)
        })
        .max()
        .unwrap_or(0))
}

impl RaidM {
    pub fn new(cfg: &BaselineConfig) -> Result<Self, String> {
        let geo = cfg.geometry()?;
        let rc = cfg.raidm.clone();
        let width = geo.width;
        let ppb = geo.ppb as u32;
        let heads = if rc.heads == 0 { width } else { rc.heads };
        let cleaners = rc.cleaners.max(1);
        let mut vols = Vec::new();
        let mut logical = vec![0u64; geo.groups];
        for (i, &size) in cfg.volumes.iter().enumerate() {
            let grp = i % geo.groups;
            vols.push(Vol {
                name: format!("v{i}"),
                size,
                grp,
                base: logical[grp],
                mapped: 0,
            });
            logical[grp] += size / PAGE_SIZE;
        }
        let capacity = width as u64 * geo.rows / 2;
        let mut groups = Vec::new();
        for (g, &lp) in logical.iter().enumerate() {
            let reserve = cleaners + 2;
            let want = group_units(&rc, lp, ppb, width);
            if want > capacity {
                return Err(format!(
                    "raidm: group {g} needs {want} mirror units but holds {capacity}"
                ));
            }
            if want * ppb as u64 >= NONE as u64 {
                return Err("raidm: more than 2^32 pages in a group".into());
            }
            let low_water =
                ((want as f64 * rc.gc_low_water).ceil() as usize).max(reserve + heads + cleaners);
            groups.push(Group {
                disks: geo.group_disks(g).collect(),
                space: SegSpace::new(want as u32, ppb),
                map: SparseU32::new(lp),
                heads: (0..heads).map(|_| None).collect(),
                next_head: 0,
                waiters: VecDeque::new(),
                gc_waiters: VecDeque::new(),
                cleaning: 0,
                reserve,
                low_water,
            });
        }
        Ok(RaidM {
            locks: vols.iter().map(|_| BlockLocks::default()).collect(),
            vols,
            groups,
            jobs: Slab::default(),
            ready: VecDeque::new(),
            block_size: geo.block_size,
            ppb,
            data_offset: geo.data_offset,
            width,
            max_request: cfg.max_request_bytes,
            cfg: rc,
            cleaned_pages: 0,
        })
    }

    pub fn free_units(&self, grp: usize) -> usize {
        self.groups[grp].space.free_count()
    }

    /// Disk and byte offset of copy `copy` of page `slot` of MU `mu` in group `grp`.
    fn locate(&self, grp: usize, mu: u32, copy: u8, slot: u32) -> (DiskId, u64) {
        let pos = 2 * mu as u64 + copy as u64;
        let w = self.width as u64;
        (
            self.groups[grp].disks[(pos % w) as usize],
            self.data_offset + (pos / w) * self.block_size + slot as u64 * PAGE_SIZE,
        )
    }

    fn vol_of(&self, grp: usize, lpa: u64) -> usize {
        self.vols
            .iter()
            .rposition(|v| v.grp == grp && v.base <= lpa)
            .expect("lpa in some volume")
    }

    fn remap(&mut self, grp: usize, lpa: u32, ppa: u32) {
        let ppb = self.ppb;
        let v = self.vol_of(grp, lpa as u64);
        let g = &mut self.groups[grp];
        let old = g.map.set(lpa as u64, ppa);
        if old != NONE {
            g.space.sub_valid(old / ppb);
            self.vols[v].mapped -= 1;
        }
        if ppa != NONE {
            g.space.add_valid(ppa / ppb);
            self.vols[v].mapped += 1;
        }
    }

    // ------------------------------------------------------------------ reads

    fn start_read(&mut self, ctx: &mut Ctx, id: u64, vol: usize, offset: u64, len: u64) {
        let grp = self.vols[vol].grp;
        let base = self.vols[vol].base + offset / PAGE_SIZE;
        let ppb = self.ppb;
        let mut parts: Vec<RPart> = Vec::new();
        for i in 0..len / PAGE_SIZE {
            let ppa = self.groups[grp].map.get(base + i);
            if ppa == NONE {
                continue;
            }
            let (mu, slot) = (ppa / ppb, ppa % ppb);
            if let Some(p) = parts.last_mut()
                && p.mu == mu
                && p.slot + p.count == slot
                && p.buf_off + p.count as u64 * PAGE_SIZE == i * PAGE_SIZE
            {
                p.count += 1;
                continue;
            }
            parts.push(RPart {
                buf_off: i * PAGE_SIZE,
                mu,
                slot,
                count: 1,
                copy: 0,
            });
        }
        let n = parts.len();
        let h = self.jobs.insert(Job::Read {
            id,
            at: ctx.now,
            grp,
            len,
            buf: (!ctx.size_only).then(|| vec![0u8; len as usize]),
            parts,
            pending: n as u32,
            err: None,
        });
        for i in 0..n {
            self.issue_read(ctx, h, i, 0);
        }
        if n == 0 {
            self.finish_read(ctx, h);
        }
    }

    /// Read part `i` from the first live copy at or after `from`.
    fn issue_read(&mut self, ctx: &mut Ctx, h: u64, i: usize, from: u8) {
        let (grp, mu, slot, count) = match self.jobs.get(h) {
            Some(Job::Read { grp, parts, .. }) => {
                let p = &parts[i];
                (*grp, p.mu, p.slot, p.count)
            }
            _ => unreachable!(),
        };
        let copy = (from..2).find(|&c| !ctx.is_failed(self.locate(grp, mu, c, slot).0));
        let Some(Job::Read {
            parts,
            pending,
            err,
            ..
        }) = self.jobs.get_mut(h)
        else {
            unreachable!()
        };
        match copy {
            None => {
                err.get_or_insert_with(|| "both copies of a mirrored page are lost".into());
                *pending -= 1;
            }
            Some(c) => {
                parts[i].copy = c;
                self.groups[grp].space.pin(mu);
                let (disk, off) = self.locate(grp, mu, c, slot);
                ctx.issue(
                    disk,
                    DevOp::Read {
                        offset: off,
                        len: count as u64 * PAGE_SIZE,
                    },
                    IoTag {
                        job: h,
                        part: i as u32,
                    },
                    false,
                );
            }
        }
    }

    fn read_done(&mut self, ctx: &mut Ctx, h: u64, i: usize, result: IoResult) {
        let Some(Job::Read {
            grp, parts, buf, ..
        }) = self.jobs.get_mut(h)
        else {
            unreachable!()
        };
        let (grp, mu, copy, off) = (*grp, parts[i].mu, parts[i].copy, parts[i].buf_off);
        let ok = result.is_ok();
        if let (Some(b), Ok(Some(Data::Bytes(d)))) = (buf.as_mut(), &result) {
            b[off as usize..off as usize + d.len()].copy_from_slice(d);
        }
        let freed = self.groups[grp].space.unpin(mu);
        if !ok {
            // That copy's disk failed: try the other one.
            self.issue_read(ctx, h, i, copy + 1);
        } else if let Some(Job::Read { pending, .. }) = self.jobs.get_mut(h) {
            *pending -= 1;
        }
        if matches!(self.jobs.get(h), Some(Job::Read { pending: 0, .. })) {
            self.finish_read(ctx, h);
        }
        if freed {
            self.kick(ctx, grp);
        }
    }

    fn finish_read(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Read {
            id,
            at,
            len,
            buf,
            err,
            ..
        }) = self.jobs.remove(h)
        else {
            unreachable!()
        };
        let r = crate::engine::api::read_result(err, buf, len);
        ctx.reply(id, at, r);
    }

    // ------------------------------------------------------------------ writes

    fn start_write(&mut self, ctx: &mut Ctx, h: u64) {
        let (vol, offset, len, unmap) = match self.jobs.get(h) {
            Some(Job::Write {
                vol,
                offset,
                len,
                unmap,
                ..
            }) => (*vol, *offset, *len, *unmap),
            _ => unreachable!(),
        };
        let grp = self.vols[vol].grp;
        if unmap {
            let base = self.vols[vol].base + offset / PAGE_SIZE;
            for i in 0..len / PAGE_SIZE {
                self.remap(grp, (base + i) as u32, NONE);
            }
            self.finish_write(ctx, h);
            self.kick(ctx, grp);
            return;
        }
        let g = &mut self.groups[grp];
        let head = g.next_head;
        g.next_head = (head + 1) % g.heads.len();
        if let Some(Job::Write { head: hd, .. }) = self.jobs.get_mut(h) {
            *hd = head;
        }
        if self.place_write(ctx, h) {
            self.maybe_complete_write(ctx, h);
        } else {
            self.groups[grp].waiters.push_back(h);
            self.check_stuck(ctx, grp);
        }
    }

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
    fn place(
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

    fn piece_io_done(&mut self, h: u64, part: u32, result: &IoResult) {
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

    /// Place what is left of a user write. False: blocked for space.
    fn place_write(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        loop {
            let Some(Job::Write {
                vol,
                offset,
                len,
                placed,
                head,
                fua,
                data,
                ..
            }) = self.jobs.get(h)
            else {
                unreachable!()
            };
            let total = (len / PAGE_SIZE) as u32;
            if *placed == total {
                return true;
            }
            let (vol, placed, head, fua) = (*vol, *placed, *head, *fua);
            let grp = self.vols[vol].grp;
            let lpa = (self.vols[vol].base + offset / PAGE_SIZE) as u32 + placed;
            let bytes: Option<Vec<u8>> = match data {
                Some(Data::Bytes(b)) => Some(b[placed as usize * PS..].to_vec()),
                Some(Data::Size(_)) => None,
                None => (!ctx.size_only).then(|| vec![0u8; (total - placed) as usize * PS]),
            };
            let Some(p) = self.place(
                ctx,
                h,
                grp,
                head,
                false,
                lpa,
                total - placed,
                NONE,
                bytes.as_deref(),
                fua,
                false,
            ) else {
                return false;
            };
            if let Some(Job::Write { placed, .. }) = self.jobs.get_mut(h) {
                *placed += p.count;
            }
        }
    }

    fn write_io_done(&mut self, ctx: &mut Ctx, h: u64, part: u32, result: IoResult) {
        self.piece_io_done(h, part, &result);
        self.maybe_complete_write(ctx, h);
    }

    /// Once every page is placed and every copy is back (each piece switched the mapping as it
    /// settled): answer.
    fn maybe_complete_write(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Write {
            vol,
            len,
            placed,
            pending,
            ..
        }) = self.jobs.get(h)
        else {
            unreachable!()
        };
        if *pending > 0 || (*placed as u64) < *len / PAGE_SIZE {
            return;
        }
        let grp = self.vols[*vol].grp;
        self.finish_write(ctx, h);
        self.kick(ctx, grp);
    }

    fn finish_write(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Write {
            id,
            at,
            vol,
            offset,
            len,
            err,
            ..
        }) = self.jobs.remove(h)
        else {
            unreachable!()
        };
        self.ready
            .extend(self.locks[vol].release(offset / PAGE_SIZE, (offset + len) / PAGE_SIZE));
        let r = match err {
            None => Ok(None),
            Some(e) if e == NO_SPACE => Err(ReqError::NoSpace),
            Some(e) => Err(ReqError::Io(e)),
        };
        ctx.reply(id, at, r);
    }

    fn check_stuck(&mut self, ctx: &mut Ctx, grp: usize) {
        let g = &self.groups[grp];
        let busy = self.jobs_in_group(grp);
        if g.space.free_count() > g.reserve || g.cleaning > 0 || g.space.cleanable() > 0 || busy {
            return;
        }
        while let Some(h) = self.groups[grp].waiters.pop_front() {
            let Some(Job::Write {
                err, placed, len, ..
            }) = self.jobs.get_mut(h)
            else {
                unreachable!()
            };
            // Pieces already placed settle on their own; the rest is never placed.
            err.get_or_insert_with(|| NO_SPACE.into());
            *placed = (*len / PAGE_SIZE) as u32;
            self.maybe_complete_write(ctx, h);
        }
    }

    /// Whether any device I/O of the group is in flight (it could free space).
    fn jobs_in_group(&self, grp: usize) -> bool {
        self.jobs
            .handles()
            .into_iter()
            .any(|h| match self.jobs.get(h) {
                Some(Job::Write { vol, pending, .. }) => self.vols[*vol].grp == grp && *pending > 0,
                Some(Job::Read { grp: g, .. }) | Some(Job::Clean { grp: g, .. }) => *g == grp,
                _ => false,
            })
    }

    // ------------------------------------------------------------------ cleaning

    fn kick_cleaning(&mut self, ctx: &mut Ctx, grp: usize) {
        loop {
            let g = &mut self.groups[grp];
            if g.cleaning >= self.cfg.cleaners.max(1) || g.space.free_count() >= g.low_water {
                return;
            }
            let Some(mu) = g.space.pick_victim() else {
                return;
            };
            let ppb = self.ppb;
            let pages: Vec<(u32, u32)> = g
                .space
                .summary(mu)
                .iter()
                .enumerate()
                .filter(|&(i, &lpa)| lpa != NONE && g.map.get(lpa as u64) == mu * ppb + i as u32)
                .map(|(i, &lpa)| (i as u32, lpa))
                .collect();
            assert_eq!(
                pages.len() as u32,
                g.space.valid(mu),
                "summary vs live count"
            );
            g.cleaning += 1;
            g.space.pin(mu);
            let mut runs: Vec<(usize, u32, u32, u8)> = Vec::new();
            for (k, &(slot, _)) in pages.iter().enumerate() {
                if let Some(r) = runs.last_mut()
                    && r.1 + r.2 == slot
                {
                    r.2 += 1;
                    continue;
                }
                runs.push((k, slot, 1, 0));
            }
            let h = self.jobs.insert(Job::Clean {
                grp,
                mu,
                data: (!ctx.size_only).then(|| vec![0u8; pages.len() * PS]),
                pages,
                runs,
                reading: true,
                failed: false,
                placed: 0,
                pieces: Vec::new(),
                ok: Vec::new(),
                left: Vec::new(),
                pending: 0,
            });
            let n = match self.jobs.get(h) {
                Some(Job::Clean { runs, .. }) => runs.len(),
                _ => unreachable!(),
            };
            if let Some(Job::Clean { pending, .. }) = self.jobs.get_mut(h) {
                *pending = n as u32;
            }
            for i in 0..n {
                self.issue_clean_read(ctx, h, i, 0);
            }
        }
    }

    fn issue_clean_read(&mut self, ctx: &mut Ctx, h: u64, i: usize, from: u8) {
        let (grp, mu, slot, count) = match self.jobs.get(h) {
            Some(Job::Clean { grp, mu, runs, .. }) => (*grp, *mu, runs[i].1, runs[i].2),
            _ => unreachable!(),
        };
        let copy = (from..2).find(|&c| !ctx.is_failed(self.locate(grp, mu, c, slot).0));
        let Some(Job::Clean {
            runs,
            pending,
            failed,
            ..
        }) = self.jobs.get_mut(h)
        else {
            unreachable!()
        };
        let Some(c) = copy else {
            *failed = true;
            *pending -= 1;
            return;
        };
        runs[i].3 = c;
        let (disk, off) = self.locate(grp, mu, c, slot);
        ctx.issue(
            disk,
            DevOp::Read {
                offset: off,
                len: count as u64 * PAGE_SIZE,
            },
            IoTag {
                job: h,
                part: i as u32,
            },
            true,
        );
    }

    fn clean_io_done(&mut self, ctx: &mut Ctx, h: u64, part: u32, result: IoResult) {
        let Some(Job::Clean {
            grp,
            reading,
            data,
            runs,
            pending,
            ..
        }) = self.jobs.get_mut(h)
        else {
            unreachable!()
        };
        let grp = *grp;
        if !*reading {
            self.piece_io_done(h, part, &result);
            self.clean_maybe_done(ctx, h);
            return;
        }
        let (idx, _, _, copy) = runs[part as usize];
        match &result {
            Ok(Some(Data::Bytes(b))) => {
                if let Some(d) = data {
                    d[idx * PS..idx * PS + b.len()].copy_from_slice(b);
                }
                *pending -= 1;
            }
            Ok(_) => *pending -= 1,
            // That copy's disk failed: read the other one (or give up on this victim).
            Err(_) => self.issue_clean_read(ctx, h, part as usize, copy + 1),
        }
        self.clean_reads_done(ctx, h, grp);
    }

    fn clean_reads_done(&mut self, ctx: &mut Ctx, h: u64, grp: usize) {
        let Some(Job::Clean {
            mu,
            failed,
            reading,
            pending,
            ..
        }) = self.jobs.get_mut(h)
        else {
            unreachable!()
        };
        if *pending > 0 || !*reading {
            return;
        }
        *reading = false;
        let (mu, failed) = (*mu, *failed);
        self.groups[grp].space.unpin(mu);
        if failed {
            self.jobs.remove(h);
            self.groups[grp].cleaning -= 1;
            self.groups[grp].space.unvictim(mu);
            self.kick(ctx, grp);
            return;
        }
        if !self.place_clean(ctx, h) {
            self.groups[grp].gc_waiters.push_back(h);
        } else {
            self.clean_maybe_done(ctx, h);
        }
    }

    /// Re-append the victim's pages that are still live. False: blocked for space.
    fn place_clean(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        let ppb = self.ppb;
        loop {
            let Some(Job::Clean {
                grp,
                mu,
                pages,
                placed,
                data,
                ..
            }) = self.jobs.get(h)
            else {
                unreachable!()
            };
            let (grp, mu, idx) = (*grp, *mu, *placed);
            if idx == pages.len() {
                return true;
            }
            let (slot, lpa) = pages[idx];
            let src = mu * ppb + slot;
            // Runs of still-live pages that are consecutive both in the victim and logically.
            let mut n = 0u32;
            while idx + (n as usize) < pages.len() {
                let (s2, l2) = pages[idx + n as usize];
                if s2 != slot + n || l2 != lpa + n || self.groups[grp].map.get(l2 as u64) != src + n
                {
                    break;
                }
                n += 1;
            }
            if n == 0 {
                if let Some(Job::Clean { placed, .. }) = self.jobs.get_mut(h) {
                    *placed += 1;
                }
                continue;
            }
            let bytes = data
                .as_ref()
                .map(|d| d[idx * PS..(idx + n as usize) * PS].to_vec());
            let g = &mut self.groups[grp];
            let head = g.next_head;
            g.next_head = (head + 1) % g.heads.len();
            let Some(p) = self.place(
                ctx,
                h,
                grp,
                head,
                true,
                lpa,
                n,
                src,
                bytes.as_deref(),
                false,
                true,
            ) else {
                return false;
            };
            if let Some(Job::Clean { placed, .. }) = self.jobs.get_mut(h) {
                *placed += p.count as usize;
            }
        }
    }

    fn clean_maybe_done(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Clean {
            grp,
            reading: false,
            pages,
            placed,
            pending: 0,
            ..
        }) = self.jobs.get(h)
        else {
            return;
        };
        if *placed < pages.len() {
            return;
        }
        let grp = *grp;
        self.jobs.remove(h);
        self.groups[grp].cleaning -= 1;
        self.kick(ctx, grp);
    }

    fn kick(&mut self, ctx: &mut Ctx, grp: usize) {
        while let Some(&h) = self.groups[grp].gc_waiters.front() {
            if self.place_clean(ctx, h) {
                self.groups[grp].gc_waiters.pop_front();
                self.clean_maybe_done(ctx, h);
            } else {
                break;
            }
        }
        while let Some(&h) = self.groups[grp].waiters.front() {
            if self.place_write(ctx, h) {
                self.groups[grp].waiters.pop_front();
                self.maybe_complete_write(ctx, h);
            } else {
                break;
            }
        }
        self.kick_cleaning(ctx, grp);
        if !self.groups[grp].waiters.is_empty() {
            self.check_stuck(ctx, grp);
        }
    }

    fn pump(&mut self, ctx: &mut Ctx) {
        while let Some(h) = self.ready.pop_front() {
            self.start_write(ctx, h);
        }
    }
}

impl Scheme for RaidM {
    fn name(&self) -> &str {
        "4-raidm"
    }
    fn volume_count(&self) -> usize {
        self.vols.len()
    }
    fn volume_size(&self, v: VolumeId) -> Option<u64> {
        self.vols.get(v as usize).map(|v| v.size)
    }
    fn max_request_bytes(&self) -> u64 {
        self.max_request
    }

    fn submit(&mut self, ctx: &mut Ctx, req: Request) {
        let vol = req.volume as usize;
        let at = ctx.now;
        let (offset, len, data, unmap, fua) = match req.op {
            Op::Read { offset, len } => {
                self.start_read(ctx, req.id, vol, offset, len);
                self.pump(ctx);
                return;
            }
            Op::Flush => {
                let h = self.jobs.insert(Job::Flush {
                    id: req.id,
                    at,
                    pending: 0,
                });
                let mut n = 0;
                for d in self.groups.iter().flat_map(|g| g.disks.iter().copied()) {
                    if !ctx.is_failed(d) {
                        ctx.issue(d, DevOp::Flush, IoTag { job: h, part: n }, false);
                        n += 1;
                    }
                }
                if n == 0 {
                    self.jobs.remove(h);
                    ctx.reply(req.id, at, Ok(None));
                } else if let Some(Job::Flush { pending, .. }) = self.jobs.get_mut(h) {
                    *pending = n;
                }
                return;
            }
            Op::Write { offset, data, fua } => (offset, data.len(), Some(data), false, fua),
            Op::WriteZeroes { offset, len, .. } | Op::Trim { offset, len } => {
                (offset, len, None, true, false)
            }
        };
        let h = self.jobs.insert(Job::Write {
            id: req.id,
            at,
            vol,
            offset,
            len,
            data,
            unmap,
            fua,
            head: 0,
            placed: 0,
            pieces: Vec::new(),
            ok: Vec::new(),
            left: Vec::new(),
            pending: 0,
            err: None,
        });
        if self.locks[vol]
            .acquire(offset / PAGE_SIZE, (offset + len) / PAGE_SIZE, h)
            .is_some()
        {
            self.start_write(ctx, h);
        }
        self.pump(ctx);
    }

    fn on_io_complete(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        match self.jobs.get_mut(tag.job) {
            Some(Job::Read { .. }) => self.read_done(ctx, tag.job, tag.part as usize, result),
            Some(Job::Write { .. }) => self.write_io_done(ctx, tag.job, tag.part, result),
            Some(Job::Clean { .. }) => self.clean_io_done(ctx, tag.job, tag.part, result),
            Some(Job::Flush { id, at, pending }) => {
                *pending -= 1;
                if *pending == 0 {
                    let (id, at) = (*id, *at);
                    self.jobs.remove(tag.job);
                    ctx.reply(id, at, Ok(None));
                }
            }
            None => unreachable!("completion for a finished job"),
        }
        self.pump(ctx);
    }

    fn on_tick(&mut self, ctx: &mut Ctx) {
        for g in 0..self.groups.len() {
            self.kick(ctx, g);
        }
        self.pump(ctx);
    }

    fn next_deadline(&self, _now: Nanos) -> Option<Nanos> {
        None
    }

    fn on_disk_failed(&mut self, ctx: &mut Ctx, _disk: DiskId) {
        self.pump(ctx);
    }

    fn volume_status(&self, v: VolumeId) -> Option<VolumeStatus> {
        let vol = self.vols.get(v as usize)?;
        let g = &self.groups[vol.grp];
        let mu_bytes = 2 * self.block_size;
        let used = (g.space.segments() as usize - g.space.free_count()) as u64;
        Some(VolumeStatus {
            name: vol.name.clone(),
            size_bytes: vol.size,
            level: format!("mirrored log over {} disks", self.width),
            raid_bytes: 0,
            replicated_bytes: used * mu_bytes,
            free_bytes: g.space.free_count() as u64 * mu_bytes,
            conversion_backlog: 0,
            mapped_bytes: vol.mapped * PAGE_SIZE,
            metadata_bytes: g.map.memory_bytes() + used * self.ppb as u64 * 4,
            rebuild: None,
            scrub: None,
        })
    }

    fn is_idle(&self) -> bool {
        self.jobs.is_empty() && self.ready.is_empty()
    }

    fn check_invariants(&self) {
        let ppb = self.ppb;
        for (gi, g) in self.groups.iter().enumerate() {
            let mut live = vec![0u32; g.space.segments() as usize];
            for lpa in 0..g.map.len() {
                let ppa = g.map.get(lpa);
                if ppa == NONE {
                    continue;
                }
                let mu = ppa / ppb;
                live[mu as usize] += 1;
                assert!(
                    !g.space.is_free(mu),
                    "group {gi}: page {lpa} in free MU {mu}"
                );
                assert_eq!(
                    g.space.summary(mu)[(ppa % ppb) as usize],
                    lpa as u32,
                    "group {gi}: summary of MU {mu} disagrees with the mapping"
                );
            }
            g.space.check(&live);
            if self.jobs.is_empty() {
                assert_eq!(g.cleaning, 0);
                assert!(g.waiters.is_empty() && g.gc_waiters.is_empty());
            }
        }
        for v in &self.vols {
            let g = &self.groups[v.grp];
            let n = (v.base..v.base + v.size / PAGE_SIZE)
                .filter(|&l| g.map.get(l) != NONE)
                .count() as u64;
            assert_eq!(n, v.mapped, "mapped-page count of {}", v.name);
        }
    }

    fn debug_state(&self) -> String {
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| {
                format!(
                    "free {}/{} waiters {} gc_waiters {} cleaning {}",
                    g.space.free_count(),
                    g.space.segments(),
                    g.waiters.len(),
                    g.gc_waiters.len(),
                    g.cleaning
                )
            })
            .collect();
        format!("4-raidm: jobs {} groups {:?}", self.jobs.len(), groups)
    }
}
