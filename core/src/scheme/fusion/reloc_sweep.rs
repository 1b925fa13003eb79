//! The cleaner's sweep of the BMT: which RAID blocks hold whose live pages, and which
//! stripes the sweep saw whole (every owner of every live column), with their live pages.
//! `reloc_plan` turns the candidate stripes into batches.
//!
//! Why flat and sorted: the sweep sees tens of thousands of (RAID block, user block) owners.
//! Keyed maps cost several hash probes per owner (a map of blocks, a map of stripes, the
//! lookups in between) and were most of the sweep's time; here owners go into one vector in
//! sweep order, a stable radix sort on the RAID block groups each block's and each stripe's
//! owners together (a block's in sweep order, as the maps kept them), and one linear pass
//! adds up the stripes. The buffers live as long as the volume, so a sweep allocates nothing
//! once the first has sized them.

pub use super::sweep_state::{Candidate, Owner, Sweep};
use super::vol::Vol;
use crate::volume::Loc;

/// Blocks of the BMT one sweep looks at, at most.
const SWEEP_BLOCKS: u64 = 65_536;
/// Bits of the RAID block number one pass of the radix sort orders by: at least, and at
/// most (its buckets, 4 bytes each, stay within a core's second-level cache).
const MIN_DIGIT: u32 = 8;
const MAX_DIGIT: u32 = 17;

impl Sweep {
    /// Sweep the next part of `v`'s BMT (`v.sweep` is taken out meanwhile) and find the
    /// candidates holding less than `capacity` live pages (`candidates`).
    pub fn run(&mut self, v: &Vol, capacity: usize) {
        self.collect(v);
        self.sort();
        self.merge();
        self.find_candidates(v, capacity);
    }

    /// The candidates of the last sweep, fewest live pages first (ties by stripe).
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }

    /// The owners of the last sweep, sorted by RAID block.
    pub fn owners(&self) -> &[Owner] {
        &self.owners
    }

    /// The owners of every RAID block the next `SWEEP_BLOCKS` user blocks (from the cursor,
    /// wrapping) have pages in, in sweep order; blocks in a relocation are skipped.
    fn collect(&mut self, v: &Vol) {
        self.owners.clear();
        self.skip.clear();
        self.skip.extend(v.relocating.iter().copied());
        self.skip.sort_unstable();
        let n = v.blocks.min(SWEEP_BLOCKS);
        let start = self.cursor;
        let first_end = (start + n).min(v.blocks);
        self.cursor = (start + n) % v.blocks.max(1);
        let second_end = n - (first_end - start);
        self.collect_range(v, start, first_end);
        self.collect_range(v, 0, second_end);
    }

    fn collect_range(&mut self, v: &Vol, from: u64, to: u64) {
        let ppb = v.pages_per_block;
        let mut skip = self.skip.partition_point(|&u| u < from);
        for ub in from..to {
            if self.skip.get(skip) == Some(&ub) {
                skip += 1;
                continue;
            }
            let e = v.bmt.get(ub);
            if !e.patched {
                if let Loc::Raid(f) = e.base {
                    self.owners.push(Owner { f, ub, pages: ppb });
                }
                continue;
            }
            // Pages per location: the base's that no node covers (nodes never overlap),
            // then each node's. A location twice in one list gives two owners here, next
            // to each other once sorted: `merge` makes them one.
            let nodes = v.patches.get(ub);
            let covered: u16 = nodes.iter().map(|x| x.count()).sum();
            if let (Loc::Raid(f), true) = (e.base, covered < ppb) {
                self.owners.push(Owner {
                    f,
                    ub,
                    pages: ppb - covered,
                });
            }
            for x in nodes {
                if let Loc::Raid(f) = x.loc() {
                    self.owners.push(Owner {
                        f,
                        ub,
                        pages: x.count(),
                    });
                }
            }
        }
    }

    /// Stable LSD radix sort of the owners by RAID block: as few passes as the largest
    /// block number needs, with digits of up to about as many bits as the owners' count
    /// has (a pass costs its owners plus its digit's buckets).
    fn sort(&mut self) {
        let max = self.owners.iter().map(|o| o.f).max().unwrap_or(0);
        let bits = u64::BITS - max.leading_zeros();
        let widest = (usize::BITS - self.owners.len().leading_zeros()).clamp(MIN_DIGIT, MAX_DIGIT);
        let passes = bits.div_ceil(widest);
        if passes == 0 {
            return;
        }
        let digit = bits.div_ceil(passes);
        let mask = (1u64 << digit) - 1;
        self.scratch.resize(self.owners.len(), Owner::default());
        for p in 0..passes {
            let shift = p * digit;
            self.counts.clear();
            self.counts.resize(1 << digit, 0);
            for o in &self.owners {
                self.counts[((o.f >> shift) & mask) as usize] += 1;
            }
            let mut at = 0;
            for c in self.counts.iter_mut() {
                (*c, at) = (at, at + *c);
            }
            for o in &self.owners {
                let d = ((o.f >> shift) & mask) as usize;
                self.scratch[self.counts[d] as usize] = *o;
                self.counts[d] += 1;
            }
            std::mem::swap(&mut self.owners, &mut self.scratch);
        }
    }

    /// One owner per (RAID block, user block): after the sort, a block's pages in one
    /// location are next to each other (the owners of one user block were pushed together,
    /// and the sort is stable), in the place of the first.
    fn merge(&mut self) {
        self.owners.dedup_by(|o, kept| {
            let same = o.f == kept.f && o.ub == kept.ub;
            if same {
                kept.pages += o.pages;
            }
            same
        });
    }

    /// Stripes whose every owner the sweep saw (each seen block has as many owners as it
    /// has references) and whose every valid data column it saw, with fewer than
    /// `capacity` live pages; fewest live first, ties by stripe.
    fn find_candidates(&mut self, v: &Vol, capacity: usize) {
        self.scratch_candidates.clear();
        let data_cols = (1u32 << v.zone.dcols()) - 1;
        let extra = !v.raid_extra.is_empty();
        let owners = &self.owners;
        let mut i = 0;
        while i < owners.len() {
            let (s, _) = v.zone.split(owners[i].f);
            let first = i;
            let (mut live, mut cols, mut incomplete) = (0usize, 0u32, false);
            // One RAID block of stripe `s` per round.
            while i < owners.len() {
                let f = owners[i].f;
                let (fs, c) = v.zone.split(f);
                if fs != s {
                    break;
                }
                let at = i;
                while i < owners.len() && owners[i].f == f {
                    live += owners[i].pages as usize;
                    i += 1;
                }
                let refs = 1 + if extra {
                    v.raid_extra.get(&f).copied().unwrap_or(0) as usize
                } else {
                    0
                };
                cols |= 1 << c;
                incomplete |= i - at != refs;
            }
            // A row stripe still taking rows is not a victim (rows_state.rs).
            if live < capacity
                && !incomplete
                && v.stripes.valid(s) & data_cols & !cols == 0
                && !v.rows.protects(s)
            {
                self.scratch_candidates.push(Candidate {
                    live,
                    stripe: s,
                    first,
                    end: i,
                });
            }
        }
        // By live pages, a counting sort: stable, and the stripes came in ascending order.
        self.counts.clear();
        self.counts.resize(capacity + 1, 0);
        for c in &self.scratch_candidates {
            self.counts[c.live + 1] += 1;
        }
        for l in 1..self.counts.len() {
            self.counts[l] += self.counts[l - 1];
        }
        self.candidates.clear();
        self.candidates.resize(self.scratch_candidates.len(), EMPTY);
        for c in &self.scratch_candidates {
            let at = &mut self.counts[c.live];
            self.candidates[*at as usize] = *c;
            *at += 1;
        }
    }
}

