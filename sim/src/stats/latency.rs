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

    pub fn summary(&self) -> LatencySummary {
        let us = |ns: u64| ns as f64 / 1e3;
        if self.h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: self.h.len(),
            mean_us: self.h.mean().round() / 1e3,
            p50_us: us(self.h.value_at_quantile(0.5)),
            p99_us: us(self.h.value_at_quantile(0.99)),
            p999_us: us(self.h.value_at_quantile(0.999)),
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
        let mut big = LatencyHist::default();
        big.record(u64::MAX);
        assert_eq!(big.count(), 1);
    }
}
