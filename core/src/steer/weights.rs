//! Profile-guided load shares: how a total load should be split over members so their
//! predicted latencies come out equal (water filling over their load-latency curves).
//!
//! Sandook's controller (`mit-sandook/sandook`, its weight computation) does this greedily:
//! repeatedly move a small share of the load from the member predicted slowest to the one
//! predicted fastest, stop once predictions agree within a bound, loosen the bound when they
//! will not, and fall back to shares proportional to the members' peaks when the load is near
//! the pool's total peak or the loop does not settle. This is our implementation of that
//! description; it starts from the previous shares, so a recomputation on a slowly changing
//! load takes a few steps.

use super::curve::{LoadCurve, Percentile};

/// How the water filling proceeds (Sandook's constants by default).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FillParams {
    /// Share of the load moved per step.
    pub step: f64,
    /// Relative spread of predicted latencies accepted at first, and added after each
    /// `steps_per_bound` steps without agreement.
    pub bound: f64,
    pub steps_per_bound: usize,
    /// Steps before giving up for the peak-proportional fallback.
    pub max_steps: usize,
    /// Above this share of the members' summed peaks, use the fallback directly.
    pub fallback_load: f64,
    pub percentile: Percentile,
}

impl Default for FillParams {
    fn default() -> Self {
        FillParams {
            step: 0.005,
            bound: 0.05,
            steps_per_bound: 100,
            max_steps: 2000,
            fallback_load: 0.95,
            percentile: Percentile::P90,
        }
    }
}

/// Shares proportional to each eligible member's peak (zero for the others).
pub fn peak_shares(curves: &[Option<&LoadCurve>], p: Percentile) -> Vec<f64> {
    let peaks: Vec<f64> = curves
        .iter()
        .map(|c| c.map_or(0.0, |c| c.peak_iops(p)))
        .collect();
    normalised(peaks)
}

fn normalised(mut w: Vec<f64>) -> Vec<f64> {
    let sum: f64 = w.iter().sum();
    if sum > 0.0 {
        w.iter_mut().for_each(|x| *x /= sum);
    }
    w
}

/// Shares of `total_iops` for the members whose curve is given (the others get none), from the
/// previous shares `start`. They sum to 1 when any member is eligible.
pub fn water_fill(
    curves: &[Option<&LoadCurve>],
    total_iops: f64,
    start: &[f64],
    fp: &FillParams,
) -> Vec<f64> {
    assert_eq!(curves.len(), start.len(), "one start share per member");
    let fallback = peak_shares(curves, fp.percentile);
    let eligible: Vec<usize> = (0..curves.len()).filter(|&i| curves[i].is_some()).collect();
    let peak_sum: f64 = curves
        .iter()
        .flatten()
        .map(|c| c.peak_iops(fp.percentile))
        .sum();
    if eligible.len() <= 1 || total_iops <= 0.0 || total_iops >= fp.fallback_load * peak_sum {
        return fallback;
    }
    let mut w = normalised(
        (0..curves.len())
            .map(|i| {
                if curves[i].is_some() {
                    start[i].max(0.0)
                } else {
                    0.0
                }
            })
            .collect(),
    );
    if w.iter().sum::<f64>() <= 0.0 {
        w = fallback.clone();
    }
    let predict = |i: usize, share: f64| {
        curves[i]
            .expect("eligible member")
            .predict_us(share * total_iops, fp.percentile)
    };
    let mut bound = fp.bound;
    for step in 0..fp.max_steps {
        let (mut lo, mut hi) = (eligible[0], eligible[0]);
        let (mut lo_us, mut hi_us) = (f64::INFINITY, f64::NEG_INFINITY);
        for &i in &eligible {
            let us = predict(i, w[i]);
            if us < lo_us {
                (lo, lo_us) = (i, us);
            }
            // Only a member with load to give can be the donor.
            if us > hi_us && w[i] > 0.0 {
                (hi, hi_us) = (i, us);
            }
        }
        if hi == lo || hi_us - lo_us <= bound * lo_us {
            return w;
        }
        let moved = fp.step.min(w[hi]);
        w[hi] -= moved;
        w[lo] += moved;
        if (step + 1) % fp.steps_per_bound == 0 {
            bound += fp.bound;
        }
    }
    fallback
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steer::curve::CurvePoint;

    /// A member whose P90 grows linearly from 50 us at no load to 1 ms at `peak`.
    fn linear(peak: f64) -> LoadCurve {
        let points = (1..=10)
            .map(|k| {
                let iops = peak * k as f64 / 10.0;
                let us = 50.0 + 950.0 * k as f64 / 10.0;
                CurvePoint {
                    iops,
                    p50_us: us / 2.0,
                    p90_us: us,
                    p99_us: us * 2.0,
                }
            })
            .collect();
        LoadCurve {
            write_permille: 0,
            points,
        }
    }

    #[test]
    fn equal_members_get_equal_shares() {
        let a = linear(100_000.0);
        let curves = vec![Some(&a), Some(&a), Some(&a)];
        let w = water_fill(&curves, 150_000.0, &[1.0, 0.0, 0.0], &FillParams::default());
        for x in &w {
            assert!((x - 1.0 / 3.0).abs() < 0.03, "{w:?}");
        }
    }

    #[test]
    fn a_faster_member_gets_more_and_predictions_meet() {
        let (fast, slow) = (linear(200_000.0), linear(50_000.0));
        let curves = vec![Some(&fast), Some(&slow)];
        let fp = FillParams::default();
        let total = 120_000.0;
        let w = water_fill(&curves, total, &[0.5, 0.5], &fp);
        assert!(w[0] > 0.7, "{w:?}");
        let (a, b) = (
            fast.predict_us(w[0] * total, fp.percentile),
            slow.predict_us(w[1] * total, fp.percentile),
        );
        assert!((a - b).abs() <= 0.1 * a.min(b), "{a} vs {b}");
    }

    #[test]
    fn ineligible_members_get_nothing_and_overload_falls_back_to_peaks() {
        let (fast, slow) = (linear(200_000.0), linear(50_000.0));
        let curves = vec![Some(&fast), None, Some(&slow)];
        let w = water_fill(&curves, 10_000.0, &[0.3, 0.3, 0.4], &FillParams::default());
        assert_eq!(w[1], 0.0);
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let over = water_fill(&curves, 1e9, &[0.3, 0.3, 0.4], &FillParams::default());
        assert!(
            (over[0] - 0.8).abs() < 1e-9 && (over[2] - 0.2).abs() < 1e-9,
            "{over:?}"
        );
    }
}
