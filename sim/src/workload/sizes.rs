//! Request-size distributions: a small weighted set of 4 KiB-multiple sizes.
//!
//! Real block traces show a few dominant sizes (one page, a database page, the 512 KiB block
//! layer split limit) rather than a smooth curve, so a discrete mixture is both more faithful
//! and lets the mean be hit exactly by choosing the weights.

use fusionraid_core::PAGE_SIZE;
use fusionraid_core::rng::Rng;

/// One size and its relative weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeClass {
    /// Size in KiB; a multiple of 4.
    pub kib: u32,
    /// Relative weight (any scale; the catalog uses per-mille or per-ten-thousand).
    pub weight: u32,
}

/// A discrete size distribution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeMix {
    classes: Vec<SizeClass>,
    total_weight: u64,
}

impl SizeMix {
    /// From `(KiB, weight)` pairs. Classes with weight 0 are dropped.
    pub fn new(pairs: &[(u32, u32)]) -> Self {
        let classes: Vec<SizeClass> = pairs
            .iter()
            .filter(|&&(_, w)| w > 0)
            .map(|&(kib, weight)| SizeClass { kib, weight })
            .collect();
        let total_weight = classes.iter().map(|c| c.weight as u64).sum();
        SizeMix {
            classes,
            total_weight,
        }
    }

    /// Every request the same size.
    pub fn fixed(kib: u32) -> Self {
        SizeMix::new(&[(kib, 1)])
    }

    pub fn classes(&self) -> &[SizeClass] {
        &self.classes
    }

    /// Why the mix cannot be used, if it cannot: empty, or a size that is 0 or not a whole
    /// number of 4 KiB pages.
    pub fn problem(&self) -> Option<String> {
        if self.total_weight == 0 {
            return Some("size mix has no class with a positive weight".into());
        }
        let page_kib = (PAGE_SIZE / 1024) as u32;
        self.classes
            .iter()
            .find(|c| c.kib == 0 || c.kib % page_kib != 0)
            .map(|c| format!("size {} KiB is not a positive multiple of 4 KiB", c.kib))
    }

    /// Expected size in bytes.
    pub fn mean_bytes(&self) -> f64 {
        if self.total_weight == 0 {
            return 0.0;
        }
        let sum: u64 = self
            .classes
            .iter()
            .map(|c| c.kib as u64 * 1024 * c.weight as u64)
            .sum();
        sum as f64 / self.total_weight as f64
    }

    /// Draw one size in bytes. An unusable (empty) mix yields one page rather than panicking;
    /// `Generator::new` rejects such mixes up front.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        if self.total_weight == 0 {
            return PAGE_SIZE;
        }
        let mut x = rng.below(self.total_weight);
        for c in &self.classes {
            if x < c.weight as u64 {
                return c.kib as u64 * 1024;
            }
            x -= c.weight as u64;
        }
        PAGE_SIZE // unreachable: x < total_weight
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sampling_agree() {
        let m = SizeMix::new(&[(4, 1), (512, 3), (64, 0)]);
        assert_eq!(m.classes().len(), 2);
        assert_eq!(m.mean_bytes(), (4.0 + 3.0 * 512.0) / 4.0 * 1024.0);
        let mut rng = Rng::new(1);
        let n = 100_000;
        let sum: u64 = (0..n).map(|_| m.sample(&mut rng)).sum();
        let mean = sum as f64 / n as f64;
        assert!((mean / m.mean_bytes() - 1.0).abs() < 0.01, "{mean}");
    }

    #[test]
    fn problems_are_reported_not_panicked() {
        assert!(SizeMix::new(&[]).problem().is_some());
        assert!(SizeMix::new(&[(6, 1)]).problem().is_some());
        assert!(SizeMix::fixed(8).problem().is_none());
        assert_eq!(SizeMix::new(&[]).sample(&mut Rng::new(0)), PAGE_SIZE);
    }
}
