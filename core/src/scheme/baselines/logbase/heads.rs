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
    /// The segment was opened for this room (a log that places segments as they open
    /// places it now).
    pub fresh: bool,
}

pub struct Heads {
    open: Vec<Option<Head>>,
    next: usize,
    /// A head of the cleaner's own (the last one), not taken in turn and kept open by
    /// [`Heads::close_if`]; None: the cleaner takes turns with the writes.
    cleaner: Option<usize>,
}

impl Heads {
    pub fn new(heads: usize) -> Self {
        Heads {
            open: (0..heads).map(|_| None).collect(),
            next: 0,
            cleaner: None,
        }
    }

    /// `heads` heads taken in turn and one more for the cleaner alone: a log that closes
    /// heads early (when their members stop taking writes) would otherwise close the
    /// cleaner's half-filled segments too, and a cleaner that keeps opening segments it cannot
    /// fill may free no more than it takes.
    pub fn with_cleaner(heads: usize) -> Self {
        let mut h = Heads::new(heads + 1);
        h.cleaner = Some(heads);
        h
    }

    /// The head the next write takes, round-robin.
    pub fn turn(&mut self) -> usize {
        let head = self.next;
        let turns = self.cleaner.unwrap_or(self.open.len());
        self.next = (head + 1) % turns;
        head
    }

    /// The head a victim's pages go to: the cleaner's own, or the next in turn.
    pub fn cleaner_turn(&mut self) -> usize {
        match self.cleaner {
            Some(c) => c,
            None => self.turn(),
        }
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
                    fresh: false,
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
        Some(Room {
            seg,
            free: sp,
            fresh: true,
        })
    }

    /// Close every head but the cleaner's whose segment `stale` rejects (the rest of it stays
    /// unwritten); the next write at such a head opens a fresh segment.
    pub fn close_if(&mut self, log: &mut Log, stale: impl Fn(u32) -> bool) {
        let cleaner = self.cleaner;
        for (i, h) in self.open.iter_mut().enumerate() {
            if let Some(head) = h
                && Some(i) != cleaner
                && stale(head.seg)
            {
                let seg = head.seg;
                *h = None;
                log.space.release(seg);
            }
        }
    }

    /// Give up a segment [`Heads::room`] just opened at `head` and nothing was appended to.
    pub fn abandon(&mut self, log: &mut Log, head: usize) {
        let h = self.open[head].take().expect("open head");
        assert_eq!(h.fill, 0, "abandoning a written segment");
        log.space.release(h.seg);
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
