//! RAID+ layout: stripes placed by mutually orthogonal Latin squares (MOLS).
//!
//! Reference: Zhang et al., "RAID+: Deterministic and Balanced Data Distribution for Large
//! Disk Enclosures" (FAST'18), used by FusionRAID (FAST'21, §4.1) as its declustering function.
//!
//! For a pool of n disks, n a prime power, and m a nonzero element of GF(n), the square
//! `L_m[x][y] = m*x + y` is a Latin square over the disks, and squares with distinct m are
//! mutually orthogonal. A stripe of width k is a cell (x, y): its column c (0-based) is on disk
//! `L_{c+1}[x][y]`, where the field element numbered c+1 stands in for m. We skip row x = 0,
//! where every square holds y and the stripe would use one disk k times, so a template holds
//! n(n-1) stripes. Orthogonality then gives the two properties that make rebuild even: every
//! disk holds k(n-1) blocks per template, and every pair of disks shares exactly k(k-1)
//! stripes per template.

use super::gf::GaloisField;
use super::{GeometryError, Layout};
use crate::types::{DiskId, Placement};

#[derive(Debug, Clone)]
pub struct MolsLayout {
    field: GaloisField,
    n: u64,
    k: u64,
}

impl MolsLayout {
    /// A layout for `disks` disks (a prime power) and stripes of `width` blocks,
    /// `2 <= width <= disks - 1` (there are only n-1 nonzero multipliers m).
    pub fn new(disks: usize, width: usize) -> Result<Self, GeometryError> {
        if width < 2 {
            return Err(GeometryError::TooNarrow { width, min: 2 });
        }
        let field = GaloisField::new(disks)?;
        if width > disks - 1 {
            return Err(GeometryError::TooWide {
                width,
                disks,
                max: disks - 1,
            });
        }
        Ok(MolsLayout {
            field,
            n: disks as u64,
            k: width as u64,
        })
    }

    /// The multiplier of column `col`: the field element numbered `col + 1`, never zero.
    fn multiplier(col: u64) -> u32 {
        (col + 1) as u32
    }
}

impl Layout for MolsLayout {
    fn disk_count(&self) -> usize {
        self.n as usize
    }

    fn width(&self) -> usize {
        self.k as usize
    }

    fn template_stripes(&self) -> u64 {
        self.n * (self.n - 1)
    }

    fn template_blocks_per_disk(&self) -> u64 {
        self.k * (self.n - 1)
    }

    fn locate(&self, stripe: u64, col: usize) -> Placement {
        let col = col as u64;
        assert!(
            col < self.k,
            "column {col} out of a stripe of width {}",
            self.k
        );
        let template = stripe / self.template_stripes();
        let i = stripe % self.template_stripes();
        let x = 1 + i / self.n;
        let y = i % self.n;
        let f = &self.field;
        let disk = f.add(f.mul(Self::multiplier(col), x as u32), y as u32);
        // On a given disk, column c and row x fix y (y = d - m x), so (c, x) numbers the
        // template's blocks on that disk densely: c(n-1) + (x-1) ranges over 0..k(n-1).
        let offset = col * (self.n - 1) + (x - 1);
        Placement {
            disk: DiskId(disk),
            block: template * self.template_blocks_per_disk() + offset,
        }
    }

    fn owner(&self, disk: DiskId, block: u64) -> Option<(u64, usize)> {
        if u64::from(disk.0) >= self.n {
            return None;
        }
        let per_disk = self.template_blocks_per_disk();
        let template = block / per_disk;
        let offset = block % per_disk;
        let col = offset / (self.n - 1);
        let x = 1 + offset % (self.n - 1);
        let f = &self.field;
        let y = f.sub(disk.0, f.mul(Self::multiplier(col), x as u32));
        let stripe = template
            .checked_mul(self.template_stripes())?
            .checked_add((x - 1) * self.n + u64::from(y))?;
        Some((stripe, col as usize))
    }

    fn name(&self) -> &'static str {
        "mols"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::check_layout;
    use proptest::prelude::*;

