//! LogRAID: a log-structured RAID50. Every update of every volume is appended to one log of
//! full stripes, so the array never reads to write; a mapping table says where each page lives
//! and a cleaner reclaims stripes whose pages were overwritten.
//!
//! - **Mapping granularity: 4 KiB pages.** A page-granular table makes sub-chunk writes plain
//!   appends (no read-modify-write at the log level). It is a [`SparseU32`] keyed by logical
//!   page (all volumes concatenated), whose leaves are allocated on first write, and it holds
//!   *physical page numbers* `segment * pages_per_segment + slot`. Each segment keeps an LFS-style
//!   summary (the logical page of every slot) for the cleaner; a slot is live when the mapping
//!   still points at it.
//! - **Segments** are the stripes of a log region at the start of the RAID50 (global stripes
//!   0..n, so consecutive segments rotate over the groups). The region holds the volumes'
//!   logical size plus `spare_fraction`, plus a reserve for the cleaner.
//! - **Write buffer: one open segment.** Writes append their pages; the segment is written as a
//!   full stripe (parity in memory, no pre-reads) when it is full, when `flush_delay_ns` passed
//!   since its first page, or at once for a FUA write; the rest of a partial segment is zero
//!   padding. A write is acknowledged when every segment holding its pages is on the members
//!   and the mapping points at them. Up to `max_inflight_segments` segment writes run at once.
//! - **Cleaning** starts when free segments fall below `gc_low_water` of the region: greedy
//!   victim (fewest live pages), its live pages read (the victim is pinned meanwhile), appended
//!   to the same log, and the mapping switched only if it still points at the old slot (a user
//!   write or trim in between wins). User appends may not take the last `reserve` free
//!   segments, which the cleaner needs to make progress.
//! - Trim and write-zeroes unmap the pages (unmapped pages read as zeros). Flush flushes every
//!   member: acknowledged writes are already on the members.

use std::collections::VecDeque;

use super::BaselineConfig;
use super::array::{ColWrite, Outcome, RaidCore, ReadPolicy, Token};
use super::geom::ArrayGeom;
use super::logspace::SegSpace;
use super::sparse::{NONE, SparseU32};
use crate::engine::api::{Data, IoResult, Op, ReqError, Request, VolumeId};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::locks::BlockLocks;
use crate::scheme::{Scheme, VolumeStatus};
use crate::slab::Slab;
use crate::types::{DiskId, Nanos, PAGE_SIZE};

const PS: usize = PAGE_SIZE as usize;
const NO_SPACE: &str = "no space left in the log";

#[derive(Debug, Clone)]
pub struct LogRaidConfig {
    /// Longest a partially filled segment waits for more writes before it is padded.
    pub flush_delay_ns: Nanos,
    /// Log space beyond the volumes' logical size, as a share of it.
    pub spare_fraction: f64,
    /// Clean when free segments fall below this share of the region.
    pub gc_low_water: f64,
    pub max_inflight_segments: usize,
    /// Victims cleaned at once.
    pub cleaners: usize,
}

impl Default for LogRaidConfig {
    fn default() -> Self {
        LogRaidConfig {
            flush_delay_ns: 100_000,
            spare_fraction: 0.25,
            gc_low_water: 0.05,
            max_inflight_segments: 8,
            cleaners: 1,
        }
    }
}

/// Who a slot of a segment is for.
#[derive(Clone, Copy)]
struct Slot {
    lpa: u32,
    /// For a cleaner's copy: the physical page it was copied from (the mapping switches only
    /// if it still points there). NONE for a user write.
    src: u32,
    /// Generation of the source segment when the copy was taken.
    src_gen: u32,
}

struct Segment {
    seg: u32,
    fill: u32,
    first_at: Nanos,
    slots: Vec<Slot>,
    data: Option<Vec<u8>>,
    fua: bool,
    /// User writes with pages here, and how many.
    writers: Vec<(u64, u32)>,
}

