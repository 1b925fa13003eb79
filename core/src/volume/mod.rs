//! Per-volume metadata: the Block Mapping Table, patch lists and their location type.
pub mod bmt;
pub mod loc;
pub mod patch;
pub use bmt::{Bmt, Entry};
pub use loc::Loc;
pub use patch::{PatchNode, PatchTable};
