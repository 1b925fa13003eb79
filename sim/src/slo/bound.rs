//! What read/write segregation can gain at most, from the members' load-latency curves alone
//! (no simulation): the throughput a pool sustains at a percentile under the 1 ms rule when
//! every member takes the mixed load, against the best split into read-only and write-only
//! members.
//!
//! A user request rate `T` with read share `r` puts `r T` reads and `c (1 - r) T` writes on
//! the members (`c` copies per write). Mixed: every member at the device write share, load in
//! proportion to its peak at that share (Sandook's "next bucket up" curve), so the pool
//! sustains the sum of those peaks over the device requests per user request. Segregated: a
//! write set `W` takes every write at its members' write-only peaks, the rest every read at
//! their read-only peaks; `T` is bound by whichever side fills first. Both are upper bounds
//! (perfect weights, no reads left on writers, no rotation cost), so their ratio is the most
//! segregation can buy on these drives. Sandook's talk measured 1.8x on its fleet at P90
//! (seed `002_*.txt`); issue 20 asks for 1.5x.

use fusionraid_core::steer::{DeviceCurves, Percentile};
use serde::Serialize;

/// Pools at most this large are searched exhaustively; larger ones by the greedy order.
const EXHAUSTIVE_MEMBERS: usize = 16;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SegregationBound {
    /// User requests per second with every member at the mixed load.
    pub mixed_iops: f64,
    /// User requests per second with the best write set.
    pub segregated_iops: f64,
    /// That write set (member indexes, ascending).
    pub writers: Vec<usize>,
    /// Share of the members' device requests that are writes.
    pub device_write_share: f64,
    /// Share of reads that find every copy of their block on a writer when the copies sit on
    /// distinct members drawn at random: these reads cannot avoid the write set. Where it
    /// exceeds the percentile's allowance (10% at P90), the writers' read latency sets the
    /// percentile and the bound is out of reach.
    pub reads_on_writers: f64,
}

impl SegregationBound {
    /// Segregated over mixed: the most segregation can gain.
    pub fn gain(&self) -> f64 {
        self.segregated_iops / self.mixed_iops
    }
}

/// The bound for `members` under user requests with `read_share` reads and `copies` device
/// writes per user write, at percentile `p`. None when there is nothing to bound (no
/// members, no reads or no writes).
pub fn segregation_bound(
    members: &[&DeviceCurves],
    read_share: f64,
    copies: u32,
    p: Percentile,
) -> Option<SegregationBound> {
    let reads = read_share.clamp(0.0, 1.0);
    let writes = (1.0 - reads) * f64::from(copies);
    if members.len() < 2 || reads <= 0.0 || writes <= 0.0 {
        return None;
    }
    let device_write_share = writes / (reads + writes);
    let mixed: f64 = members
        .iter()
        .map(|c| c.peak_iops(device_write_share, p))
        .sum();
    let read_peak: Vec<f64> = members.iter().map(|c| c.peak_iops(0.0, p)).collect();
    let write_peak: Vec<f64> = members.iter().map(|c| c.peak_iops(1.0, p)).collect();
    let rate = |set: &[usize]| {
        let w: f64 = set.iter().map(|&i| write_peak[i]).sum();
        let r: f64 = read_peak.iter().sum::<f64>() - set.iter().map(|&i| read_peak[i]).sum::<f64>();
        (r / reads).min(w / writes)
    };
    let candidates: Vec<Vec<usize>> = if members.len() <= EXHAUSTIVE_MEMBERS {
        let n = members.len();
        (1..(1u32 << n) - 1)
            .map(|mask| (0..n).filter(|&i| mask & (1 << i) != 0).collect())
            .collect()
    } else {
        // The members that give up least read capacity per unit of write capacity first:
        // the order that is optimal when members can be split fractionally.
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_by(|&a, &b| {
            let ka = read_peak[a] / write_peak[a].max(f64::MIN_POSITIVE);
            let kb = read_peak[b] / write_peak[b].max(f64::MIN_POSITIVE);
            ka.total_cmp(&kb).then(a.cmp(&b))
        });
        (1..members.len())
            .map(|k| {
                let mut s = order[..k].to_vec();
                s.sort_unstable();
                s
            })
            .collect()
    };
    let (segregated_iops, writers) = candidates
        .into_iter()
        .map(|s| (rate(&s), s))
        .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.len().cmp(&a.1.len())))?;
    let reads_on_writers = all_copies_within(members.len(), writers.len(), copies);
    Some(SegregationBound {
        mixed_iops: mixed / (reads + writes),
        segregated_iops,
        writers,
        device_write_share,
        reads_on_writers,
    })
}

/// Probability that `copies` distinct members drawn at random from `n` all fall within a
/// given `w` of them: C(w, copies) / C(n, copies).
fn all_copies_within(n: usize, w: usize, copies: u32) -> f64 {
    (0..copies as usize)
        .map(|k| w.saturating_sub(k) as f64 / (n - k).max(1) as f64)
        .product()
}

