//! Which copies of a volume's replica slots sit in an HDD log rather than at their SSD
//! place, and the extents that die when their pair set leaves the Block Pairing Table.

use crate::fasthash::FastMap;
use crate::types::DiskId;

use super::LogPos;

/// One offloaded copy: copy `copy` of slot `slot` of its set, whose pages `[at, at+count)`
/// were written to `hdd`'s log at `pos` instead of the SSD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub slot: u16,
    pub copy: u8,
    pub hdd: DiskId,
    pub pos: LogPos,
}

#[derive(Default, Debug)]
pub struct Offloaded {
    /// Pair set -> its offloaded copies.
    by_set: FastMap<u32, Vec<Extent>>,
    /// Extents whose set left the table, for the scheme to free in the logs.
    dead: Vec<(DiskId, LogPos)>,
}

impl Offloaded {
    pub fn add(&mut self, set: u32, e: Extent) {
        self.by_set.entry(set).or_default().push(e);
    }

    /// Whether the set has any copy in a log (it must then keep copy 0 at conversion).
    pub fn has(&self, set: u32) -> bool {
        self.by_set.contains_key(&set)
    }

    /// Whether copy `copy` of slot `slot` of `set` is (at least partly) in a log: its SSD
    /// place does not hold the slot's pages.
    pub fn in_log(&self, set: u32, slot: u16, copy: usize) -> bool {
        !self.by_set.is_empty()
            && self
                .by_set
                .get(&set)
                .is_some_and(|v| v.iter().any(|e| e.slot == slot && e.copy as usize == copy))
    }

    /// The set left the table (converted or freed): its extents die.
    pub fn set_gone(&mut self, set: u32) {
        if let Some(v) = self.by_set.remove(&set) {
            self.dead.extend(v.into_iter().map(|e| (e.hdd, e.pos)));
        }
    }

    pub fn take_dead(&mut self) -> Vec<(DiskId, LogPos)> {
        std::mem::take(&mut self.dead)
    }

    /// Offloaded copies still live.
    pub fn live(&self) -> usize {
        self.by_set.values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_in_the_log_until_their_set_leaves() {
        let mut o = Offloaded::default();
        let e = |slot, copy, pos| Extent {
            slot,
            copy,
            hdd: DiskId(9),
            pos,
        };
        o.add(4, e(0, 1, 0));
        o.add(4, e(2, 1, 4096));
        assert!(o.has(4) && !o.has(5));
        assert!(o.in_log(4, 0, 1) && o.in_log(4, 2, 1));
        assert!(!o.in_log(4, 0, 0) && !o.in_log(4, 1, 1));
        o.set_gone(5);
        assert!(o.take_dead().is_empty());
        o.set_gone(4);
        assert!(!o.in_log(4, 0, 1));
        assert_eq!(o.take_dead(), vec![(DiskId(9), 0), (DiskId(9), 4096)]);
        assert_eq!(o.live(), 0);
    }
}
