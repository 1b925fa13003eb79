//! Device-level latency: when each read and write went to its member, so its completion
//! can be timed into that member's histogram.
//!
//! Kept by the driver, not the engine: the engine is sans-IO and keeps no histograms, and
//! the driver sees both ends (`Member::submit` and the completion it reaps). The engine's
//! I/O ids are slab handles (slot index in the low 32 bits, generation above), so a table
//! indexed by slot finds the submission in O(1) without hashing. It is bounded like the
//! engine's table of I/Os in flight, which it mirrors.

use fusionraid_core::{DevOp, Nanos};

use super::latency::LatencyHistogram;

#[derive(Clone, Copy, Default)]
struct Sent {
    /// The full I/O id (0: empty; the engine's generations start at 1).
    tag: u64,
    disk: u32,
    write: bool,
    at: Nanos,
}

/// Read and write latency histograms of one member.
#[derive(Clone, Debug, Default)]
pub(crate) struct MemberLatency {
    pub read: LatencyHistogram,
    pub write: LatencyHistogram,
}

#[derive(Default)]
pub(crate) struct DeviceTimer {
    sent: Vec<Sent>,
    pub members: Vec<MemberLatency>,
}

impl DeviceTimer {
    pub fn new(members: usize) -> Self {
        DeviceTimer {
            sent: Vec::new(),
            members: vec![MemberLatency::default(); members],
        }
    }

    /// `op` went to member `disk` at `now` (flushes and trims are not timed: their cost
    /// depends on what came before them, not on the device's health).
    pub fn on_submit(&mut self, tag: u64, disk: usize, op: &DevOp, now: Nanos) {
        let write = match op {
            DevOp::Read { .. } => false,
            DevOp::Write { .. } => true,
            DevOp::Flush | DevOp::Trim { .. } => return,
        };
        let slot = (tag & 0xffff_ffff) as usize;
        if slot >= self.sent.len() {
            self.sent.resize(slot + 1, Sent::default());
        }
        self.sent[slot] = Sent {
            tag,
            disk: disk as u32,
            write,
            at: now,
        };
    }

    /// The I/O `tag` completed at `now`: time it if it was timed.
    pub fn on_complete(&mut self, tag: u64, now: Nanos) {
        let Some(s) = self.sent.get_mut((tag & 0xffff_ffff) as usize) else {
            return;
        };
        if s.tag != tag {
            return;
        }
        s.tag = 0;
        let Some(m) = self.members.get_mut(s.disk as usize) else {
            return;
        };
        let h = if s.write { &mut m.write } else { &mut m.read };
        h.record(now.saturating_sub(s.at));
    }

    /// A new device took slot `disk`: its latencies start afresh.
    pub fn reset(&mut self, disk: usize) {
        if let Some(m) = self.members.get_mut(disk) {
            *m = MemberLatency::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_reads_and_writes_per_member() {
        let mut t = DeviceTimer::new(2);
        let read = DevOp::Read {
            offset: 0,
            len: 4096,
        };
        t.on_submit((1 << 32) | 3, 1, &read, 1_000);
        t.on_submit((1 << 32) | 4, 0, &DevOp::Flush, 1_000);
        t.on_complete((1 << 32) | 3, 51_000);
        t.on_complete((1 << 32) | 4, 51_000);
        // A stale id (older generation of the slot) is ignored.
        t.on_complete((2 << 32) | 3, 99_000);
        assert_eq!(t.members[1].read.count, 1);
        assert_eq!(t.members[1].read.sum_ns, 50_000);
        assert_eq!(t.members[0].read.count + t.members[0].write.count, 0);
        t.reset(1);
        assert_eq!(t.members[1].read.count, 0);
    }
}
