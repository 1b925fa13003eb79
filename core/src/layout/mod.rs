//! Declustering layouts: the static map from a stripe of a zone to disks and block offsets.
//!
//! A *zone* is a range of block offsets, the same range on every disk of the pool, that one
//! layout geometry (pool size n, stripe width k) fills with stripes. The layout is a pure
//! function: no tables, so it costs no metadata. It repeats with a period called a *template*:
//! `template_stripes()` stripes that occupy `template_blocks_per_disk()` blocks on each disk.
//!
//! Column convention: columns `0..k` of a stripe; schemes put data in the first `k - m`
//! columns and parity in the last `m`. A layout may rotate which *disk* a column lands on.

mod error;
pub mod gf;
mod groups;
mod mols;
mod permutation;
#[cfg(test)]
mod tests;
mod tiered;

pub use error::GeometryError;
pub use gf::GaloisField;
pub use groups::GroupLayout;
pub use mols::MolsLayout;
pub use permutation::{PERMUTATIONS, PermutationLayout};
pub use tiered::TieredLayout;

use crate::types::{DiskId, Placement};

/// A static declustering function. Implementations: [`MolsLayout`] (RAID+), [`GroupLayout`]
/// (RAID50-style fixed groups) and [`PermutationLayout`] (dRAID-style, any n).
pub trait Layout: Send + Sync + std::fmt::Debug {
    /// Number of disks in the pool (n).
    fn disk_count(&self) -> usize;
    /// Blocks per stripe (k), data and parity columns together.
    fn width(&self) -> usize;
    /// Stripes in one template, the period after which the pattern repeats.
    fn template_stripes(&self) -> u64;
    /// Blocks one template uses on each disk that it uses at all.
    fn template_blocks_per_disk(&self) -> u64;
    /// Templates after which placements repeat exactly: stripe `s + P * template_stripes()`
    /// sits on the same disks as stripe `s`, `P * template_blocks_per_disk()` blocks further.
    /// Lets a zone tabulate one period instead of calling `locate` on every access.
    fn period_templates(&self) -> u64 {
        1
    }
    /// Where column `col` (`0..width`) of `stripe` lives.
    fn locate(&self, stripe: u64, col: usize) -> Placement;
    /// Inverse of `locate`: which (stripe, column) owns `block` on `disk`, if any.
    fn owner(&self, disk: DiskId, block: u64) -> Option<(u64, usize)>;
    /// Short name for reports, e.g. "mols" or "groups".
    fn name(&self) -> &'static str;

    /// The disks of `stripe` in column order.
    fn stripe_disks(&self, stripe: u64, out: &mut Vec<DiskId>) {
        out.clear();
        out.extend((0..self.width()).map(|c| self.locate(stripe, c).disk));
    }
}
