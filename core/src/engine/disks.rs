//! Per-member state the engine keeps for every scheme: the spike detector, failure, queue
//! depth, a short-window foreground throughput meter (for the conversion pause) and a window
//! of recent completions (rates and latency percentiles, for steering).

use std::cell::Cell;

use crate::detector::{DetectorConfig, SpikeDetector, Ticket};
use crate::steer::{IoWindow, Recent, Steering};
use crate::types::{DiskId, Nanos};

/// Width of one bucket of the foreground throughput meter. Two buckets give a rate averaged
/// over 100-200 ms: long enough to ignore single requests, short enough to track bursts.
const METER_BUCKET_NS: Nanos = 100_000_000;

#[derive(Debug, Clone, Default)]
pub struct DiskCounters {
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub background_bytes: u64,
    pub errors: u64,
    /// Discards sent (advisory: they neither count as reads nor feed the load window).
    pub trims: u64,
    pub bytes_trimmed: u64,
}

/// What a device I/O does to its member, as far as the per-member signals care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoClass {
    Read,
    Write,
    /// A discard: the range holds nothing the scheme needs (see `DevOp::Trim`).
    Trim,
}

impl IoClass {
    pub fn of(op: &super::api::DevOp) -> Self {
        match op {
            super::api::DevOp::Write { .. } => IoClass::Write,
            super::api::DevOp::Trim { .. } => IoClass::Trim,
            super::api::DevOp::Read { .. } | super::api::DevOp::Flush => IoClass::Read,
        }
    }
}

#[derive(Debug)]
pub struct DiskState {
    pub detector: SpikeDetector,
    pub failed: bool,
    pub inflight: u32,
    pub counters: DiskCounters,
    /// A write completed since the last `take_dirty`: its data may sit in the member's
    /// volatile cache until a flush.
    pub dirty: bool,
    /// Completions of the last few milliseconds.
    pub window: IoWindow,
    /// Share of its rated endurance the member has used (0 new, 1 worn out), when its
    /// driver knows it: NVMe's "percentage used", a model's program/erase count.
    pub wear: Option<f64>,
    meter_start: Nanos,
    meter_cur: u64,
    meter_prev: u64,
}

impl DiskState {
    fn new(cfg: DetectorConfig, now: Nanos) -> Self {
        DiskState {
            detector: SpikeDetector::new(cfg, now),
            failed: false,
            inflight: 0,
            counters: DiskCounters::default(),
            dirty: false,
            window: IoWindow::new(now),
            wear: None,
            meter_start: now,
            meter_cur: 0,
            meter_prev: 0,
        }
    }

    fn roll_meter(&mut self, now: Nanos) {
        if now < self.meter_start + METER_BUCKET_NS {
            return;
        }
        let buckets = (now - self.meter_start) / METER_BUCKET_NS;
        self.meter_prev = if buckets == 1 { self.meter_cur } else { 0 };
        self.meter_cur = 0;
        self.meter_start += buckets * METER_BUCKET_NS;
    }

    /// Foreground bytes per second over the last 100-200 ms. Reads the meter as
    /// `roll_meter` would leave it at `now` without rolling it: the next issue rolls it to
    /// the same state, so a policy can ask through a shared reference.
    pub fn foreground_rate(&self, now: Nanos) -> f64 {
        let (start, prev, cur) = if now < self.meter_start + METER_BUCKET_NS {
            (self.meter_start, self.meter_prev, self.meter_cur)
        } else {
            let buckets = (now - self.meter_start) / METER_BUCKET_NS;
            let prev = if buckets == 1 { self.meter_cur } else { 0 };
            (self.meter_start + buckets * METER_BUCKET_NS, prev, 0)
        };
        let span = METER_BUCKET_NS + (now - start);
        (prev + cur) as f64 * 1e9 / span as f64
    }
}

