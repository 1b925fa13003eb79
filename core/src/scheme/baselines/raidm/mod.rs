//! 4-RAIDM (paper §5.3): the groups of 4-RAID5 (one volume per group), but every write is
//! mirrored, two copies on two disks of the group, appended log-structured; no parity, so no
//! write ever reads. It isolates the effect of replacing RAID writes with replicated writes.
//! Each group is a [`Log`] of the log-structured base whose segments are MUs, written in place
//! at [`Heads`] as [`Copies`]; what is 4-RAIDM's own is where an MU's two copies sit.
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
mod extents;
mod place;
mod read;
mod scheme;
mod steered;
mod write;

use std::collections::VecDeque;

use super::config::{BaselineConfig, RaidmConfig};
use super::gather::Gather;
use super::logbase::{Copies, Heads, Log, LogShape, NONE, UserWrite, Victim};
use crate::engine::ctx::Ctx;
use crate::scheme::locks::BlockLocks;
use crate::slab::Slab;
use crate::types::{DiskId, Nanos, PAGE_SIZE};
use steered::Steered;

/// One device read of a user read: `count` pages from `slot` of MU `mu`, landing at `buf_off`
/// of the result, from copy `copy`.
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
        w: UserWrite,
        head: usize,
        /// Pages placed so far.
        placed: u32,
        copies: Copies,
    },
    Clean {
        grp: usize,
        /// The head every live page of the victim is appended at (chosen when the reads are
        /// done), like a user write's.
        head: usize,
        victim: Victim,
        reading: bool,
        copies: Copies,
    },
    Flush {
        id: u64,
        at: Nanos,
        pending: u32,
    },
}

/// A group: its disks, the log of its mirror units, and the heads taking writes.
struct Group {
    disks: Vec<DiskId>,
    log: Log,
    heads: Heads,
}

/// Where a mirror unit's two copies sit.
enum Layout {
    /// 4-RAIDM: unit `m` at positions `2m` and `2m + 1` of its group.
    Neighbours,
    /// Sandook: one group over every member; each unit placed when it opens, on members
    /// steering picks.
    Steered(Box<Steered>),
}

/// Where a volume lives: its group, and its index among the volumes of the group's log.
#[derive(Clone, Copy)]
struct VolAt {
    grp: usize,
    idx: usize,
}

pub struct RaidM {
    name: &'static str,
    cfg: RaidmConfig,
    layout: Layout,
    groups: Vec<Group>,
    vols: Vec<VolAt>,
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

fn heads(rc: &RaidmConfig, width: usize) -> usize {
    if rc.heads == 0 { width } else { rc.heads }
}

/// Mirror units a group with `lp` logical pages gets: its pages plus the spare share, the
/// cleaner's reserve and the open heads.
fn group_units(rc: &RaidmConfig, lp: u64, ppb: u32, width: usize) -> u64 {
    LogShape::segments_for(
        lp,
        rc.spare_fraction,
        ppb as usize,
        rc.cleaners,
        2 * heads(rc, width),
    )
}

/// Logical pages of each group: volume i lives on group i mod groups.
fn group_pages(cfg: &BaselineConfig, groups: usize) -> Vec<u64> {
    let mut logical = vec![0u64; groups];
    for (i, &size) in cfg.volumes.iter().enumerate() {
        logical[i % groups] += size / PAGE_SIZE;
    }
    logical
}

/// Rows per member the groups use.
pub fn rows_needed(cfg: &BaselineConfig) -> Result<u64, String> {
    let geo = cfg.geometry()?;
    Ok(group_pages(cfg, geo.groups)
        .iter()
        .map(|&lp| {
            (2 * group_units(&cfg.raidm, lp, geo.ppb as u32, geo.width)).div_ceil(geo.width as u64)
        })
        .max()
        .unwrap_or(0))
}

impl RaidM {
    pub fn new(cfg: &BaselineConfig) -> Result<Self, String> {
        Self::build(cfg, "4-raidm")
    }

