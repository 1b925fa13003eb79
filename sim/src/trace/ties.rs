//! Spreading records that share one coarse timestamp across the tick, so a replay does not
//! fire a whole second's requests at one instant. Deterministic: only record order matters.

use std::collections::VecDeque;
use std::sync::Arc;

use fusionraid_core::Nanos;

use super::error::TraceError;
use super::lines::Numbered;

/// Holds the records of the current tick; when a later time (or the end) arrives, releases
/// them with the i-th of k at `t + i * tick / k`. Input must be in time order (it comes after
/// `Ordered`), so the spread records stay before the next tick's.
pub(crate) struct SpreadTies<I> {
    inner: I,
    file: Arc<str>,
    tick: Nanos,
    /// Most records held for one tick (`TraceOptions::MAX_TIE_GROUP` outside tests).
    cap: usize,
    group: Vec<Numbered>,
    ready: VecDeque<Numbered>,
    /// A record of the next tick, read while closing the current group.
    pending: Option<Numbered>,
    /// A tick that overflowed the group cap: its records pass through unspread.
    overflowed: Option<Nanos>,
    inner_done: bool,
}

impl<I> SpreadTies<I> {
    pub(crate) fn new(inner: I, file: Arc<str>, tick: Nanos, cap: usize) -> Self {
        SpreadTies {
            inner,
            file,
            tick,
            cap,
            group: Vec::new(),
            ready: VecDeque::new(),
            pending: None,
            overflowed: None,
            inner_done: false,
        }
    }

    /// Releases the held group spread over `span` ns (0: not spread).
    fn flush(&mut self, span: Nanos) {
        let k = self.group.len() as u128;
        let tick = span as u128;
        for (i, mut n) in self.group.drain(..).enumerate() {
            let shift = (i as u128 * tick / k) as Nanos;
            n.rec.time_ns = n.rec.time_ns.saturating_add(shift);
            self.ready.push_back(n);
        }
    }
}

impl<I: Iterator<Item = Result<Numbered, TraceError>>> Iterator for SpreadTies<I> {
    type Item = Result<Numbered, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(n) = self.ready.pop_front() {
                return Some(Ok(n));
            }
            if let Some(n) = self.pending.take() {
                self.group.push(n);
            }
            if self.inner_done {
                if self.group.is_empty() {
                    return None;
                }
                self.flush(self.tick);
                continue;
            }
            match self.inner.next() {
                None => self.inner_done = true,
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(n)) if self.overflowed == Some(n.rec.time_ns) => return Some(Ok(n)),
                Some(Ok(n)) => {
                    let same = self
                        .group
                        .first()
                        .is_none_or(|g| g.rec.time_ns == n.rec.time_ns);
                    if !same {
                        // Times need not be multiples of the tick (DiskSim decimals with a
                        // coarse unit): spreading past the next record would put it out of
                        // order, so the spread stops short of it.
                        let t = self.group.first().map_or(0, |g| g.rec.time_ns);
                        let span = self.tick.min(n.rec.time_ns.saturating_sub(t));
                        self.pending = Some(n);
                        self.flush(span);
                    } else if self.group.len() >= self.cap {
                        // Bounded memory: report it, then let this tick through unspread
                        // (still in order) instead of buffering without limit.
                        let msg = format!(
                            "more than {} records share one timestamp; they are not spread",
                            self.cap
                        );
                        let line = n.line;
                        self.overflowed = Some(n.rec.time_ns);
                        self.group.push(n);
                        self.flush(0);
                        return Some(Err(TraceError::line(&self.file, line, msg)));
                    } else {
                        self.group.push(n);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{IoKind, IoRecord};

    fn spread(times: &[Nanos], tick: Nanos) -> Vec<Nanos> {
        spread_capped(times, tick, 100)
            .into_iter()
            .map(|r| r.unwrap())
            .collect()
    }

    fn spread_capped(times: &[Nanos], tick: Nanos, cap: usize) -> Vec<Result<Nanos, u64>> {
        let input = times.iter().enumerate().map(|(i, &t)| {
            Ok(Numbered {
                line: i as u64 + 1,
                rec: IoRecord {
                    time_ns: t,
                    kind: IoKind::Write,
                    offset: 0,
                    len: 4096,
                    stream: 0,
                },
            })
        });
        SpreadTies::new(input, "t".into(), tick, cap)
            .map(|r| {
                r.map(|n| n.rec.time_ns)
                    .map_err(|e| e.line_number().unwrap())
            })
            .collect()
    }

    #[test]
    fn spreads_each_tick_evenly() {
        assert_eq!(
            spread(&[0, 0, 0, 0, 1000, 2000, 2000], 1000),
            vec![0, 250, 500, 750, 1000, 2000, 2500]
        );
        assert_eq!(spread(&[], 1000), Vec::<Nanos>::new());
    }

    #[test]
    fn spread_stops_before_the_next_record() {
        // Found by tests/trace_fuzz.rs: a next record inside the tick came out before the
        // group's last spread record.
        assert_eq!(spread(&[0, 0, 0, 500], 1000), vec![0, 166, 333, 500]);
    }

    #[test]
    fn nanosecond_tick_changes_nothing() {
        assert_eq!(spread(&[5, 5, 5, 9], 1), vec![5, 5, 5, 9]);
    }

    #[test]
    fn oversized_tick_is_reported_and_passed_through_in_order() {
        let out = spread_capped(&[0, 0, 0, 0, 0, 10], 10, 2);
        assert_eq!(out, vec![Err(3), Ok(0), Ok(0), Ok(0), Ok(0), Ok(0), Ok(10)]);
    }
}
