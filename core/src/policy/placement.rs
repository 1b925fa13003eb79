//! Where new data may go. The write path offers every candidate (a pack, a replica slot, a
//! spare stripe, a new pair set's stripes) to [`WritePlacement::steer_clear`] first and
//! falls back on its own to any healthy member, then to stripes whose parity covers the
//! failed ones: a policy only ranks members, it can never make a write fail.

use crate::engine::members::Members;
use crate::types::DiskId;

pub trait WritePlacement: Send {
    /// A short name for status and debugging.
    fn name(&self) -> &'static str;

    /// Whether new data should stay off `d` (a healthy member) while other room exists.
    fn steer_clear(&self, m: &Members, d: DiskId) -> bool;

    /// Whether room passed over for this policy counts as a redirected write
    /// (`EngineStats::redirected_writes`): false for a policy that never steers.
    fn steers(&self) -> bool;

    /// Whether new data would rather not go to `d` where the choice costs nothing (a
    /// cleaning move's target stripe among the spare ones): weaker than `steer_clear`.
    fn rather_not(&self, _m: &Members, _d: DiskId) -> bool {
        false
    }
    /// Whether `rather_not` can ever be true (saves the extra search otherwise).
    fn has_preferences(&self) -> bool {
        false
    }

    /// Spare stripes a new pair set is chosen from (at most 8): more choices let
    /// `pair_set_cost` weigh more, at the price of the draws and the combinations priced.
    fn candidates(&self) -> usize {
        4
    }

    /// What a pair set of these stripes costs (the stripes' member lists, data columns
    /// first): a new pair set takes the cheapest of a few random candidates. The default,
    /// the paper's power of two choices, counts the members two stripes' data columns
    /// share: fewer shared members leave more ways to pair columns on distinct members.
    fn pair_set_cost(&self, _m: &Members, stripes: &[&[DiskId]], dcols: usize) -> usize {
        let mut shared = 0;
        for (i, a) in stripes.iter().enumerate() {
            for b in &stripes[i + 1..] {
                shared += a[..dcols].iter().filter(|d| b[..dcols].contains(d)).count();
            }
        }
        shared
    }
}

/// FusionRAID's placement (paper §4.3): new data goes around members in a latency spike.
#[derive(Debug, Clone, Copy)]
pub struct SteerAroundSpikes;

impl WritePlacement for SteerAroundSpikes {
    fn name(&self) -> &'static str {
        "steer-around-spikes"
    }
    fn steer_clear(&self, m: &Members, d: DiskId) -> bool {
        m.unresponsive(d)
    }
    fn steers(&self) -> bool {
        true
    }
}

/// Every healthy member is as good as any other (Fusion-ND).
#[derive(Debug, Clone, Copy)]
pub struct HealthOnly;

impl WritePlacement for HealthOnly {
    fn name(&self) -> &'static str {
        "health-only"
    }
    fn steer_clear(&self, _m: &Members, _d: DiskId) -> bool {
        false
    }
    fn steers(&self) -> bool {
        false
    }
}

/// Sandook's read/write segregation on FusionRAID's placement: new data also stays off
/// members in read mode, and a pair set costs more for each data column on one. Congestion
/// control's rate factors do not steer writes: with them, placement packed the replicated
/// area's writes onto the few members not yet cut, which then spiked, and the reads rebuilt
/// around the spikes collapsed the pool (issue 20's measurements). Without steering in the
/// engine it is [`SteerAroundSpikes`].
#[derive(Debug, Clone, Copy)]
pub struct WriteSetOnly;

fn read_mode(m: &Members, d: DiskId) -> bool {
    !m.takes_writes(d)
}

impl WritePlacement for WriteSetOnly {
    fn name(&self) -> &'static str {
        "write-set-only"
    }
    fn steer_clear(&self, m: &Members, d: DiskId) -> bool {
        m.unresponsive(d) || read_mode(m, d)
    }
    fn steers(&self) -> bool {
        true
    }
    fn pair_set_cost(&self, m: &Members, stripes: &[&[DiskId]], dcols: usize) -> usize {
        let shared = SteerAroundSpikes.pair_set_cost(m, stripes, dcols);
        let read_only: usize = stripes
            .iter()
            .map(|s| s[..dcols].iter().filter(|&&d| read_mode(m, d)).count())
            .sum();
        shared + read_only
    }
}
