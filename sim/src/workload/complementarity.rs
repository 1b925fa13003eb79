//! Instantaneous complementarity (FusionRAID §2.1).
//!
//! Time is cut into slots (1 ms in the paper). In each slot the workloads of a mix are ranked
//! by the bytes they moved; the heavier half (the ⌊k/2⌋ heaviest of k, the paper's "giant"
//! set) is compared with the slot's total. A slot is *complementary* when the heavier half
//! carries more than 75% of the bytes: the lighter half then has spare capacity to lend.
//!
//! Choices where the paper is silent, made here and used throughout:
//! * Slots in which no workload of the mix moved a byte are excluded (they say nothing about
//!   sharing); the result is the share of *non-empty* slots that are complementary.
//! * A request's bytes all count in the slot of its arrival (no service-time spreading), and
//!   trims count for nothing (they move no data).
//! * Ties in the ranking do not matter: the heavier half's total is the same either way.

use std::fmt;

use fusionraid_core::Nanos;

use super::spec::Workload;
use crate::trace::{IoKind, IoRecord};

/// The paper's averages over all 28 two-workload and all 70 four-workload mixes.
pub const PAPER_TWO_WAY: f64 = 0.678;
pub const PAPER_FOUR_WAY: f64 = 0.914;

/// Verdict for one slot given each workload's bytes (reordered in place): `None` for an empty
/// slot, otherwise whether the heavier half carries > 75% of the bytes.
pub fn slot_is_complementary(bytes: &mut [u64]) -> Option<bool> {
    let total: u128 = bytes.iter().map(|&b| b as u128).sum();
    if total == 0 {
        return None;
    }
    bytes.sort_unstable_by(|a, b| b.cmp(a));
    let giant: u128 = bytes[..bytes.len() / 2].iter().map(|&b| b as u128).sum();
    // giant / total > 3/4, in exact integer arithmetic.
    Some(4 * giant > 3 * total)
}

fn data_bytes(r: &IoRecord) -> u64 {
    if r.kind == IoKind::Trim { 0 } else { r.len }
}

/// Share (`0..=1`) of non-empty `slot_ns` slots that are complementary, for records of
/// streams `0..workloads` (others are ignored). Records must be in time order, as a [`Mix`]
/// yields them; memory is `O(workloads)`. Returns 0 when there are fewer than two workloads
/// or no non-empty slot.
///
/// [`Mix`]: super::Mix
pub fn complementarity(
    records: impl IntoIterator<Item = IoRecord>,
    workloads: usize,
    slot_ns: Nanos,
) -> f64 {
    if workloads < 2 {
        return 0.0;
    }
    let slot_ns = slot_ns.max(1);
    let mut bytes = vec![0u64; workloads];
    let mut current: Option<u64> = None;
    let mut tally = Tally::default();
    for r in records {
        let stream = r.stream as usize;
        if stream >= workloads {
            continue;
        }
        let slot = r.time_ns / slot_ns;
        if current != Some(slot) {
            if current.is_some() {
                tally.add(slot_is_complementary(&mut bytes));
                bytes.iter_mut().for_each(|x| *x = 0);
            }
            current = Some(slot);
        }
        bytes[stream] = bytes[stream].saturating_add(data_bytes(&r));
    }
    if current.is_some() {
        tally.add(slot_is_complementary(&mut bytes));
    }
    tally.share()
}

#[derive(Default)]
struct Tally {
    slots: u64,
    complementary: u64,
}

impl Tally {
    fn add(&mut self, verdict: Option<bool>) {
        if let Some(c) = verdict {
            self.slots += 1;
            self.complementary += c as u64;
        }
    }

    fn share(&self) -> f64 {
        if self.slots == 0 {
            0.0
        } else {
            self.complementary as f64 / self.slots as f64
        }
    }
}

/// Bytes per slot of one workload over a fixed window, so many mixes of the same workloads can
/// be evaluated without regenerating records. Memory: one `u64` per slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotSeries {
    slot_ns: Nanos,
    bytes: Vec<u64>,
}

