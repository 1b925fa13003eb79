//! Per-user-block write locks. Writes (and relocations) that touch the same user block run one
//! after another, in submission order: the mapping update of an earlier write can never land
//! after a later one's. Reads take no lock; stripe pins protect them instead.
//!
//! Each block with a holder or waiters has an entry: held or not, and the FIFO of waiters
//! that want it. A waiter runs once it is at the head of every one of its blocks' queues and
//! none of them is held, so a later request never overtakes an earlier one on a shared block.
//! Releasing `n` blocks only looks at the heads of those `n` queues: the cost does not grow
//! with the number of waiters (with thousands of writes parked behind a slow member, a scan
//! of every waiter per release dominated the simulator).

use std::collections::VecDeque;

use crate::fasthash::FastMap;

#[derive(Default)]
struct BlockEntry {
    held: bool,
    /// Sequence numbers of the waiters that want this block, oldest first.
    queue: VecDeque<u64>,
}

struct Waiter<T> {
    first: u64,
    end: u64,
    item: T,
}

pub struct BlockLocks<T> {
    blocks: FastMap<u64, BlockEntry>,
    waiters: FastMap<u64, Waiter<T>>,
    next_seq: u64,
    held: usize,
}

impl<T> Default for BlockLocks<T> {
    fn default() -> Self {
        BlockLocks {
            blocks: FastMap::default(),
            waiters: FastMap::default(),
            next_seq: 0,
            held: 0,
        }
    }
}

impl<T> BlockLocks<T> {
    /// Neither held nor wanted by a waiter.
    fn available(&self, first: u64, end: u64) -> bool {
        (first..end).all(|b| {
            self.blocks
                .get(&b)
                .is_none_or(|e| !e.held && e.queue.is_empty())
        })
    }

    /// Lock blocks `[first, end)` now, or queue `item` behind the holders (and behind earlier
    /// waiters on the same blocks). Returns the item back when it got the lock.
    pub fn acquire(&mut self, first: u64, end: u64, item: T) -> Option<T> {
        if self.take_if_available(first, end) {
            return Some(item);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        for b in first..end {
            self.blocks.entry(b).or_default().queue.push_back(seq);
        }
        self.waiters.insert(seq, Waiter { first, end, item });
        None
    }

    /// Lock only if free right now; never queues (background work simply skips busy blocks).
    pub fn try_acquire(&mut self, first: u64, end: u64) -> bool {
        self.take_if_available(first, end)
    }

    /// `available` then `take`, with one map lookup per block instead of two (every write
    /// locks its blocks): blocks are taken as they are found free, and given back if a
    /// later one is not.
    fn take_if_available(&mut self, first: u64, end: u64) -> bool {
        use std::collections::hash_map::Entry;
        for b in first..end {
            match self.blocks.entry(b) {
                Entry::Vacant(v) => {
                    v.insert(BlockEntry {
                        held: true,
                        queue: VecDeque::new(),
                    });
                }
                Entry::Occupied(mut o) => {
                    let e = o.get_mut();
                    if e.held || !e.queue.is_empty() {
                        // Not available: undo the blocks taken so far. Removing their
                        // entries is exact: each was vacant, or free with no waiter, which
                        // means the same as no entry.
                        for u in first..b {
                            self.blocks.remove(&u);
                        }
                        return false;
                    }
                    e.held = true;
                }
            }
        }
        self.held += (end - first) as usize;
        true
    }

    pub fn is_locked(&self, b: u64) -> bool {
        self.blocks.get(&b).is_some_and(|e| e.held)
    }

    /// Could `b` be locked right now without overtaking a waiter?
    pub fn is_available(&self, b: u64) -> bool {
        self.available(b, b + 1)
    }

    /// Waiter `seq` may run: first in line on each of its blocks, none of them held.
    fn ready(&self, seq: u64) -> bool {
        let w = &self.waiters[&seq];
        (w.first..w.end).all(|b| {
            let e = &self.blocks[&b];
            !e.held && e.queue.front() == Some(&seq)
        })
    }

    /// Release `[first, end)` and return waiters that now hold their locks, in submission
    /// order.
    pub fn release(&mut self, first: u64, end: u64) -> Vec<T> {
        // Only a waiter at the head of a released block's queue can have become runnable:
        // every other waiter is still behind a holder or an earlier waiter.
        let mut heads: Vec<u64> = Vec::new();
        for b in first..end {
            // One lookup per block: the entry is dropped in place when nobody waits.
            let std::collections::hash_map::Entry::Occupied(mut o) = self.blocks.entry(b) else {
                panic!("releasing block {b} that is not locked");
            };
            let e = o.get_mut();
            assert!(e.held, "releasing block {b} that is not locked");
            e.held = false;
            match e.queue.front() {
                Some(&seq) => heads.push(seq),
                None => {
                    o.remove();
                }
            }
        }
        self.held -= (end - first) as usize;
        heads.sort_unstable();
        heads.dedup();
        let mut ready = Vec::new();
        for seq in heads {
            if !self.ready(seq) {
                continue;
            }
            let w = self.waiters.remove(&seq).expect("waiter exists");
            for b in w.first..w.end {
                let e = self.blocks.get_mut(&b).expect("wanted block has an entry");
                e.queue.pop_front();
                e.held = true;
            }
            self.held += (w.end - w.first) as usize;
            ready.push(w.item);
        }
        ready
    }

    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }
    pub fn held(&self) -> usize {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

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
        assert_eq!((l.held(), l.waiting()), (4, 0));
    }

    /// The straightforward rule, checked against on random traffic: a waiter runs when none
    /// of its blocks is held and no earlier waiter wants any of them.
    #[test]
    fn matches_the_reference_rule_on_random_traffic() {
        let mut rng = Rng::new(11);
        let mut l: BlockLocks<u32> = BlockLocks::default();
        let mut holders: Vec<(u64, u64, u32)> = Vec::new();
        let mut queue: Vec<(u64, u64, u32)> = Vec::new();
        let overlaps = |a: (u64, u64), b: (u64, u64)| a.0 < b.1 && b.0 < a.1;
        for id in 0..4000u32 {
            if rng.below(2) == 0 || holders.is_empty() {
                let first = rng.below(40);
                let end = first + 1 + rng.below(4);
                let free = !holders.iter().any(|h| overlaps((h.0, h.1), (first, end)))
                    && !queue.iter().any(|w| overlaps((w.0, w.1), (first, end)));
                let got = l.acquire(first, end, id);
                assert_eq!(got.is_some(), free);
                if free {
                    holders.push((first, end, id));
                } else {
                    queue.push((first, end, id));
                }
            } else {
                let (first, end, _) = holders.swap_remove(rng.below(holders.len() as u64) as usize);
                let got = l.release(first, end);
                let mut want = Vec::new();
                let mut i = 0;
                while i < queue.len() {
                    let w = queue[i];
                    let blocked = holders.iter().any(|h| overlaps((h.0, h.1), (w.0, w.1)))
                        || queue[..i].iter().any(|e| overlaps((e.0, e.1), (w.0, w.1)));
                    if blocked {
                        i += 1;
                    } else {
                        want.push(w.2);
                        holders.push(queue.remove(i));
                    }
                }
                assert_eq!(got, want);
            }
            let held: u64 = holders.iter().map(|h| h.1 - h.0).sum();
            assert_eq!((l.held() as u64, l.waiting()), (held, queue.len()));
        }
    }
}
