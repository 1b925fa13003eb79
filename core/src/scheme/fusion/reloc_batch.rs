//! The cleaner's unit of work: items (the pages one user block has in one RAID block) and
//! the batches `reloc_plan` cuts them into, queued in the volume until they run.

/// The pages user block `ub` has in RAID block `from`, moved together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub ub: u64,
    pub from: u64,
    /// Pages when planned (they only get fewer: nothing is written into a RAID block after
    /// its stripe is).
    pub pages: u16,
    /// Only the first `pages` of the block's pages in `from` (in page order) move; the rest
    /// follow in the plan's next batch, so the block does not leave `from` with this one.
    /// Plans of mirror volumes split items this way (`reloc_plan::fill`).
    pub head: bool,
}

/// One relocation's worth of moves, planned by a sweep: items whose pages fit one stripe.
pub struct RelocBatch {
    pub items: Vec<Item>,
}

impl RelocBatch {
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}
