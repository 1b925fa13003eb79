//! Heads: open segments written in place as pages arrive, one per head. Each write (or
//! victim) takes the next head in turn and its pages go there, on into fresh segments.

use super::Log;

struct Head {
    seg: u32,
    fill: u32,
}

/// Free slots of a head's segment, from its fill on.
#[derive(Clone, Copy, Debug)]
pub struct Room {
    pub seg: u32,
    pub free: u32,
}

pub struct Heads {
    open: Vec<Option<Head>>,
    next: usize,
}

impl Heads {
    pub fn new(heads: usize) -> Self {
        Heads {
            open: (0..heads).map(|_| None).collect(),
            next: 0,
        }
    }

    /// The head the next write or victim takes, round-robin.
    pub fn turn(&mut self) -> usize {
        let head = self.next;
        self.next = (head + 1) % self.open.len();
        head
    }

    /// Room at head `head`: what its segment has left, or else a fresh segment (the full one
    /// closes), the first that `good` accepts among the first `scan` free ones. None when
    /// the log may not open one now (the `cleaner` may take the reserve).
    pub fn room(
        &mut self,
        log: &mut Log,
        head: usize,
        cleaner: bool,
        scan: usize,
        good: impl Fn(u32) -> bool,
    ) -> Option<Room> {
        let sp = log.seg_pages();
        if let Some(h) = &self.open[head] {
            if h.fill < sp {
                return Some(Room {
                    seg: h.seg,
                    free: sp - h.fill,
                });
            }
            let seg = h.seg;
            self.open[head] = None;
            log.space.release(seg);
        }
        if !log.can_open(cleaner) {
            return None;
        }
        let seg = log.space.alloc(scan, good).expect("free segment");
        self.open[head] = Some(Head { seg, fill: 0 });
        Some(Room { seg, free: sp })
    }

    /// Takes `count` slots of head `head` (within its room) for logical pages from `lpa`;
    /// the segment stays held until their copies land. Returns the first slot.
    pub fn append(&mut self, log: &mut Log, head: usize, lpa: u32, count: u32) -> u32 {
        let h = self.open[head].as_mut().expect("open head");
        let slot = h.fill;
        h.fill += count;
        log.space.hold(h.seg);
        for i in 0..count {
            log.space.set_summary(h.seg, slot + i, lpa + i);
        }
        slot
    }
}
