//! Replay pacing: when the simulator driver should issue each record.
//!
//! Driver protocol (the same for both modes):
//! 1. At the start (`now = start`, nothing in flight) call [`Replayer::next_arrival`].
//! 2. On [`Arrival::Issue`] `{ at, record }`: issue `record` at time `at` (schedule an event if
//!    `at > now`), then call again — from that event in timestamp mode, or right away in
//!    closed-loop mode (it fills the queue up to its depth at the same instant).
//! 3. On [`Arrival::QueueFull`]: call again when a request completes.
//! 4. On [`Arrival::Exhausted`]: the source is empty; wait for the in-flight requests.
//!
//! Timestamp mode is open-loop: arrival times come from the trace, whatever the device does,
//! so `now` and `in_flight` are ignored. Closed-loop mode ignores the trace's times and keeps
//! `queue_depth` requests outstanding, which is how timestamp-less logs (fio v2) and
//! "as fast as possible" experiments are replayed.

use std::fmt;

use fusionraid_core::Nanos;

use super::IoRecord;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReplayMode {
    /// Issue each record at `start + time / speed`: `speed` 2.0 replays twice as fast (gaps
    /// halved), 0.5 at half speed. Must be finite and > 0.
    Timestamp { speed: f64 },
    /// Keep up to `queue_depth` (>= 1) requests in flight; a new one is issued the moment a
    /// slot frees.
    ClosedLoop { queue_depth: u32 },
}

/// What the driver should do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Issue `record` at time `at`; `record.time_ns` is set to `at` as well.
    Issue { at: Nanos, record: IoRecord },
    /// Closed loop only: `queue_depth` requests are outstanding; ask again after a completion.
    QueueFull,
    /// No more records.
    Exhausted,
}

/// A replay parameter that cannot work.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReplayError {
    /// Timestamp speed not finite and positive.
    BadSpeed(f64),
    /// Closed-loop queue depth 0 would never issue anything.
    ZeroQueueDepth,
    /// A remap target smaller than one 4 KiB page.
    VolumeTooSmall(u64),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::BadSpeed(s) => write!(f, "replay speed must be finite and > 0, got {s}"),
            ReplayError::ZeroQueueDepth => write!(f, "closed-loop queue depth must be at least 1"),
            ReplayError::VolumeTooSmall(b) => {
                write!(
                    f,
                    "remap target of {b} bytes is smaller than one 4 KiB page"
                )
            }
        }
    }
}

impl std::error::Error for ReplayError {}

/// Paces a record stream for the simulator driver; see the module docs for the protocol.
pub struct Replayer<I> {
    mode: ReplayMode,
    source: I,
    start: Nanos,
    issued: u64,
}

impl<I: Iterator<Item = IoRecord>> Replayer<I> {
    /// `start` is the virtual time at which the trace's time 0 is replayed.
    pub fn new(mode: ReplayMode, source: I, start: Nanos) -> Result<Self, ReplayError> {
        match mode {
            ReplayMode::Timestamp { speed } if !(speed.is_finite() && speed > 0.0) => {
                return Err(ReplayError::BadSpeed(speed));
            }
            ReplayMode::ClosedLoop { queue_depth: 0 } => return Err(ReplayError::ZeroQueueDepth),
            _ => {}
        }
        Ok(Replayer {
            mode,
            source,
            start,
            issued: 0,
        })
    }

    pub fn mode(&self) -> ReplayMode {
        self.mode
    }

    /// Records handed out so far.
    pub fn issued(&self) -> u64 {
        self.issued
    }

    /// The next thing to do at virtual time `now` with `in_flight` requests outstanding.
    pub fn next_arrival(&mut self, now: Nanos, in_flight: u32) -> Arrival {
        if let ReplayMode::ClosedLoop { queue_depth } = self.mode
            && in_flight >= queue_depth
        {
            return Arrival::QueueFull;
        }
        let Some(mut record) = self.source.next() else {
            return Arrival::Exhausted;
        };
        let at = match self.mode {
            ReplayMode::Timestamp { speed } => {
                self.start.saturating_add(scale(record.time_ns, speed))
            }
            ReplayMode::ClosedLoop { .. } => now,
        };
        record.time_ns = at;
        self.issued += 1;
        Arrival::Issue { at, record }
    }
}

/// `t / speed`, exact at speed 1; otherwise through f64, which is exact to the nanosecond for
/// traces shorter than about 100 days.
fn scale(t: Nanos, speed: f64) -> Nanos {
    if speed == 1.0 {
        t
    } else {
        // `as` saturates on overflow, so a huge time at a tiny speed cannot wrap.
        (t as f64 / speed).round() as Nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::IoKind;

    fn recs(times: &[Nanos]) -> Vec<IoRecord> {
        times
            .iter()
            .map(|&t| IoRecord {
                time_ns: t,
                kind: IoKind::Read,
                offset: 0,
                len: 4096,
                stream: 0,
            })
            .collect()
    }

    #[test]
    fn rejects_unusable_modes() {
        let r = Replayer::new(
            ReplayMode::Timestamp { speed: 0.0 },
            recs(&[]).into_iter(),
            0,
        );
        assert_eq!(r.err(), Some(ReplayError::BadSpeed(0.0)));
        let r = Replayer::new(
            ReplayMode::Timestamp { speed: f64::NAN },
            recs(&[]).into_iter(),
            0,
        );
        assert!(r.is_err());
        let r = Replayer::new(
            ReplayMode::ClosedLoop { queue_depth: 0 },
            recs(&[]).into_iter(),
            0,
        );
        assert_eq!(r.err(), Some(ReplayError::ZeroQueueDepth));
    }

    #[test]
    fn timestamp_mode_scales_from_start() {
        let mode = ReplayMode::Timestamp { speed: 2.0 };
        let mut r = Replayer::new(mode, recs(&[0, 1000, 3001]).into_iter(), 500).unwrap();
        let mut ats = Vec::new();
        while let Arrival::Issue { at, record } = r.next_arrival(0, 99) {
            assert_eq!(record.time_ns, at);
            ats.push(at);
        }
        assert_eq!(ats, vec![500, 1000, 2001]);
        assert_eq!(r.issued(), 3);
        assert_eq!(r.next_arrival(0, 0), Arrival::Exhausted);
    }

    #[test]
    fn closed_loop_fills_then_waits_for_completions() {
        let mode = ReplayMode::ClosedLoop { queue_depth: 2 };
        let mut r = Replayer::new(mode, recs(&[7, 8, 9]).into_iter(), 0).unwrap();
        assert!(matches!(
            r.next_arrival(10, 0),
            Arrival::Issue { at: 10, .. }
        ));
        assert!(matches!(
            r.next_arrival(10, 1),
            Arrival::Issue { at: 10, .. }
        ));
        assert_eq!(r.next_arrival(10, 2), Arrival::QueueFull);
        assert!(matches!(
            r.next_arrival(42, 1),
            Arrival::Issue { at: 42, .. }
        ));
        assert_eq!(r.next_arrival(50, 1), Arrival::Exhausted);
    }
}
