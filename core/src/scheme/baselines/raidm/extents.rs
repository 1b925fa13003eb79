//! Where each mirror unit of a steered log sits: its two chunks are placed when the unit opens,
//! on members chosen then (by weight, among the write set), instead of at fixed neighbouring
//! positions; the chunks go back to their members' free lists when the unit is freed.
//!
//! Free space must stay usable: a unit needs free chunks on two distinct members, so no member
//! may hold more than half of all free chunks. Every placement takes a chunk from each member
//! at that bound (at most two), which keeps it: taking one chunk from the largest holder and
//! one elsewhere never raises a share above half, and freeing a unit adds one chunk on each of
//! two members. Without this, weighted placement could leave the free space on one member and
//! the cleaner with nowhere to put a victim's pages.

pub struct Extents {
    rows: u64,
    /// Free rows per member (index within the group), taken from the back.
    free: Vec<Vec<u32>>,
    /// Each unit's (member, row) per copy; None while free.
    at: Vec<Option<[(u32, u32); 2]>>,
}

impl Extents {
    /// `members` members of `rows` rows each, for `units` mirror units (at most half the rows).
    pub fn new(members: usize, rows: u64, units: u32) -> Self {
        assert!(
            units as u64 * 2 <= members as u64 * rows,
            "{units} mirror units do not fit {members} members of {rows} rows"
        );
        Extents {
            rows,
            free: (0..members)
                .map(|_| (0..rows as u32).rev().collect())
                .collect(),
            at: vec![None; units as usize],
        }
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn free_rows(&self, member: usize) -> usize {
        self.free[member].len()
    }

    /// Members a placement must use so free space stays usable: those holding at least half
    /// of the free chunks of the `usable` members (two at most).
    pub fn must_use(&self, usable: impl Fn(usize) -> bool) -> Vec<usize> {
        let total: usize = (0..self.free.len())
            .filter(|&m| usable(m))
            .map(|m| self.free[m].len())
            .sum();
        let mut tight: Vec<usize> = (0..self.free.len())
            .filter(|&m| usable(m) && !self.free[m].is_empty() && 2 * self.free[m].len() >= total)
            .collect();
        tight.truncate(2);
        tight
    }

    /// How many units the free chunks can still take, placed as [`Extents::must_use`] and
    /// the scheme's fallback do: pairs of `healthy` members first (the largest holder pairs
    /// only with the others), then what is left on one healthy member beside a chunk of a
    /// failed one (a unit written with one copy, as when too few members are left).
    pub fn placeable(&self, healthy: impl Fn(usize) -> bool) -> usize {
        let (mut total, mut max, mut failed) = (0, 0, 0);
        for (m, f) in self.free.iter().enumerate() {
            if healthy(m) {
                total += f.len();
                max = max.max(f.len());
            } else {
                failed += f.len();
            }
        }
        let pairs = (total / 2).min(total - max);
        pairs + (total - 2 * pairs).min(failed)
    }

    /// Give unit `mu` a chunk on member `a` (copy 0) and on member `b` (copy 1).
    pub fn place(&mut self, mu: u32, a: usize, b: usize) {
        assert_ne!(a, b, "both copies of a unit on one member");
        assert!(self.at[mu as usize].is_none(), "unit {mu} placed twice");
        let ra = self.free[a].pop().expect("free row on the first member");
        let rb = self.free[b].pop().expect("free row on the second member");
        self.at[mu as usize] = Some([(a as u32, ra), (b as u32, rb)]);
    }

    /// Unit `mu` was freed: its chunks are free again (none for a unit given up before it
    /// was placed).
    pub fn release(&mut self, mu: u32) {
        let Some(at) = self.at[mu as usize].take() else {
            return;
        };
        for (m, row) in at {
            self.free[m as usize].push(row);
        }
    }

    /// Member (within the group) and row of copy `copy` of unit `mu`.
    pub fn locate(&self, mu: u32, copy: u8) -> (usize, u64) {
        let (m, row) = self.at[mu as usize].expect("unit placed")[copy as usize];
        (m as usize, row as u64)
    }

    pub fn members_of(&self, mu: u32) -> Option<[usize; 2]> {
        self.at[mu as usize].map(|a| [a[0].0 as usize, a[1].0 as usize])
    }

    /// Every row is free or held by exactly one placed unit.
    pub fn check(&self, rows: u64) {
        let mut seen = vec![vec![false; rows as usize]; self.free.len()];
        let placed = self.at.iter().flatten().flat_map(|a| a.iter().copied());
        for (m, row) in self
            .free
            .iter()
            .enumerate()
            .flat_map(|(m, f)| f.iter().map(move |&r| (m as u32, r)))
            .chain(placed)
        {
            let slot = &mut seen[m as usize][row as usize];
            assert!(!*slot, "row {row} of member {m} used twice");
            *slot = true;
        }
        assert!(
            seen.iter().flatten().all(|&s| s),
            "a row is neither free nor placed"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// Random placements that honour `must_use`, and random frees, never leave free space
    /// that cannot take a unit while at least two chunks are free.
    #[test]
    fn free_space_stays_usable_under_skewed_placement() {
        let (members, rows) = (5usize, 40u64);
        let units = (members as u64 * rows / 2) as u32;
        let mut e = Extents::new(members, rows, units);
        let mut r = Rng::new(3);
        let mut placed: Vec<u32> = Vec::new();
        let mut next_free: Vec<u32> = (0..units).collect();
        for _ in 0..20_000 {
            let total: usize = (0..members).map(|m| e.free_rows(m)).sum();
            if total >= 2 && (r.below(3) != 0 || placed.is_empty()) {
                let mut pick = e.must_use(|_| true);
                // Otherwise strongly prefer member 0, as a skewed weight would.
                while pick.len() < 2 {
                    let cand: Vec<usize> = (0..members)
                        .filter(|&m| e.free_rows(m) > 0 && !pick.contains(&m))
                        .collect();
                    assert!(!cand.is_empty(), "free chunks on one member only: {total}");
                    let m = if cand.contains(&0) && r.below(10) < 8 {
                        0
                    } else {
                        cand[r.below(cand.len() as u64) as usize]
                    };
                    pick.push(m);
                }
                let mu = next_free.pop().unwrap();
                e.place(mu, pick[0], pick[1]);
                placed.push(mu);
            } else if !placed.is_empty() {
                let mu = placed.swap_remove(r.below(placed.len() as u64) as usize);
                e.release(mu);
                next_free.push(mu);
            }
        }
        e.check(rows);
    }
}
