//! Merging several record streams into one, in time order.

use fusionraid_core::Nanos;

use super::generator::Generator;
use super::spec::Workload;
use crate::trace::IoRecord;

/// Time-ordered merge of sources that are each in time order. Equal times are broken by
/// source position, so the merge is deterministic. Streams are not rewritten: give each
/// source its own stream id (as [`Mix::of_workloads`] does).
///
/// Memory: one buffered record per source.
pub struct Mix<I> {
    sources: Vec<I>,
    heads: Vec<Option<IoRecord>>,
}

impl<I: Iterator<Item = IoRecord>> Mix<I> {
    pub fn new(sources: Vec<I>) -> Self {
        let mut sources = sources;
        let heads = sources.iter_mut().map(Iterator::next).collect();
        Mix { sources, heads }
    }
}

impl Mix<Generator> {
    /// The workloads run together for `duration_ns`; the i-th gets stream `i`. Each uses its
    /// [`Workload::seed_for`] seed, so a workload's records do not depend on its partners.
    pub fn of_workloads(workloads: &[Workload], seed: u64, duration_ns: Nanos) -> Self {
        let gens = workloads
            .iter()
            .enumerate()
            .map(|(i, w)| w.generator_for(seed, i as u32, duration_ns))
            .collect();
        Mix::new(gens)
    }
}

impl<I: Iterator<Item = IoRecord>> Iterator for Mix<I> {
    type Item = IoRecord;

    fn next(&mut self) -> Option<IoRecord> {
        // Linear scan: mixes have a handful of sources, where a heap would cost more.
        let (i, _) = self
            .heads
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.map(|r| (i, r.time_ns)))
            .min_by_key(|&(i, t)| (t, i))?;
        let next = self.sources[i].next();
        std::mem::replace(&mut self.heads[i], next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::IoKind;

    fn at(t: Nanos, stream: u32) -> IoRecord {
        IoRecord {
            time_ns: t,
            kind: IoKind::Read,
            offset: 0,
            len: 4096,
            stream,
        }
    }

    #[test]
    fn merges_by_time_then_source() {
        let a = vec![at(1, 0), at(5, 0), at(9, 0)];
        let b = vec![at(0, 1), at(5, 1), at(6, 1)];
        let out: Vec<(Nanos, u32)> = Mix::new(vec![a.into_iter(), b.into_iter()])
            .map(|r| (r.time_ns, r.stream))
            .collect();
        assert_eq!(out, vec![(0, 1), (1, 0), (5, 0), (5, 1), (6, 1), (9, 0)]);
    }

    #[test]
    fn workload_mix_is_ordered_and_tagged() {
        let ws = [Workload::Exchange, Workload::Proxy, Workload::Tpcc];
        let recs: Vec<_> = Mix::of_workloads(&ws, 11, 200_000_000).collect();
        assert!(recs.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
        for s in 0..3 {
            assert!(recs.iter().any(|r| r.stream == s));
        }
        // A workload's records do not depend on its partners.
        let alone: Vec<_> = Workload::Proxy.generator_for(11, 1, 200_000_000).collect();
        let in_mix: Vec<_> = recs.iter().filter(|r| r.stream == 1).copied().collect();
        assert_eq!(alone, in_mix);
    }
}
