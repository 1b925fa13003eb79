//! Latency spikes as the engine saw them: the intervals during which a member's detector
//! called it unresponsive.
//!
//! The detector's state can only change inside an engine call that touches it: an I/O issued
//! to the disk, a completion from it, or a timeout (which slides every window). The driver
//! calls [`SpikeTracker::observe`] for exactly those disks after each call, at the same
//! virtual instant, so entry and exit times are exact.

use fusionraid_core::Nanos;

#[derive(Clone, Debug, Default)]
pub struct DiskSpikes {
    /// When the current spike started, while the disk is unresponsive.
    since: Option<Nanos>,
    pub spikes: u64,
    /// Time spent unresponsive, spikes still open at the end included up to the end.
    pub total_ns: u64,
    pub max_ns: u64,
    seen_transitions: u64,
}

#[derive(Clone, Debug)]
pub struct SpikeTracker {
    disks: Vec<DiskSpikes>,
}

impl SpikeTracker {
    pub fn new(disks: usize) -> Self {
        SpikeTracker {
            disks: vec![DiskSpikes::default(); disks],
        }
    }

    /// The detector of `disk` reports `unresponsive` and has entered that state
    /// `transitions` times in all, at `now`. Entries and exits that happened within one
    /// engine call (at one instant) count as spikes of zero length, so the spike count always
    /// equals the detector's own transition counter.
    #[inline]
    pub fn observe(&mut self, disk: usize, unresponsive: bool, transitions: u64, now: Nanos) {
        let d = &mut self.disks[disk];
        let entries = transitions - d.seen_transitions;
        if entries == 0 && d.since.is_some() == unresponsive {
            return;
        }
        d.seen_transitions = transitions;
        if let Some(start) = d.since.take() {
            let len = now - start;
            d.total_ns += len;
            d.max_ns = d.max_ns.max(len);
        }
        d.spikes += entries;
        if unresponsive {
            // In a spike that (re)started at this instant.
            d.since = Some(now);
        }
    }

    /// Closes the spikes still open at `end`; returns how many there were.
    pub fn finish(&mut self, end: Nanos) -> u64 {
        let mut open = 0;
        for d in &mut self.disks {
            if let Some(start) = d.since.take() {
                open += 1;
                let len = end.saturating_sub(start);
                d.total_ns += len;
                d.max_ns = d.max_ns.max(len);
            }
        }
        open
    }

    pub fn disks(&self) -> &[DiskSpikes] {
        &self.disks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_are_measured_and_open_ones_closed() {
        let mut t = SpikeTracker::new(3);
        t.observe(0, false, 0, 5);
        t.observe(0, true, 1, 10);
        t.observe(0, true, 1, 12);
        t.observe(0, false, 1, 40);
        t.observe(1, true, 1, 50);
        // Entered and left within one call: a zero-length spike. Then left and re-entered
        // at one instant: the first spike ends, the next starts.
        t.observe(2, false, 1, 60);
        t.observe(2, true, 2, 70);
        t.observe(2, true, 3, 75);
        assert_eq!(t.finish(100), 2);
        let d = t.disks();
        assert_eq!((d[0].spikes, d[0].total_ns, d[0].max_ns), (1, 30, 30));
        assert_eq!((d[1].spikes, d[1].total_ns), (1, 50));
        assert_eq!((d[2].spikes, d[2].total_ns, d[2].max_ns), (3, 30, 25));
    }
}
