//! A volume's pages known lost and blocks waiting for repair: what a checksum mismatch
//! leaves behind until a repair writes the block again (`relocate.rs`, `start_repair`).

use super::pack::Pages;
use super::vol::{MAX_REPAIR, Vol};
use crate::types::PAGE_SIZE;
use crate::volume::patch::segments;
use crate::volume::{Loc, PageSums};

impl Vol {
    /// Of `owners` (blocks with data in `loc`), those whose pages there do not match their
    /// checksums in `data`, the block at `loc` as a device returned it.
    pub fn bad_owners(&self, owners: &[u64], loc: Loc, data: &[u8]) -> Vec<u64> {
        let mut bad = Vec::new();
        if !self.sums.active() {
            return bad;
        }
        let page = PAGE_SIZE as usize;
        for &ub in owners {
            let e = self.bmt.get(ub);
            let segs = segments(e.base, self.patches.get(ub), 0, self.pages_per_block);
            let wrong = segs.iter().any(|g| {
                let at = g.at as usize * page;
                g.loc == loc
                    && self.sums.slice(ub, g.first, g.count).is_some_and(|expect| {
                        PageSums::first_mismatch(expect, &data[at..at + g.count as usize * page])
                            .is_some()
                    })
            });
            if wrong {
                bad.push(ub);
            }
        }
        bad
    }

    /// Queue `ub` for repair (a copy of its data failed its checksum).
    /// Pages `[first, first+count)` of `ub` have no good copy left.
    pub fn mark_lost(&mut self, ub: u64, first: u16, count: u16) {
        self.lost
            .entry(ub)
            .or_default()
            .add(&Pages::range(first, count));
    }

    /// Pages `[first, first+count)` of `ub` hold new data (or none): no longer lost.
    pub(super) fn unmark_lost(&mut self, ub: u64, first: u16, count: u16) {
        if self.lost.is_empty() {
            return; // the common case: nothing was ever lost
        }
        if let Some(p) = self.lost.get_mut(&ub) {
            p.remove(&Pages::range(first, count));
            if p.is_empty() {
                self.lost.remove(&ub);
            }
        }
    }

    /// Clear the expected checksums (`expect`, of pages from `first` on) of `ub`'s pages
    /// known lost, so a check passes over them; returns how many it cleared.
    pub fn skip_lost(&self, ub: u64, first: u16, expect: &mut [u32]) -> u64 {
        let Some(p) = self.lost.get(&ub) else {
            return 0;
        };
        let mut n = 0;
        for (i, e) in expect.iter_mut().enumerate() {
            if p.contains(first + i as u16) && *e != 0 {
                *e = 0;
                n += 1;
            }
        }
        n
    }

    pub fn queue_repair(&mut self, ub: u64) {
        if self.repair.len() < MAX_REPAIR && !self.repair.contains(&ub) {
            self.repair.push(ub);
        }
    }
}
