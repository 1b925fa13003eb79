//! Bursty arrivals: a two-state Markov-modulated Poisson process (ON/OFF).
//!
//! The workload alternates between ON and OFF periods with exponentially distributed lengths
//! (means `on_ms`, `off_ms`); within a period requests arrive as a Poisson process, at rate
//! `r_on` when ON and `r_off = off_ratio * r_on` when OFF. `r_on` is solved from the target
//! IOPS `R` so the long-run rate is exactly `R`:
//!
//! ```text
//! R = (r_on * on + r_off * off) / (on + off)   =>   r_on = R * (on + off) / (on + off_ratio * off)
//! ```
//!
//! With periods of a few to a few hundred milliseconds this makes bandwidth bursty at the
//! 1 ms scale (most slots near zero, some at several times the mean) while IOPS over seconds
//! matches the table. The process starts in its stationary state (ON with probability
//! `on / (on + off)`), so there is no warm-up transient.

use fusionraid_core::rng::Rng;

/// ON/OFF parameters of one workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Burst {
    /// Mean ON period, ms (> 0).
    pub on_ms: f64,
    /// Mean OFF period, ms (>= 0; 0 makes the process plain Poisson).
    pub off_ms: f64,
    /// OFF-period rate as a fraction of the ON rate, `0..=1` (background trickle).
    pub off_ratio: f64,
}

impl Burst {
    /// Plain Poisson arrivals (no modulation).
    pub const POISSON: Burst = Burst {
        on_ms: 1.0,
        off_ms: 0.0,
        off_ratio: 1.0,
    };

    pub fn problem(&self) -> Option<String> {
        let ok = self.on_ms.is_finite()
            && self.on_ms > 0.0
            && self.off_ms.is_finite()
            && self.off_ms >= 0.0
            && (0.0..=1.0).contains(&self.off_ratio);
        (!ok).then(|| format!("bad ON/OFF parameters {self:?}"))
    }

    /// Share of time spent ON.
    pub fn duty(&self) -> f64 {
        self.on_ms / (self.on_ms + self.off_ms)
    }
}

/// Exponential variate with the given mean. `1 - unit()` is in `(0, 1]`, so `ln` is finite.
pub(crate) fn exponential(rng: &mut Rng, mean: f64) -> f64 {
    -mean * (1.0 - rng.unit()).ln()
}

/// Arrival-time generator (times in ns, as f64 to avoid drift from rounding every gap).
#[derive(Clone, Debug)]
pub(crate) struct OnOff {
    rate_on: f64,
    rate_off: f64,
    mean_on_ns: f64,
    mean_off_ns: f64,
    on: bool,
    state_end: f64,
    now: f64,
}

impl OnOff {
    /// `iops` must be finite and >= 0 and `burst` valid; out-of-range values are clamped so
    /// this never loops forever or panics.
    pub(crate) fn new(iops: f64, burst: Burst, rng: &mut Rng) -> Self {
        let iops = if iops.is_finite() { iops.max(0.0) } else { 0.0 };
        let on = if burst.on_ms.is_finite() {
            burst.on_ms.max(1e-6)
        } else {
            1.0
        };
        let off = if burst.off_ms.is_finite() {
            burst.off_ms.max(0.0)
        } else {
            0.0
        };
        let ratio = if burst.off_ratio.is_finite() {
            burst.off_ratio.clamp(0.0, 1.0)
        } else {
            1.0
        };
        let per_ns = iops / 1e9;
        let rate_on = per_ns * (on + off) / (on + ratio * off);
        let mean_on_ns = on * 1e6;
        let mean_off_ns = off * 1e6;
        let start_on = rng.unit() < on / (on + off);
        // Memoryless: the residual of a stationary period is distributed like a full one.
        let first = exponential(rng, if start_on { mean_on_ns } else { mean_off_ns });
        OnOff {
            rate_on,
            rate_off: rate_on * ratio,
            mean_on_ns,
            mean_off_ns,
            on: start_on,
            state_end: first,
            now: 0.0,
        }
    }

    /// Time of the next arrival, ns; `None` if the rate is zero or the next arrival would come
    /// after `horizon` (so a vanishing rate cannot spin through periods forever).
    pub(crate) fn next(&mut self, rng: &mut Rng, horizon: f64) -> Option<f64> {
        if self.rate_on <= 0.0 {
            return None;
        }
        loop {
            if self.now > horizon {
                return None;
            }
            let rate = if self.on { self.rate_on } else { self.rate_off };
            if rate > 0.0 {
                let t = self.now + exponential(rng, 1.0 / rate);
                if t <= self.state_end {
                    self.now = t;
                    return Some(t);
                }
            }
            // The period ended first; by memorylessness we may restart the clock there.
            self.now = self.state_end;
            self.on = !self.on;
            let mean = if self.on {
                self.mean_on_ns
            } else {
                self.mean_off_ns
            };
            self.state_end = self.now + exponential(rng, mean);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_in(iops: f64, burst: Burst, secs: f64, seed: u64) -> Vec<u32> {
        let mut rng = Rng::new(seed);
        let mut p = OnOff::new(iops, burst, &mut rng);
        let slots = (secs * 1000.0) as usize;
        let mut per_ms = vec![0u32; slots];
        while let Some(t) = p.next(&mut rng, secs * 1e9) {
            let s = (t / 1e6) as usize;
            if s >= slots {
                break;
            }
            per_ms[s] += 1;
        }
        per_ms
    }

    #[test]
    fn long_run_rate_matches_and_is_bursty() {
        let burst = Burst {
            on_ms: 10.0,
            off_ms: 30.0,
            off_ratio: 0.05,
        };
        let c = count_in(2000.0, burst, 200.0, 3);
        let n = c.len() as f64;
        let mean = c.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = c.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        assert!((mean / 2.0 - 1.0).abs() < 0.05, "mean per ms {mean}");
        // Poisson would give variance == mean; ON/OFF modulation inflates it.
        assert!(var / mean > 2.0, "dispersion {}", var / mean);
    }

    #[test]
    fn poisson_and_zero_rate() {
        let c = count_in(5000.0, Burst::POISSON, 20.0, 9);
        let mean = c.iter().map(|&x| x as f64).sum::<f64>() / c.len() as f64;
        assert!((mean / 5.0 - 1.0).abs() < 0.03, "{mean}");
        let mut rng = Rng::new(1);
        let inf = f64::INFINITY;
        assert_eq!(
            OnOff::new(0.0, Burst::POISSON, &mut rng).next(&mut rng, inf),
            None
        );
        assert_eq!(
            OnOff::new(f64::NAN, Burst::POISSON, &mut rng).next(&mut rng, inf),
            None
        );
        // A vanishing rate stops at the horizon instead of spinning.
        let mut p = OnOff::new(1e-12, Burst::POISSON, &mut rng);
        assert_eq!(p.next(&mut rng, 1e9), None);
    }
}
