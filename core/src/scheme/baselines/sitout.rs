//! Slow-disk sit-out in the style of OpenZFS's RAID-Z outlier detection, over the 4-RAID5
//! layout. Every device I/O's completion latency feeds a per-member EWMA. Periodically each
//! group is checked: a member whose EWMA exceeds the Tukey fence of its peers,
//! `Q3 + insensitivity * IQR`, and is also at least `min_ratio` times the peers' median, is
//! *sat out* for `sit_out_ns`: its reads are rebuilt from parity while writes still go to it
//! (so redundancy is kept). At most `nparity` members of a group sit out at once, and none while
//! a member of the group has failed.
//!
//! Thresholds (our choices, documented in the factory): EWMA weight 0.1 per completion; checks
//! every 100 ms while I/O completes (no timer when idle); insensitivity 50, OpenZFS's default,
//! which is large because latency distributions are heavy-tailed; the 2x median floor keeps a
//! tiny IQR among identical peers from flagging a disk that is only slightly slower (Tail at
//! Store calls a disk slow when it is more than 2x its peers); sit-out lasts 5 s; a member needs
//! 8 samples before it is judged.

use super::BaselineConfig;
use super::array::{RaidCore, ReadPolicy};
use super::geom::{ArrayGeom, place_volumes};
use super::inplace::InPlace;
use crate::engine::ctx::Ctx;
use crate::types::{DiskId, Nanos};

#[derive(Debug, Clone)]
pub struct SitOutConfig {
    pub alpha: f64,
    pub check_interval_ns: Nanos,
    pub sit_out_ns: Nanos,
    pub insensitivity: f64,
    pub min_ratio: f64,
    pub min_samples: u64,
}

impl Default for SitOutConfig {
    fn default() -> Self {
        SitOutConfig {
            alpha: 0.1,
            check_interval_ns: 100_000_000,
            sit_out_ns: 5_000_000_000,
            insensitivity: 50.0,
            min_ratio: 2.0,
            min_samples: 8,
        }
    }
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

pub fn build(cfg: &BaselineConfig) -> Result<InPlace, String> {
    let geo = cfg.geometry()?;
    let (vols, rows) = place_volumes(&geo, &cfg.volumes, true);
    cfg.check_rows(&geo, rows)?;
    let tracker = SitOutTracker::new(cfg.sitout.clone(), cfg.disks);
    let core = RaidCore::new(geo, ReadPolicy::SitOut(tracker), cfg.raid5.batch_delay_ns);
    Ok(InPlace::new("sitout", cfg.level_name(), core, vols, cfg))
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