    const POOLS: [usize; 14] = [4, 5, 7, 8, 9, 11, 13, 16, 25, 27, 29, 31, 32, 49];

    #[test]
    fn impossible_geometries_are_rejected() {
        assert_eq!(
            MolsLayout::new(29, 1).unwrap_err(),
            GeometryError::TooNarrow { width: 1, min: 2 }
        );
        assert_eq!(
            MolsLayout::new(29, 29).unwrap_err(),
            GeometryError::TooWide {
                width: 29,
                disks: 29,
                max: 28
            }
        );
        for n in [0, 1, 6, 10, 12, 30] {
            assert_eq!(
                MolsLayout::new(n, 2).unwrap_err(),
                GeometryError::NotPrimePower { disks: n }
            );
        }
    }

    #[test]
    fn paper_pool_of_29_with_6_plus_1() {
        let l = MolsLayout::new(29, 7).unwrap();
        assert_eq!(l.template_stripes(), 29 * 28);
        assert_eq!(l.template_blocks_per_disk(), 7 * 28);
        check_layout(&l, 2);
        check_pairs(&l);
    }

    #[test]
    fn prime_stripe_matches_integer_formula() {
        // For prime n the field is the integers mod n, so the squares are (m x + y) mod n.
        let l = MolsLayout::new(7, 3).unwrap();
        let stripe = 2 * 7 + 4; // x = 3, y = 4
        let disks: Vec<u32> = (0..3).map(|c| l.locate(stripe, c).disk.0).collect();
        assert_eq!(disks, vec![0, 3, 6]);
    }

    #[test]
    fn every_listed_pool_size_works() {
        for n in POOLS {
            for k in [2, (n - 1).div_ceil(2).max(2), n - 1] {
                let l = MolsLayout::new(n, k).unwrap();
                check_layout(&l, 1);
                check_pairs(&l);
            }
        }
    }

    /// Every unordered pair of disks shares exactly k(k-1) stripes per template.
    fn check_pairs(l: &MolsLayout) {
        let n = l.disk_count();
        let k = l.width();
        let mut shared = vec![0usize; n * n];
        let mut ds = Vec::new();
        for s in 0..l.template_stripes() {
            l.stripe_disks(s, &mut ds);
            for a in 0..k {
                for b in a + 1..k {
                    let (lo, hi) = (
                        ds[a].index().min(ds[b].index()),
                        ds[a].index().max(ds[b].index()),
                    );
                    shared[lo * n + hi] += 1;
                }
            }
        }
        for lo in 0..n {
            for hi in lo + 1..n {
                assert_eq!(
                    shared[lo * n + hi],
                    k * (k - 1),
                    "pair ({lo},{hi}) n={n} k={k}"
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn geometry_errors_follow_the_rules(n in 0usize..300, k in 0usize..300) {
            // A prime power has exactly one prime divisor; count them naively.
            let primes = (2..=n).filter(|&d| n % d == 0 && (2..d).all(|e| d % e != 0)).count();
            let got = MolsLayout::new(n, k);
            if k < 2 {
                prop_assert_eq!(got.unwrap_err(), GeometryError::TooNarrow { width: k, min: 2 });
            } else if primes != 1 {
                prop_assert_eq!(got.unwrap_err(), GeometryError::NotPrimePower { disks: n });
            } else if k > n - 1 {
                prop_assert_eq!(got.unwrap_err(), GeometryError::TooWide { width: k, disks: n, max: n - 1 });
            } else {
                prop_assert!(got.is_ok());
            }
        }

        #[test]
        fn mols_layouts_are_valid(ni in 0usize..POOLS.len(), kf in 0.0f64..1.0) {
            let n = POOLS[ni];
            let k = 2 + ((n - 2) as f64 * kf) as usize;
            let k = k.min(n - 1);
            let l = MolsLayout::new(n, k).unwrap();
            check_layout(&l, 3);
            check_pairs(&l);
        }
    }
}
