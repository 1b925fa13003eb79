//! Stale columns: stripe columns whose blocks do not hold what their stripe says, because
//! the member under them was replaced by a blank device while the stripe still held data
//! there (a rebuild *in place*: a stripe as wide as the surviving members has no spare
//! block to rebuild into, so the replacement itself takes the rebuilt columns).
//!
//! A stale column is read like one on a failed member: reconstructed from the rest of its
//! stripe (or read from the other copy of a replica). It stops being stale when a rebuild
//! writes its reconstructed contents in place, when it is remapped to a rebuilt donor
//! column, or when its stripe is freed (a new write fills every column afresh). Each of
//! those is journaled (`Record::Restored`) so a crash never brings a stale mark back over
//! data written since; the marks themselves are in every checkpoint (docs/FORMAT.md).

use crate::fasthash::FastMap;

#[derive(Default)]
pub struct StaleColumns {
    /// Stripe -> bit mask of its stale columns (never 0).
    masks: FastMap<u32, u32>,
    /// Stale masks dropped because their stripe was freed, not yet journaled.
    freed: Vec<(u32, u32)>,
    /// Whether frees are journaled (else `freed` stays empty).
    journaled: bool,
    /// Stale columns in all (the bits of `masks`), kept as they change: status shows it.
    count: u64,
}

impl StaleColumns {
    pub fn is_empty(&self) -> bool {
        self.masks.is_empty()
    }

    /// Stale columns in all.
    pub fn columns(&self) -> u64 {
        debug_assert_eq!(
            self.count,
            self.masks
                .values()
                .map(|m| m.count_ones() as u64)
                .sum::<u64>()
        );
        self.count
    }

    /// The stale columns of `stripe` (no hashing in the usual case of none).
    pub fn mask(&self, stripe: u32) -> u32 {
        if self.masks.is_empty() {
            return 0;
        }
        self.masks.get(&stripe).copied().unwrap_or(0)
    }

    /// Keep the marks frees drop for the journal (`take_freed`).
    pub fn set_journaled(&mut self, on: bool) {
        self.journaled = on;
    }

    pub fn mark(&mut self, stripe: u32, mask: u32) {
        if mask != 0 {
            let m = self.masks.entry(stripe).or_insert(0);
            self.count += (mask & !*m).count_ones() as u64;
            *m |= mask;
        }
    }

    /// Columns `mask` of `stripe` hold their contents again. Returns the columns that were
    /// stale (0: nothing changed).
    pub fn clear(&mut self, stripe: u32, mask: u32) -> u32 {
        let Some(m) = self.masks.get_mut(&stripe) else {
            return 0;
        };
        let was = *m & mask;
        *m &= !mask;
        self.count -= was.count_ones() as u64;
        if *m == 0 {
            self.masks.remove(&stripe);
        }
        was
    }

    /// `stripe` was freed: whatever was stale there holds nothing any more.
    pub fn on_freed(&mut self, stripe: u32) {
        if let Some(m) = self.masks.remove(&stripe) {
            self.count -= m.count_ones() as u64;
            if self.journaled {
                self.freed.push((stripe, m));
            }
        }
    }

    /// The marks dropped by frees since the last call, for the journal.
    pub fn take_freed(&mut self) -> Vec<(u32, u32)> {
        std::mem::take(&mut self.freed)
    }

    /// Every stale stripe and its mask, sorted (for a checkpoint).
    pub fn sorted(&self) -> Vec<(u32, u32)> {
        let mut v: Vec<_> = self.masks.iter().map(|(&s, &m)| (s, m)).collect();
        v.sort_unstable();
        v
    }

    pub fn memory_bytes(&self) -> u64 {
        (self.masks.capacity() * 16 + self.freed.capacity() * 8) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::StaleColumns;

    #[test]
    fn marks_clear_by_column_and_by_free() {
        let mut s = StaleColumns::default();
        s.set_journaled(true);
        assert_eq!(s.mask(3), 0);
        s.mark(3, 0b0100);
        s.mark(3, 0b0001);
        s.mark(9, 0b1000);
        assert_eq!(s.mask(3), 0b0101);
        assert_eq!(s.columns(), 3);
        assert_eq!(s.clear(3, 0b0110), 0b0100);
        assert_eq!(s.mask(3), 0b0001);
        assert_eq!(s.clear(3, 0b0001), 0b0001);
        assert_eq!(s.mask(3), 0);
        assert_eq!(s.clear(3, 0b0001), 0, "nothing left to clear");
        assert_eq!(s.columns(), 1);
        s.on_freed(9);
        s.on_freed(4); // never stale: nothing to journal
        assert!(s.is_empty());
        assert_eq!(s.columns(), 0);
        assert_eq!(s.take_freed(), vec![(9, 0b1000)]);
        assert!(s.take_freed().is_empty());
    }
}
