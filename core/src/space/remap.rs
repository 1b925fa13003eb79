//! Column remapping: the distributed spare space a rebuild writes into (OpenZFS dRAID's
//! idea, with spare blocks taken from free stripes instead of reserved at creation).
//!
//! When a member fails, every RAID stripe with a column there gets that column rebuilt
//! from the survivors into a *donor block*: one column of a free stripe (the *donor
//! stripe*) that sits on a healthy member the stripe does not already use. The zone then
//! answers the donor block's place for that column ([`Zone::disk`], `device_offset`), so
//! the stripe is whole again on survivors only. The rebuild needs one free block per lost
//! block, where moving whole blocks into fresh stripes that avoid the failed member needs
//! about `w / (n - w)` times the data.
//!
//! A donor stripe lends its columns one by one; it is never used as a stripe while it lends
//! any. Once the failed member's slot holds a new device, each remapped column is copied
//! back to its home block and the remap dropped (rebalance); a donor stripe with nothing
//! lent any more becomes free again.
//!
//! [`Zone::disk`]: super::Zone::disk

use crate::fasthash::FastMap;

/// Column `col` of a stripe lives in column `dcol` of donor stripe `donor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    pub col: u8,
    pub donor: u32,
    pub dcol: u8,
}

#[derive(Debug, Default)]
pub struct Remaps {
    /// Remapped stripe -> its moved columns (at most the parity count each).
    by_stripe: FastMap<u32, Vec<Moved>>,
    /// Donor stripe -> mask of its columns lent out (reserved by a rebuild in flight, or
    /// holding a remapped column).
    lent: FastMap<u32, u32>,
    count: usize,
}

impl Remaps {
    /// No column is remapped (donor columns may still be reserved).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Remapped columns in the zone.
    pub fn len(&self) -> usize {
        self.count
    }

    #[inline]
    pub fn get(&self, stripe: u32, col: usize) -> Option<Moved> {
        self.by_stripe
            .get(&stripe)?
            .iter()
            .find(|m| m.col as usize == col)
            .copied()
    }
    pub fn has(&self, stripe: u32) -> bool {
        self.by_stripe.contains_key(&stripe)
    }
    /// Columns of donor stripe `s` lent out (0: not a donor).
    pub fn lent(&self, s: u32) -> u32 {
        self.lent.get(&s).copied().unwrap_or(0)
    }

    /// Reserve column `dcol` of `donor` for a rebuild about to write there.
    pub fn lend(&mut self, donor: u32, dcol: usize) {
        assert!(
            !self.by_stripe.contains_key(&donor),
            "stripe {donor} is remapped itself and can not lend a column"
        );
        let m = self.lent.entry(donor).or_insert(0);
        assert!(*m & (1 << dcol) == 0, "column {dcol} of {donor} lent twice");
        *m |= 1 << dcol;
    }

    /// Give back a reserved or freed donor column. Returns true when the donor lends nothing
    /// any more (it may be used as a stripe again).
    pub fn unlend(&mut self, donor: u32, dcol: usize) -> bool {
        let m = self
            .lent
            .get_mut(&donor)
            .expect("unlend of a stripe that lends nothing");
        assert!(*m & (1 << dcol) != 0, "column {dcol} of {donor} not lent");
        *m &= !(1 << dcol);
        if *m == 0 {
            self.lent.remove(&donor);
            return true;
        }
        false
    }

    /// Point column `col` of `stripe` at a donor column already lent to it.
    pub fn install(&mut self, stripe: u32, m: Moved) {
        assert!(
            self.lent(m.donor) & (1 << m.dcol) != 0,
            "remap into donor column {}/{} that was not lent",
            m.donor,
            m.dcol
        );
        assert!(
            !self.lent.contains_key(&stripe),
            "donor stripe {stripe} can not be remapped"
        );
        let v = self.by_stripe.entry(stripe).or_default();
        assert!(
            v.iter().all(|x| x.col != m.col),
            "column {} of stripe {stripe} remapped twice",
            m.col
        );
        v.push(m);
        self.count += 1;
    }

    /// Drop the remap of column `col` of `stripe` (its home block holds the data again, or
    /// the stripe holds nothing). The donor column stays lent: the caller unlends it once
    /// that is safe.
    pub fn remove(&mut self, stripe: u32, col: usize) -> Moved {
        let v = self
            .by_stripe
            .get_mut(&stripe)
            .expect("remove of a stripe that is not remapped");
        let i = v
            .iter()
            .position(|m| m.col as usize == col)
            .expect("remove of a column that is not remapped");
        let m = v.swap_remove(i);
        if v.is_empty() {
            self.by_stripe.remove(&stripe);
        }
        self.count -= 1;
        m
    }

    /// Every remap, sorted by (stripe, column): for checkpoints and status.
    pub fn sorted(&self) -> Vec<(u32, Moved)> {
        let mut out: Vec<(u32, Moved)> = self
            .by_stripe
            .iter()
            .flat_map(|(&s, v)| v.iter().map(move |&m| (s, m)))
            .collect();
        out.sort_by_key(|&(s, m)| (s, m.col));
        out
    }

    pub fn memory_bytes(&self) -> u64 {
        (self.by_stripe.len() * 48 + self.count * 12 + self.lent.len() * 16) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lend_install_remove_unlend() {
        let mut r = Remaps::default();
        assert!(r.is_empty());
        r.lend(9, 2);
        r.lend(9, 4);
        assert_eq!(r.lent(9), 0b10100);
        r.install(
            3,
            Moved {
                col: 1,
                donor: 9,
                dcol: 2,
            },
        );
        assert_eq!(
            r.get(3, 1),
            Some(Moved {
                col: 1,
                donor: 9,
                dcol: 2
            })
        );
        assert_eq!(r.get(3, 0), None);
        assert_eq!(r.len(), 1);
        // The second reservation was never used.
        assert!(!r.unlend(9, 4));
        let m = r.remove(3, 1);
        assert!(!r.has(3));
        assert!(r.unlend(m.donor, m.dcol as usize));
        assert!(r.is_empty() && r.lent(9) == 0);
    }

    #[test]
    #[should_panic(expected = "not lent")]
    fn installing_an_unreserved_column_is_refused() {
        let mut r = Remaps::default();
        r.install(
            3,
            Moved {
                col: 1,
                donor: 9,
                dcol: 2,
            },
        );
    }

    #[test]
    #[should_panic(expected = "can not lend")]
    fn a_remapped_stripe_lends_nothing() {
        let mut r = Remaps::default();
        r.lend(9, 2);
        r.install(
            3,
            Moved {
                col: 1,
                donor: 9,
                dcol: 2,
            },
        );
        r.lend(3, 0);
    }
}
