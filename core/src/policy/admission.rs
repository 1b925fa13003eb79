//! When background work may touch a member. Background work that must finish (a conversion
//! forced by writes waiting for space) does not ask.

use crate::engine::members::Members;
use crate::types::DiskId;

pub trait BackgroundAdmission: Send {
    /// A short name for status and debugging.
    fn name(&self) -> &'static str;

    /// Whether conversion may read from and write to `d` now.
    fn may_convert_on(&self, m: &Members, d: DiskId) -> bool;

    /// Whether conversion may write parity to `d` now (beyond [`Self::may_convert_on`]).
    fn may_write_on(&self, _m: &Members, _d: DiskId) -> bool {
        true
    }

    /// Whether `d` may take a discard now. Discards are advisory, so one refused here is
    /// skipped, not delayed: by default none goes to a member the detector finds
    /// unresponsive, which a discard queued behind its stall would only keep busy longer.
    fn may_trim_on(&self, m: &Members, d: DiskId) -> bool {
        !m.unresponsive(d)
    }
}

/// The paper's pause (its evaluation, §5, at 40 MB/s, the per-drive load it observed): no
/// conversion on a member serving more foreground bytes per second than the limit.
#[derive(Debug, Clone, Copy)]
pub struct ForegroundPause {
    pub limit_bytes_per_sec: f64,
}

impl BackgroundAdmission for ForegroundPause {
    fn name(&self) -> &'static str {
        "foreground-pause"
    }
    fn may_convert_on(&self, m: &Members, d: DiskId) -> bool {
        m.foreground_rate(d) <= self.limit_bytes_per_sec
    }
}

/// The paper's pause, and parity written only to members in write mode: a pair set converts
/// keeping a copy whose parity members take writes now. Since the write set rotates, every
/// member takes writes in turn and every set finds such a moment; conversion forced by writes
/// waiting for space does not ask.
#[derive(Debug, Clone, Copy)]
pub struct WriteSetPause {
    pub pause: ForegroundPause,
}

impl BackgroundAdmission for WriteSetPause {
    fn name(&self) -> &'static str {
        "write-set-pause"
    }
    fn may_convert_on(&self, m: &Members, d: DiskId) -> bool {
        self.pause.may_convert_on(m, d)
    }
    fn may_write_on(&self, m: &Members, d: DiskId) -> bool {
        m.takes_writes(d)
    }
    /// A discard is a write to the flash translation layer: read-mode members take none.
    fn may_trim_on(&self, m: &Members, d: DiskId) -> bool {
        !m.unresponsive(d) && m.takes_writes(d)
    }
}
