//! When background work may touch a member. Background work that must finish (a conversion
//! forced by writes waiting for space) does not ask.

use crate::engine::members::Members;
use crate::types::DiskId;

pub trait BackgroundAdmission: Send {
    /// A short name for status and debugging.
    fn name(&self) -> &'static str;

    /// Whether conversion may read from and write to `d` now.
    fn may_convert_on(&self, m: &Members, d: DiskId) -> bool;
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
