//! Per-user-block write locks. Writes (and relocations) that touch the same user block run one
//! after another, in submission order: the mapping update of an earlier write can never land
//! after a later one's. Reads take no lock; stripe pins protect them instead.

use std::collections::{HashSet, VecDeque};

pub struct BlockLocks<T> {
    held: HashSet<u64>,
    waiting: VecDeque<(u64, u64, T)>,
}

impl<T> Default for BlockLocks<T> {
    fn default() -> Self {
        BlockLocks {
            held: HashSet::new(),
            waiting: VecDeque::new(),
        }
    }
}

impl<T> BlockLocks<T> {
    fn free(&self, first: u64, end: u64) -> bool {
        (first..end).all(|b| !self.held.contains(&b))
    }
    fn overlaps_waiter(&self, first: u64, end: u64) -> bool {
        self.waiting.iter().any(|&(f, e, _)| f < end && first < e)
    }

    /// Lock blocks `[first, end)` now, or queue `item` behind the holders (and behind earlier
    /// waiters on the same blocks). Returns the item back when it got the lock.
    pub fn acquire(&mut self, first: u64, end: u64, item: T) -> Option<T> {
        if self.free(first, end) && !self.overlaps_waiter(first, end) {
            self.held.extend(first..end);
            Some(item)
        } else {
            self.waiting.push_back((first, end, item));
            None
        }
    }

    /// Lock only if free right now; never queues (background work simply skips busy blocks).
    pub fn try_acquire(&mut self, first: u64, end: u64) -> bool {
        if self.free(first, end) && !self.overlaps_waiter(first, end) {
            self.held.extend(first..end);
            true
        } else {
            false
        }
    }

    pub fn is_locked(&self, b: u64) -> bool {
        self.held.contains(&b)
    }

    /// Could `b` be locked right now without overtaking a waiter?
    pub fn is_available(&self, b: u64) -> bool {
        self.free(b, b + 1) && !self.overlaps_waiter(b, b + 1)
    }

    /// Release `[first, end)` and return waiters that now hold their locks, in order. One
    /// pass: blocks wanted by a waiter that stays queued are claimed, so no later waiter
    /// overtakes it (cost linear in the waiters' blocks).
    pub fn release(&mut self, first: u64, end: u64) -> Vec<T> {
        for b in first..end {
            assert!(
                self.held.remove(&b),
                "releasing block {b} that is not locked"
            );
        }
        let mut ready = Vec::new();
        let mut claimed: HashSet<u64> = HashSet::new();
        let mut keep = VecDeque::with_capacity(self.waiting.len());
        while let Some((f, e, item)) = self.waiting.pop_front() {
            if self.free(f, e) && (f..e).all(|b| !claimed.contains(&b)) {
                self.held.extend(f..e);
                ready.push(item);
            } else {
                claimed.extend(f..e);
                keep.push_back((f, e, item));
            }
        }
        self.waiting = keep;
        ready
    }

    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn overlapping_requests_run_in_order() {
        let mut l = BlockLocks::default();
        assert_eq!(l.acquire(0, 2, 'a'), Some('a'));
        assert_eq!(l.acquire(1, 3, 'b'), None);
        // c does not overlap a, but overlaps waiting b: it must not overtake b.
        assert_eq!(l.acquire(2, 4, 'c'), None);
        assert_eq!(l.acquire(5, 6, 'd'), Some('d'));
        assert_eq!(l.release(0, 2), vec!['b']);
        assert_eq!(l.release(1, 3), vec!['c']);
        assert!(l.try_acquire(0, 1));
        assert!(!l.try_acquire(3, 4));
    }
}
