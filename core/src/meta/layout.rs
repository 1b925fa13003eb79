//! Where metadata lives on the members.
//!
//! ```text
//! member: [0, 64K) superblock | journal ring | checkpoint slot A | checkpoint slot B | data...
//! ```
//! Journal block `seq` goes to `copies` consecutive members starting at `seq mod n`, at ring
//! slot `((seq / n) * copies + j) mod slots` on the j-th of them. Within any window of
//! `capacity()` consecutive sequence numbers no two blocks share a (member, slot), and
//! blocks `seq` and `seq + capacity()` share all of theirs: the ring is reused only by
//! sequence numbers a durable checkpoint has made obsolete (`Journal` enforces it).
//!
//! A checkpoint image is cut into chunks; chunk `i` goes to members `(i + j) mod n` for
//! `j < copies`, at position `(i / n) * copies + j` of that member's slot area.

pub use super::frame::{CHUNK_BYTES, JOURNAL_BLOCK};
use crate::types::DiskId;

/// Bytes at the start of every member that belong to the superblock (written by `create`).
pub const SUPERBLOCK_BYTES: u64 = 64 << 10;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaLayout {
    pub members: usize,
    /// Copies of every journal block and checkpoint chunk.
    pub copies: usize,
    /// Journal ring slots per member (a multiple of `copies`).
    pub ring_slots: u64,
    /// Chunk positions per checkpoint slot per member.
    pub slot_chunks: u64,
    /// Most chunks one checkpoint image may have.
    pub max_chunks: u64,
}

impl MetaLayout {
    /// A layout for `members` members keeping `copies` copies, with a journal ring of about
    /// `journal_bytes` per member and room for images of up to `max_image_bytes`.
    pub fn new(members: usize, copies: usize, journal_bytes: u64, max_image_bytes: u64) -> Self {
        assert!(members >= 1 && copies >= 1);
        let copies = copies.min(members);
        let ring = (journal_bytes / JOURNAL_BLOCK).max(4 * copies as u64);
        let ring_slots = ring / copies as u64 * copies as u64;
        let payload = CHUNK_BYTES - super::frame::CHUNK_HEADER as u64;
        let max_chunks = max_image_bytes.div_ceil(payload).max(1);
        let slot_chunks = max_chunks
            .div_ceil(members as u64)
            .saturating_mul(copies as u64);
        MetaLayout {
            members,
            copies,
            ring_slots,
            slot_chunks,
            max_chunks,
        }
    }

    pub fn journal_offset(&self) -> u64 {
        SUPERBLOCK_BYTES
    }
    pub fn journal_bytes(&self) -> u64 {
        self.ring_slots * JOURNAL_BLOCK
    }
    pub fn checkpoint_offset(&self, slot: u64) -> u64 {
        // Saturating: an absurd volume size must give an absurd (rejected) offset, not a panic.
        self.slot_chunks
            .saturating_mul(CHUNK_BYTES)
            .saturating_mul(slot)
            .saturating_add(self.journal_offset() + self.journal_bytes())
    }
    /// First byte after the metadata region: the smallest `data_offset` this layout allows.
    pub fn end(&self) -> u64 {
        self.checkpoint_offset(2)
    }
    /// Journal blocks that may be written after a checkpoint before the ring wraps onto it.
    pub fn capacity(&self) -> u64 {
        self.members as u64 * self.ring_slots / self.copies as u64
    }

    /// Where the copies of journal block `seq` go: (member, byte offset).
    pub fn journal_places(&self, seq: u64) -> impl Iterator<Item = (DiskId, u64)> + '_ {
        let n = self.members as u64;
        let r = self.copies as u64;
        (0..r).map(move |j| {
            let member = (seq + j) % n;
            let slot = ((seq / n) * r + j) % self.ring_slots;
            (
                DiskId(member as u32),
                self.journal_offset() + slot * JOURNAL_BLOCK,
            )
        })
    }

    /// Where the copies of chunk `i` of the checkpoint in `slot` (0 or 1) go.
    pub fn chunk_places(&self, slot: u64, i: u64) -> impl Iterator<Item = (DiskId, u64)> + '_ {
        assert!(i < self.max_chunks, "checkpoint chunk {i} past the layout");
        let n = self.members as u64;
        let r = self.copies as u64;
        (0..r).map(move |j| {
            let member = (i + j) % n;
            let pos = (i / n) * r + j;
            (
                DiskId(member as u32),
                self.checkpoint_offset(slot) + pos * CHUNK_BYTES,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn journal_window_never_collides_and_wraps_exactly() {
        for (n, r) in [(7, 2), (5, 3), (29, 3), (3, 3), (4, 1)] {
            let l = MetaLayout::new(n, r, 64 * JOURNAL_BLOCK, 1 << 20);
            let cap = l.capacity();
            for start in [0, 5, cap - 1, 3 * cap + 7] {
                let mut seen = HashSet::new();
                for seq in start..start + cap {
                    let places: Vec<_> = l.journal_places(seq).collect();
                    let members: HashSet<_> = places.iter().map(|p| p.0).collect();
                    assert_eq!(members.len(), r, "copies on distinct members");
                    for p in places {
                        assert!(p.1 >= l.journal_offset() && p.1 < l.checkpoint_offset(0));
                        assert!(seen.insert(p), "n={n} r={r}: {p:?} reused within a window");
                    }
                }
                let a: Vec<_> = l.journal_places(start).collect();
                let b: Vec<_> = l.journal_places(start + cap).collect();
                assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn checkpoint_chunks_fit_their_slot() {
        for (n, r) in [(7, 2), (5, 3), (29, 3), (2, 2)] {
            let l = MetaLayout::new(n, r, 1 << 20, 40 << 20);
            for slot in 0..2 {
                let mut seen = HashSet::new();
                for i in 0..l.max_chunks {
                    let members: HashSet<_> = l.chunk_places(slot, i).map(|p| p.0).collect();
                    assert_eq!(members.len(), r);
                    for (d, off) in l.chunk_places(slot, i) {
                        assert!(off >= l.checkpoint_offset(slot));
                        assert!(off + CHUNK_BYTES <= l.checkpoint_offset(slot + 1));
                        assert!(seen.insert((d, off)));
                    }
                }
            }
        }
    }
}
