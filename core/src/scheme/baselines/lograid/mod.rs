//! LogRAID: a log-structured RAID50. Every update of every volume is appended to one log of
//! full stripes, so the array never reads to write; a mapping table says where each page lives
//! and a cleaner reclaims stripes whose pages were overwritten. The log (mapping, segments,
//! cleaner's choices) is a [`Log`] of the log-structured base; what is LogRAID's own is the
//! buffered open segment, written as one full stripe through the RAID core.
//!
//! - **Mapping granularity: 4 KiB pages.** A page-granular table makes sub-chunk writes plain
//!   appends (no read-modify-write at the log level). It is a sparse table keyed by logical
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
use super::logbase::{Log, LogShape, NONE, Origin, UserWrite, Victim};
use crate::engine::ctx::Ctx;
use crate::scheme::locks::BlockLocks;
use crate::slab::Slab;
use crate::types::{Nanos, PAGE_SIZE};

/// Who a slot of a segment is for.
#[derive(Clone, Copy)]
struct Slot {
    lpa: u32,
    /// For a cleaner's copy: where it was read (the mapping switches only if the page is
    /// still there). None for a user write.
    from: Option<Origin>,
}

/// A user write holding pages of a segment, and how many.
#[derive(Clone, Copy, Debug)]
struct Writer {
    job: u64,
    pages: u32,
}

struct Segment {
    seg: u32,
    fill: u32,
    first_at: Nanos,
    slots: Vec<Slot>,
    data: Option<Vec<u8>>,
    fua: bool,
    writers: Vec<Writer>,
}

/// A read of the RAID core for a user read: where its data goes in the result, and the
/// segment it pins.
struct PinnedRead {
    off: u64,
    seg: u32,
}

enum Job {
    Read {
        g: Gather,
        reads: Vec<PinnedRead>,
    },
    Write {
        w: UserWrite,
        /// Pages appended to segments, and those of them not on the members yet.
        appended: u32,
        outstanding: u32,
    },
    SegWrite(Segment),
    Clean(Victim),
    Flush {
        id: u64,
        at: Nanos,
    },
}

pub struct LogRaid {
    cfg: LogRaidConfig,
    core: RaidCore,
    log: Log,
    locks: Vec<BlockLocks<u64>>,
    jobs: Slab<Job>,
    open: Option<Segment>,
    sealed: VecDeque<Segment>,
    inflight_segs: usize,
    ready: VecDeque<u64>,
    max_request: u64,
    /// Segments written, padded pages written, pages the cleaner moved, victims cleaned.
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
    let want = LogShape::segments_for(
        logical,
        lc.spare_fraction,
        geo.stripe_pages(),
        lc.cleaners,
        lc.max_inflight_segments,
    );
    let g = geo.groups as u64;
    want.div_ceil(g) * g
}

/// Rows per member the log region uses.
pub fn rows_needed(cfg: &BaselineConfig) -> Result<u64, String> {
    let geo = cfg.geometry()?;
    Ok(log_segments(cfg, &geo) / geo.groups as u64)
}

/// The log's shape over `geo`, or why it does not fit.
fn shape(cfg: &BaselineConfig, geo: &ArrayGeom) -> Result<LogShape, String> {
    let lc = &cfg.lograid;
    if !(0.0..=10.0).contains(&lc.spare_fraction) || lc.max_inflight_segments == 0 {
        return Err("lograid: spare_fraction in [0,10] and max_inflight_segments > 0".into());
    }
    let seg_pages = geo.stripe_pages() as u64;
    let logical: u64 = cfg.volumes.iter().map(|v| v / PAGE_SIZE).sum();
    let nseg = log_segments(cfg, geo);
    if nseg > geo.stripes() {
        return Err(format!(
            "lograid: the log needs {nseg} stripes but the groups hold {}",
            geo.stripes()
        ));
    }
    if logical >= NONE as u64 || nseg * seg_pages >= NONE as u64 {
        return Err("lograid: more than 2^32 pages".into());
    }
    let cleaners = lc.cleaners.max(1);
    let reserve = LogShape::reserve(cleaners);
    Ok(LogShape {
        segments: nseg as u32,
        seg_pages: seg_pages as u32,
        reserve,
        low_water: LogShape::low_water(nseg, lc.gc_low_water, reserve + cleaners + 2),
    })
}

impl LogRaid {
    pub fn new(cfg: &BaselineConfig) -> Result<Self, String> {
        let geo: ArrayGeom = cfg.geometry()?;
        let log = Log::new(
            shape(cfg, &geo)?,
            cfg.volumes
                .iter()
                .enumerate()
                .map(|(i, &size)| (format!("v{i}"), size)),
        );
        Ok(LogRaid {
            cfg: cfg.lograid.clone(),
            core: RaidCore::new(geo, ReadPolicy::Plain, None),
            locks: log.vols.iter().map(|_| BlockLocks::default()).collect(),
            log,
            jobs: Slab::default(),
            open: None,
            sealed: VecDeque::new(),
            inflight_segs: 0,
            ready: VecDeque::new(),
            max_request: cfg.max_request_bytes,
            segments_written: 0,
            padded_pages: 0,
            cleaned_pages: 0,
            victims_cleaned: 0,
        })
    }

    pub fn free_segments(&self) -> usize {
        self.log.space.free_count()
    }
    pub fn segments(&self) -> u32 {
        self.log.space.segments()
    }

    fn seg_pages(&self) -> u32 {
        self.log.seg_pages()
    }

    /// After anything that may have freed space or finished work: resume the cleaner and
    /// blocked writers, submit sealed segments, start cleaning if space runs low.
    fn kick(&mut self, ctx: &mut Ctx) {
        while let Some(&h) = self.log.gc_waiters.front() {
            if self.append_clean(ctx, h) {
                self.log.gc_waiters.pop_front();
            } else {
                break;
            }
        }
        while let Some(&h) = self.log.waiters.front() {
            if self.append_write(ctx, h) {
                self.log.waiters.pop_front();
            } else {
                break;
            }
        }
        self.submit_sealed(ctx);
        self.kick_cleaning(ctx);
        // The cleaner ran out of victims with a partial segment of copies: write it.
        if self.log.cleaning == 0
            && !self.log.cleaning_wanted()
            && self.log.space.free_count() < self.log.low_water
            && self
                .open
                .as_ref()
                .is_some_and(|o| o.fill > 0 && o.writers.is_empty())
        {
            self.seal(ctx);
        }
        if !self.log.waiters.is_empty() {
            self.check_stuck(ctx);
        }
    }

    fn on_outcome(&mut self, ctx: &mut Ctx, (h, part): Token, out: Outcome) {
        match self.jobs.get_mut(h) {
            Some(Job::Read { g, reads }) => {
                let r = &reads[part as usize];
                let last = g.part_done(r.off, out);
                if self.log.space.unpin(r.seg) {
                    self.kick(ctx);
                }
                if last {
                    self.finish_read(ctx, h);
                }
            }
            Some(Job::SegWrite(_)) => self.seg_written(ctx, h, out),
            Some(Job::Clean(_)) => self.clean_read_done(ctx, h, part, out),
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
