//! The cleaner's side of a log: the greedy victim, the reads that fetch its live pages, and
//! the runs of them still live when they are written again.

use super::{LivePage, Log, PS};

/// One device read of a victim: live pages consecutive in one chunk.
#[derive(Clone, Copy, Debug)]
pub struct VictimRead {
    /// Index of its first page in the victim's `pages`.
    pub first: usize,
    pub slot: u32,
    pub count: u32,
    /// The copy it reads, where the log keeps several (0 otherwise).
    pub copy: u8,
}

/// A segment being cleaned: its live pages are read, then written again at the log's head.
pub struct Victim {
    pub seg: u32,
    pub pages: Vec<LivePage>,
    /// The pages' contents, in `pages` order (data mode).
    pub data: Option<Vec<u8>>,
    pub reads: Vec<VictimRead>,
    /// Reads not back yet.
    pub pending: u32,
    /// A read failed for good: the victim is given up and its pages stay where they are.
    pub failed: bool,
    /// Pages of `pages` dealt with: written again, or found overwritten.
    pub moved: usize,
}

/// Pages of a victim to write again: `count` pages from index `index` of its `pages`, logical
/// pages from `lpa`, read from physical pages from `src`.
#[derive(Clone, Copy, Debug)]
pub struct LiveRun {
    pub index: usize,
    pub lpa: u32,
    pub src: u32,
    pub count: u32,
}

/// What comes next of a victim's pages.
pub enum NextRun {
    /// Every page is dealt with.
    Done,
    /// The next page was overwritten or trimmed since it was read: nothing to move.
    Dead,
    Live(LiveRun),
}

impl Victim {
    /// Read `part` brought `bytes`.
    pub fn put(&mut self, part: usize, bytes: &[u8]) {
        if let Some(d) = &mut self.data {
            let o = self.reads[part].first * PS;
            d[o..o + bytes.len()].copy_from_slice(bytes);
        }
    }

    /// The contents of `run`'s pages (data mode).
    pub fn bytes(&self, run: &LiveRun) -> Option<Vec<u8>> {
        let range = run.index * PS..(run.index + run.count as usize) * PS;
        self.data.as_ref().map(|d| d[range].to_vec())
    }
}

impl Log {
    /// When space runs low and fewer than `cleaners` victims are being cleaned: the closed
    /// segment with the fewest live pages, pinned while its live pages are read, with one
    /// read per run of them in one chunk of `chunk_pages`.
    pub fn next_victim(
        &mut self,
        cleaners: usize,
        chunk_pages: u32,
        size_only: bool,
    ) -> Option<Victim> {
        if self.cleaning >= cleaners.max(1) || self.usable_free() >= self.low_water {
            return None;
        }
        let seg = self.space.pick_victim()?;
        let map = &self.map;
        let pages = self
            .space
            .still_live(seg, seg * self.seg_pages(), |lpa| map.get(lpa as u64));
        let mut reads: Vec<VictimRead> = Vec::new();
        for (k, p) in pages.iter().enumerate() {
            if let Some(r) = reads.last_mut()
                && r.slot + r.count == p.slot
                && r.slot / chunk_pages == p.slot / chunk_pages
            {
                r.count += 1;
                continue;
            }
            reads.push(VictimRead {
                first: k,
                slot: p.slot,
                count: 1,
                copy: 0,
            });
        }
        self.cleaning += 1;
        self.space.pin(seg);
        Some(Victim {
            seg,
            data: (!size_only).then(|| vec![0u8; pages.len() * PS]),
            pages,
            pending: reads.len() as u32,
            reads,
            failed: false,
            moved: 0,
        })
    }

    /// Every read of `v` is back: it is unpinned, and a failed victim becomes a candidate
    /// again. Returns whether its pages are to be written again.
    pub fn victim_read(&mut self, v: &Victim) -> bool {
        self.space.unpin(v.seg);
        if v.failed {
            self.cleaning -= 1;
            self.space.unvictim(v.seg);
        }
        !v.failed
    }

    /// The next pages of `v` to write again: up to `max` pages consecutive both in the victim
    /// and logically, all still mapped where they were read.
    pub fn next_run(&self, v: &Victim, max: u32) -> NextRun {
        let Some(&first) = v.pages.get(v.moved) else {
            return NextRun::Done;
        };
        let src = v.seg * self.seg_pages() + first.slot;
        let mut count = 0u32;
        while count < max
            && let Some(p) = v.pages.get(v.moved + count as usize)
            && p.slot == first.slot + count
            && p.lpa == first.lpa + count
            && self.map.get(p.lpa as u64) == src + count
        {
            count += 1;
        }
        if count == 0 {
            return NextRun::Dead;
        }
        NextRun::Live(LiveRun {
            index: v.moved,
            lpa: first.lpa,
            src,
            count,
        })
    }
}
