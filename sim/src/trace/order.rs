//! Time order: reject (or, within a bounded window, repair) records that go back in time, then
//! shift times so the first record is at 0.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use fusionraid_core::Nanos;

use super::error::TraceError;
use super::lines::Numbered;

/// Heap entry ordered by (time, line): equal times leave in file order, so the sort is stable.
struct Held(Numbered);

impl Held {
    fn key(&self) -> (Nanos, u64) {
        (self.0.rec.time_ns, self.0.line)
    }
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// Enforces non-decreasing times with a reorder window of `window` records (0 = strict) and
/// subtracts the first released time from every record.
pub(crate) struct Ordered<I> {
    inner: I,
    file: Arc<str>,
    window: usize,
    heap: BinaryHeap<Reverse<Held>>,
    /// Time of the last released record (raw, before normalisation).
    last: Option<Nanos>,
    base: Option<Nanos>,
    inner_done: bool,
}

impl<I> Ordered<I> {
    pub(crate) fn new(inner: I, file: Arc<str>, window: usize) -> Self {
        Ordered {
            inner,
            file,
            window,
            heap: BinaryHeap::with_capacity(window.min(1 << 16) + 1),
            last: None,
            base: None,
            inner_done: false,
        }
    }

    fn release(&mut self, mut n: Numbered) -> Numbered {
        self.last = Some(n.rec.time_ns);
        let base = *self.base.get_or_insert(n.rec.time_ns);
        n.rec.time_ns -= base; // never underflows: released times never decrease
        n
    }

    fn backwards(&self, n: &Numbered, last: Nanos) -> TraceError {
        let hint = if self.window == 0 {
            // `sim` has no option for the window (`TraceOptions::reorder_window`): naming
            // it sent command-line users looking for one.
            "record skipped; sort the trace by time to replay it"
        } else {
            "it is further out of order than the reorder window"
        };
        TraceError::line(
            &self.file,
            n.line,
            format!(
                "time goes backwards: {} ns after a record at {} ns ({hint})",
                n.rec.time_ns, last
            ),
        )
    }
}

impl<I: Iterator<Item = Result<Numbered, TraceError>>> Iterator for Ordered<I> {
    type Item = Result<Numbered, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.inner_done || self.heap.len() > self.window {
                let Reverse(Held(n)) = self.heap.pop()?;
                return Some(Ok(self.release(n)));
            }
            match self.inner.next() {
                None => self.inner_done = true,
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(n)) => match self.last {
                    Some(last) if n.rec.time_ns < last => {
                        return Some(Err(self.backwards(&n, last)));
                    }
                    _ => self.heap.push(Reverse(Held(n))),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{IoKind, IoRecord};

    fn input(times: &[Nanos]) -> Vec<Result<Numbered, TraceError>> {
        times
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                Ok(Numbered {
                    line: i as u64 + 1,
                    rec: IoRecord {
                        time_ns: t,
                        kind: IoKind::Read,
                        offset: i as u64,
                        len: 1,
                        stream: 0,
                    },
                })
            })
            .collect()
    }

    fn run(times: &[Nanos], window: usize) -> Vec<Result<(Nanos, u64), u64>> {
        Ordered::new(input(times).into_iter(), "t".into(), window)
            .map(|r| match r {
                Ok(n) => Ok((n.rec.time_ns, n.rec.offset)),
                Err(e) => Err(e.line_number().unwrap()),
            })
            .collect()
    }

    #[test]
    fn strict_mode_reports_backward_steps_and_normalises() {
        let out = run(&[100, 150, 120, 200], 0);
        assert_eq!(out, vec![Ok((0, 0)), Ok((50, 1)), Err(3), Ok((100, 3))]);
    }

    #[test]
    fn window_sorts_stably() {
        let out = run(&[100, 150, 120, 120, 200], 2);
        assert_eq!(
            out,
            vec![
                Ok((0, 0)),
                Ok((20, 2)),
                Ok((20, 3)),
                Ok((50, 1)),
                Ok((100, 4))
            ]
        );
        // Too far out of order for a window of 1.
        let out = run(&[100, 150, 160, 120], 1);
        assert_eq!(out, vec![Ok((0, 0)), Ok((50, 1)), Err(4), Ok((60, 2))]);
    }

    #[test]
    fn message_names_both_times() {
        let mut it = Ordered::new(input(&[5, 3]).into_iter(), "x.csv".into(), 0);
        it.next();
        let e = it.next().unwrap().unwrap_err().to_string();
        assert!(
            e.starts_with("x.csv:2: time goes backwards: 3 ns after a record at 5 ns"),
            "{e}"
        );
        // Without a window, no advice to set one: `sim` offers no option for it.
        assert!(e.contains("sort the trace") && !e.contains("window"), "{e}");
    }
}
