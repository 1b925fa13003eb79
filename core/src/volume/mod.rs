//! Per-volume metadata: the Block Mapping Table, patch lists, their location type and the
//! page checksums.
pub mod bmt;
pub mod loc;
pub mod patch;
pub mod sums;
pub use bmt::{Bmt, Entry};
pub use loc::Loc;
pub use patch::{PatchNode, PatchTable};
pub use sums::PageSums;
