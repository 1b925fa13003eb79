//! The state the cleaner's sweep keeps in each volume between sweeps (where it resumes,
//! its buffers) and what it finds; the sweep itself is `reloc_sweep`. Apart from it so the
//! volume can hold the state without depending on the sweep, which reads the volume.

/// The pages user block `ub` has in RAID block `f`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Owner {
    pub f: u64,
    pub ub: u64,
    pub pages: u16,
}

/// A stripe the sweep saw whole with dead pages: a cleaning candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub live: usize,
    pub stripe: u32,
    /// Its owners: `Sweep::owners()[first..end]`, by RAID block, each block's in sweep order.
    pub first: usize,
    pub end: usize,
}

/// Where the sweep resumes, and its buffers (kept from sweep to sweep).
#[derive(Default)]
pub struct Sweep {
    /// Next user block the sweep looks at.
    pub cursor: u64,
    pub(super) owners: Vec<Owner>,
    pub(super) scratch: Vec<Owner>,
    pub(super) counts: Vec<u32>,
    /// User blocks in a relocation, ascending (skipped).
    pub(super) skip: Vec<u64>,
    pub(super) candidates: Vec<Candidate>,
    pub(super) scratch_candidates: Vec<Candidate>,
}