#[cfg(test)]
mod tests {
    use fusionraid_core::steer::{CurvePoint, LoadCurve};

    use super::*;

    /// A device whose P90 reaches 1 ms at `peak` IOPS for each (write permille, peak).
    fn dev(peaks: &[(u32, f64)]) -> DeviceCurves {
        let curve = |&(write_permille, peak): &(u32, f64)| LoadCurve {
            write_permille,
            points: [0.25, 0.5, 0.9, 1.0, 1.2]
                .iter()
                .map(|f| {
                    let us = if *f <= 1.0 { 100.0 + 800.0 * f } else { 5000.0 };
                    CurvePoint {
                        iops: f * peak,
                        p50_us: us / 2.0,
                        p90_us: us,
                        p99_us: us * 2.0,
                    }
                })
                .collect(),
        };
        DeviceCurves::new("t", peaks.iter().map(curve).collect()).unwrap()
    }

    #[test]
    fn no_interference_means_no_gain() {
        // Mixed peaks between the read and write peaks, as if reads and writes shared the
        // drive without hurting each other: splitting the pool cannot beat sharing it.
        let d = dev(&[(0, 100e3), (250, 100e3), (1000, 100e3)]);
        let pool = vec![&d; 8];
        let b = segregation_bound(&pool, 0.9, 2, Percentile::P90).unwrap();
        assert!(b.gain() <= 1.0 + 1e-9, "{b:?}");
        // 8 x 100K device requests (95% of the 1 ms load, Sandook's peak), 1.1 per user
        // request.
        assert!((b.mixed_iops - 0.95 * 800e3 / 1.1).abs() < 1.0, "{b:?}");
        assert!((b.device_write_share - 0.2 / 1.1).abs() < 1e-12);
    }

    #[test]
    fn a_mixed_curve_that_collapses_is_what_segregation_recovers() {
        // Reads at 900K alone, 300K next to writes: the profiles' PM1725a shape.
        let d = dev(&[(0, 900e3), (250, 300e3), (1000, 300e3)]);
        let pool = vec![&d; 12];
        let b = segregation_bound(&pool, 0.9, 2, Percentile::P90).unwrap();
        // Peaks are 95% of the 1 ms load. Mixed: 12 x 285K / 1.1. Best split: w writers
        // cover 0.2 T at 285K each, 12 - w readers 0.9 T at 855K each; w = 4 gives
        // min(8 x 855K / 0.9, 4 x 285K / 0.2) = 5.7 M, w = 5 min(6.65 M, 7.125 M) = 6.65 M,
        // w = 6 min(5.7 M, 8.55 M).
        assert!((b.mixed_iops - 12.0 * 285e3 / 1.1).abs() < 1.0, "{b:?}");
        assert_eq!(b.writers.len(), 5, "{b:?}");
        assert!((b.segregated_iops - 6.65e6).abs() < 1.0, "{b:?}");
        assert!((b.gain() - 6.65e6 * 1.1 / 3.42e6).abs() < 1e-9);
        // Two copies both among the 5 writers of 12: 5/12 x 4/11.
        assert!((b.reads_on_writers - 20.0 / 132.0).abs() < 1e-12, "{b:?}");
        assert_eq!(all_copies_within(12, 1, 2), 0.0);
        assert_eq!(all_copies_within(12, 12, 2), 1.0);
    }

    #[test]
    fn the_greedy_order_matches_the_exhaustive_search_on_two_kinds_of_drive() {
        let readish = dev(&[(0, 900e3), (250, 300e3), (1000, 250e3)]);
        let writish = dev(&[(0, 500e3), (250, 400e3), (1000, 450e3)]);
        let small: Vec<&DeviceCurves> = (0..12)
            .map(|i| if i % 3 == 0 { &writish } else { &readish })
            .collect();
        let large: Vec<&DeviceCurves> = (0..24)
            .map(|i| if i % 3 == 0 { &writish } else { &readish })
            .collect();
        let s = segregation_bound(&small, 0.9, 2, Percentile::P90).unwrap();
        let l = segregation_bound(&large, 0.9, 2, Percentile::P90).unwrap();
        // The larger pool is the smaller one twice over: the same best split, doubled.
        assert!(
            (l.segregated_iops - 2.0 * s.segregated_iops).abs() < 1.0,
            "{s:?} {l:?}"
        );
        assert_eq!(l.writers.len(), 2 * s.writers.len());
        // Write-capable drives are the writers.
        assert!(s.writers.iter().all(|i| i % 3 == 0), "{s:?}");
    }

    #[test]
    fn nothing_to_bound_without_reads_writes_or_a_pool() {
        let d = dev(&[(0, 900e3), (1000, 300e3)]);
        assert!(segregation_bound(&[&d, &d], 1.0, 2, Percentile::P90).is_none());
        assert!(segregation_bound(&[&d, &d], 0.0, 2, Percentile::P90).is_none());
        assert!(segregation_bound(&[&d], 0.9, 2, Percentile::P90).is_none());
    }
}
