//! Replays a timed request stream into one device model, open loop, and watches it with the
//! engine's own straggler detector: how many latency spikes an engine would see on this
//! member, and for how long. This is how the FusionRAID paper counted spikes per SSD-minute
//! (§5.3, detector of §4.3), so a model can be held against that count.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fusionraid_core::Nanos;
use fusionraid_core::detector::{DetectorConfig, SpikeDetector, Ticket};
use fusionraid_devices::{DeviceModel, OpKind};

use crate::stats::SpikeTracker;

/// What the detector saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProbeReport {
    pub requests: u64,
    /// From the first arrival to the last completion.
    pub span_ns: Nanos,
    pub spikes: u64,
    /// Time spent unresponsive.
    pub unresponsive_ns: u64,
    pub longest_ns: u64,
    /// Per request, completion minus arrival, in arrival order.
    pub latencies: Vec<Nanos>,
}

impl ProbeReport {
    pub fn spikes_per_minute(&self) -> f64 {
        self.spikes as f64 * 60e9 / self.span_ns.max(1) as f64
    }

    pub fn mean_spike_ms(&self) -> f64 {
        if self.spikes == 0 {
            0.0
        } else {
            self.unresponsive_ns as f64 / self.spikes as f64 / 1e6
        }
    }

    /// Share of the time the member was unresponsive.
    pub fn unresponsive_share(&self) -> f64 {
        self.unresponsive_ns as f64 / self.span_ns.max(1) as f64
    }
}

/// Submits each `(arrival, kind, offset, len)` (arrivals non-decreasing) and runs the
/// detector over issues, completions and slot boundaries in time order, as the engine does.
pub fn probe(
    dev: &mut dyn DeviceModel,
    requests: impl IntoIterator<Item = (Nanos, OpKind, u64, u64)>,
    cfg: DetectorConfig,
) -> ProbeReport {
    let mut w = Watch {
        det: SpikeDetector::new(cfg, 0),
        track: SpikeTracker::new(1),
        pending: BinaryHeap::new(),
        tickets: Vec::new(),
    };
    let mut report = ProbeReport::default();
    let mut first = None;
    let mut last = 0;
    for (at, kind, off, len) in requests {
        first.get_or_insert(at);
        w.settle(at);
        let ticket = w.det.on_issue(at);
        w.observe(at);
        let done = dev.submit(at, kind, off, len);
        w.pending.push(Reverse((done, w.tickets.len())));
        w.tickets.push(ticket);
        report.latencies.push(done - at);
        report.requests += 1;
        last = last.max(done);
    }
    w.settle(Nanos::MAX);
    w.track.finish(last);
    let d = &w.track.disks()[0];
    report.spikes = d.spikes;
    report.unresponsive_ns = d.total_ns;
    report.longest_ns = d.max_ns;
    report.span_ns = last - first.unwrap_or(0);
    report
}

/// The detector and what it waits for.
struct Watch {
    det: SpikeDetector,
    track: SpikeTracker,
    /// (completion time, request index), earliest first.
    pending: BinaryHeap<Reverse<(Nanos, usize)>>,
    tickets: Vec<Ticket>,
}

impl Watch {
    fn observe(&mut self, t: Nanos) {
        let d = &self.det;
        self.track
            .observe(0, d.is_unresponsive(), d.transitions(), t);
    }

    /// Completions and slot boundaries up to `until`, earliest first (a completion before
    /// a boundary at the same instant, as the engine's event order has it).
    fn settle(&mut self, until: Nanos) {
        loop {
            let done = self.pending.peek().map(|r| r.0.0).filter(|&t| t <= until);
            let slot = self.det.next_deadline().filter(|&t| t <= until);
            let boundary = match (done, slot) {
                (None, None) => break,
                (Some(d), Some(s)) => (s < d).then_some(s),
                (None, s) => s,
                (Some(_), None) => None,
            };
            match boundary {
                Some(s) => {
                    self.det.advance(s);
                    self.observe(s);
                }
                None => {
                    let Reverse((t, i)) = self.pending.pop().expect("peeked");
                    self.det.on_complete(self.tickets[i], t);
                    self.observe(t);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusionraid_devices::DeviceStats;

    /// Serves each request in 100 us, except a stall of `stall` ns starting at 10 ms.
    struct Stalling {
        stall: Nanos,
        stats: DeviceStats,
    }

    impl DeviceModel for Stalling {
        fn submit(&mut self, now: Nanos, _: OpKind, _: u64, _: u64) -> Nanos {
            let t = if (10_000_000..10_000_000 + self.stall).contains(&now) {
                10_000_000 + self.stall
            } else {
                now
            };
            t + 100_000
        }
        fn capacity_bytes(&self) -> u64 {
            1 << 30
        }
        fn stats(&self) -> DeviceStats {
            self.stats
        }
        fn name(&self) -> &str {
            "stalling"
        }
    }

    fn run(stall: Nanos) -> ProbeReport {
        let mut d = Stalling {
            stall,
            stats: DeviceStats::default(),
        };
        // One request every 200 us for 100 ms.
        let reqs = (0..500u64).map(|i| (i * 200_000, OpKind::Read, 0, 4096));
        probe(&mut d, reqs, DetectorConfig::paper_dc())
    }

    #[test]
    fn a_long_stall_is_one_spike_and_short_ones_none() {
        // 40 ms stall: requests pile up, pass the 5 ms window, and return in one batch.
        let r = run(40_000_000);
        assert_eq!(r.spikes, 1, "{r:?}");
        // Unresponsive from ~5.5 ms into the stall (two requests older than the window)
        // until the batch completes at its end.
        let ms = r.unresponsive_ns as f64 / 1e6;
        assert!((33.0..36.0).contains(&ms), "{ms}");
        assert_eq!(r.requests, 500);
        // 2 ms stall: nothing pends for 5 ms.
        assert_eq!(run(2_000_000).spikes, 0);
        assert!(run(0).latencies.iter().all(|&l| l == 100_000));
    }
}
