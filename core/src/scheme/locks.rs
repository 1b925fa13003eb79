//! Per-user-block write locks. Writes (and relocations) that touch the same user block run one
//! after another, in submission order: the mapping update of an earlier write can never land
//! after a later one's. Reads take no lock; stripe pins protect them instead.
//!
//! A held block has its bit set; a block that waiters want has the FIFO of those waiters.
//! A waiter runs once it is at the head of every one of its blocks' queues and
//! none of them is held, so a later request never overtakes an earlier one on a shared block.
//! Releasing `n` blocks only looks at the heads of those `n` queues: the cost does not grow
//! with the number of waiters (with thousands of writes parked behind a slow member, a scan
//! of every waiter per release dominated the simulator).

use std::collections::VecDeque;

use crate::fasthash::FastMap;

struct Waiter<T> {
    first: u64,
    end: u64,
    item: T,
}

/// Emptied waiter queues a lock table keeps for reuse.
const SPARE_QUEUES: usize = 64;

pub struct BlockLocks<T> {
    /// Bit `b` set: block `b` is held. A bit per block (grown up to the highest block
    /// locked so far) instead of a map entry: every write takes and gives back its blocks,
    /// and most never meet a waiter, so the common case is a bit test and a bit flip.
    held_bits: Vec<u64>,
    /// Blocks some waiter wants: the sequence numbers of their waiters, oldest first. A
    /// block is in here only while its queue is not empty.
    queues: FastMap<u64, VecDeque<u64>>,
    /// Emptied queues kept for the next blocks that get waiters (at most `SPARE_QUEUES`):
    /// writes queue behind each other on a few hot blocks all the time, and a fresh queue
    /// per wait would be an allocation and a free each.
    spare_queues: Vec<VecDeque<u64>>,
    waiters: FastMap<u64, Waiter<T>>,
    next_seq: u64,
    held: usize,
}

impl<T> Default for BlockLocks<T> {
    fn default() -> Self {
        BlockLocks {
            held_bits: Vec::new(),
            queues: FastMap::default(),
            spare_queues: Vec::new(),
            waiters: FastMap::default(),
            next_seq: 0,
            held: 0,
        }
    }
}

impl<T> BlockLocks<T> {
    fn held_bit(&self, b: u64) -> bool {
        self.held_bits
            .get((b / 64) as usize)
            .is_some_and(|w| w & (1 << (b % 64)) != 0)
    }

    fn set_held(&mut self, b: u64, on: bool) {
        let w = (b / 64) as usize;
        if w >= self.held_bits.len() {
            if !on {
                return;
            }
            self.held_bits.resize(w + 1, 0);
        }
        if on {
            self.held_bits[w] |= 1 << (b % 64);
        } else {
            self.held_bits[w] &= !(1 << (b % 64));
        }
    }

    /// Some waiter wants `b`.
    fn wanted(&self, b: u64) -> bool {
        !self.queues.is_empty() && self.queues.contains_key(&b)
    }

    /// Neither held nor wanted by a waiter.
    fn available(&self, first: u64, end: u64) -> bool {
        (first..end).all(|b| !self.held_bit(b) && !self.wanted(b))
    }

    /// Lock blocks `[first, end)` now, or queue `item` behind the holders (and behind earlier
    /// waiters on the same blocks). Returns the item back when it got the lock.
    pub fn acquire(&mut self, first: u64, end: u64, item: T) -> Option<T> {
        if self.take_if_available(first, end) {
            return Some(item);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let spare = &mut self.spare_queues;
        for b in first..end {
            self.queues
                .entry(b)
                .or_insert_with(|| spare.pop().unwrap_or_default())
                .push_back(seq);
        }
        self.waiters.insert(seq, Waiter { first, end, item });
        None
    }

    /// Lock only if free right now; never queues (background work simply skips busy blocks).
    pub fn try_acquire(&mut self, first: u64, end: u64) -> bool {
        self.take_if_available(first, end)
    }

    fn take_if_available(&mut self, first: u64, end: u64) -> bool {
        if !self.available(first, end) {
            return false;
        }
        for b in first..end {
            self.set_held(b, true);
        }
        self.held += (end - first) as usize;
        true
    }

    pub fn is_locked(&self, b: u64) -> bool {
        self.held_bit(b)
    }

    /// Could `b` be locked right now without overtaking a waiter?
    pub fn is_available(&self, b: u64) -> bool {
        self.available(b, b + 1)
    }

    /// Waiter `seq` may run: first in line on each of its blocks, none of them held.
    fn ready(&self, seq: u64) -> bool {
        let w = &self.waiters[&seq];
        (w.first..w.end).all(|b| !self.held_bit(b) && self.queues[&b].front() == Some(&seq))
    }

    /// Release `[first, end)` and return waiters that now hold their locks, in submission
    /// order.
    pub fn release(&mut self, first: u64, end: u64) -> Vec<T> {
        for b in first..end {
            assert!(self.held_bit(b), "releasing block {b} that is not locked");
            self.set_held(b, false);
        }
        self.held -= (end - first) as usize;
        if self.queues.is_empty() {
            return Vec::new(); // nobody waits for anything
        }
        // Only a waiter at the head of a released block's queue can have become runnable:
        // every other waiter is still behind a holder or an earlier waiter.
        let mut heads: Vec<u64> = (first..end)
            .filter_map(|b| self.queues.get(&b).and_then(|q| q.front().copied()))
            .collect();
        heads.sort_unstable();
        heads.dedup();
        let mut ready = Vec::new();
        for seq in heads {
            if !self.ready(seq) {
                continue;
            }
            let w = self.waiters.remove(&seq).expect("waiter exists");
            for b in w.first..w.end {
                let std::collections::hash_map::Entry::Occupied(mut q) = self.queues.entry(b)
                else {
                    panic!("wanted block {b} has no queue");
                };
                q.get_mut().pop_front();
                if q.get().is_empty() {
                    let empty = q.remove();
                    if self.spare_queues.len() < SPARE_QUEUES {
                        self.spare_queues.push(empty);
                    }
                }
                self.set_held(b, true);
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
                let first = rng.below(40) + if id % 2 == 0 { 0 } else { 60 };
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
