//! User requests between arrival and reply: a slab indexed by request id, and the bounded
//! queue of requests held back while the engine answers `Busy`.

use std::collections::VecDeque;

use fusionraid_core::Nanos;

use crate::trace::IoKind;

/// What the driver remembers about a request until its reply.
#[derive(Clone, Copy, Debug)]
pub struct ReqMeta {
    pub arrival: Nanos,
    pub source: u32,
    pub volume: u32,
    pub kind: IoKind,
    pub offset: u64,
    pub len: u64,
    /// Data mode: logical submission time (reads) or write number (writes).
    pub tag: u64,
}

/// In-flight requests; the id handed to the engine is the slot index.
#[derive(Default)]
pub struct RequestTable {
    slots: Vec<Option<ReqMeta>>,
    free: Vec<u32>,
    live: usize,
}

impl RequestTable {
    pub fn insert(&mut self, m: ReqMeta) -> u64 {
        let i = match self.free.pop() {
            Some(i) => i as usize,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        debug_assert!(self.slots[i].is_none());
        self.slots[i] = Some(m);
        self.live += 1;
        i as u64
    }

    pub fn get_mut(&mut self, id: u64) -> &mut ReqMeta {
        self.slots[id as usize]
            .as_mut()
            .expect("request id in flight")
    }

    /// Panics on an id the driver never issued or already saw answered: the engine must
    /// answer every request exactly once.
    pub fn remove(&mut self, id: u64) -> ReqMeta {
        let m = self
            .slots
            .get_mut(id as usize)
            .and_then(Option::take)
            .unwrap_or_else(|| panic!("reply for unknown or already answered request {id}"));
        self.free.push(id as u32);
        self.live -= 1;
        m
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

/// Requests (by id) waiting for the engine to accept more, oldest first, bounded.
pub struct HoldQueue {
    q: VecDeque<u64>,
    cap: usize,
    pub held: u64,
    pub max_held: u64,
    pub dropped: u64,
}

impl HoldQueue {
    pub fn new(cap: usize) -> Self {
        HoldQueue {
            q: VecDeque::new(),
            cap,
            held: 0,
            max_held: 0,
            dropped: 0,
        }
    }

    /// Holds `id`; false (and counted as dropped) when the queue is full.
    pub fn push(&mut self, id: u64) -> bool {
        if self.q.len() >= self.cap {
            self.dropped += 1;
            return false;
        }
        self.q.push_back(id);
        self.held += 1;
        self.max_held = self.max_held.max(self.q.len() as u64);
        true
    }

    pub fn pop(&mut self) -> Option<u64> {
        self.q.pop_front()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }
}
