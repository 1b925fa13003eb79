//! Latency histograms with fixed bucket bounds, kept by the loop per member and operation
//! (device-level) and per volume and operation (as the user sees it).
//!
//! Why fixed buckets rather than the HDR histograms the pool-wide percentiles use: the
//! Prometheus exposition wants cumulative counts at fixed bounds that never change between
//! scrapes, and `fusionraid top` wants percentiles over the last second, which it gets by
//! subtracting two snapshots bucket by bucket. A record is a binary search over a few dozen
//! bounds and one increment, cheap enough for every device I/O.

use serde::{Deserialize, Serialize};

/// Upper bounds of the buckets in microseconds (a last, unbounded bucket follows). Roughly
/// three per decade from 10 us (a memory member) to 10 s (a member about to be failed as
/// hung), finer between 100 us and 10 ms where SSD reads, writes and GC stalls fall.
pub const BOUNDS_US: [u64; 30] = [
    10, 25, 50, 75, 100, 150, 200, 300, 400, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 7_500,
    10_000, 15_000, 20_000, 30_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000,
    3_000_000, 5_000_000, 10_000_000,
];

/// Non-cumulative bucket counts (`counts[i]` for values in `(BOUNDS_US[i-1], BOUNDS_US[i]]`,
/// the last one above every bound), their total and the sum of the values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyHistogram {
    pub counts: Vec<u64>,
    pub count: u64,
    /// Sum of every recorded latency, in nanoseconds.
    pub sum_ns: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            counts: vec![0; BOUNDS_US.len() + 1],
            count: 0,
            sum_ns: 0,
        }
    }
}

impl LatencyHistogram {
    pub fn record(&mut self, ns: u64) {
        let us = ns.div_ceil(1000);
        let i = BOUNDS_US.partition_point(|&b| b < us);
        self.counts[i] += 1;
        self.count += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
    }

    /// What was recorded since `earlier` (a snapshot of the same histogram), bucket by
    /// bucket; a histogram that restarted (a replaced member) counts from zero.
    pub fn since(&self, earlier: &LatencyHistogram) -> LatencyHistogram {
        if earlier.count > self.count || earlier.counts.len() != self.counts.len() {
            return self.clone();
        }
        LatencyHistogram {
            counts: self
                .counts
                .iter()
                .zip(&earlier.counts)
                .map(|(a, b)| a.saturating_sub(*b))
                .collect(),
            count: self.count - earlier.count,
            sum_ns: self.sum_ns.saturating_sub(earlier.sum_ns),
        }
    }

    /// The `q` quantile in microseconds, interpolated linearly inside its bucket; `None`
    /// when empty. Values in the last, unbounded bucket read as its lower bound.
    pub fn quantile_us(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = (q.clamp(0.0, 1.0) * self.count as f64).max(1.0);
        let mut below = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            if c > 0 && (below + c) as f64 >= rank {
                let lo = if i == 0 { 0 } else { BOUNDS_US[i - 1] } as f64;
                let Some(&hi) = BOUNDS_US.get(i) else {
                    return Some(lo);
                };
                let within = (rank - below as f64) / c as f64;
                return Some(lo + (hi as f64 - lo) * within);
            }
            below += c;
        }
        Some(*BOUNDS_US.last().expect("bounds") as f64)
    }

    /// Mean latency in microseconds, `None` when empty.
    pub fn mean_us(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_quantiles() {
        let mut h = LatencyHistogram::default();
        for _ in 0..99 {
            h.record(80_000); // 80 us: bucket (75, 100]
        }
        h.record(4_000_000); // 4 ms: bucket (3000, 5000]
        assert_eq!(h.count, 100);
        assert_eq!(h.counts[BOUNDS_US.partition_point(|&b| b < 80)], 99);
        let p50 = h.quantile_us(0.5).unwrap();
        assert!((75.0..=100.0).contains(&p50), "{p50}");
        let p999 = h.quantile_us(0.999).unwrap();
        assert!((3000.0..=5000.0).contains(&p999), "{p999}");
        // A value exactly on a bound goes into that bound's bucket ("le").
        let mut e = LatencyHistogram::default();
        e.record(100_000);
        assert_eq!(
            e.counts[BOUNDS_US.iter().position(|&b| b == 100).unwrap()],
            1
        );
        // Beyond every bound.
        e.record(60_000_000_000);
        assert_eq!(*e.counts.last().unwrap(), 1);
        assert_eq!(e.quantile_us(1.0), Some(10_000_000.0));
    }

    #[test]
    fn since_subtracts_and_survives_a_restart() {
        let mut a = LatencyHistogram::default();
        a.record(1_000);
        let before = a.clone();
        a.record(2_000_000);
        let d = a.since(&before);
        assert_eq!(d.count, 1);
        assert_eq!(d.sum_ns, 2_000_000);
        let fresh = LatencyHistogram::default();
        assert_eq!(fresh.since(&a), fresh);
        assert_eq!(LatencyHistogram::default().quantile_us(0.5), None);
    }
}