impl SlotSeries {
    /// Bytes of `records` per `slot_ns` slot in `[0, duration_ns)`; later records are ignored.
    pub fn from_records(
        records: impl IntoIterator<Item = IoRecord>,
        slot_ns: Nanos,
        duration_ns: Nanos,
    ) -> Self {
        let slot_ns = slot_ns.max(1);
        let slots = duration_ns.div_ceil(slot_ns) as usize;
        let mut bytes = vec![0u64; slots];
        for r in records {
            if let Some(b) = bytes.get_mut((r.time_ns / slot_ns) as usize) {
                *b = b.saturating_add(data_bytes(&r));
            }
        }
        SlotSeries { slot_ns, bytes }
    }

    pub fn slot_ns(&self) -> Nanos {
        self.slot_ns
    }

    pub fn bytes(&self) -> &[u64] {
        &self.bytes
    }
}

/// [`complementarity`] of the mix of the given series (same slot width assumed; the shortest
/// series bounds the window).
pub fn complementarity_of(series: &[&SlotSeries]) -> f64 {
    if series.len() < 2 {
        return 0.0;
    }
    let slots = series.iter().map(|s| s.bytes.len()).min().unwrap_or(0);
    let mut bytes = vec![0u64; series.len()];
    let mut tally = Tally::default();
    for i in 0..slots {
        for (b, s) in bytes.iter_mut().zip(series) {
            *b = s.bytes[i];
        }
        tally.add(slot_is_complementary(&mut bytes));
    }
    tally.share()
}

/// Complementarity of one mix.
#[derive(Clone, Debug, PartialEq)]
pub struct MixResult {
    pub workloads: Vec<Workload>,
    pub share: f64,
}

/// Complementarity of every 2- and 4-workload mix of the eight Table 4 generators, to set next
/// to the paper's 67.8% / 91.4%. A report, not a target: the generators are not tuned to it.
#[derive(Clone, Debug, PartialEq)]
pub struct ComplementarityReport {
    pub seed: u64,
    pub duration_ns: Nanos,
    pub slot_ns: Nanos,
    /// All 28 pairs.
    pub pairs: Vec<MixResult>,
    /// All 70 quadruples.
    pub quads: Vec<MixResult>,
}

impl ComplementarityReport {
    /// Generate each workload once for `duration_ns` (seeded as in every mix, see
    /// [`Workload::seed_for`]) and evaluate all mixes on `slot_ns` slots.
    pub fn run(seed: u64, duration_ns: Nanos, slot_ns: Nanos) -> Self {
        let series: Vec<SlotSeries> = Workload::ALL
            .iter()
            .map(|w| {
                SlotSeries::from_records(
                    w.generator_for(seed, 0, duration_ns),
                    slot_ns,
                    duration_ns,
                )
            })
            .collect();
        let mixes = |k: u32| -> Vec<MixResult> {
            (0u32..1 << Workload::ALL.len())
                .filter(|m| m.count_ones() == k)
                .map(|m| {
                    let idx: Vec<usize> = (0..Workload::ALL.len())
                        .filter(|i| m >> i & 1 == 1)
                        .collect();
                    let parts: Vec<&SlotSeries> = idx.iter().map(|&i| &series[i]).collect();
                    MixResult {
                        workloads: idx.iter().map(|&i| Workload::ALL[i]).collect(),
                        share: complementarity_of(&parts),
                    }
                })
                .collect()
        };
        ComplementarityReport {
            seed,
            duration_ns,
            slot_ns,
            pairs: mixes(2),
            quads: mixes(4),
        }
    }

    /// Mean share over the 28 pairs.
    pub fn two_way(&self) -> f64 {
        mean(&self.pairs)
    }

    /// Mean share over the 70 quadruples.
    pub fn four_way(&self) -> f64 {
        mean(&self.quads)
    }
}

