//! The event queue: a binary heap keyed by `(time, sequence)`.
//!
//! The sequence number is global and increases with every push, so two events at the same
//! virtual instant pop in the order they were scheduled. Together with the seeded PRNGs
//! this is what makes a run reproducible to the byte: nothing depends on hash order,
//! allocation addresses or wall-clock time.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use fusionraid_core::{IoId, Nanos};

/// What happens at an instant. Kept small (16 bytes): payloads that only some runs need (a
/// source's next record, read data in data mode) wait in the driver, not in the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Source `source`'s scheduled request arrives.
    Arrival { source: u32 },
    /// A device finished an I/O the engine issued.
    Completion { id: IoId, disk: u32 },
    /// The engine's deadline (`poll_timeout`) is due.
    Timeout,
}

/// `(time, sequence)` packed into one integer, so a heap comparison is one compare.
struct Entry {
    key: u128,
    ev: Event,
}

impl Entry {
    fn at(&self) -> Nanos {
        (self.key >> 64) as Nanos
    }
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Reversed, so the std max-heap pops the earliest `(at, seq)` first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.key.cmp(&self.key)
    }
}

/// Pending events in `(time, sequence)` order.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
}

impl EventQueue {
    pub fn push(&mut self, at: Nanos, ev: Event) {
        self.seq += 1;
        self.heap.push(Entry {
            key: (u128::from(at) << 64) | u128::from(self.seq),
            ev,
        });
    }

    /// The earliest event and its time.
    pub fn pop(&mut self) -> Option<(Nanos, Event)> {
        const { assert!(std::mem::size_of::<Event>() <= 16) };
        self.heap.pop().map(|e| (e.at(), e.ev))
    }

    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek().map(Entry::at)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Events scheduled so far (a cheap, deterministic measure of simulation work).
    pub fn scheduled(&self) -> u64 {
        self.seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, Event::Timeout);
        q.push(
            3,
            Event::Completion {
                id: IoId(1),
                disk: 0,
            },
        );
        q.push(
            5,
            Event::Completion {
                id: IoId(2),
                disk: 0,
            },
        );
        q.push(1, Event::Timeout);
        let order: Vec<(Nanos, String)> = std::iter::from_fn(|| q.pop())
            .map(|(t, e)| {
                let tag = match e {
                    Event::Timeout => "t".to_string(),
                    Event::Completion { id, .. } => format!("c{}", id.0),
                    Event::Arrival { .. } => "a".to_string(),
                };
                (t, tag)
            })
            .collect();
        let want = [(1, "t"), (3, "c1"), (5, "t"), (5, "c2")];
        assert_eq!(
            order,
            want.iter()
                .map(|(t, s)| (*t, s.to_string()))
                .collect::<Vec<_>>()
        );
        assert!(q.is_empty());
        assert_eq!(q.scheduled(), 4);
    }

    /// Against a sorted reference on random interleavings of pushes and pops.
    #[test]
    fn pops_in_key_order_under_random_traffic() {
        let mut rng = fusionraid_core::rng::Rng::new(8);
        let mut q = EventQueue::default();
        let mut reference: Vec<(Nanos, u64)> = Vec::new();
        let mut now = 0;
        for i in 0..50_000u64 {
            if rng.below(3) != 0 || reference.is_empty() {
                let at = now + rng.below(1_000);
                q.push(at, Event::Arrival { source: i as u32 });
                reference.push((at, i));
            } else {
                reference.sort();
                let (at, i) = reference.remove(0);
                now = at;
                assert_eq!(q.pop(), Some((at, Event::Arrival { source: i as u32 })));
            }
            assert_eq!(q.len(), reference.len());
        }
    }
}
