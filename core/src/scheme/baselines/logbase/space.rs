//! Segment bookkeeping of a log: which segments are free, how many live pages each holds, which
//! logical page each slot was written for (the segment summary, as in LFS), read pins, and
//! greedy victim choice for cleaning.
//!
//! A segment is *held* while it is open for appends or has writes in flight; it is *closed*
//! when allocated and not held. Closed segments sit in buckets by live-page count so the
//! cleaner's greedy choice (fewest live pages) is O(buckets). A segment returns to the free
//! list once closed, empty and unpinned: a pinned segment (a read in flight) is never reused
//! under the read.

use std::collections::{BTreeSet, VecDeque};

use super::sparse::NONE;

/// A live page of a segment: its slot, and the logical page the summary names for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LivePage {
    pub slot: u32,
    pub lpa: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum St {
    Free,
    Used,
}

pub struct SegSpace {
    seg_pages: u32,
    st: Vec<St>,
    valid: Vec<u32>,
    holds: Vec<u32>,
    pins: Vec<u32>,
    victim: Vec<bool>,
    /// Bumped at every allocation: a copy taken from a segment is only valid while the
    /// segment keeps the generation it had (no ABA through reuse).
    generation: Vec<u32>,
    summary: Vec<Option<Box<[u32]>>>,
    free: VecDeque<u32>,
    buckets: Vec<BTreeSet<u32>>,
    live_pages: u64,
    /// Segments freed since the last [`SegSpace::take_freed`], for a log that places each
    /// segment when it opens and must give its places back (None: not kept).
    freed: Option<Vec<u32>>,
}

impl SegSpace {
    pub fn new(segments: u32, seg_pages: u32) -> Self {
        let n = segments as usize;
        SegSpace {
            seg_pages,
            st: vec![St::Free; n],
            valid: vec![0; n],
            holds: vec![0; n],
            pins: vec![0; n],
            victim: vec![false; n],
            generation: vec![0; n],
            summary: (0..n).map(|_| None).collect(),
            free: (0..segments).collect(),
            buckets: (0..=seg_pages).map(|_| BTreeSet::new()).collect(),
            live_pages: 0,
            freed: None,
        }
    }

    /// Keep the segments freed from now on until [`SegSpace::take_freed`] takes them (at most
    /// every segment once: a freed segment is not freed again before it is allocated).
    pub fn track_freed(&mut self) {
        self.freed.get_or_insert_with(Vec::new);
    }

    pub fn take_freed(&mut self) -> Vec<u32> {
        self.freed.as_mut().map(std::mem::take).unwrap_or_default()
    }

    pub fn segments(&self) -> u32 {
        self.st.len() as u32
    }
    pub fn seg_pages(&self) -> u32 {
        self.seg_pages
    }
    pub fn free_count(&self) -> usize {
        self.free.len()
    }
    pub fn valid(&self, s: u32) -> u32 {
        self.valid[s as usize]
    }
    pub fn live_pages(&self) -> u64 {
        self.live_pages
    }
    pub fn generation(&self, s: u32) -> u32 {
        self.generation[s as usize]
    }
    pub fn is_free(&self, s: u32) -> bool {
        self.st[s as usize] == St::Free
    }

    fn closed(&self, s: u32) -> bool {
        let i = s as usize;
        self.st[i] == St::Used && self.holds[i] == 0
    }

    /// Take a free segment, preferring one `good` accepts among the first `scan` candidates
    /// (skipped ones go to the back of the list). The segment starts held (open).
    pub fn alloc(&mut self, scan: usize, good: impl Fn(u32) -> bool) -> Option<u32> {
        let n = scan.min(self.free.len());
        let mut pick = None;
        for i in 0..n {
            if good(self.free[i]) {
                pick = Some(i);
                break;
            }
        }
        let s = match pick {
            Some(i) => {
                // Rotate the skipped ones to the back so they are tried last.
                for _ in 0..i {
                    let x = self.free.pop_front().expect("scanned entry");
                    self.free.push_back(x);
                }
                self.free.pop_front()?
            }
            None => self.free.pop_front()?,
        };
        let i = s as usize;
        assert_eq!(self.st[i], St::Free);
        self.st[i] = St::Used;
        self.generation[i] = self.generation[i].wrapping_add(1);
        self.holds[i] = 1;
        self.valid[i] = 0;
        self.victim[i] = false;
        self.summary[i] = Some(vec![NONE; self.seg_pages as usize].into_boxed_slice());
        Some(s)
    }

    pub fn set_summary(&mut self, s: u32, slot: u32, lpa: u32) {
        self.summary[s as usize]
            .as_mut()
            .expect("summary of a used segment")[slot as usize] = lpa;
    }
    pub fn summary(&self, s: u32) -> &[u32] {
        self.summary[s as usize].as_deref().unwrap_or(&[])
    }

    /// The pages of segment `s` still live: those its summary names whose mapping
    /// (`mapped(lpa)`, a physical page) still points at `first + slot`, where `first` is the
    /// segment's first physical page. Checked against the live count.
    pub fn still_live(&self, s: u32, first: u32, mapped: impl Fn(u32) -> u32) -> Vec<LivePage> {
        let pages: Vec<LivePage> = self
            .summary(s)
            .iter()
            .enumerate()
            .filter(|&(i, &lpa)| lpa != NONE && mapped(lpa) == first + i as u32)
            .map(|(i, &lpa)| LivePage {
                slot: i as u32,
                lpa,
            })
            .collect();
        assert_eq!(pages.len() as u32, self.valid(s), "summary vs live count");
        pages
    }