/// The pool's members, indexed by [`DiskId`].
#[derive(Debug)]
pub struct Disks {
    list: Vec<DiskState>,
    /// The earliest detector deadline and how many detectors have exactly that deadline,
    /// or `None` when it must be recomputed. The driver asks for the deadline after every
    /// input and a scan of every detector each time would cost 5% of simulation time; an input
    /// changes one detector, and detectors mostly share a deadline (a timeout advances them
    /// all to the same slot), so counting the holders keeps the minimum valid.
    deadline: Cell<Option<MinDeadline>>,
    /// Profile-guided steering, when the scheme runs it: weights, modes and rate factors every
    /// policy can read, kept current from these members' windows.
    steering: Option<Steering>,
}

impl Disks {
    pub fn new(count: usize, cfg: DetectorConfig, now: Nanos) -> Self {
        Disks {
            list: (0..count).map(|_| DiskState::new(cfg, now)).collect(),
            deadline: Cell::new(Some(MinDeadline::default())),
            steering: None,
        }
    }

    /// A user read was routed, with or without a choice of copy (steering's input).
    pub(crate) fn note_read(&mut self, with_choice: bool) {
        if let Some(s) = &mut self.steering {
            s.note_read(with_choice);
        }
    }

    pub(crate) fn adopt_steering(&mut self, s: Steering) {
        assert_eq!(s.members(), self.len(), "steering for another pool size");
        self.steering = Some(s);
    }

    pub fn steering(&self) -> Option<&Steering> {
        self.steering.as_ref()
    }

    /// Recompute steering from the members' last windows if it is due.
    pub(crate) fn update_steering(&mut self, now: Nanos) {
        let Some(s) = &mut self.steering else {
            return;
        };
        let recent = Recent {
            now,
            failed: self.list.iter().map(|d| d.failed).collect(),
            windows: self.list.iter().map(|d| d.window.last(now)).collect(),
        };
        s.update(&recent);
    }

    pub(crate) fn steering_deadline(&self) -> Option<Nanos> {
        self.steering.as_ref().map(Steering::next_deadline)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    pub fn get(&self, d: DiskId) -> &DiskState {
        &self.list[d.index()]
    }
    pub fn get_mut(&mut self, d: DiskId) -> &mut DiskState {
        // The caller may touch the detector: recompute the deadline next time.
        self.deadline.set(None);
        &mut self.list[d.index()]
    }
    /// A new, healthy device takes slot `d` (fresh detector and counters).
    pub(crate) fn replace(&mut self, d: DiskId, cfg: DetectorConfig, now: Nanos) {
        self.deadline.set(None);
        self.list[d.index()] = DiskState::new(cfg, now);
    }
    pub fn iter(&self) -> impl Iterator<Item = &DiskState> {
        self.list.iter()
    }
    /// A write completed on `d` (see [`DiskState::dirty`]). Unlike `get_mut` this keeps the
    /// cached deadline: the detector is not touched, and write completions are frequent.
    pub(crate) fn mark_dirty(&mut self, d: DiskId) {
        self.list[d.index()].dirty = true;
    }
    /// Takes `d`'s dirty flag (keeps the cached deadline, as `mark_dirty`).
    pub(crate) fn take_dirty(&mut self, d: DiskId) -> bool {
        std::mem::take(&mut self.list[d.index()].dirty)
    }

    pub(crate) fn on_issue(
        &mut self,
        d: DiskId,
        now: Nanos,
        bytes: u64,
        class: IoClass,
        background: bool,
    ) -> Ticket {
        let s = &mut self.list[d.index()];
        let before = s.detector.next_deadline();
        s.inflight += 1;
        match class {
            IoClass::Write => {
                s.counters.writes += 1;
                s.counters.bytes_written += bytes;
            }
            IoClass::Read => {
                s.counters.reads += 1;
                s.counters.bytes_read += bytes;
            }
            IoClass::Trim => {
                s.counters.trims += 1;
                s.counters.bytes_trimmed += bytes;
            }
        }
        match (class, background) {
            // A discard moves no data: it is neither background bandwidth nor foreground load.
            (IoClass::Trim, _) => {}
            (_, true) => s.counters.background_bytes += bytes,
            (_, false) => {
                s.roll_meter(now);
                s.meter_cur += bytes;
            }
        }
        let ticket = s.detector.on_issue(now);
        let after = s.detector.next_deadline();
        self.note(before, after);
        ticket
    }

    /// An I/O issued at `issued_at` completed. Failed I/Os count as errors, not as latency.
    pub(crate) fn on_complete(&mut self, d: DiskId, io: Completed, now: Nanos) {
        let Completed {
            ticket,
            issued_at,
            class,
            error,
            bytes,
        } = io;
        let s = &mut self.list[d.index()];
        assert!(s.inflight > 0, "completion on {d} with nothing in flight");
        s.inflight -= 1;
        if !error && class != IoClass::Trim {
            let write = class == IoClass::Write;
            s.window
                .record(now, now.saturating_sub(issued_at), write, bytes);
        }
        let before = s.detector.next_deadline();
        s.detector.on_complete(ticket, now);
        let after = s.detector.next_deadline();
        if error {
            s.counters.errors += 1;
        }
        self.note(before, after);
    }

    /// One detector's deadline went from `before` to `after`: update the cached minimum.
    fn note(&self, before: Option<Nanos>, after: Option<Nanos>) {
        if before == after {
            return;
        }
        let Some(mut m) = self.deadline.get() else {
            return;
        };
        if before.is_some() && before == m.at {
            m.holders -= 1;
        }
        if let Some(a) = after {
            m.add(a);
        }
        let stale = m.at.is_some() && m.holders == 0;
        self.deadline.set((!stale).then_some(m));
    }

    pub fn advance(&mut self, now: Nanos) {
        let mut m = MinDeadline::default();
        for s in &mut self.list {
            if s.detector.window_empty() {
                // Nothing can become a straggler and no deadline is due: the detector
                // catches up at its next issue or completion, exactly as it would now (an
                // empty window only moves its slot number; most members are idle at a
                // timeout).
                continue;
            }
            s.detector.advance(now);
            if let Some(d) = s.detector.next_deadline() {
                m.add(d);
            }
        }
        self.deadline.set(Some(m));
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        if let Some(m) = self.deadline.get() {
            debug_assert_eq!(m, self.scan_deadline());
            return m.at;
        }
        let m = self.scan_deadline();
        self.deadline.set(Some(m));
        m.at
    }

    fn scan_deadline(&self) -> MinDeadline {
        let mut m = MinDeadline::default();
        for d in self.list.iter().filter_map(|s| s.detector.next_deadline()) {
            m.add(d);
        }
        m
    }
}

/// What [`Disks::on_complete`] learns of a finished device I/O.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Completed {
    pub ticket: Ticket,
    pub issued_at: Nanos,
    pub class: IoClass,
    pub error: bool,
    pub bytes: u64,
}

