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
//! - **Cleaning** as in LogRAID: greedy MU victim, live pages read and re-appended at one
//!   head (as a user write is), mapping switched only if still pointing at the old copy; the
//!   last `reserve` free MUs are the cleaner's.
//! - Reads use the first copy, or the second when the first disk failed (no load-based choice:
//!   that is what Fusion-ND and FusionRAID add). Trim and write-zeroes unmap.

mod clean;
mod place;
mod read;
mod scheme;
mod write;

use std::collections::VecDeque;

use super::config::{BaselineConfig, RaidmConfig};
use super::gather::Gather;
use super::logspace::SegSpace;
use super::sparse::{NONE, SparseU32};
use crate::engine::api::Data;
use crate::engine::ctx::Ctx;
use crate::scheme::locks::BlockLocks;
use crate::slab::Slab;
use crate::types::{DiskId, Nanos, PAGE_SIZE};

const PS: usize = PAGE_SIZE as usize;
const NO_SPACE: &str = "no space left in the group";

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
        g: Gather,
        grp: usize,
        parts: Vec<RPart>,
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
        /// The head every live page of the victim is appended at (chosen when the reads are
        /// done), like a user write's.
        head: usize,
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
