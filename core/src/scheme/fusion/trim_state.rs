//! What proactive discard (trim.rs) keeps between looks.

use crate::types::Nanos;

/// The scheme's discard state.
#[derive(Debug, Default)]
pub struct TrimState {
    /// The next look for stripes to discard.
    pub next_at: Nanos,
    /// The members' space beyond the zones, still to be discarded.
    pub tail: Option<TailSweep>,
}

/// `[cursor, end)` of every member is still to be discarded (`running`: a chunk is in
/// flight).
#[derive(Debug)]
pub struct TailSweep {
    pub cursor: u64,
    pub end: u64,
    pub running: bool,
}