/// The earliest of a set of deadlines and how many of them have that value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct MinDeadline {
    at: Option<Nanos>,
    holders: u32,
}

impl MinDeadline {
    fn add(&mut self, d: Nanos) {
        match self.at {
            Some(m) if d > m => {}
            Some(m) if d == m => self.holders += 1,
            _ => {
                self.at = Some(d);
                self.holders = 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// The cached minimum must equal a scan of every detector after any sequence of inputs
    /// (issues, completions, timeouts) in non-decreasing time.
    #[test]
    fn cached_deadline_matches_a_full_scan() {
        let cfg = DetectorConfig::paper_dc();
        let mut disks = Disks::new(7, cfg, 0);
        let mut rng = Rng::new(9);
        let mut now = 0;
        let mut pending: Vec<(DiskId, Ticket)> = Vec::new();
        for _ in 0..20_000 {
            now += rng.below(300_000);
            match rng.below(10) {
                0..=4 => {
                    let d = DiskId(rng.below(7) as u32);
                    pending.push((d, disks.on_issue(d, now, 4096, IoClass::Read, false)));
                }
                5..=8 if !pending.is_empty() => {
                    let (d, t) = pending.swap_remove(rng.below(pending.len() as u64) as usize);
                    let io = Completed {
                        ticket: t,
                        issued_at: 0,
                        class: IoClass::Read,
                        error: false,
                        bytes: 4096,
                    };
                    disks.on_complete(d, io, now);
                }
                _ => disks.advance(now),
            }
            let want = disks
                .list
                .iter()
                .filter_map(|s| s.detector.next_deadline())
                .min();
            assert_eq!(disks.next_deadline(), want);
        }
    }
}
