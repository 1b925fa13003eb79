//! Unloaded-latency distributions.
//!
//! A device's latency at low load is not a constant: the measured profiles show, for 4 KiB
//! random reads at the lowest offered load, median/P90/P99/P99.9/P99.99 of 76/89/94/135/155 us
//! (PM1725a) and 85/88/109/141/155 us (SN200). We keep such a quantile table and sample it by
//! inverse-CDF with linear interpolation between the quantiles; queueing delays are added on
//! top by the model.

use fusionraid_core::rng::Rng;

/// The quantile levels the profiles report, in their column order.
pub const PROFILE_QUANTILES: [f64; 5] = [0.5, 0.9, 0.99, 0.999, 0.9999];

/// Shape of the unloaded read latency relative to its median, averaged over the lowest-load
/// 100%-read rows of the two profiled drive families (PM1725a 1 : 1.17 : 1.24 : 1.78 : 2.04,
/// SN200 1 : 1.04 : 1.28 : 1.66 : 1.82). Used for presets that only have a datasheet latency.
pub const GENERIC_SHAPE: [f64; 5] = [1.0, 1.10, 1.26, 1.72, 1.93];

/// Inverse CDF as a piecewise-linear table of (quantile, nanoseconds), from q = 0 to q = 1.
#[derive(Clone, Debug, PartialEq)]
pub struct LatencyDist {
    points: Vec<(f64, f64)>,
}

impl LatencyDist {
    /// Always `ns`.
    pub fn constant(ns: f64) -> Self {
        LatencyDist {
            points: vec![(0.0, ns), (1.0, ns)],
        }
    }

    /// From interior quantiles `(q, ns)`, q strictly increasing inside (0, 1), values
    /// non-decreasing. The q = 0 and q = 1 ends are extrapolated from the first and last
    /// segments (the minimum is kept at or above half the first value).
    pub fn from_quantiles(q: &[(f64, f64)]) -> Result<Self, String> {
        if q.is_empty() {
            return Err("latency distribution needs at least one quantile".into());
        }
        for w in q.windows(2) {
            if w[1].0 <= w[0].0 || w[1].1 < w[0].1 {
                return Err(format!(
                    "quantiles must increase: ({}, {}) then ({}, {})",
                    w[0].0, w[0].1, w[1].0, w[1].1
                ));
            }
        }
        for &(p, v) in q {
            if !(p > 0.0 && p < 1.0 && v.is_finite() && v >= 0.0) {
                return Err(format!("bad quantile ({p}, {v})"));
            }
        }
        if q.len() == 1 {
            return Ok(Self::constant(q[0].1));
        }
        let (q0, v0) = q[0];
        let (q1, v1) = q[1];
        let lo = (v0 - (v1 - v0) / (q1 - q0) * q0).max(0.5 * v0);
        // Extend the value by one more step of the last segment's rise: bounds the tail
        // instead of extrapolating towards infinity as q -> 1.
        let va = q[q.len() - 2].1;
        let vb = q[q.len() - 1].1;
        let hi = vb + (vb - va);
        let mut points = Vec::with_capacity(q.len() + 2);
        points.push((0.0, lo));
        points.extend_from_slice(q);
        points.push((1.0, hi));
        Ok(LatencyDist { points })
    }

    /// A datasheet latency (taken as the median) with [`GENERIC_SHAPE`] around it.
    pub fn typical(median_ns: f64) -> Self {
        let q: Vec<(f64, f64)> = PROFILE_QUANTILES
            .iter()
            .zip(GENERIC_SHAPE)
            .map(|(&p, s)| (p, s * median_ns))
            .collect();
        Self::from_quantiles(&q).expect("generic shape is monotone")
    }

    /// Value at quantile `u` in [0, 1].
    pub fn quantile(&self, u: f64) -> f64 {
        let u = u.clamp(0.0, 1.0);
        let p = &self.points;
        // The first point above `u` (what a binary search for it finds, the quantiles being
        // sorted): a forward scan, as most samples fall in the first segments (u < 0.9 in
        // nine of ten draws) and the table is a handful of points.
        let i = p.iter().position(|&(q, _)| q > u).unwrap_or(p.len());
        if i == 0 {
            return p[0].1;
        }
        if i >= p.len() {
            return p[p.len() - 1].1;
        }
        let (qa, va) = p[i - 1];
        let (qb, vb) = p[i];
        if qb <= qa {
            return vb;
        }
        va + (vb - va) * (u - qa) / (qb - qa)
    }

    /// One sample, in whole nanoseconds. Inlined: the SSD model draws one per device I/O.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        crate::round_u64(self.quantile(rng.unit()))
    }

    pub fn median(&self) -> f64 {
        self.quantile(0.5)
    }

    pub fn min(&self) -> f64 {
        self.points[0].1
    }

    /// The same shape with every value multiplied by `f`.
    pub fn scaled(&self, f: f64) -> Self {
        LatencyDist {
            points: self.points.iter().map(|&(q, v)| (q, v * f)).collect(),
        }
    }

    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_the_given_quantiles() {
        let d = LatencyDist::from_quantiles(&[(0.5, 76e3), (0.9, 89e3), (0.99, 94e3)]).unwrap();
        assert!((d.quantile(0.5) - 76e3).abs() < 1e-6);
        assert!((d.quantile(0.9) - 89e3).abs() < 1e-6);
        assert!((d.quantile(0.7) - 82.5e3).abs() < 1e-6);
        assert!(d.min() >= 38e3 && d.min() < 76e3);
        assert!((d.quantile(1.0) - 99e3).abs() < 1e-6);
    }

    #[test]
    fn sampling_reproduces_the_table() {
        let d = LatencyDist::typical(36_000.0);
        let mut rng = Rng::new(1);
        let mut xs: Vec<u64> = (0..100_000).map(|_| d.sample(&mut rng)).collect();
        xs.sort_unstable();
        let p50 = xs[50_000] as f64;
        let p99 = xs[99_000] as f64;
        assert!((p50 / 36_000.0 - 1.0).abs() < 0.01, "{p50}");
        assert!((p99 / (36_000.0 * 1.26) - 1.0).abs() < 0.01, "{p99}");
    }

    #[test]
    fn rejects_non_monotone_tables() {
        assert!(LatencyDist::from_quantiles(&[(0.5, 10.0), (0.9, 5.0)]).is_err());
        assert!(LatencyDist::from_quantiles(&[(0.9, 10.0), (0.5, 20.0)]).is_err());
        assert!(LatencyDist::from_quantiles(&[(1.5, 10.0)]).is_err());
    }
}
