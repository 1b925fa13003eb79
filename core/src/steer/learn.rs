//! Curves learnt online, for members nobody profiled: every window of completions is a
//! sample of the member's latency at the load and mix it had; samples are kept per mix bucket
//! and load bin, smoothed, and read back as a [`LoadCurve`] per mix once enough bins are
//! filled. A learnt curve knows only loads the member has seen: its peak is no higher than
//! the highest load seen under the saturation latency, so steering sized by it errs on the
//! side of more members taking writes.

use super::curve::{CurvePoint, DeviceCurves, LoadCurve};
use super::window::{Tally, WINDOW_NS};

/// Write shares (permille) samples are filed under: the next one up from the sample's mix,
/// as predictions pick curves.
const MIXES: [u32; 6] = [0, 100, 250, 500, 750, 1000];
/// Load bins: 25% apart from 1,000 4 KiB operations per second.
const BINS: usize = 48;
const FIRST_BIN_IOPS: f64 = 1000.0;
const BIN_RATIO: f64 = 1.25;
/// Weight of a new sample in its bin.
const SMOOTHING: f64 = 0.2;
/// Fewest completions for a window to count as a sample (its percentiles mean something).
const MIN_SAMPLE: u32 = 50;
/// Filled bins a mix needs before its curve is used.
const MIN_POINTS: usize = 3;

#[derive(Clone, Copy, Debug, Default)]
struct Bin {
    samples: u32,
    iops: f64,
    p50_us: f64,
    p90_us: f64,
    p99_us: f64,
}

/// One member's samples.
#[derive(Clone, Debug)]
pub struct Learner {
    bins: Vec<[Bin; BINS]>,
}

impl Default for Learner {
    fn default() -> Self {
        Learner {
            bins: vec![[Bin::default(); BINS]; MIXES.len()],
        }
    }
}

impl Learner {
    /// One window of the member's completions.
    pub fn observe(&mut self, t: &Tally) {
        if t.completed() < MIN_SAMPLE {
            return;
        }
        let (r, w) = t.pages();
        let iops = (r + w) as f64 * 1e9 / WINDOW_NS as f64;
        let permille = (w * 1000).div_ceil(r + w) as u32;
        let mix = MIXES
            .iter()
            .position(|&m| m >= permille)
            .unwrap_or(MIXES.len() - 1);
        let bin = ((iops / FIRST_BIN_IOPS).max(1.0).ln() / BIN_RATIO.ln()) as usize;
        let b = &mut self.bins[mix][bin.min(BINS - 1)];
        let q = |x: f64| t.quantile_ns(x).unwrap_or(0) as f64 / 1e3;
        let a = if b.samples == 0 { 1.0 } else { SMOOTHING };
        let blend = |old: f64, new: f64| old + a * (new - old);
        b.iops = blend(b.iops, iops);
        b.p50_us = blend(b.p50_us, q(0.5));
        b.p90_us = blend(b.p90_us, q(0.9));
        b.p99_us = blend(b.p99_us, q(0.99));
        b.samples = b.samples.saturating_add(1);
    }

    /// The curves learnt so far (mixes with too few filled bins left out); None when no mix
    /// has enough. Latency is made non-decreasing with load, as a queue's is.
    pub fn curves(&self, name: &str) -> Option<DeviceCurves> {
        let curves: Vec<LoadCurve> = MIXES
            .iter()
            .zip(&self.bins)
            .filter_map(|(&mix, bins)| {
                let mut points: Vec<CurvePoint> = Vec::new();
                for b in bins.iter().filter(|b| b.samples > 0) {
                    let mut p = CurvePoint {
                        iops: b.iops,
                        p50_us: b.p50_us.max(1.0),
                        p90_us: b.p90_us.max(1.0),
                        p99_us: b.p99_us.max(1.0),
                    };
                    if let Some(last) = points.last() {
                        if p.iops <= last.iops {
                            continue;
                        }
                        p.p50_us = p.p50_us.max(last.p50_us);
                        p.p90_us = p.p90_us.max(last.p90_us);
                        p.p99_us = p.p99_us.max(last.p99_us);
                    }
                    points.push(p);
                }
                (points.len() >= MIN_POINTS).then_some(LoadCurve {
                    write_permille: mix,
                    points,
                })
            })
            .collect();
        if curves.is_empty() {
            return None;
        }
        DeviceCurves::new(format!("{name} (learnt)"), curves).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steer::window::IoWindow;

    /// A window of `n` 4 KiB reads at `lat_ns` each.
    fn window(n: u64, lat_ns: u64) -> Tally {
        let mut w = IoWindow::new(0);
        for k in 0..n {
            w.record(1 + k * (WINDOW_NS / n.max(1) / 2), lat_ns, false, 4096);
        }
        w.last(WINDOW_NS + 1).unwrap().clone()
    }

    #[test]
    fn a_member_seen_at_several_loads_gets_a_rising_read_curve() {
        let mut l = Learner::default();
        assert!(l.curves("m").is_none());
        // 10k, 50k and 200k IOPS at rising latency; a quiet window is no sample.
        for _ in 0..5 {
            l.observe(&window(100, 80_000));
            l.observe(&window(500, 120_000));
            l.observe(&window(2000, 600_000));
            l.observe(&window(10, 5_000_000));
        }
        let c = l.curves("m").expect("three loads seen");
        assert_eq!(c.curves.len(), 1);
        let read = c.curve_for(0.0);
        assert_eq!(read.write_permille, 0);
        assert_eq!(read.points.len(), 3);
        assert!(
            read.points
                .windows(2)
                .all(|p| p[0].iops < p[1].iops && p[0].p90_us <= p[1].p90_us)
        );
        assert!(read.points[2].p90_us > 500.0 && read.points[0].p90_us < 100.0);
        // The peak is what was seen under 1 ms, no more.
        let peak = read.peak_iops(crate::steer::Percentile::P90);
        assert!(peak > 150_000.0 && peak <= 200_000.0, "{peak}");
    }
}