    fn unbucket(&mut self, s: u32) {
        if self.closed(s) && !self.victim[s as usize] {
            let removed = self.buckets[self.valid[s as usize] as usize].remove(&s);
            assert!(removed, "closed segment {s} missing from its bucket");
        }
    }
    fn rebucket(&mut self, s: u32) {
        if self.closed(s) && !self.victim[s as usize] {
            self.buckets[self.valid[s as usize] as usize].insert(s);
        }
    }

    pub fn hold(&mut self, s: u32) {
        self.unbucket(s);
        self.holds[s as usize] += 1;
    }
    /// Drop a hold; returns true if the segment became free.
    pub fn release(&mut self, s: u32) -> bool {
        let i = s as usize;
        assert!(self.holds[i] > 0, "segment {s} released more than held");
        self.holds[i] -= 1;
        self.rebucket(s);
        self.maybe_free(s)
    }

    pub fn add_valid(&mut self, s: u32) {
        self.unbucket(s);
        self.valid[s as usize] += 1;
        assert!(self.valid[s as usize] <= self.seg_pages);
        self.live_pages += 1;
        self.rebucket(s);
    }
    /// Returns true if the segment became free.
    pub fn sub_valid(&mut self, s: u32) -> bool {
        self.unbucket(s);
        let v = &mut self.valid[s as usize];
        assert!(*v > 0, "segment {s} has no live page to drop");
        *v -= 1;
        self.live_pages -= 1;
        self.rebucket(s);
        self.maybe_free(s)
    }

    pub fn pin(&mut self, s: u32) {
        self.pins[s as usize] += 1;
    }
    /// Returns true if the segment became free.
    pub fn unpin(&mut self, s: u32) -> bool {
        let p = &mut self.pins[s as usize];
        assert!(*p > 0);
        *p -= 1;
        self.maybe_free(s)
    }

    fn maybe_free(&mut self, s: u32) -> bool {
        let i = s as usize;
        if self.closed(s) && self.valid[i] == 0 && self.pins[i] == 0 {
            if !self.victim[i] {
                self.buckets[0].remove(&s);
            }
            self.st[i] = St::Free;
            self.victim[i] = false;
            self.summary[i] = None;
            self.free.push_back(s);
            if let Some(f) = &mut self.freed {
                f.push(s);
            }
            true
        } else {
            false
        }
    }

    /// The closed segment with the fewest live pages (fewer than a full segment), marked as
    /// being cleaned so it is not chosen twice.
    pub fn pick_victim(&mut self) -> Option<u32> {
        for v in 1..self.seg_pages as usize {
            if let Some(&s) = self.buckets[v].iter().next() {
                self.buckets[v].remove(&s);
                self.victim[s as usize] = true;
                return Some(s);
            }
        }
        None
    }

    /// Cleaning of `s` gave up (its pages could not be read): make it a candidate again.
    pub fn unvictim(&mut self, s: u32) {
        let i = s as usize;
        if self.victim[i] {
            self.victim[i] = false;
            self.rebucket(s);
            self.maybe_free(s);
        }
    }

    pub fn is_victim(&self, s: u32) -> bool {
        self.victim[s as usize]
    }

    /// Segments that could be cleaned (closed, not being cleaned, not full of live pages).
    pub fn cleanable(&self) -> usize {
        self.buckets[1..self.seg_pages as usize]
            .iter()
            .map(|b| b.len())
            .sum()
    }

    /// Check the bookkeeping; `live` gives the number of mapped pages per segment as the
    /// caller's mapping table sees them.
    pub fn check(&self, live: &[u32]) {
        let mut free = vec![false; self.st.len()];
        for &s in &self.free {
            assert_eq!(
                self.st[s as usize],
                St::Free,
                "free list holds used segment {s}"
            );
            assert!(!free[s as usize], "segment {s} twice on the free list");
            free[s as usize] = true;
        }
        let mut total = 0u64;
        for (i, &st) in self.st.iter().enumerate() {
            assert_eq!(st == St::Free, free[i], "segment {i} free-list membership");
            assert_eq!(self.valid[i], live[i], "segment {i} live-page count");
            total += self.valid[i] as u64;
            let s = i as u32;
            let bucketed = self.buckets[self.valid[i] as usize].contains(&s);
            assert_eq!(
                bucketed,
                self.closed(s) && !self.victim[i],
                "segment {i} bucket membership"
            );
        }
        assert_eq!(total, self.live_pages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn lifecycle_and_victims() {
        let mut sp = SegSpace::new(4, 8);
        let a = sp.alloc(4, |_| true).unwrap();
        let b = sp.alloc(4, |s| s == 3).unwrap();
        assert_eq!((a, b), (0, 3));
        for _ in 0..5 {
            sp.add_valid(a);
        }
        sp.add_valid(b);
        assert!(!sp.release(a));
        assert!(!sp.release(b));
        assert_eq!(sp.pick_victim(), Some(b));
        sp.pin(b);
        assert!(!sp.sub_valid(b));
        assert!(sp.unpin(b));
        assert_eq!(sp.free_count(), 3);
        assert_eq!(sp.pick_victim(), Some(a));
        sp.check(&[5, 0, 0, 0]);
    }
}
