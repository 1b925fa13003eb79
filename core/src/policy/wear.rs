//! Wear-aware placement: members of one array, written evenly, wear out together, and a
//! second failure during the first one's rebuild is then likely (the Pitfalls study's
//! third pitfall; Differential RAID, Balakrishnan et al., EuroSys 2010, skews writes on
//! purpose so the drives' ages stay apart). A [`WearLadder`] keeps the members' wear on a
//! ladder: sorted from most to least worn, each member should trail the one ahead of it by
//! at least `gap` of its rated life. A member closer than that to the one ahead is *held
//! back* (a quarter of the pool at most, the least worn first): new pair sets and cleaning
//! moves prefer stripes without it, so it takes fewer replica writes, less of the parity
//! written when they convert and fewer moved pages, and falls back down the ladder. The
//! most worn member is never held back: it is the one meant to wear out first.
//!
//! Holding back only ranks the candidate stripes of a new pair set and picks a cleaning
//! target off held-back members when a spare one is (soft preferences): it never keeps a
//! write off a member, so it cannot make a write fail or wait. Keeping new data off
//! held-back members outright (as off a member in a latency spike) wore them at
//! half the pace, but left their replica slots and free stripes unused: the cleaner fell
//! behind and writes waited for room (P99 over a second on 8 `dc` members at 20K 4 KiB
//! writes/s, docs/EVALUATION.md "Wear-aware placement").

use super::placement::WritePlacement;
use crate::engine::members::Members;
use crate::types::{DiskId, Nanos};
use std::cell::Cell;

/// Which members to hold back so their wear spreads out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WearLadder {
    /// Share of rated life (0.05 = 5%) each member should trail the one ahead of it by.
    pub gap: f64,
    /// Members held back at once, at most: holding back many members concentrates the
    /// writes on the others (their latency), so a quarter of the pool by default.
    pub max_held: usize,
    /// Members off the ladder (bit `d`): a hybrid pool's HDDs, which hold no stripes and
    /// report no wear. Counted in, their unknown wear kept the ladder from holding anyone
    /// back, so wear-aware placement did nothing in a pool with HDD members.
    pub outside: u64,
}

impl WearLadder {
    pub fn new(gap: f64, members: usize) -> Self {
        WearLadder {
            gap,
            max_held: (members / 4).max(1),
            outside: 0,
        }
    }

    /// The ladder of a pool of `members` whose members `hdds` (indices) hold no stripes:
    /// only the others are ranked, and a quarter of them held back at most.
    pub fn for_pool(gap: f64, members: usize, hdds: &[u32]) -> Self {
        let outside = hdds
            .iter()
            .filter(|&&d| d < 64)
            .fold(0u64, |set, &d| set | 1 << d);
        WearLadder {
            outside,
            ..WearLadder::new(gap, members.saturating_sub(hdds.len()))
        }
    }

    /// Whether member `d` is on the ladder (not one of [`WearLadder::outside`]).
    pub fn ranks(&self, d: usize) -> bool {
        d < 64 && self.outside >> d & 1 == 0
    }

    /// The members held back now, as a bit set (bit `d`), from their reported wear; none
    /// while any healthy member's wear is unknown (the ladder needs them all).
    pub fn held_back(&self, m: &Members) -> u64 {
        let n = m.count().min(64);
        let healthy: Vec<(usize, Option<f64>)> = (0..n)
            .filter(|&d| !m.failed(DiskId(d as u32)))
            .map(|d| (d, m.wear(DiskId(d as u32))))
            .collect();
        self.held_back_of(&healthy)
    }

    /// [`WearLadder::held_back`] for members `(index < 64, wear)`; members outside the
    /// ladder are passed over.
    pub fn held_back_of(&self, members: &[(usize, Option<f64>)]) -> u64 {
        // Wear in steps of a quarter gap: members whose wear differs by less count as
        // equal and keep their order by index, so the members held back do not change with
        // every write while the pool is young (all within one gap of each other).
        let step = self.gap / 4.0;
        let mut order: Vec<(u64, usize)> = Vec::with_capacity(members.len());
        for &(d, w) in members.iter().filter(|(d, _)| self.ranks(*d)) {
            match w {
                Some(w) => order.push(((w / step) as u64, d)),
                None => return 0,
            }
        }
        // Most worn first; among equals the lower index leads.
        order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        // Followers short of the gap behind the one ahead, held back from the least worn
        // up: the ladder is built from its bottom rung, each member held until it has its
        // gap (holding the largest shortfalls instead moved the hold around the pack every
        // quarter gap, and the pack wore out together).
        order
            .windows(2)
            .rev()
            .filter(|w| w[0].0 - w[1].0 < 4)
            .take(self.max_held)
            .fold(0u64, |set, w| set | 1 << w[1].1)
    }
}

/// A placement policy with a [`WearLadder`] on top: its steering as is, its pair-set cost
/// raised for every column on a held-back member, and held-back members ones it would
/// rather not write.
pub struct WearSkewed {
    pub inner: Box<dyn WritePlacement>,
    pub ladder: WearLadder,
    /// The held-back set and when it was worked out: asked about every member a write
    /// considers, it is recomputed at most every [`HELD_REFRESH_NS`].
    cache: Cell<Option<(Nanos, u64)>>,
}

