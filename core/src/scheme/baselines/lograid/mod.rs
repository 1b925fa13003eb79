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

mod clean;
mod read;
mod scheme;
mod segment;
mod write;

use std::collections::VecDeque;

use super::array::{Outcome, RaidCore, ReadPolicy, Token};
use super::config::{BaselineConfig, LogRaidConfig};
use super::gather::Gather;
use super::geom::ArrayGeom;
use super::logspace::SegSpace;
use super::sparse::{NONE, SparseU32};
use crate::engine::api::Data;
use crate::engine::ctx::Ctx;
use crate::scheme::locks::BlockLocks;
use crate::slab::Slab;
use crate::types::{Nanos, PAGE_SIZE};

const PS: usize = PAGE_SIZE as usize;
const NO_SPACE: &str = "no space left in the log";

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
        g: Gather,
        /// Per core read: (offset in the result, pinned segment).
        runs: Vec<(u64, u32)>,
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
            Some(Job::Read { g, runs }) => {
                let (off, seg) = runs[part as usize];
                let last = g.part_done(off, out);
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
