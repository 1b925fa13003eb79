//! The table of device I/Os in flight: a slab indexed by [`IoId`], so a completion finds its
//! disk, detector ticket and owner in O(1).

use super::api::IoId;
use crate::detector::Ticket;
use crate::types::{DiskId, Nanos};

/// Which piece of which scheme job a device I/O belongs to. Schemes choose the meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IoTag {
    pub job: u64,
    pub part: u32,
}

#[derive(Clone, Copy, Debug)]
pub struct InflightIo {
    pub disk: DiskId,
    pub ticket: Ticket,
    pub tag: IoTag,
    pub issued_at: Nanos,
    pub len: u64,
    pub class: super::disks::IoClass,
    pub background: bool,
}

#[derive(Debug, Default)]
pub struct IoTable {
    slots: Vec<(u32, Option<InflightIo>)>,
    free: Vec<u32>,
    live: usize,
}

impl IoTable {
    pub fn insert(&mut self, io: InflightIo) -> IoId {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push((0, None));
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[idx as usize];
        assert!(slot.1.is_none());
        slot.0 = slot.0.wrapping_add(1);
        slot.1 = Some(io);
        self.live += 1;
        IoId(((slot.0 as u64) << 32) | idx as u64)
    }

    /// Removes and returns the I/O, or None for an unknown or already completed id (a driver
    /// bug or a duplicate completion; the engine reports it instead of corrupting state).
    pub fn remove(&mut self, id: IoId) -> Option<InflightIo> {
        let idx = (id.0 & 0xffff_ffff) as usize;
        let generation = (id.0 >> 32) as u32;
        let slot = self.slots.get_mut(idx)?;
        if slot.0 != generation {
            return None;
        }
        let io = slot.1.take()?;
        self.free.push(idx as u32);
        self.live -= 1;
        Some(io)
    }

    pub fn len(&self) -> usize {
        self.live
    }
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}
