//! Small vocabulary types shared by every module of the engine.

/// A point in time or a duration, in nanoseconds. The engine never reads a clock: the driver
/// passes `now` with every input, from virtual time (sim) or a monotonic clock (io).
pub type Nanos = u64;

/// Index of a member device in the pool, `0..pool.disks`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct DiskId(pub u32);

impl DiskId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl std::fmt::Display for DiskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "d{}", self.0)
    }
}

/// The unit of sub-block updates and of request alignment, in bytes.
pub const PAGE_SIZE: u64 = 4096;

/// Where one block of a stripe lives: a disk and a block index on that disk, counted in blocks
/// from the start of the zone the layout describes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Placement {
    pub disk: DiskId,
    pub block: u64,
}
