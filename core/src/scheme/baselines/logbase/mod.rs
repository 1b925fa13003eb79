//! The log-structured base LogRAID and 4-RAIDM are built on, and a replicated log would be:
//! what a log keeps and how it cleans, apart from how its segments reach the members.
//!
//! - [`Log`]: one log-structured space. Its volumes' logical pages (concatenated) are mapped
//!   page by page ([`SparseU32`], physical page = `segment * seg_pages + slot`) into segments
//!   ([`SegSpace`]: free list, live counts, LFS-style summaries, read pins, greedy victims).
//!   A page is live while the mapping points at its slot; a copy lands ([`Log::land`]) when it
//!   is on the members, and a cleaner's copy only if the page did not move meanwhile.
//! - Space: user writes may not open one of the last `reserve` free segments, which the
//!   cleaner needs to make progress; cleaning starts below `low_water` free segments
//!   ([`LogShape`]).
//! - [`Victim`] (clean.rs): the cleaner's job: the victim's live pages, the reads that fetch
//!   them (runs within one chunk) and the runs that write them again.
//! - [`UserWrite`] (write.rs): a write, write-zeroes or trim while it runs: range lock,
//!   first error, the answer.
//! - [`Heads`] and [`Copies`] (heads.rs, copies.rs): segments written in place as pages
//!   arrive, one open segment per head taken in turn, each run written as one or more copies
//!   and landing when every copy is back (4-RAIDM; LogRAID buffers whole segments instead).

mod clean;
mod copies;
mod heads;
mod space;
mod sparse;
mod write;

pub use clean::{LiveRun, NextRun, Victim, VictimRead};
pub use copies::Copies;
pub use heads::Heads;
pub use space::{LivePage, SegSpace};
pub use sparse::{NONE, SparseU32};
pub use write::{Sorted, UserWrite};

use std::collections::VecDeque;

use crate::types::PAGE_SIZE;

pub const PS: usize = PAGE_SIZE as usize;

/// A volume kept in a log.
pub struct LogVol {
    pub name: String,
    pub size: u64,
    /// Its first logical page in the log.
    pub base: u64,
    /// Pages mapped (written and not trimmed since).
    pub mapped: u64,
}

/// How many segments a log has and how it shares them out.
#[derive(Clone, Copy, Debug)]
pub struct LogShape {
    pub segments: u32,
    pub seg_pages: u32,
    /// Free segments only the cleaner may open.
    pub reserve: usize,
    /// Cleaning starts below this many free segments.
    pub low_water: usize,
}

impl LogShape {
    /// Free segments the cleaner keeps for itself with `cleaners` victims at once.
    pub fn reserve(cleaners: usize) -> usize {
        cleaners.max(1) + 2
    }

    /// Segments of `seg_pages` for `logical` pages plus the `spare` share, the cleaner's
    /// reserve, `open` segments taking writes or in flight, and four more.
    pub fn segments_for(
        logical: u64,
        spare: f64,
        seg_pages: usize,
        cleaners: usize,
        open: usize,
    ) -> u64 {
        ((logical as f64 * (1.0 + spare)) / seg_pages as f64).ceil() as u64
            + (Self::reserve(cleaners) + open + 4) as u64
    }

    /// The low-water mark: `share` of the segments, at least `floor`.
    pub fn low_water(segments: u64, share: f64, floor: usize) -> usize {
        ((segments as f64 * share).ceil() as usize).max(floor)
    }
}

/// Pages of a read that sit consecutively in one chunk: `count` pages from page `page` of the
/// request, at physical pages from `ppa`.
#[derive(Clone, Copy, Debug)]
pub struct MappedRun {
    pub page: u64,
    pub ppa: u32,
    pub count: u32,
}

/// Where a cleaner's copy was read from: the page's physical page then, and its segment's
/// generation (a segment freed and reused since is not where the page was).
#[derive(Clone, Copy, Debug)]
pub struct Origin {
    pub ppa: u32,
    pub generation: u32,
}

/// Pages written at consecutive physical pages: `count` logical pages from `lpa` at `ppa`. A
/// cleaner's copy also says where its first page came from (the others follow it).
#[derive(Clone, Copy, Debug)]
pub struct Run {
    pub lpa: u32,
    pub ppa: u32,
    pub count: u32,
    pub from: Option<Origin>,
}

/// One log-structured space and the writers and cleaners waiting on it.
pub struct Log {
    pub space: SegSpace,
    pub map: SparseU32,
    pub vols: Vec<LogVol>,
    /// Victims being cleaned.
    pub cleaning: usize,
    pub reserve: usize,
    pub low_water: usize,
    /// User writes (job handles) waiting for a free segment, in order.
    pub waiters: VecDeque<u64>,
    /// Cleaner jobs waiting for a free segment.
    pub gc_waiters: VecDeque<u64>,
    /// Free segments that cannot be used now (a log that places segments as they open: their
    /// room sits on failed members, or on too few members); 0 otherwise.
    pub unusable: usize,
}

