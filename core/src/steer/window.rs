//! [`IoWindow`]: what one member completed over short fixed windows: how many reads and
//! writes, and their latencies on a log scale, so a policy can ask for the member's recent
//! percentile latency and its read and write rates without keeping every sample.

use crate::types::{Nanos, PAGE_SIZE};

/// Window length: Sandook judges congestion on 10 ms of completions.
pub const WINDOW_NS: Nanos = 10_000_000;
/// Latency buckets: four per power of two of 16 ns units, up to about 4 s.
const BUCKETS: usize = 112;

/// Counts of one window.
#[derive(Clone, Debug)]
pub struct Tally {
    pub reads: u32,
    pub writes: u32,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Sum of the completions' latencies: divided by the window's length, how many I/Os the
    /// member had outstanding on average (Little's law).
    pub latency_sum_ns: u64,
    buckets: [u32; BUCKETS],
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            reads: 0,
            writes: 0,
            read_bytes: 0,
            write_bytes: 0,
            latency_sum_ns: 0,
            buckets: [0; BUCKETS],
        }
    }
}

/// Bucket of a latency: the exponent and two mantissa bits of `ns / 16` (at least 64 ns).
fn bucket(ns: Nanos) -> usize {
    let v = (ns >> 4).max(4);
    let exp = 63 - v.leading_zeros() as usize;
    let mant = ((v >> (exp - 2)) & 3) as usize;
    ((exp - 2) * 4 + mant).min(BUCKETS - 1)
}

/// The smallest latency of bucket `b` (ns; the first bucket also holds everything below).
fn bucket_floor(b: usize) -> Nanos {
    let (exp, mant) = (b / 4 + 2, (b % 4) as u64);
    ((4 + mant) << (exp - 2)) << 4
}

/// The largest latency in bucket `b` (ns).
fn bucket_top(b: usize) -> Nanos {
    bucket_floor(b + 1) - 1
}

impl Tally {
    pub fn completed(&self) -> u32 {
        self.reads + self.writes
    }

    /// Reads and writes in 4 KiB units: the load-latency curves are measured with 4 KiB
    /// requests, and a larger request costs the drive about its size in such units.
    pub fn pages(&self) -> (u64, u64) {
        (
            self.read_bytes.div_ceil(PAGE_SIZE).max(self.reads as u64),
            self.write_bytes.div_ceil(PAGE_SIZE).max(self.writes as u64),
        )
    }

    /// I/Os outstanding on the member on average over the window.
    pub fn mean_outstanding(&self) -> f64 {
        self.latency_sum_ns as f64 / WINDOW_NS as f64
    }

    /// The latency below which `q` (0..1) of the window's completions finished, rounded up to
    /// its bucket (within 19%); None for an empty window.
    pub fn quantile_ns(&self, q: f64) -> Option<Nanos> {
        let n = self.completed();
        if n == 0 {
            return None;
        }
        let want = ((n as f64 * q).ceil() as u32).clamp(1, n);
        let mut seen = 0;
        for (b, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= want {
                return Some(bucket_top(b));
            }
        }
        unreachable!("bucket counts sum to the completions")
    }
}

/// The current window and the last complete one.
#[derive(Clone, Debug, Default)]
pub struct IoWindow {
    start: Nanos,
    cur: Tally,
    last: Tally,
}

impl IoWindow {
    pub fn new(now: Nanos) -> Self {
        IoWindow {
            start: now,
            ..Default::default()
        }
    }

    fn roll(&mut self, now: Nanos) {
        if now < self.start + WINDOW_NS {
            return;
        }
        let windows = (now - self.start) / WINDOW_NS;
        self.last = if windows == 1 {
            std::mem::take(&mut self.cur)
        } else {
            self.cur = Tally::default();
            Tally::default()
        };
        self.start += windows * WINDOW_NS;
    }

    pub fn record(&mut self, now: Nanos, latency: Nanos, write: bool, bytes: u64) {
        self.roll(now);
        if write {
            self.cur.writes += 1;
            self.cur.write_bytes += bytes;
        } else {
            self.cur.reads += 1;
            self.cur.read_bytes += bytes;
        }
        self.cur.latency_sum_ns += latency;
        self.cur.buckets[bucket(latency)] += 1;
    }

    /// The last complete window as of `now` (empty when no I/O completed in it), read without
    /// rolling so a policy can ask through a shared reference.
    pub fn last(&self, now: Nanos) -> Option<&Tally> {
        if now < self.start + WINDOW_NS {
            Some(&self.last)
        } else if now < self.start + 2 * WINDOW_NS {
            Some(&self.cur)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_bound_latencies_from_above_within_a_fifth() {
        for ns in [
            300u64,
            1_000,
            4_096,
            77_777,
            1_000_000,
            2_500_000,
            123_456_789,
        ] {
            let top = bucket_top(bucket(ns));
            assert!(top >= ns, "{ns} -> {top}");
            assert!((top as f64) < ns as f64 * 1.26 + 512.0, "{ns} -> {top}");
        }
        for b in 1..BUCKETS - 1 {
            assert!(bucket_top(b) > bucket_top(b - 1));
        }
    }

    #[test]
    fn the_last_window_gives_rates_and_percentiles() {
        let mut w = IoWindow::new(0);
        for i in 0..100u64 {
            let lat = if i < 98 { 100_000 } else { 5_000_000 };
            w.record(i * 50_000, lat, i % 10 == 0, 8192);
        }
        // Still in the first window: nothing complete yet.
        assert_eq!(w.last(5_000_000).unwrap().completed(), 0);
        let t = w.last(WINDOW_NS + 1).unwrap();
        assert_eq!((t.reads, t.writes), (90, 10));
        assert_eq!(t.pages(), (180, 20));
        assert!(t.quantile_ns(0.9).unwrap() < 130_000);
        assert!(t.quantile_ns(0.99).unwrap() >= 5_000_000);
        // 98 x 0.1 ms + 2 x 5 ms of latency over a 10 ms window: 1.98 I/Os outstanding.
        assert!((t.mean_outstanding() - 1.98).abs() < 1e-9);
        // Two windows later with no I/O the member is idle.
        assert!(w.last(3 * WINDOW_NS).is_none());
    }
}
