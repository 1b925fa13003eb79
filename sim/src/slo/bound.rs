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

/// How few of a read-only tenant's reads any write set leaves on writers, the members whose
/// reads wait behind flash programs (issue 20's isolation target). The fewest writers are
/// the members with the highest write-only peaks whose sum carries the pool's device writes;
/// every larger set leaves more reads on writers, so this is a floor for every placement
/// that keeps writes on a write set.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IsolationFloor {
    /// The fewest members whose write-only peaks carry the device writes.
    pub writers: usize,
    /// Share of reads of single-copy RAID blocks that land on a writer and cannot be rebuilt
    /// without reading another writer (more writers in the stripe than it has parity).
    pub parity_reads_on_writers: f64,
    /// Share of reads whose `copies` copies (on distinct members at random) are all on
    /// writers.
    pub replica_reads_on_writers: f64,
}

/// The floor for `members` carrying `device_write_iops` 4 KiB writes per second, at
/// percentile `p`, for stripes `width` wide with `nparity` parity columns and replicas of
/// `copies`. None when the members cannot carry the writes at all.
pub fn isolation_floor(
    members: &[&DeviceCurves],
    device_write_iops: f64,
    p: Percentile,
    width: usize,
    nparity: usize,
    copies: u32,
) -> Option<IsolationFloor> {
    let mut peaks: Vec<f64> = members.iter().map(|c| c.peak_iops(1.0, p)).collect();
    peaks.sort_by(|a, b| b.total_cmp(a));
    let mut carried = 0.0;
    let writers = peaks.iter().position(|&x| {
        carried += x;
        carried >= device_write_iops
    })? + 1;
    let writers = writers.max(copies as usize);
    let n = members.len();
    Some(IsolationFloor {
        writers,
        parity_reads_on_writers: parity_reads_on_writers(n, width, nparity, writers),
        replica_reads_on_writers: all_copies_within(n, writers, copies),
    })
}

/// Share of reads of RAID columns (spread evenly over `n` members, stripes of `width` on
/// distinct members) whose member is one of `w` writers and whose stripe holds more than
/// `nparity - 1` other writers, so no rebuild avoids them: `w/n` times the hypergeometric
/// tail of writers among the stripe's other columns.
pub fn parity_reads_on_writers(n: usize, width: usize, nparity: usize, w: usize) -> f64 {
    if w == 0 || n == 0 {
        return 0.0;
    }
    let others = width.saturating_sub(1);
    let pool = n - 1;
    let other_writers = w - 1;
    // P(X = x) for x writers among `others` drawn from `pool` holding `other_writers`.
    let ln_choose = |a: usize, b: usize| -> f64 {
        if b > a {
            return f64::NEG_INFINITY;
        }
        (1..=b).map(|i| ((a - b + i) as f64 / i as f64).ln()).sum()
    };
    let total = ln_choose(pool, others);
    let blocked: f64 = (nparity..=others.min(other_writers))
        .map(|x| {
            (ln_choose(other_writers, x) + ln_choose(pool - other_writers, others - x) - total)
                .exp()
        })
        // From +0.0: an empty f64 sum is -0.0, which prints as "-0.0%".
        .fold(0.0, |a, b| a + b);
    w as f64 / n as f64 * blocked.min(1.0)
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

    #[test]
    fn parity_reads_on_writers_counts_stripes_with_more_writers_than_parity() {
        // One writer: every read of it is rebuilt from the rest, RAID5 or RAID6.
        assert_eq!(parity_reads_on_writers(12, 6, 1, 1), 0.0);
        // Two writers of 12, RAID5 5+1: a read of a writer (2/12) is stuck when the other
        // writer is among its stripe's 5 other columns (5/11).
        let r5 = parity_reads_on_writers(12, 6, 1, 2);
        assert!((r5 - 2.0 / 12.0 * 5.0 / 11.0).abs() < 1e-12, "{r5}");
        // RAID6 4+2 tolerates that one: stuck only with both other writers in the stripe.
        assert_eq!(parity_reads_on_writers(12, 6, 2, 2), 0.0);
        let r6 = parity_reads_on_writers(12, 6, 2, 3);
        let want = 3.0 / 12.0 * (10.0 * 9.0 * 8.0 * 7.0 * 6.0 / 120.0 / 2.0) / 462.0;
        // C(2,2) C(9,3) / C(11,5) = 84 / 462.
        assert!(
            (r6 - 3.0 / 12.0 * 84.0 / 462.0).abs() < 1e-12,
            "{r6} {want}"
        );
        // Every member a writer: every read is stuck.
        assert!((parity_reads_on_writers(12, 6, 1, 12) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn the_isolation_floor_takes_the_fewest_writers_that_carry_the_writes() {
        let fast = dev(&[(0, 900e3), (1000, 400e3)]);
        let slow = dev(&[(0, 900e3), (1000, 100e3)]);
        let pool: Vec<&DeviceCurves> = (0..12).map(|i| if i < 3 { &fast } else { &slow }).collect();
        // 950K writes/s: the three fast drives (3 x 380K) carry it, two do not.
        let f = isolation_floor(&pool, 950e3, Percentile::P90, 6, 1, 2).unwrap();
        assert_eq!(f.writers, 3, "{f:?}");
        assert!((f.replica_reads_on_writers - 3.0 / 12.0 * 2.0 / 11.0).abs() < 1e-12);
        assert!((f.parity_reads_on_writers - parity_reads_on_writers(12, 6, 1, 3)).abs() < 1e-15);
        // More than the pool can write: no floor.
        assert!(isolation_floor(&pool, 10e6, Percentile::P90, 6, 1, 2).is_none());
        // A tiny write rate still needs one writer per copy.
        let g = isolation_floor(&pool, 1.0, Percentile::P90, 6, 1, 2).unwrap();
        assert_eq!(g.writers, 2);
    }
}
