//! Per-volume metadata: the Block Mapping Table, patch lists, their location type and the
//! page checksums.
pub mod bmt;
pub mod loc;
pub mod page_crc;
pub mod patch;
pub mod sums;
pub use bmt::{Bmt, Entry};
pub use loc::Loc;
pub use patch::{PatchNode, PatchTable};
pub use sums::PageSums;

/// Record `node` in `ub`'s patch list. A base whose every page a patch now serves is
/// dropped (the block becomes patch-only), so its space can come back: the cleaner moves
/// the live pages of a base elsewhere as patches. Returns the locations the block may no
/// longer reference (its caller checks, as a location can be named twice).
pub fn patch_block(bmt: &mut Bmt, patches: &mut PatchTable, ub: u64, node: PatchNode) -> Vec<Loc> {
    let mut gone = patches.insert(ub, node);
    let e = bmt.get(ub);
    let base = if patches.last_covers() {
        gone.push(e.base);
        Loc::Unmapped
    } else {
        e.base
    };
    bmt.set(
        ub,
        Entry {
            base,
            patched: true,
        },
    );
    gone
}
