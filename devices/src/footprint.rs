//! How much of the drive the recent writes keep rewriting: the active footprint.
//!
//! A garbage collector that picks its victims by valid count (greedy, or cost-benefit) ends
//! up cleaning the blocks of the data that is being rewritten, which empty fast, and leaves
//! data nobody rewrites packed in full blocks. Its victims' valid fraction then depends on
//! the rewritten footprint `F`, not on all valid data: victims come from `F` plus the spare
//! space. Writes spread over the whole drive make `F` the whole drive (the classic case);
//! writes confined to a small region (a pool member serving a few volumes' zones) make GC
//! cheap. [`crate::flash_state`] uses the estimate; this file only estimates `F`.
//!
//! Estimator: the drive is cut into regions; each region remembers the epoch of its last
//! write (epochs are fixed amounts of written bytes). Over a window of the last `EPOCHS`
//! epochs we know `n`, the region writes, and `d`, the distinct regions written. Writes
//! spread uniformly over `N` regions touch `d = N (1 - exp(-n / N))` distinct ones in
//! expectation; solving for `N` gives the footprint (the reuse-distance idea behind working-
//! set estimators). While `d` is close to `n` (no reuse seen yet) the footprint is unknown
//! and taken as the whole drive.
//!
//! Memory: 2 bytes per region (1 MiB regions: 0.5 MB for 240 GB).

/// Epochs in the window.
const EPOCHS: usize = 16;
/// Epoch numbers run 1..=LAST_EPOCH (0 marks "never"); a multiple of `EPOCHS`, so ring
/// slots stay consecutive across the wrap.
const LAST_EPOCH: u16 = (u16::MAX / EPOCHS as u16) * EPOCHS as u16;
/// Written bytes per epoch: a 4 GiB window, short enough to follow a workload within
/// seconds to minutes, long enough to see reuse in a footprint of tens of GiB.
const EPOCH_BYTES: u64 = 256 << 20;

#[derive(Clone, Debug)]
pub struct Footprint {
    region_shift: u32,
    regions: u64,
    /// Epoch of each region's last write; 0 = not written since the estimator started.
    stamp: Vec<u16>,
    /// Current epoch (1-based, wraps skipping 0) and bytes written in it.
    epoch: u16,
    epoch_fill: u64,
    /// Per ring slot: regions whose last write fell in that epoch, and region writes in it.
    last: [u64; EPOCHS],
    writes: [u64; EPOCHS],
    /// Their sums over the window: `d` and `n`.
    distinct: u64,
    total: u64,
    /// Cached (d / n, the solution x = n / N for it).
    cache: (f64, f64),
}

impl Footprint {
    /// An estimator for `capacity` bytes cut into regions of `1 << region_shift` bytes.
    pub fn new(capacity: u64, region_shift: u32) -> Self {
        let regions = capacity.div_ceil(1 << region_shift).max(1);
        Footprint {
            region_shift,
            regions,
            stamp: vec![0; regions as usize],
            epoch: 1,
            epoch_fill: 0,
            last: [0; EPOCHS],
            writes: [0; EPOCHS],
            distinct: 0,
            total: 0,
            cache: (f64::NAN, f64::INFINITY),
        }
    }

    /// Epochs between `e` and the current one.
    fn age(&self, e: u16) -> usize {
        let (cur, e) = (self.epoch as usize, e as usize);
        if cur >= e {
            cur - e
        } else {
            cur + LAST_EPOCH as usize - e
        }
    }

    fn slot(e: u16) -> usize {
        e as usize % EPOCHS
    }

    /// A write of `len` bytes at `off`. Inlined: once per device write.
    #[inline]
    pub fn on_write(&mut self, off: u64, len: u64) {
        if len == 0 || off >> self.region_shift >= self.regions {
            return;
        }
        let first = off >> self.region_shift;
        let last = ((off + len - 1) >> self.region_shift).min(self.regions - 1);
        let cur = Self::slot(self.epoch);
        for r in first..=last {
            let s = self.stamp[r as usize];
            // A region written before in this epoch (most are: a block-sized write fills a
            // sixteenth of one) stays one distinct region of it; otherwise it moves here.
            if s != self.epoch {
                if s != 0 && self.age(s) < EPOCHS {
                    self.last[Self::slot(s)] -= 1;
                    self.distinct -= 1;
                }
                self.stamp[r as usize] = self.epoch;
                self.last[cur] += 1;
                self.distinct += 1;
            }
            self.writes[cur] += 1;
            self.total += 1;
        }
        self.epoch_fill += len;
        while self.epoch_fill >= EPOCH_BYTES {
            self.epoch_fill -= EPOCH_BYTES;
            self.epoch = if self.epoch == LAST_EPOCH {
                1
            } else {
                self.epoch + 1
            };
            // The slot now reused held the epoch leaving the window.
            let s = Self::slot(self.epoch);
            self.distinct -= self.last[s];
            self.total -= self.writes[s];
            self.last[s] = 0;
            self.writes[s] = 0;
        }
    }

