//! Which copies of a volume's replica slots sit in an HDD log rather than at their SSD
//! place, and the extents that die when their pair set leaves the Block Pairing Table.

use crate::fasthash::FastMap;
use crate::types::DiskId;

use super::LogPos;

/// One offloaded copy: pages of copy `copy` of slot `slot` of its set, written to an HDD
/// log instead of the SSD (the journal's and the image's own type).
pub use crate::meta::record::LogExtent as Extent;

#[derive(Default, Debug)]
pub struct Offloaded {
    /// Pair set -> its offloaded copies.
    by_set: FastMap<u32, Vec<Extent>>,
    /// Extents in `by_set`.
    live: usize,
    /// Extents whose set left the table, for the scheme to free in the logs.
    dead: Vec<(DiskId, LogPos)>,
}

impl Offloaded {
    pub fn add(&mut self, set: u32, e: Extent) {
        self.by_set.entry(set).or_default().push(e);
        self.live += 1;
    }

    /// Whether a volume of `blocks` blocks may put one more copy in a log: at most one
    /// extent per block, the room its checkpoint image keeps for them
    /// (`durable_state::max_image_bytes`).
    pub fn has_room(&self, blocks: u64) -> bool {
        (self.live as u64) < blocks
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

    /// Whether some of pages `[first, first+count)` of copy `copy` of `slot` of `set` went
    /// to a log: their SSD place does not hold them. (A slot filled by several writes, a
    /// pack, may have some pieces of a copy in a log and others at the SSD place.)
    pub fn overlaps(&self, set: u32, slot: u16, copy: usize, first: u16, count: u16) -> bool {
        !self.by_set.is_empty()
            && self.by_set.get(&set).is_some_and(|v| {
                v.iter().any(|e| {
                    e.slot == slot
                        && e.copy as usize == copy
                        && e.at < first + count
                        && first < e.at + e.count
                })
            })
    }

    /// The newest extent holding pages `[first, first+count)` of copy `copy` of `slot` of
    /// `set` (a later write into the slot's pages is newer data), if one holds them all.
    pub fn covering(
        &self,
        set: u32,
        slot: u16,
        copy: usize,
        first: u16,
        count: u16,
    ) -> Option<Extent> {
        self.by_set.get(&set)?.iter().rev().copied().find(|e| {
            e.slot == slot
                && e.copy as usize == copy
                && e.at <= first
                && first + count <= e.at + e.count
        })
    }

    /// Whether a copy of `slot` of `set` sits in the log of a member `failed` says has
    /// failed. (Per slot: a block moved off such a slot may land in a spare slot of the
    /// same set, which must not count as lost.)
    pub fn on_failed(&self, set: u32, slot: u16, failed: impl Fn(DiskId) -> bool) -> bool {
        !self.by_set.is_empty()
            && self
                .by_set
                .get(&set)
                .is_some_and(|v| v.iter().any(|e| e.slot == slot && failed(e.disk())))
    }

    /// Every live extent with its set.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Extent)> {
        self.by_set
            .iter()
            .flat_map(|(&set, v)| v.iter().map(move |e| (set, e)))
    }

    /// The set left the table (converted or freed): its extents die.
    pub fn set_gone(&mut self, set: u32) {
        if let Some(v) = self.by_set.remove(&set) {
            self.live -= v.len();
            self.dead.extend(v.into_iter().map(|e| (e.disk(), e.pos)));
        }
    }

    pub fn take_dead(&mut self) -> Vec<(DiskId, LogPos)> {
        std::mem::take(&mut self.dead)
    }

    /// Whether extents died since the last `take_dead`.
    pub fn has_dead(&self) -> bool {
        !self.dead.is_empty()
    }

    /// Offloaded copies still live.
    pub fn live(&self) -> usize {
        self.live
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
            at: 0,
            count: 1,
            hdd: 9,
            pos,
            offset: pos,
        };
        o.add(4, e(0, 1, 0));
        o.add(4, e(2, 1, 4096));
        assert!(o.has(4) && !o.has(5));
        assert!(o.in_log(4, 0, 1) && o.in_log(4, 2, 1));
        assert!(!o.in_log(4, 0, 0) && !o.in_log(4, 1, 1));
        assert_eq!(o.covering(4, 2, 1, 0, 1).map(|x| x.pos), Some(4096));
        assert_eq!(o.covering(4, 2, 1, 0, 2), None, "only page 0 is in the log");
        assert!(o.overlaps(4, 2, 1, 0, 2) && !o.overlaps(4, 2, 1, 1, 3));
        assert!(o.on_failed(4, 2, |d| d == DiskId(9)));
        assert!(!o.on_failed(4, 1, |d| d == DiskId(9)) && !o.on_failed(4, 2, |d| d == DiskId(8)));
        o.set_gone(5);
        assert!(o.take_dead().is_empty());
        o.set_gone(4);
        assert!(!o.in_log(4, 0, 1));
        assert_eq!(o.take_dead(), vec![(DiskId(9), 0), (DiskId(9), 4096)]);
        assert_eq!(o.live(), 0);
    }
}
