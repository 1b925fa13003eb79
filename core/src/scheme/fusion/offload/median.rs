//! A running median of positive samples, bounded in memory and adapting to change: samples
//! fall in log-scale buckets (eight per doubling, so the median is known to within 9%), and
//! every `HALF_LIFE` samples all counts halve, so old load fades out.

const PER_OCTAVE: f64 = 8.0;
const BUCKETS: usize = 8 * 40;
const HALF_LIFE: u32 = 4096;

#[derive(Clone, Debug)]
pub struct RunningMedian {
    counts: Vec<u32>,
    total: u64,
    since_decay: u32,
}

impl Default for RunningMedian {
    fn default() -> Self {
        RunningMedian {
            counts: vec![0; BUCKETS],
            total: 0,
            since_decay: 0,
        }
    }
}

fn bucket(x: f64) -> usize {
    ((x.max(1.0).log2() * PER_OCTAVE) as usize).min(BUCKETS - 1)
}

fn value(b: usize) -> f64 {
    // The bucket's geometric middle.
    ((b as f64 + 0.5) / PER_OCTAVE).exp2()
}

impl RunningMedian {
    pub fn add(&mut self, x: f64) {
        self.counts[bucket(x)] += 1;
        self.total += 1;
        self.since_decay += 1;
        if self.since_decay >= HALF_LIFE {
            self.since_decay = 0;
            self.total = 0;
            for c in &mut self.counts {
                *c /= 2;
                self.total += *c as u64;
            }
        }
    }

    /// The median so far; None before any sample.
    pub fn median(&self) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let half = self.total.div_ceil(2);
        let mut seen = 0u64;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen >= half {
                return Some(value(b));
            }
        }
        unreachable!("counts add up to the total")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_within_a_bucket_and_follows_a_shift() {
        let mut m = RunningMedian::default();
        assert_eq!(m.median(), None);
        for i in 0..1001 {
            m.add(100.0 + i as f64); // median 600
        }
        let got = m.median().unwrap();
        assert!((got / 600.0 - 1.0).abs() < 0.1, "{got}");
        // A lasting change of load moves it: old samples decay.
        for _ in 0..40_000 {
            m.add(20.0);
        }
        let got = m.median().unwrap();
        assert!((got / 20.0 - 1.0).abs() < 0.1, "{got}");
    }
}