enum Job {
    Read {
        id: u64,
        at: Nanos,
        len: u64,
        buf: Option<Vec<u8>>,
        /// Per core read: (offset in buf, pinned segment).
        runs: Vec<(u64, u32)>,
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
        appended: u32,
        outstanding: u32,
        err: Option<String>,
    },
    SegWrite(Segment),
    Clean {
        seg: u32,
        /// (slot, lpa) of the live pages read.
        pages: Vec<(u32, u32)>,
        data: Option<Vec<u8>>,
        /// Per core read: index of its first page in `pages`.
        runs: Vec<usize>,
        pending: u32,
        failed: bool,
        appended: usize,
    },
    Flush {
        id: u64,
        at: Nanos,
    },
}

struct Vol {
    name: String,
    size: u64,
    base: u64,
    mapped: u64,
}

pub struct LogRaid {
    cfg: LogRaidConfig,
    core: RaidCore,
    space: SegSpace,
    vols: Vec<Vol>,
    map: SparseU32,
    locks: Vec<BlockLocks<u64>>,
    jobs: Slab<Job>,
    open: Option<Segment>,
    sealed: VecDeque<Segment>,
    inflight_segs: usize,
    waiters: VecDeque<u64>,
    gc_waiters: VecDeque<u64>,
    ready: VecDeque<u64>,
    cleaning: usize,
    reserve: usize,
    low_water: usize,
    max_request: u64,
    /// Segments written, padded pages written, pages the cleaner moved.
    pub segments_written: u64,
    pub padded_pages: u64,
    pub cleaned_pages: u64,
    pub victims_cleaned: u64,
}

/// Segments (stripes) of the log region: the volumes' pages plus the spare share, plus room
/// for the cleaner's reserve and the segments in flight; a whole number of rows.
fn log_segments(cfg: &BaselineConfig, geo: &ArrayGeom) -> u64 {
    let lc = &cfg.lograid;
    let logical: u64 = cfg.volumes.iter().map(|v| v / PAGE_SIZE).sum();
    let reserve = lc.cleaners.max(1) + 2;
    let want = ((logical as f64 * (1.0 + lc.spare_fraction)) / geo.stripe_pages() as f64).ceil()
        as u64
        + (reserve + lc.max_inflight_segments + 4) as u64;
    let g = geo.groups as u64;
    want.div_ceil(g) * g
}

/// Rows per member the log region uses.
pub fn rows_needed(cfg: &BaselineConfig) -> Result<u64, String> {
    let geo = cfg.geometry()?;
    Ok(log_segments(cfg, &geo) / geo.groups as u64)
}

impl LogRaid {
    pub fn new(cfg: &BaselineConfig) -> Result<Self, String> {
        let geo: ArrayGeom = cfg.geometry()?;
        let lc = cfg.lograid.clone();
        if !(0.0..=10.0).contains(&lc.spare_fraction) || lc.max_inflight_segments == 0 {
            return Err("lograid: spare_fraction in [0,10] and max_inflight_segments > 0".into());
        }
        let seg_pages = geo.stripe_pages() as u64;
        let mut vols = Vec::new();
        let mut base = 0u64;
        for (i, &size) in cfg.volumes.iter().enumerate() {
            vols.push(Vol {
                name: format!("v{i}"),
                size,
                base,
                mapped: 0,
            });
            base += size / PAGE_SIZE;
        }
        let logical = base;
        let cleaners = lc.cleaners.max(1);
        let reserve = cleaners + 2;
        let nseg = log_segments(cfg, &geo);
        if nseg > geo.stripes() {
            return Err(format!(
                "lograid: the log needs {nseg} stripes but the groups hold {}",
                geo.stripes()
            ));
        }
        if logical >= NONE as u64 || nseg * seg_pages >= NONE as u64 {
            return Err("lograid: more than 2^32 pages".into());
        }
        let low_water =
            ((nseg as f64 * lc.gc_low_water).ceil() as usize).max(reserve + cleaners + 2);
        let core = RaidCore::new(geo, ReadPolicy::Plain, None);
        Ok(LogRaid {
            space: SegSpace::new(nseg as u32, seg_pages as u32),
            core,
            locks: vols.iter().map(|_| BlockLocks::default()).collect(),
            vols,
            map: SparseU32::new(logical),
            jobs: Slab::default(),
            open: None,
            sealed: VecDeque::new(),
            inflight_segs: 0,
            waiters: VecDeque::new(),
            gc_waiters: VecDeque::new(),
            ready: VecDeque::new(),
            cleaning: 0,
            reserve,
            low_water,
            max_request: cfg.max_request_bytes,
            cfg: lc,
            segments_written: 0,
            padded_pages: 0,
            cleaned_pages: 0,
            victims_cleaned: 0,
        })
    }

