//! [`Members`]: a read-only view of the signals the engine keeps per member, the only input
//! policies get. New signals (profile weights, rate factors, modes, wear, tier) join here.

use super::disks::Disks;
use crate::steer::{Steering, Tally};
use crate::types::{DiskId, Nanos};

#[derive(Clone, Copy)]
pub struct Members<'a> {
    disks: &'a Disks,
    now: Nanos,
}

impl<'a> Members<'a> {
    pub(crate) fn new(disks: &'a Disks, now: Nanos) -> Self {
        Members { disks, now }
    }

    /// The time the signals are read at.
    pub fn now(&self) -> Nanos {
        self.now
    }
    pub fn count(&self) -> usize {
        self.disks.len()
    }
    pub fn failed(&self, d: DiskId) -> bool {
        self.disks.get(d).failed
    }
    /// The spike detector holds the member unresponsive (in a latency spike).
    pub fn unresponsive(&self, d: DiskId) -> bool {
        self.disks.get(d).detector.is_unresponsive()
    }
    /// Requests on the member older than the detector's threshold.
    pub fn stragglers(&self, d: DiskId) -> u32 {
        self.disks.get(d).detector.stragglers()
    }
    /// Device I/Os issued to the member and not completed.
    pub fn queue_depth(&self, d: DiskId) -> u32 {
        self.disks.get(d).inflight
    }
    /// Foreground bytes per second over the last 100-200 ms.
    pub fn foreground_rate(&self, d: DiskId) -> f64 {
        self.disks.get(d).foreground_rate(self.now)
    }
    /// What the member completed in the last complete window of
    /// [`crate::steer::WINDOW_NS`]; None when it has been idle longer than that.
    pub fn recent(&self, d: DiskId) -> Option<&'a Tally> {
        self.disks.get(d).window.last(self.now)
    }
    /// Share of its rated endurance the member has used, when its driver reports it.
    pub fn wear(&self, d: DiskId) -> Option<f64> {
        self.disks.get(d).wear
    }
    /// Steering, when the scheme runs it.
    pub fn steering(&self) -> Option<&'a Steering> {
        self.disks.steering()
    }
    /// Whether the member takes writes now: always, unless steering segregates reads and
    /// writes and the member is in read mode.
    pub fn takes_writes(&self, d: DiskId) -> bool {
        self.steering().is_none_or(|s| s.is_writer(d))
    }
}
