//! Latency histograms (HDR, 3 significant digits, 1 ns to 1 hour) and their summaries.

use hdrhistogram::Histogram;
use serde::Serialize;

use fusionraid_core::Nanos;

/// Largest latency tracked exactly; longer ones are recorded as this value.
const MAX_TRACKED_NS: u64 = 3_600_000_000_000;

/// One latency distribution.
#[derive(Clone)]
pub struct LatencyHist {
    h: Histogram<u64>,
}

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist {
            h: Histogram::new_with_bounds(1, MAX_TRACKED_NS, 3).expect("valid histogram bounds"),
        }
    }
}

impl LatencyHist {
    pub fn record(&mut self, ns: Nanos) {
        self.h.saturating_record(ns.clamp(1, MAX_TRACKED_NS));
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// The union of two distributions.
    pub fn merged(&self, other: &LatencyHist) -> LatencyHist {
        let mut m = self.clone();
        m.h.add(&other.h).expect("histograms share bounds");
        m
    }

    /// The latency at quantile `q` (0..=1) in microseconds; 0 when empty.
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.h.is_empty() {
            return 0.0;
        }
        self.h.value_at_quantile(q.clamp(0.0, 1.0)) as f64 / 1e3
    }

    /// Mean latency of the slowest `share` of requests (0.01 = the slowest 1%, the paper's
    /// Table 5/6 metric), in microseconds; at least one request is counted, 0 when empty.
    /// Values are HDR bucket values (3 significant digits).
    pub fn tail_mean_us(&self, share: f64) -> f64 {
        let n = self.h.len();
        if n == 0 {
            return 0.0;
        }
        let want = ((n as f64 * share.clamp(0.0, 1.0)).ceil() as u64).max(1);
        // Walk down from the top bucket: recorded values in descending order.
        let buckets: Vec<(u64, u64)> = self
            .h
            .iter_recorded()
            .map(|v| {
                (
                    self.h.highest_equivalent(v.value_iterated_to()),
                    v.count_at_value(),
                )
            })
            .collect();
        let (mut taken, mut sum) = (0u64, 0f64);
        for &(value, count) in buckets.iter().rev() {
            let k = count.min(want - taken);
            sum += value as f64 * k as f64;
            taken += k;
            if taken == want {
                break;
            }
        }
        sum / taken as f64 / 1e3
    }

    /// Points `(latency_us, cumulative share)` of the distribution at the given quantiles,
    /// for CDF plots; empty when there are no samples.
    pub fn cdf(&self, quantiles: &[f64]) -> Vec<[f64; 2]> {
        if self.h.is_empty() {
            return Vec::new();
        }
        quantiles
            .iter()
            .map(|&q| [self.quantile_us(q), q])
            .collect()
    }

    /// `Histogram::mean`: the same sum in the same order (ascending buckets, each adding its
    /// median value times its count over the total), but walking the buckets from the
    /// lowest recorded value up instead of every bucket from 1 ns. The report takes 15
    /// means, and the empty buckets below the fastest request would be most of their cost.
    fn mean_ns(&self) -> f64 {
        let h = &self.h;
        let n = h.len();
        if n == 0 {
            return 0.0;
        }
        let (mut v, max) = (h.min(), h.max());
        let mut total = 0.0;
        while v <= max {
            // Buckets keep one width from `v` (a bucket's lowest value) up to the next power
            // of two, where they double: step by it there instead of asking for each next.
            let width = h.equivalent_range(v);
            let end = (v + 1).next_power_of_two().min(max + 1);
            while v < end {
                debug_assert_eq!((h.lowest_equivalent(v), h.equivalent_range(v)), (v, width));
                let count = h.count_at(v);
                if count > 0 {
                    total += h.median_equivalent(v) as f64 * count as f64 / n as f64;
                }
                v += width;
            }
        }
        total
    }

    pub fn summary(&self) -> LatencySummary {
        let us = |ns: u64| ns as f64 / 1e3;
        if self.h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: self.h.len(),
            mean_us: self.mean_ns().round() / 1e3,
            p50_us: us(self.h.value_at_quantile(0.5)),
            p99_us: us(self.h.value_at_quantile(0.99)),
            p999_us: us(self.h.value_at_quantile(0.999)),
            p9999_us: us(self.h.value_at_quantile(0.9999)),
            max_us: us(self.h.max()),
        }
    }
}

/// Quantiles of one distribution, in microseconds (HDR precision: 3 significant digits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    /// SeRW reports the 99.99th percentile too (issue 21).
    pub p9999_us: f64,
    pub max_us: f64,
}

/// Reads and writes (trims count as writes) of one workload, or of the whole run.
#[derive(Clone, Default)]
pub struct OpHists {
    pub read: LatencyHist,
    pub write: LatencyHist,
}

impl OpHists {
    pub fn record(&mut self, write: bool, ns: Nanos) {
        if write {
            self.write.record(ns)
        } else {
            self.read.record(ns)
        }
    }

    pub fn summary(&self) -> OpLatency {
        OpLatency {
            all: self.read.merged(&self.write).summary(),
            read: self.read.summary(),
            write: self.write.summary(),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct OpLatency {
    pub all: LatencySummary,
    pub read: LatencySummary,
    pub write: LatencySummary,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_merge() {
        let mut h = OpHists::default();
        for i in 1..=1000u64 {
            h.record(i % 2 == 0, i * 1000);
        }
        let s = h.summary();
        assert_eq!((s.all.count, s.read.count, s.write.count), (1000, 500, 500));
        assert!((s.all.p50_us - 500.0).abs() <= 1.0, "{s:?}");
        assert!((s.all.p99_us - 990.0).abs() <= 1.0, "{s:?}");
        assert!((s.all.max_us - 1000.0).abs() <= 1.0, "{s:?}");
        assert_eq!(LatencyHist::default().summary(), LatencySummary::default());
        // Huge values saturate instead of failing.
        // The slowest 1% of 1..=1000 ms is 991..=1000 ms: mean 995.5 ms.
        let mut one = LatencyHist::default();
        for i in 1..=1000u64 {
            one.record(i * 1_000_000);
        }
        let t = one.tail_mean_us(0.01);
        assert!((t - 995_500.0).abs() / 995_500.0 < 0.002, "{t}");
        assert!((one.quantile_us(0.5) - 500_000.0).abs() < 500.0);
        assert_eq!(one.tail_mean_us(0.0), one.quantile_us(1.0));
        let cdf = one.cdf(&[0.5, 0.99]);
        assert_eq!(cdf.len(), 2);
        assert!(cdf[0][0] < cdf[1][0] && cdf[1][1] == 0.99);
        assert!(LatencyHist::default().cdf(&[0.5]).is_empty());
        assert_eq!(LatencyHist::default().tail_mean_us(0.01), 0.0);
        // The mean walk gives the library's mean to the bit.
        let mut rng = fusionraid_core::rng::Rng::new(4);
        for scale in [10, 10_000, 10_000_000, 30_000_000_000] {
            let mut h = LatencyHist::default();
            assert_eq!(h.mean_ns(), 0.0);
            for _ in 0..5_000 {
                h.record(1 + rng.below(scale) * rng.below(100));
                assert_eq!(h.mean_ns().to_bits(), h.h.mean().to_bits());
            }
        }
        let mut big = LatencyHist::default();
        big.record(u64::MAX);
        assert_eq!(big.count(), 1);
    }
}
