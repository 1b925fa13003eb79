//! Where data goes when no spare stripe clear of the failed members is left: the one with
//! the fewest columns on failed members. A stripe whose parity is all spent on failed
//! members holds its data with no redundancy, so a write or a move that takes it while a
//! less degraded stripe is spare gives data away to the next failure (a RAID6 volume with
//! two members down moved blocks that had one parity left into stripes that had none, and
//! a third failure lost them: `core/tests/rebuild.rs`).

use std::ops::RangeInclusive;

use crate::rng::Rng;
use crate::space::{StripeTable, Zone};
use crate::types::DiskId;

/// The first spare stripe with a count of columns on failed members in `lost`, the fewest
/// first.
pub(super) fn take_least_degraded(
    stripes: &mut StripeTable,
    zone: &Zone,
    failed: impl Fn(DiskId) -> bool + Copy,
    lost: RangeInclusive<usize>,
) -> Option<u32> {
    lost.into_iter().find_map(|k| {
        stripes
            .take_spare(|s| zone.failed_columns(s, failed) == k)
            .map(|x| x.0)
    })
}

/// [`take_least_degraded`] drawing at random among the spare stripes.
pub(super) fn take_random_least_degraded(
    stripes: &mut StripeTable,
    rng: &mut Rng,
    zone: &Zone,
    failed: impl Fn(DiskId) -> bool + Copy,
    lost: RangeInclusive<usize>,
) -> Option<u32> {
    lost.into_iter()
        .find_map(|k| stripes.take_random_spare(rng, |s| zone.failed_columns(s, failed) == k))
}
