//! Lists the write path reuses instead of allocating per write: each write's pieces and
//! full stripes (they live in its job until it finishes) and the planner's per-chunk scratch
//! lists. Allocating them per write would put the allocator on every write's path, five
//! lists each, grown a few times on the way (docs/BENCHMARKS-HISTORY.md has the profile).

use super::jobs::Piece;
use super::pairs::SlotRef;
use super::write_plan::{PackRun, Span};

/// Lists kept for reuse at most (more writes than this in flight allocate as before).
const MAX_KEPT: usize = 256;
/// A list that grew beyond this many entries (a rare huge write) is not kept.
const MAX_LEN: usize = 1024;

#[derive(Default)]
pub struct WriteBufs {
    pieces: Vec<Vec<Piece>>,
    stripes: Vec<Vec<u32>>,
    /// Planner scratch: the pieces of the current chunk.
    pub raw: Vec<Span>,
    /// Planner scratch: replica slots taken so far.
    pub slots: Vec<SlotRef>,
    /// Planner scratch: pack pages reserved so far.
    pub packed: Vec<PackRun>,
}

impl WriteBufs {
    /// An empty piece list, with room for `n` pieces.
    pub fn pieces(&mut self, n: usize) -> Vec<Piece> {
        let mut v = self.pieces.pop().unwrap_or_default();
        v.reserve(n);
        v
    }

    /// An empty stripe list.
    pub fn stripes(&mut self) -> Vec<u32> {
        self.stripes.pop().unwrap_or_default()
    }

    /// A finished write's lists come back.
    pub fn recycle(&mut self, mut pieces: Vec<Piece>, mut stripes: Vec<u32>) {
        if self.pieces.len() < MAX_KEPT && pieces.capacity() <= MAX_LEN {
            pieces.clear();
            self.pieces.push(pieces);
        }
        if self.stripes.len() < MAX_KEPT && stripes.capacity() <= MAX_LEN {
            stripes.clear();
            self.stripes.push(stripes);
        }
    }
}