    /// Estimated bytes the recent writes keep rewriting; `None` while no reuse was seen.
    pub fn estimate_bytes(&mut self) -> Option<u64> {
        let (d, n) = (self.distinct, self.total);
        if n < 64 {
            return None;
        }
        // N = n / x, where x solves (1 - exp(-x)) / x = d / n. Re-solve only when d / n
        // moved: the estimate is asked for on every program while GC runs.
        let r = d as f64 / n as f64;
        // The cache starts as NaN, which no ratio is close to.
        if self.cache.0.is_nan() || (r - self.cache.0).abs() >= 1e-3 {
            self.cache = (r, solve(r));
        }
        let regions = n as f64 / self.cache.1;
        (regions.is_finite() && regions < self.regions as f64)
            .then(|| (regions * (1u64 << self.region_shift) as f64) as u64)
    }
}

/// `x > 0` with `(1 - exp(-x)) / x = r`: writes spread uniformly over `N` regions touch
/// `d = N (1 - exp(-n / N))` distinct ones, so with `x = n / N` the ratio `d / n` is that
/// function of `x` alone. 0 (an unknown, unbounded footprint) while `r` is within 1% of 1.
fn solve(r: f64) -> f64 {
    if r.is_nan() || r >= 0.99 {
        return 0.0;
    }
    let g = |x: f64| (1.0 - (-x).exp()) / x;
    // g falls from 1 (x -> 0) towards 0; r >= some tiny value in practice.
    let (mut lo, mut hi) = (1e-9f64, 1.0f64);
    while g(hi) > r {
        hi *= 2.0;
        if hi > 1e9 {
            return hi;
        }
    }
    for _ in 0..45 {
        let mid = 0.5 * (lo + hi);
        if g(mid) > r {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusionraid_core::rng::Rng;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    fn run(footprint: u64, write: u64, bytes: u64) -> Option<u64> {
        let mut f = Footprint::new(240 * GIB, 20);
        let mut rng = Rng::new(2);
        let slots = footprint / write;
        let mut done = 0;
        while done < bytes {
            f.on_write(rng.below(slots) * write, write);
            done += write;
        }
        f.estimate_bytes()
    }

    #[test]
    fn finds_a_small_footprint_quickly() {
        // 10 GiB rewritten with 64 KiB writes: known after 1 GiB of writes, within 10%.
        let est = run(10 * GIB, 64 << 10, GIB).expect("reuse seen") as f64;
        assert!(
            (est / (10 * GIB) as f64 - 1.0).abs() < 0.1,
            "{}",
            est / GIB as f64
        );
        let est = run(10 * GIB, 64 << 10, 12 * GIB).expect("reuse seen") as f64;
        assert!(
            (est / (10 * GIB) as f64 - 1.0).abs() < 0.05,
            "{}",
            est / GIB as f64
        );
    }

    #[test]
    fn whole_drive_writes_are_not_mistaken_for_a_small_footprint() {
        // Uniform over 200 GiB: estimate near 200 GiB or unknown (whole drive).
        let est = run(200 * GIB, 64 << 10, 6 * GIB);
        assert!(est.is_none_or(|e| e > 150 * GIB), "{est:?}");
        // Nothing written: unknown.
        assert_eq!(Footprint::new(GIB, 20).estimate_bytes(), None);
    }

    #[test]
    fn follows_a_change_of_workload() {
        let mut f = Footprint::new(240 * GIB, 20);
        let mut rng = Rng::new(3);
        for _ in 0..200_000 {
            f.on_write(rng.below(2048) * MIB, MIB); // 2 GiB footprint
        }
        let small = f.estimate_bytes().unwrap();
        assert!(small < 3 * GIB, "{small}");
        for _ in 0..400_000 {
            f.on_write(rng.below(40 * 1024) * MIB, MIB); // now 40 GiB
        }
        let big = f.estimate_bytes().unwrap();
        assert!(big > 30 * GIB && big < 50 * GIB, "{}", big / GIB);
    }
}