impl Log {
    /// A log of `shape` holding `vols` (name, size in bytes), concatenated in order.
    pub fn new(shape: LogShape, vols: impl IntoIterator<Item = (String, u64)>) -> Self {
        let mut base = 0u64;
        let vols: Vec<LogVol> = vols
            .into_iter()
            .map(|(name, size)| {
                let v = LogVol {
                    name,
                    size,
                    base,
                    mapped: 0,
                };
                base += size / PAGE_SIZE;
                v
            })
            .collect();
        Log {
            space: SegSpace::new(shape.segments, shape.seg_pages),
            map: SparseU32::new(base),
            vols,
            cleaning: 0,
            reserve: shape.reserve,
            low_water: shape.low_water,
            waiters: Default::default(),
            gc_waiters: Default::default(),
            unusable: 0,
        }
    }

    pub fn seg_pages(&self) -> u32 {
        self.space.seg_pages()
    }

    /// Logical page `page` of volume `vol`.
    pub fn lpa(&self, vol: usize, page: u64) -> u32 {
        (self.vols[vol].base + page) as u32
    }

    fn vol_of(&self, lpa: u64) -> usize {
        self.vols
            .iter()
            .rposition(|v| v.base <= lpa)
            .expect("lpa in some volume")
    }

    /// Point `lpa` at `ppa` (or NONE), keeping the live counts of both segments and the
    /// volume's mapped count.
    pub fn remap(&mut self, lpa: u32, ppa: u32) {
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
    }

    /// Unmap `count` pages of volume `vol` from page `first` (trim, write-zeroes: unmapped
    /// pages read as zeros).
    pub fn unmap(&mut self, vol: usize, first: u64, count: u64) {
        for i in 0..count {
            self.remap(self.lpa(vol, first + i), NONE);
        }
    }

    /// Where the page at `ppa` is as of now, for a cleaner's copy of it.
    pub fn origin(&self, ppa: u32) -> Origin {
        Origin {
            ppa,
            generation: self.space.generation(ppa / self.seg_pages()),
        }
    }

    /// `run` is on the members: point the mapping at it, page by page; a cleaner's copy only
    /// where the page is still where it was read (a user write or trim in between wins).
    /// Returns the cleaner's pages that moved.
    pub fn land(&mut self, run: Run) -> u32 {
        let sp = self.seg_pages();
        let mut moved = 0;
        for k in 0..run.count {
            let lpa = run.lpa + k;
            if let Some(o) = run.from {
                if self.map.get(lpa as u64) != o.ppa + k
                    || self.space.generation(o.ppa / sp) != o.generation
                {
                    continue;
                }
                moved += 1;
            }
            self.remap(lpa, run.ppa + k);
        }
        moved
    }

    /// The mapped pages of `count` pages of volume `vol` from page `first`, in runs that are
    /// consecutive in the request and on one chunk of `chunk_pages` (one device read each).
    pub fn read_runs(
        &self,
        vol: usize,
        first: u64,
        count: u64,
        chunk_pages: u32,
    ) -> Vec<MappedRun> {
        let base = self.vols[vol].base + first;
        let mut runs: Vec<MappedRun> = Vec::new();
        for i in 0..count {
            let ppa = self.map.get(base + i);
            if ppa == NONE {
                continue;
            }
            if let Some(r) = runs.last_mut()
                && r.page + r.count as u64 == i
                && r.ppa + r.count == ppa
                && r.ppa / chunk_pages == ppa / chunk_pages
            {
                r.count += 1;
                continue;
            }
            runs.push(MappedRun {
                page: i,
                ppa,
                count: 1,
            });
        }
        runs
    }

    /// Whether a segment may be opened now: user writes leave the reserve to the cleaner.
    pub fn can_open(&self, cleaner: bool) -> bool {
        let floor = if cleaner { 0 } else { self.reserve };
        self.usable_free() > floor
    }

    /// Whether space runs low and the cleaner has something to do about it.
    pub fn cleaning_wanted(&self) -> bool {
        self.usable_free() < self.low_water && (self.cleaning > 0 || self.space.cleanable() > 0)
    }

    /// Whether user writes may still get space without more I/O finishing: a free segment
    /// beyond the reserve, or cleaning under way or possible.
    pub fn may_free_space(&self) -> bool {
        self.usable_free() > self.reserve || self.cleaning > 0 || self.space.cleanable() > 0
    }

    /// Free segments that can be opened.
    pub fn usable_free(&self) -> usize {
        self.space.free_count().saturating_sub(self.unusable)
    }

    pub fn used_segments(&self) -> u64 {
        (self.space.segments() as usize - self.space.free_count()) as u64
    }

    /// Memory of the mapping table and of the used segments' summaries.
    pub fn metadata_bytes(&self) -> u64 {
        self.map.memory_bytes() + self.used_segments() * self.seg_pages() as u64 * 4
    }

    /// Check the mapping against the segments (no page in a free segment, every summary
    /// naming the page mapped there, live counts) and the volumes' mapped counts.
    pub fn check(&self) {
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
    }

    /// With no job left: no victim being cleaned and nobody waiting.
    pub fn check_quiet(&self) {
        assert_eq!(self.cleaning, 0, "victims cleaned with no job");
        assert!(self.waiters.is_empty() && self.gc_waiters.is_empty());
    }
}