    fn build(cfg: &BaselineConfig, name: &'static str) -> Result<Self, String> {
        let geo = cfg.geometry()?;
        let rc = cfg.raidm.clone();
        let (width, ppb) = (geo.width, geo.ppb as u32);
        let heads = heads(&rc, width);
        let cleaners = rc.cleaners.max(1);
        let capacity = width as u64 * geo.rows / 2;
        let mut groups = Vec::new();
        for (g, &lp) in group_pages(cfg, geo.groups).iter().enumerate() {
            let reserve = LogShape::reserve(cleaners);
            let want = group_units(&rc, lp, ppb, width);
            if want > capacity {
                return Err(format!(
                    "{name}: group {g} needs {want} mirror units but holds {capacity}"
                ));
            }
            if want * ppb as u64 >= NONE as u64 {
                return Err("raidm: more than 2^32 pages in a group".into());
            }
            let shape = LogShape {
                segments: want as u32,
                seg_pages: ppb,
                reserve,
                low_water: LogShape::low_water(want, rc.gc_low_water, reserve + heads + cleaners),
            };
            let vols = (g..cfg.volumes.len())
                .step_by(geo.groups)
                .map(|i| (format!("v{i}"), cfg.volumes[i]));
            groups.push(Group {
                disks: geo.group_disks(g).collect(),
                log: Log::new(shape, vols),
                heads: Heads::new(heads),
            });
        }
        let vols: Vec<VolAt> = (0..cfg.volumes.len())
            .map(|i| VolAt {
                grp: i % geo.groups,
                idx: i / geo.groups,
            })
            .collect();
        Ok(RaidM {
            name,
            layout: Layout::Neighbours,
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
        self.groups[grp].log.space.free_count()
    }

    /// Disk and byte offset of copy `copy` of page `slot` of MU `mu` in group `grp`.
    fn locate(&self, grp: usize, mu: u32, copy: u8, slot: u32) -> (DiskId, u64) {
        let (member, row) = match &self.layout {
            Layout::Neighbours => {
                let pos = 2 * mu as u64 + copy as u64;
                let w = self.width as u64;
                ((pos % w) as usize, pos / w)
            }
            Layout::Steered(s) => s.extents.locate(mu, copy),
        };
        (
            self.groups[grp].disks[member],
            self.data_offset + row * self.block_size + slot as u64 * PAGE_SIZE,
        )
    }

    /// Which copy of page `slot` of MU `mu` a read uses: a copy on a healthy member other
    /// than `tried` (the copy whose read just failed); the first one for 4-RAIDM, the one
    /// steering picks for Sandook.
    fn pick_copy(
        &self,
        ctx: &mut Ctx,
        grp: usize,
        mu: u32,
        slot: u32,
        tried: Option<u8>,
    ) -> Option<u8> {
        // Copy number and member of each candidate copy.
        let live: Vec<(u8, DiskId)> = (0..2u8)
            .filter(|&c| Some(c) != tried)
            .map(|c| (c, self.locate(grp, mu, c, slot).0))
            .filter(|&(_, d)| !ctx.is_failed(d))
            .collect();
        match &self.layout {
            Layout::Steered(_) if live.len() > 1 => {
                let disks: Vec<DiskId> = live.iter().map(|&(_, d)| d).collect();
                let (members, rng) = ctx.members_and_rng();
                let steer = members
                    .steering()
                    .expect("the engine runs a steered scheme's steering");
                let d = steer.pick_reader(rng, &disks)?;
                live.into_iter().find(|&(_, l)| l == d).map(|(c, _)| c)
            }
            _ => live.first().map(|&(c, _)| c),
        }
    }

    fn kick(&mut self, ctx: &mut Ctx, grp: usize) {
        while let Some(&h) = self.groups[grp].log.gc_waiters.front() {
            if self.place_clean(ctx, h) {
                self.groups[grp].log.gc_waiters.pop_front();
                self.clean_maybe_done(ctx, h);
            } else {
                break;
            }
        }
        while let Some(&h) = self.groups[grp].log.waiters.front() {
            if self.place_write(ctx, h) {
                self.groups[grp].log.waiters.pop_front();
                self.maybe_complete_write(ctx, h);
            } else {
                break;
            }
        }
        self.kick_cleaning(ctx, grp);
        if !self.groups[grp].log.waiters.is_empty() {
            self.check_stuck(ctx, grp);
        }
    }

    fn pump(&mut self, ctx: &mut Ctx) {
        while let Some(h) = self.ready.pop_front() {
            self.start_write(ctx, h);
        }
    }
}