fn mean(r: &[MixResult]) -> f64 {
    if r.is_empty() {
        0.0
    } else {
        r.iter().map(|m| m.share).sum::<f64>() / r.len() as f64
    }
}

impl fmt::Display for ComplementarityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "instantaneous complementarity: {} us slots, {:.0} s per workload, seed {} \
             (share of non-empty slots where the heavier half moves > 75% of the bytes)",
            self.slot_ns / 1000,
            self.duration_ns as f64 / 1e9,
            self.seed
        )?;
        writeln!(
            f,
            "  2-workload mixes ({}): {:5.1}%   paper {:.1}%",
            self.pairs.len(),
            self.two_way() * 100.0,
            PAPER_TWO_WAY * 100.0
        )?;
        writeln!(
            f,
            "  4-workload mixes ({}): {:5.1}%   paper {:.1}%",
            self.quads.len(),
            self.four_way() * 100.0,
            PAPER_FOUR_WAY * 100.0
        )?;
        let over_half = self.pairs.iter().filter(|m| m.share > 0.5).count();
        writeln!(
            f,
            "  pairs complementary in over half of their slots: {over_half} of {} (paper: 25 of 28)",
            self.pairs.len()
        )?;
        for m in &self.pairs {
            let names: Vec<&str> = m.workloads.iter().map(|w| w.name()).collect();
            writeln!(f, "    {:<24} {:5.1}%", names.join("+"), m.share * 100.0)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(t: Nanos, stream: u32, len: u64) -> IoRecord {
        IoRecord {
            time_ns: t,
            kind: IoKind::Write,
            offset: 0,
            len,
            stream,
        }
    }

    #[test]
    fn slot_verdicts() {
        assert_eq!(slot_is_complementary(&mut [0, 0]), None);
        assert_eq!(slot_is_complementary(&mut [10, 0]), Some(true));
        assert_eq!(slot_is_complementary(&mut [3, 1]), Some(false)); // exactly 75%: not > 75%
        assert_eq!(slot_is_complementary(&mut [1, 4]), Some(true));
        assert_eq!(slot_is_complementary(&mut [5, 5, 1, 1]), Some(true)); // 10/12
        assert_eq!(slot_is_complementary(&mut [5, 1, 5, 2]), Some(true)); // 10/13
        assert_eq!(slot_is_complementary(&mut [5, 1, 5, 3]), Some(false)); // 10/14
        assert_eq!(
            slot_is_complementary(&mut [u64::MAX, u64::MAX]),
            Some(false)
        );
    }

    #[test]
    fn share_over_records_excludes_empty_slots() {
        let ms = 1_000_000;
        let recs = vec![
            rec(0, 0, 100),          // slot 0: only stream 0 -> complementary
            rec(2 * ms, 0, 100),     // slot 2: 100 vs 100 -> not
            rec(2 * ms + 5, 1, 100), //
            rec(3 * ms, 1, 4096),    // slot 3: 4096 vs 1 -> complementary
            rec(3 * ms + 1, 0, 1),   //
            rec(4 * ms, 7, 1),       // stream outside the mix: ignored, slot stays empty
            IoRecord {
                kind: IoKind::Trim,
                ..rec(9 * ms, 0, 1 << 20)
            }, // moves no data
        ];
        let c = complementarity(recs.clone(), 2, ms);
        assert!((c - 2.0 / 3.0).abs() < 1e-12, "{c}");
        assert_eq!(complementarity(recs.clone(), 1, ms), 0.0);
        assert_eq!(complementarity(Vec::new(), 2, ms), 0.0);

        let a =
            SlotSeries::from_records(recs.iter().copied().filter(|r| r.stream == 0), ms, 10 * ms);
        let b =
            SlotSeries::from_records(recs.iter().copied().filter(|r| r.stream == 1), ms, 10 * ms);
        assert_eq!(a.bytes().len(), 10);
        assert!((complementarity_of(&[&a, &b]) - 2.0 / 3.0).abs() < 1e-12);
    }
}