const EMPTY: Candidate = Candidate {
    live: 0,
    stripe: 0,
    first: 0,
    end: 0,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// The radix sort orders by RAID block and keeps each block's owners in sweep order,
    /// as a stable comparison sort does, for block numbers of any width.
    #[test]
    fn radix_sort_is_a_stable_sort_by_block() {
        let mut rng = Rng::new(7);
        for bits in [1u32, 5, 11, 12, 23, 38] {
            let owners = (0..5_000u64)
                .map(|ub| Owner {
                    // Few distinct blocks (so many owners share one), spread over the width.
                    f: rng.below(300.min(1 << bits)) << bits.saturating_sub(9),
                    ub,
                    pages: (ub % 16) as u16 + 1,
                })
                .collect();
            let mut sw = Sweep {
                owners,
                ..Default::default()
            };
            let mut want = sw.owners.clone();
            want.sort_by_key(|o| o.f);
            sw.sort();
            assert_eq!(sw.owners, want, "block numbers of {bits} bits");
        }
    }

    /// A user block's pages in one RAID block (its base's and a node's, or two nodes')
    /// become one owner; another user block's in the same RAID block stays apart.
    #[test]
    fn merge_joins_one_blocks_pages_per_location() {
        let o = |f, ub, pages| Owner { f, ub, pages };
        let mut sw = Sweep {
            owners: vec![o(3, 1, 2), o(4, 1, 1), o(3, 1, 4), o(3, 2, 5), o(4, 2, 1)],
            ..Default::default()
        };
        sw.sort();
        sw.merge();
        assert_eq!(
            sw.owners,
            vec![o(3, 1, 6), o(3, 2, 5), o(4, 1, 1), o(4, 2, 1)]
        );
    }
}
