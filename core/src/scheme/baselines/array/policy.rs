//! The read policies: when a read of a healthy member is rebuilt from the rest of its stripe
//! instead. ToleRAID avoids a busy member; sit-out (OpenZFS-style) avoids a latency outlier,
//! judged from the completion latencies this engine observes.

use crate::engine::ctx::Ctx;
use crate::scheme::baselines::config::{SitOutConfig, TolerConfig};
use crate::scheme::baselines::geom::ArrayGeom;
use crate::types::{DiskId, Nanos};

/// When a read of a healthy member is rebuilt from the rest of its stripe instead.
pub enum ReadPolicy {
    /// Only when the member failed.
    Plain,
    /// ToleRAID: also when the member looks busy (detector, or a much deeper queue).
    Tolerant(TolerConfig),
    /// OpenZFS-style sit-out of latency outliers.
    SitOut(SitOutTracker),
}

impl ReadPolicy {
    /// Whether the policy wants reads of `disk` rebuilt from parity right now.
    pub(super) fn slow(&self, ctx: &Ctx, geo: &ArrayGeom, disk: DiskId) -> bool {
        match self {
            ReadPolicy::Plain => false,
            ReadPolicy::Tolerant(t) => busy(t, ctx, geo, disk),
            ReadPolicy::SitOut(s) => s.sitting(disk, ctx.now),
        }
    }
}

/// ToleRAID's rule: `disk` is busy when the spike detector marks it unresponsive, or when its
/// queue is at least `queue_min` deep and `queue_factor` times its group peers' mean.
fn busy(t: &TolerConfig, ctx: &Ctx, geo: &ArrayGeom, disk: DiskId) -> bool {
    if ctx.is_unresponsive(disk) {
        return true;
    }
    let q = ctx.inflight(disk);
    if q < t.queue_min {
        return false;
    }
    let g = disk.index() / geo.width;
    let (mut sum, mut n) = (0u64, 0u64);
    for d in geo
        .group_disks(g)
        .filter(|&d| d != disk && !ctx.is_failed(d))
    {
        sum += ctx.inflight(d) as u64;
        n += 1;
    }
    let mean = if n == 0 { 0.0 } else { sum as f64 / n as f64 };
    q as f64 >= t.queue_factor * mean
}

#[derive(Debug, Clone)]
pub struct SitOutTracker {
    cfg: SitOutConfig,
    ewma: Vec<f64>,
    samples: Vec<u64>,
    until: Vec<Nanos>,
    next_check: Option<Nanos>,
    /// Sit-outs started so far.
    pub sit_outs: u64,
}

/// Quantile `q` of sorted `v` by linear interpolation.
fn quantile(v: &[f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// The Tukey fence of `peers` (unsorted): Q3 + k * IQR.
pub fn tukey_fence(peers: &[f64], k: f64) -> f64 {
    let mut v = peers.to_vec();
    v.sort_by(f64::total_cmp);
    let q1 = quantile(&v, 0.25);
    let q3 = quantile(&v, 0.75);
    q3 + k * (q3 - q1)
}

impl SitOutTracker {
    pub fn new(cfg: SitOutConfig, disks: usize) -> Self {
        SitOutTracker {
            cfg,
            ewma: vec![0.0; disks],
            samples: vec![0; disks],
            until: vec![0; disks],
            next_check: None,
            sit_outs: 0,
        }
    }

    pub fn observe(&mut self, disk: DiskId, latency: Nanos, now: Nanos) {
        let i = disk.index();
        let a = self.cfg.alpha;
        self.ewma[i] = if self.samples[i] == 0 {
            latency as f64
        } else {
            (1.0 - a) * self.ewma[i] + a * latency as f64
        };
        self.samples[i] += 1;
        if self.next_check.is_none() {
            self.next_check = Some(now + self.cfg.check_interval_ns);
        }
    }

    pub fn sitting(&self, disk: DiskId, now: Nanos) -> bool {
        now < self.until[disk.index()]
    }

    pub fn ewma(&self, disk: DiskId) -> f64 {
        self.ewma[disk.index()]
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        self.next_check
    }

    /// Run the outlier check if it is due.
    pub fn check(&mut self, ctx: &Ctx, geo: &ArrayGeom) {
        match self.next_check {
            Some(t) if t <= ctx.now => self.next_check = None,
            _ => return,
        }
        let now = ctx.now;
        for g in 0..geo.groups {
            let disks: Vec<DiskId> = geo.group_disks(g).collect();
            if disks.iter().any(|&d| ctx.is_failed(d)) {
                continue;
            }
            let mut sitting = disks.iter().filter(|&&d| self.sitting(d, now)).count();
            let judged: Vec<DiskId> = disks
                .iter()
                .copied()
                .filter(|d| self.samples[d.index()] >= self.cfg.min_samples)
                .collect();
            let mut outliers: Vec<(f64, DiskId)> = Vec::new();
            for &d in &judged {
                if self.sitting(d, now) {
                    continue;
                }
                let peers: Vec<f64> = judged
                    .iter()
                    .filter(|&&p| p != d)
                    .map(|p| self.ewma[p.index()])
                    .collect();
                if peers.len() < 2 {
                    continue;
                }
                let fence = tukey_fence(&peers, self.cfg.insensitivity);
                let mut sorted = peers.clone();
                sorted.sort_by(f64::total_cmp);
                let median = quantile(&sorted, 0.5);
                let e = self.ewma[d.index()];
                if e > fence && e > self.cfg.min_ratio * median {
                    outliers.push((e, d));
                }
            }
            outliers.sort_by(|a, b| b.0.total_cmp(&a.0));
            for (_, d) in outliers {
                if sitting >= geo.nparity {
                    break;
                }
                self.until[d.index()] = now + self.cfg.sit_out_ns;
                self.sit_outs += 1;
                sitting += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn fence_flags_only_far_outliers() {
        let peers = [100.0, 110.0, 105.0, 95.0, 102.0, 108.0];
        let f = tukey_fence(&peers, 3.0);
        assert!(f > 110.0 && f < 160.0, "{f}");
        assert_eq!(tukey_fence(&[5.0, 5.0, 5.0], 50.0), 5.0);
    }
}