    pub fn free_segments(&self) -> usize {
        self.space.free_count()
    }
    pub fn segments(&self) -> u32 {
        self.space.segments()
    }

    fn seg_pages(&self) -> u32 {
        self.space.seg_pages()
    }
    fn vol_of(&self, lpa: u64) -> usize {
        self.vols
            .iter()
            .rposition(|v| v.base <= lpa)
            .expect("lpa in some volume")
    }

    /// Point `lpa` at `ppa` (or NONE), fixing live counts; returns the old value.
    fn remap(&mut self, lpa: u32, ppa: u32) -> u32 {
        let sp = self.seg_pages();
        let old = self.map.set(lpa as u64, ppa);
        let v = self.vol_of(lpa as u64);
        if old != NONE {
            self.space.sub_valid(old / sp);
            self.vols[v].mapped -= 1;
        }
        if ppa != NONE {
            self.space.add_valid(ppa / sp);
            self.vols[v].mapped += 1;
        }
        old
    }

    // ------------------------------------------------------------------ reads

    fn start_read(&mut self, ctx: &mut Ctx, id: u64, vol: usize, offset: u64, len: u64) {
        let sp = self.seg_pages();
        let ppb = self.core.geo.ppb as u32;
        let base = self.vols[vol].base + offset / PAGE_SIZE;
        let n = len / PAGE_SIZE;
        // Runs of pages that are consecutive on one column of one segment.
        let mut runs: Vec<(u64, u32, u32)> = Vec::new(); // (first page index, ppa, count)
        for i in 0..n {
            let ppa = self.map.get(base + i);
            if ppa == NONE {
                continue;
            }
            if let Some(last) = runs.last_mut() {
                let (fi, fp, c) = *last;
                let same_col = (fp / sp == ppa / sp) && ((fp % sp) / ppb == (ppa % sp) / ppb);
                if fi + c as u64 == i && fp + c == ppa && same_col {
                    last.2 += 1;
                    continue;
                }
            }
            runs.push((i, ppa, 1));
        }
        let h = self.jobs.insert(Job::Read {
            id,
            at: ctx.now,
            len,
            buf: (!ctx.size_only).then(|| vec![0u8; len as usize]),
            runs: runs.iter().map(|r| (r.0 * PAGE_SIZE, r.1 / sp)).collect(),
            pending: runs.len() as u32,
            err: None,
        });
        if runs.is_empty() {
            self.finish_read(ctx, h);
            return;
        }
        for (k, &(_, ppa, count)) in runs.iter().enumerate() {
            let seg = ppa / sp;
            let slot = ppa % sp;
            self.space.pin(seg);
            self.core.read(
                ctx,
                (h, k as u32),
                seg as u64,
                (slot / ppb) as usize,
                (slot % ppb) as usize,
                count as usize,
                false,
            );
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
        let (unmap, vol, offset, len) = match self.jobs.get(h) {
            Some(Job::Write {
                unmap,
                vol,
                offset,
                len,
                ..
            }) => (*unmap, *vol, *offset, *len),
            _ => unreachable!(),
        };
        if unmap {
            let base = self.vols[vol].base + offset / PAGE_SIZE;
            for i in 0..len / PAGE_SIZE {
                self.remap((base + i) as u32, NONE);
            }
            self.finish_write(ctx, h);
            self.kick(ctx);
            return;
        }
        if !self.append_write(ctx, h) {
            self.waiters.push_back(h);
            self.check_stuck(ctx);
        }
    }

    /// Room for one more page in the open segment, opening one if needed. `gc` may use the
    /// reserve.
    fn ensure_open(&mut self, ctx: &Ctx, gc: bool) -> bool {
        if self.open.is_some() {
            return true;
        }
        let floor = if gc { 0 } else { self.reserve };
        if self.space.free_count() <= floor {
            return false;
        }
        let seg = self.space.alloc(1, |_| true).expect("free segment");
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

    fn push_page(
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
        self.space.set_summary(o.seg, o.fill, slot.lpa);
        o.fill += 1;
        if let Some(w) = writer {
            match o.writers.last_mut() {
                Some((x, n)) if *x == w => *n += 1,
                _ => o.writers.push((w, 1)),
            }
        }
        if o.fill == sp {
            self.seal(ctx);
        }
    }

    /// Append what is left of a user write. False: blocked for space.
    fn append_write(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        loop {
            let (vol, offset, len, appended, fua) = match self.jobs.get(h) {
                Some(Job::Write {
                    vol,
                    offset,
                    len,
                    appended,
                    fua,
                    ..
                }) => (*vol, *offset, *len, *appended, *fua),
                _ => unreachable!(),
            };
            let total = (len / PAGE_SIZE) as u32;
            if appended == total {
                if fua
                    && self
                        .open
                        .as_ref()
                        .is_some_and(|o| o.writers.iter().any(|w| w.0 == h))
                {
                    self.seal(ctx);
                }
                return true;
            }
            if !self.ensure_open(ctx, false) {
                return false;
            }
            let lpa = (self.vols[vol].base + offset / PAGE_SIZE + appended as u64) as u32;
            let page: Option<Vec<u8>> = match self.jobs.get(h) {
                Some(Job::Write {
                    data: Some(Data::Bytes(b)),
                    ..
                }) => Some(b[appended as usize * PS..(appended as usize + 1) * PS].to_vec()),
                _ => None,
            };
            if let Some(Job::Write {
                appended,
                outstanding,
                ..
            }) = self.jobs.get_mut(h)
            {
                *appended += 1;
                *outstanding += 1;
            }
            self.push_page(
                ctx,
                Slot {
                    lpa,
                    src: NONE,
                    src_gen: 0,
                },
                page.as_deref(),
                Some(h),
                fua,
            );
        }
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

    /// No free segment, nothing that could free one: fail the waiting writes.
    fn check_stuck(&mut self, ctx: &mut Ctx) {
        if self.space.free_count() > self.reserve
            || self.cleaning > 0
            || self.space.cleanable() > 0
            || self.inflight_segs > 0
            || !self.sealed.is_empty()
            || self.open.is_some()
            || !self.core.is_idle()
        {
            return;
        }
        while let Some(h) = self.waiters.pop_front() {
            // Pages already appended are being written; the rest never will be. The write
            // fails once the appended ones are back.
            let Some(Job::Write {
                err,
                appended,
                len,
                outstanding,
                ..
            }) = self.jobs.get_mut(h)
            else {
                unreachable!()
            };
            err.get_or_insert_with(|| NO_SPACE.into());
            *appended = (*len / PAGE_SIZE) as u32;
            if *outstanding == 0 {
                self.finish_write(ctx, h);
            }
        }
    }

    // ------------------------------------------------------------------ segments

    fn seal(&mut self, ctx: &mut Ctx) {
        if let Some(o) = self.open.take() {
            if o.fill == 0 {
                self.open = Some(o);
                return;
            }
            self.sealed.push_back(o);
        }
        self.submit_sealed(ctx);
    }

    fn submit_sealed(&mut self, ctx: &mut Ctx) {
        while self.inflight_segs < self.cfg.max_inflight_segments {
            let Some(s) = self.sealed.pop_front() else {
                break;
            };
            let geo = &self.core.geo;
            let (ppb, dcols, bs) = (geo.ppb, geo.dcols(), geo.block_size as usize);
            let sp = self.space.seg_pages();
            self.padded_pages += (sp - s.fill) as u64;
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

    fn seg_written(&mut self, ctx: &mut Ctx, h: u64, out: Outcome) {
        let Some(Job::SegWrite(s)) = self.jobs.remove(h) else {
            unreachable!()
        };
        self.inflight_segs -= 1;
        let sp = self.seg_pages();
        let ok = out.is_ok();
        if ok {
            for (i, slot) in s.slots.iter().enumerate() {
                let ppa = s.seg * sp + i as u32;
                if slot.src == NONE {
                    self.remap(slot.lpa, ppa);
                } else if self.map.get(slot.lpa as u64) == slot.src
                    && self.space.generation(slot.src / sp) == slot.src_gen
                {
                    self.remap(slot.lpa, ppa);
                    self.cleaned_pages += 1;
                }
            }
        }
        for (w, n) in s.writers {
            let Some(Job::Write {
                outstanding,
                appended,
                len,
                err,
                ..
            }) = self.jobs.get_mut(w)
            else {
                unreachable!()
            };
            *outstanding -= n;
            if let Err(e) = &out {
                err.get_or_insert_with(|| e.clone());
            }
            if *outstanding == 0 && *appended as u64 == *len / PAGE_SIZE {
                self.finish_write(ctx, w);
            }
        }
        self.space.release(s.seg);
        self.kick(ctx);
    }

    // ------------------------------------------------------------------ cleaning

    fn kick_cleaning(&mut self, ctx: &mut Ctx) {
        while self.cleaning < self.cfg.cleaners.max(1) && self.space.free_count() < self.low_water {
            let Some(seg) = self.space.pick_victim() else {
                break;
            };
            let sp = self.seg_pages();
            let ppb = self.core.geo.ppb as u32;
            let pages: Vec<(u32, u32)> = self
                .space
                .summary(seg)
                .iter()
                .enumerate()
                .filter(|&(i, &lpa)| lpa != NONE && self.map.get(lpa as u64) == seg * sp + i as u32)
                .map(|(i, &lpa)| (i as u32, lpa))
                .collect();
            assert_eq!(
                pages.len() as u32,
                self.space.valid(seg),
                "summary vs live count"
            );
            let mut runs: Vec<(usize, u32, u32)> = Vec::new(); // (index, first slot, count)
            for (k, &(slot, _)) in pages.iter().enumerate() {
                if let Some(last) = runs.last_mut()
                    && last.1 + last.2 == slot
                    && last.1 / ppb == slot / ppb
                {
                    last.2 += 1;
                    continue;
                }
                runs.push((k, slot, 1));
            }
            self.cleaning += 1;
            self.space.pin(seg);
            let h = self.jobs.insert(Job::Clean {
                seg,
                data: (!ctx.size_only).then(|| vec![0u8; pages.len() * PS]),
                pages,
                runs: runs.iter().map(|r| r.0).collect(),
                pending: runs.len() as u32,
                failed: false,
                appended: 0,
            });
            for (k, &(_, slot, count)) in runs.iter().enumerate() {
                self.core.read(
                    ctx,
                    (h, k as u32),
                    seg as u64,
                    (slot / ppb) as usize,
                    (slot % ppb) as usize,
                    count as usize,
                    true,
                );
            }
        }
    }

    fn clean_read_done(&mut self, ctx: &mut Ctx, h: u64, part: u32, out: Outcome) {
        let Some(Job::Clean {
            data,
            runs,
            pending,
            failed,
            ..
        }) = self.jobs.get_mut(h)
        else {
            unreachable!()
        };
        match out {
            Ok(Some(b)) => {
                if let Some(d) = data {
                    let o = runs[part as usize] * PS;
                    d[o..o + b.len()].copy_from_slice(&b);
                }
            }
            Ok(None) => {}
            Err(_) => *failed = true,
        }
        *pending -= 1;
        if *pending > 0 {
            return;
        }
        let (seg, failed) = match self.jobs.get(h) {
            Some(Job::Clean { seg, failed, .. }) => (*seg, *failed),
            _ => unreachable!(),
        };
        self.space.unpin(seg);
        if failed {
            self.jobs.remove(h);
            self.cleaning -= 1;
            self.space.unvictim(seg);
        } else if !self.append_clean(ctx, h) {
            self.gc_waiters.push_back(h);
        }
        // The next victim, blocked writers, the partial segment of copies.
        self.kick(ctx);
    }

    /// Append the cleaner's pages that are still live. False: blocked for space.
    fn append_clean(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        let sp = self.seg_pages();
        loop {
            let (seg, slot, lpa, idx, total) = match self.jobs.get(h) {
                Some(Job::Clean {
                    seg,
                    pages,
                    appended,
                    ..
                }) => {
                    if *appended == pages.len() {
                        self.jobs.remove(h);
                        self.cleaning -= 1;
                        self.victims_cleaned += 1;
                        return true;
                    }
                    let (slot, lpa) = pages[*appended];
                    (*seg, slot, lpa, *appended, pages.len())
                }
                _ => unreachable!(),
            };
            debug_assert!(idx < total);
            let src = seg * sp + slot;
            if self.map.get(lpa as u64) != src {
                if let Some(Job::Clean { appended, .. }) = self.jobs.get_mut(h) {
                    *appended += 1;
                }
                continue;
            }
            if !self.ensure_open(ctx, true) {
                return false;
            }
            let page = match self.jobs.get(h) {
                Some(Job::Clean { data: Some(d), .. }) => {
                    Some(d[idx * PS..(idx + 1) * PS].to_vec())
                }
                _ => None,
            };
            if let Some(Job::Clean { appended, .. }) = self.jobs.get_mut(h) {
                *appended += 1;
            }
            let src_gen = self.space.generation(seg);
            self.push_page(
                ctx,
                Slot { lpa, src, src_gen },
                page.as_deref(),
                None,
                false,
            );
        }
    }

    /// When the flush timer seals the open segment. A segment holding only the cleaner's pages
    /// is not padded while the cleaner is still gathering: padding it would write as many
    /// segments as cleaning frees, and cleaning would never get ahead.
    fn seal_deadline(&self) -> Option<Nanos> {
        let o = self.open.as_ref().filter(|o| o.fill > 0)?;
        if o.writers.is_empty() && self.cleaning_wanted() {
            return None;
        }
        Some(o.first_at + self.cfg.flush_delay_ns)
    }

    fn cleaning_wanted(&self) -> bool {
        self.space.free_count() < self.low_water
            && (self.cleaning > 0 || self.space.cleanable() > 0)
    }

    /// After anything that may have freed space or finished work: resume the cleaner and
    /// blocked writers, submit sealed segments, start cleaning if space runs low.
    fn kick(&mut self, ctx: &mut Ctx) {
        while let Some(&h) = self.gc_waiters.front() {
            if self.append_clean(ctx, h) {
                self.gc_waiters.pop_front();
            } else {
                break;
            }
        }
        while let Some(&h) = self.waiters.front() {
            if self.append_write(ctx, h) {
                self.waiters.pop_front();
            } else {
                break;
            }
        }
        self.submit_sealed(ctx);
        self.kick_cleaning(ctx);
        // The cleaner ran out of victims with a partial segment of copies: write it.
        if self.cleaning == 0
            && !self.cleaning_wanted()
            && self.space.free_count() < self.low_water
            && self
                .open
                .as_ref()
                .is_some_and(|o| o.fill > 0 && o.writers.is_empty())
        {
            self.seal(ctx);
        }
        if !self.waiters.is_empty() {
            self.check_stuck(ctx);
        }
    }

    fn on_outcome(&mut self, ctx: &mut Ctx, (h, part): Token, out: Outcome) {
        match self.jobs.get_mut(h) {
            Some(Job::Read {
                buf,
                runs,
                pending,
                err,
                ..
            }) => {
                let (off, seg) = runs[part as usize];
                match out {
                    Ok(Some(b)) => {
                        if let Some(buf) = buf {
                            buf[off as usize..off as usize + b.len()].copy_from_slice(&b);
                        }
                    }
                    Ok(None) => {}
                    Err(e) => {
                        err.get_or_insert(e);
                    }
                }
                *pending -= 1;
                let last = *pending == 0;
                if self.space.unpin(seg) {
                    self.kick(ctx);
                }
                if last {
                    self.finish_read(ctx, h);
                }
            }
            Some(Job::SegWrite(_)) => self.seg_written(ctx, h, out),
            Some(Job::Clean { .. }) => self.clean_read_done(ctx, h, part, out),
            Some(Job::Flush { .. }) => {
                let Some(Job::Flush { id, at }) = self.jobs.remove(h) else {
                    unreachable!()
                };
                ctx.reply(id, at, Ok(None));
            }
            Some(Job::Write { .. }) | None => unreachable!("outcome for a write or a finished job"),
        }
    }

    fn pump(&mut self, ctx: &mut Ctx) {
        loop {
            if let Some((t, out)) = self.core.pop_done() {
                self.on_outcome(ctx, t, out);
            } else if let Some(h) = self.ready.pop_front() {
                self.start_write(ctx, h);
            } else {
                break;
            }
        }
    }
}

impl Scheme for LogRaid {
    fn name(&self) -> &str {
        "lograid"
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
                let h = self.jobs.insert(Job::Flush { id: req.id, at });
                let disks: Vec<DiskId> = self.core.geo.used_disks().collect();
                self.core.flush(ctx, (h, 0), disks.into_iter());
                self.pump(ctx);
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
            appended: 0,
            outstanding: 0,
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
        self.core.on_io(ctx, tag, result);
        self.pump(ctx);
    }

    fn on_tick(&mut self, ctx: &mut Ctx) {
        self.core.on_tick(ctx);
        if let Some(t) = self.seal_deadline()
            && t <= ctx.now
        {
            self.seal(ctx);
        }
        self.pump(ctx);
        self.kick(ctx);
        self.pump(ctx);
    }

    fn next_deadline(&self, now: Nanos) -> Option<Nanos> {
        let a = self.seal_deadline().map(|t| t.max(now));
        let b = self.core.next_deadline(now);
        match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        }
    }

    fn on_disk_failed(&mut self, ctx: &mut Ctx, _disk: DiskId) {
        self.pump(ctx);
    }

    fn volume_status(&self, v: VolumeId) -> Option<VolumeStatus> {
        let vol = self.vols.get(v as usize)?;
        let geo = &self.core.geo;
        let seg_bytes = geo.width as u64 * geo.block_size;
        let used = (self.space.segments() as usize - self.space.free_count()) as u64;
        Some(VolumeStatus {
            name: vol.name.clone(),
            size_bytes: vol.size,
            level: format!("log-structured {}", {
                let lvl = if geo.nparity == 1 { "raid50" } else { "raid60" };
                format!("{lvl} {}+{}", geo.dcols(), geo.nparity)
            }),
            raid_bytes: used * seg_bytes,
            replicated_bytes: 0,
            free_bytes: self.space.free_count() as u64 * seg_bytes,
            conversion_backlog: 0,
            mapped_bytes: vol.mapped * PAGE_SIZE,
            metadata_bytes: self.map.memory_bytes() + used * self.space.seg_pages() as u64 * 4,
            rebuild: None,
            scrub: None,
        })
    }

    fn is_idle(&self) -> bool {
        self.jobs.is_empty()
            && self.core.is_idle()
            && self.ready.is_empty()
            && self.open.as_ref().is_none_or(|o| o.fill == 0)
            && self.sealed.is_empty()
    }

    fn check_invariants(&self) {
        self.core.check_invariants();
        let sp = self.seg_pages();
        let mut live = vec![0u32; self.space.segments() as usize];
        let mut per_vol = vec![0u64; self.vols.len()];
        for lpa in 0..self.map.len() {
            let ppa = self.map.get(lpa);
            if ppa == NONE {
                continue;
            }
            let seg = ppa / sp;
            live[seg as usize] += 1;
            per_vol[self.vol_of(lpa)] += 1;
            assert!(
                !self.space.is_free(seg),
                "page {lpa} mapped into free segment {seg}"
            );
            assert_eq!(
                self.space.summary(seg)[(ppa % sp) as usize],
                lpa as u32,
                "summary of segment {seg} disagrees with the mapping"
            );
        }
        self.space.check(&live);
        for (v, n) in self.vols.iter().zip(per_vol) {
            assert_eq!(v.mapped, n, "mapped-page count of {}", v.name);
        }
        if self.jobs.is_empty() {
            assert_eq!(self.cleaning, 0);
            assert_eq!(self.inflight_segs, 0);
        }
    }

    fn debug_state(&self) -> String {
        format!(
            "lograid: jobs {} free {} / {} (reserve {} low {} cleanable {}) open {:?} sealed {} inflight {} waiters {} gc_waiters {} cleaning {} written {} padded {} cleaned {} | {}",
            self.jobs.len(),
            self.space.free_count(),
            self.space.segments(),
            self.reserve,
            self.low_water,
            self.space.cleanable(),
            self.open
                .as_ref()
                .map(|o| (o.seg, o.fill, o.writers.clone())),
            self.sealed.len(),
            self.inflight_segs,
            self.waiters.len(),
            self.gc_waiters.len(),
            self.cleaning,
            self.segments_written,
            self.padded_pages,
            self.cleaned_pages,
            self.core.debug_state()
        )
    }
}
