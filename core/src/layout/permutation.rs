//! dRAID-style layout: declustering for any pool size through a fixed set of permutations.
//!
//! MOLS needs a prime-power pool; this layout works for any n >= k. The idea follows OpenZFS
//! dRAID (module/zfs/vdev_draid.c), which fills rows of "groups" across a permuted order of
//! the children and picks the permutation per row from a precomputed set; the details here
//! are our own.
//!
//! A template is a `k x n` grid (k rows, one column per disk) filled row-major by n stripes of
//! k blocks each: stripe j of the template takes linear positions `j*k .. (j+1)*k`. Position
//! p sits in grid column `p % n` and row `p / n`; grid column i is disk `perm_t[i]`, where
//! `perm_t` is the permutation chosen for template t. Because k <= n, k consecutive positions
//! fall in k distinct grid columns, so a stripe never uses a disk twice. Every disk holds one
//! block per row, k per template. Varying the permutation from template to template spreads
//! each disk's partners over the whole pool, which is what evens out rebuild reads.

use super::{GeometryError, Layout};
use crate::rng::Rng;
use crate::types::{DiskId, Placement};

/// How many distinct permutations a layout cycles through: template t uses `perms[t % P]`.
/// Enough to mix partners well, small enough that the tables stay a few KiB for typical pools.
pub const PERMUTATIONS: usize = 64;

#[derive(Clone)]
pub struct PermutationLayout {
    n: u64,
    k: u64,
    seed: u64,
    /// `perms[i][col]` = disk in grid column `col` under permutation i.
    perms: Vec<Vec<u32>>,
    /// `inverse[i][disk]` = grid column of `disk` under permutation i.
    inverse: Vec<Vec<u32>>,
}

impl std::fmt::Debug for PermutationLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The permutations follow from the seed; printing them would only add noise.
        f.debug_struct("PermutationLayout")
            .field("disks", &self.n)
            .field("width", &self.k)
            .field("seed", &self.seed)
            .finish()
    }
}

impl PermutationLayout {
    /// A layout for `disks` disks and stripes of `width` blocks, `2 <= width <= disks`. The
    /// permutations are a pure function of `seed`, so the same seed always gives the same
    /// placement (it must: the layout is the only record of where blocks live).
    pub fn new(disks: usize, width: usize, seed: u64) -> Result<Self, GeometryError> {
        if width < 2 {
            return Err(GeometryError::TooNarrow { width, min: 2 });
        }
        if width > disks {
            return Err(GeometryError::TooWide {
                width,
                disks,
                max: disks,
            });
        }
        if u32::try_from(disks).is_err() {
            return Err(GeometryError::Other(format!(
                "{disks} disks do not fit a DiskId"
            )));
        }
        let mut rng = Rng::new(seed);
        let mut perms = Vec::with_capacity(PERMUTATIONS);
        let mut inverse = Vec::with_capacity(PERMUTATIONS);
        for _ in 0..PERMUTATIONS {
            let mut perm: Vec<u32> = (0..disks as u32).collect();
            // Fisher-Yates: swap each position with a uniformly chosen one at or below it.
            for i in (1..disks).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                perm.swap(i, j);
            }
            let mut inv = vec![0u32; disks];
            for (col, &disk) in perm.iter().enumerate() {
                inv[disk as usize] = col as u32;
            }
            perms.push(perm);
            inverse.push(inv);
        }
        Ok(PermutationLayout {
            n: disks as u64,
            k: width as u64,
            seed,
            perms,
            inverse,
        })
    }

    fn perm_index(template: u64) -> usize {
        (template % PERMUTATIONS as u64) as usize
    }
}

impl Layout for PermutationLayout {
    fn disk_count(&self) -> usize {
        self.n as usize
    }

    fn width(&self) -> usize {
        self.k as usize
    }

    fn template_stripes(&self) -> u64 {
        self.n
    }

    fn template_blocks_per_disk(&self) -> u64 {
        self.k
    }

    fn period_templates(&self) -> u64 {
        PERMUTATIONS as u64
    }

    fn locate(&self, stripe: u64, col: usize) -> Placement {
        let col = col as u64;
        assert!(
            col < self.k,
            "column {col} out of a stripe of width {}",
            self.k
        );
        let template = stripe / self.n;
        let pos = (stripe % self.n) * self.k + col;
        let disk = self.perms[Self::perm_index(template)][(pos % self.n) as usize];
        Placement {
            disk: DiskId(disk),
            block: template * self.k + pos / self.n,
        }
    }

    fn owner(&self, disk: DiskId, block: u64) -> Option<(u64, usize)> {
        if u64::from(disk.0) >= self.n {
            return None;
        }
        let template = block / self.k;
        let row = block % self.k;
        let grid_col = u64::from(self.inverse[Self::perm_index(template)][disk.index()]);
        let pos = row * self.n + grid_col;
        let stripe = template.checked_mul(self.n)?.checked_add(pos / self.k)?;
        Some((stripe, (pos % self.k) as usize))
    }

    fn name(&self) -> &'static str {
        "permutation"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::check_layout;
    use proptest::prelude::*;

    #[test]
    fn impossible_geometries_are_rejected() {
        assert_eq!(
            PermutationLayout::new(6, 7, 1).unwrap_err(),
            GeometryError::TooWide {
                width: 7,
                disks: 6,
                max: 6
            }
        );
        assert_eq!(
            PermutationLayout::new(6, 1, 1).unwrap_err(),
            GeometryError::TooNarrow { width: 1, min: 2 }
        );
    }

    #[test]
    fn same_seed_same_layout_and_seeds_differ() {
        let a = PermutationLayout::new(30, 7, 42).unwrap();
        let b = PermutationLayout::new(30, 7, 42).unwrap();
        let c = PermutationLayout::new(30, 7, 43).unwrap();
        let place = |l: &PermutationLayout| -> Vec<Placement> {
            (0..300)
                .flat_map(|s| (0..7).map(move |col| (s, col)))
                .map(|(s, col)| l.locate(s, col))
                .collect()
        };
        assert_eq!(place(&a), place(&b));
        assert_ne!(place(&a), place(&c));
    }

    #[test]
    fn partners_spread_over_the_pool() {
        // Over all P permutations, every pair of disks of a 30-disk pool should share some
        // stripe; a fixed grouping would leave most pairs apart.
        let l = PermutationLayout::new(30, 7, 9).unwrap();
        let mut together = vec![false; 30 * 30];
        let mut ds = Vec::new();
        for s in 0..l.template_stripes() * PERMUTATIONS as u64 {
            l.stripe_disks(s, &mut ds);
            for a in &ds {
                for b in &ds {
                    together[a.index() * 30 + b.index()] = true;
                }
            }
        }
        assert!(together.iter().all(|&t| t));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn permutation_layouts_are_valid(disks in 2usize..48, kf in 0.0f64..1.0, seed: u64) {
            let width = (2 + ((disks - 2) as f64 * kf) as usize).min(disks);
            let l = PermutationLayout::new(disks, width, seed).unwrap();
            check_layout(&l, 4);
        }
    }
}