/// How long a held-back set stays good: wear moves by far less than a quarter gap in it.
const HELD_REFRESH_NS: Nanos = 10_000_000;

impl WearSkewed {
    pub fn new(inner: Box<dyn WritePlacement>, ladder: WearLadder) -> Self {
        WearSkewed {
            inner,
            ladder,
            cache: Cell::new(None),
        }
    }

    fn held(&self, m: &Members) -> u64 {
        let now = m.now();
        match self.cache.get() {
            Some((at, set)) if now >= at && now - at < HELD_REFRESH_NS => set,
            _ => {
                let set = self.ladder.held_back(m);
                self.cache.set(Some((now, set)));
                set
            }
        }
    }
}

/// What one column on a held-back member adds to a pair set's cost: more than any count
/// of shared members (at most 32 columns x 3 copies), so it ranks first.
const HELD_BACK_COLUMN: usize = 128;

impl WritePlacement for WearSkewed {
    fn name(&self) -> &'static str {
        "wear-ladder"
    }
    fn steer_clear(&self, m: &Members, d: DiskId) -> bool {
        self.inner.steer_clear(m, d)
    }
    fn steers(&self) -> bool {
        self.inner.steers()
    }
    fn rather_not(&self, m: &Members, d: DiskId) -> bool {
        self.inner.rather_not(m, d) || self.held(m) >> d.index() & 1 == 1
    }
    fn has_preferences(&self) -> bool {
        true
    }
    /// Twice the inner policy's draws (up to 8): with four, a pair set avoided held-back
    /// members only about as often as four random stripes happen to.
    fn candidates(&self) -> usize {
        self.inner.candidates() * 2
    }
    fn pair_set_cost(&self, m: &Members, stripes: &[&[DiskId]], dcols: usize) -> usize {
        let held = self.held(m);
        let on_held: usize = stripes
            .iter()
            .map(|s| s.iter().filter(|d| held >> d.index() & 1 == 1).count())
            .sum();
        self.inner.pair_set_cost(m, stripes, dcols) + on_held * HELD_BACK_COLUMN
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detector::DetectorConfig;
    use crate::engine::disks::Disks;

    fn disks(wear: &[Option<f64>]) -> Disks {
        let mut d = Disks::new(wear.len(), DetectorConfig::paper_dc(), 0);
        for (i, &w) in wear.iter().enumerate() {
            d.get_mut(DiskId(i as u32)).wear = w;
        }
        d
    }

    fn held(wear: &[Option<f64>], gap: f64) -> Vec<usize> {
        let d = disks(wear);
        let set = WearLadder::new(gap, wear.len()).held_back(&Members::new(&d, 0));
        (0..wear.len()).filter(|i| set >> i & 1 == 1).collect()
    }

    #[test]
    fn a_new_pool_holds_back_its_last_members() {
        // Equal wear: member 0 leads, every other trails it by nothing; a quarter of the
        // pool (the least worn, the highest indices among equals) is held back.
        assert_eq!(held(&[Some(0.0); 8], 0.05), vec![6, 7]);
        assert_eq!(held(&[Some(0.2); 3], 0.05), vec![2]);
    }

    /// A hybrid pool's HDDs report no wear: counted in, they kept the ladder from holding
    /// any SSD back (wear-aware placement silently off in every pool with HDD members).
    #[test]
    fn hdd_members_stay_off_the_ladder() {
        let mut wear = vec![Some(0.0); 8];
        wear.extend([None, None]);
        let d = disks(&wear);
        let m = Members::new(&d, 0);
        assert_eq!(WearLadder::new(0.05, 10).held_back(&m), 0);
        let ladder = WearLadder::for_pool(0.05, 10, &[8, 9]);
        let held: Vec<usize> = (0..10)
            .filter(|i| ladder.held_back(&m) >> i & 1 == 1)
            .collect();
        // As in an all-SSD pool of 8: the two least worn (highest indices) SSDs.
        assert_eq!(held, vec![6, 7]);
        assert!(ladder.ranks(7) && !ladder.ranks(8));
    }

    #[test]
    fn a_spaced_ladder_holds_back_nobody() {
        let w: Vec<Option<f64>> = (0..8).map(|i| Some(0.5 - 0.06 * i as f64)).collect();
        assert!(held(&w, 0.05).is_empty());
    }

    #[test]
    fn the_members_closest_behind_the_one_ahead_are_held_back() {
        // Ladder: 3 (0.40), 0 (0.39), 1 (0.301), 2 (0.28), then 4..7 spaced 0.1 below.
        let w = [
            Some(0.39),
            Some(0.301),
            Some(0.28),
            Some(0.40),
            Some(0.18),
            Some(0.08),
            Some(0.0),
            Some(0.0),
        ];
        // Short of the gap: member 0 (trails 3 by 0.01), 2 (trails 1 by 0.02) and 7
        // (trails 6 by 0); two may be held, the least worn first.
        assert_eq!(held(&w, 0.05), vec![2, 7]);
        // The most worn member (3) is never held back, however close the next one is.
        assert!(!held(&w, 0.5).contains(&3));
    }

    #[test]
    fn unknown_wear_turns_the_ladder_off() {
        let mut w = [Some(0.0); 8];
        w[4] = None;
        assert!(held(&w, 0.05).is_empty());
    }
}
