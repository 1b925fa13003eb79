//! A short trace repeated back to back, for runs longer than the trace itself.

use std::sync::Arc;

use fusionraid_core::Nanos;

use super::IoRecord;

/// Endless repetition of a time-ordered record list whose first record is at time 0 (as the
/// readers return them). Round `k` is shifted by `k` periods; a period is the trace's span
/// plus its mean gap between arrivals, so the long-run arrival rate is the trace's own.
/// Addresses are not changed: every round touches the same blocks again.
#[derive(Clone, Debug)]
pub struct Looped {
    records: Arc<[IoRecord]>,
    period: Nanos,
    next: usize,
    round: u64,
}

impl Looped {
    pub fn new(records: Vec<IoRecord>) -> Self {
        let n = records.len() as u64;
        let span = records.last().map_or(0, |r| r.time_ns);
        let gap = if n > 1 { span / (n - 1) } else { 0 };
        Looped {
            records: records.into(),
            period: (span + gap).max(1),
            next: 0,
            round: 0,
        }
    }

    /// Time between the starts of two rounds.
    pub fn period_ns(&self) -> Nanos {
        self.period
    }
}

impl Iterator for Looped {
    type Item = IoRecord;

    fn next(&mut self) -> Option<IoRecord> {
        if self.records.is_empty() {
            return None;
        }
        let mut r = self.records[self.next];
        r.time_ns = r
            .time_ns
            .saturating_add(self.period.saturating_mul(self.round));
        self.next += 1;
        if self.next == self.records.len() {
            self.next = 0;
            self.round += 1;
        }
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::IoKind;

    fn at(t: Nanos, offset: u64) -> IoRecord {
        IoRecord {
            time_ns: t,
            kind: IoKind::Write,
            offset,
            len: 4096,
            stream: 0,
        }
    }

    #[test]
    fn repeats_with_the_mean_gap_between_rounds() {
        let l = Looped::new(vec![at(0, 0), at(10, 1), at(20, 2)]);
        assert_eq!(l.period_ns(), 30);
        let got: Vec<(Nanos, u64)> = l.take(7).map(|r| (r.time_ns, r.offset)).collect();
        assert_eq!(
            got,
            vec![(0, 0), (10, 1), (20, 2), (30, 0), (40, 1), (50, 2), (60, 0)]
        );
        assert_eq!(Looped::new(vec![]).next(), None);
        let one: Vec<Nanos> = Looped::new(vec![at(0, 0)])
            .take(3)
            .map(|r| r.time_ns)
            .collect();
        assert_eq!(one, vec![0, 1, 2]);
    }
}
