//! Per-member state the engine keeps for every scheme: the spike detector, failure, queue
//! depth and a short-window foreground throughput meter (for the conversion pause).

use crate::detector::{DetectorConfig, SpikeDetector, Ticket};
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

    /// Foreground bytes per second over the last 100-200 ms.
    pub fn foreground_rate(&mut self, now: Nanos) -> f64 {
        self.roll_meter(now);
        let span = METER_BUCKET_NS + (now - self.meter_start);
        (self.meter_prev + self.meter_cur) as f64 * 1e9 / span as f64
    }
}

/// The pool's members, indexed by [`DiskId`].
#[derive(Debug)]
pub struct Disks {
    list: Vec<DiskState>,
}

impl Disks {
    pub fn new(count: usize, cfg: DetectorConfig, now: Nanos) -> Self {
        Disks {
            list: (0..count).map(|_| DiskState::new(cfg, now)).collect(),
        }
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
        &mut self.list[d.index()]
    }
    pub fn iter(&self) -> impl Iterator<Item = &DiskState> {
        self.list.iter()
    }

    pub(crate) fn on_issue(
        &mut self,
        d: DiskId,
        now: Nanos,
        bytes: u64,
        write: bool,
        background: bool,
    ) -> Ticket {
        let s = &mut self.list[d.index()];
        s.inflight += 1;
        if write {
            s.counters.writes += 1;
            s.counters.bytes_written += bytes;
        } else {
            s.counters.reads += 1;
            s.counters.bytes_read += bytes;
        }
        if background {
            s.counters.background_bytes += bytes;
        } else {
            s.roll_meter(now);
            s.meter_cur += bytes;
        }
        s.detector.on_issue(now)
    }

    pub(crate) fn on_complete(&mut self, d: DiskId, ticket: Ticket, now: Nanos, error: bool) {
        let s = &mut self.list[d.index()];
        assert!(s.inflight > 0, "completion on {d} with nothing in flight");
        s.inflight -= 1;
        s.detector.on_complete(ticket, now);
        if error {
            s.counters.errors += 1;
        }
    }

    pub fn advance(&mut self, now: Nanos) {
        for s in &mut self.list {
            s.detector.advance(now);
        }
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        self.list
            .iter()
            .filter_map(|s| s.detector.next_deadline())
            .min()
    }
}
