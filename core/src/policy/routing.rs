//! Which copy serves a read. The read path offers the readable copies (failed members and
//! copies that failed their checksum already left out) and handles the rest: reconstruction
//! when no copy is readable, counters, retries.

use crate::engine::members::Members;
use crate::types::DiskId;

pub trait ReadRouting: Send {
    /// A short name for status and debugging.
    fn name(&self) -> &'static str;

    /// The copy (an index into `copies`, the members of the readable copies in copy order,
    /// never empty) a replicated read goes to.
    fn pick_copy(&self, m: &Members, copies: &[DiskId]) -> usize;

    /// Whether a read of a RAID column on healthy member `d` is served by reconstruction
    /// from the stripe's other columns instead. Asked only when every other column's member
    /// is healthy and responsive.
    fn reconstruct_around(&self, m: &Members, d: DiskId) -> bool;

    /// Whether a hedged read (a second read of a slow replicated read) may go to `d`.
    fn may_hedge_to(&self, m: &Members, d: DiskId) -> bool {
        !m.failed(d) && !m.unresponsive(d)
    }
}

/// The paper's rule (§4.3): the copy whose member has fewer stragglers, a member in a spike
/// last; queue depth breaks ties, so load spreads over the copies while all are healthy. A
/// RAID read whose member is in a spike is rebuilt from the other columns.
#[derive(Debug, Clone, Copy)]
pub struct FewestStragglers;

impl ReadRouting for FewestStragglers {
    fn name(&self) -> &'static str {
        "fewest-stragglers"
    }
    fn pick_copy(&self, m: &Members, copies: &[DiskId]) -> usize {
        (0..copies.len())
            .min_by_key(|&i| {
                let d = copies[i];
                (m.unresponsive(d), m.stragglers(d), m.queue_depth(d))
            })
            .expect("at least one copy")
    }
    fn reconstruct_around(&self, m: &Members, d: DiskId) -> bool {
        m.unresponsive(d)
    }
}

/// Always the first readable copy; RAID reads always go to their own member (Fusion-ND).
#[derive(Debug, Clone, Copy)]
pub struct FirstCopy;

impl ReadRouting for FirstCopy {
    fn name(&self) -> &'static str {
        "first-copy"
    }
    fn pick_copy(&self, _m: &Members, _copies: &[DiskId]) -> usize {
        0
    }
    fn reconstruct_around(&self, _m: &Members, _d: DiskId) -> bool {
        false
    }
}

/// Sandook's read side on FusionRAID's rule: a replicated read prefers a copy on a member in
/// read mode, then the paper's order (spike, stragglers), then the shortest queue scaled by
/// the member's rate factor. A RAID read is rebuilt from the stripe's other columns only
/// around a spike, as the paper's rule does: rebuilding reads every other data column, and
/// doing it for every congested member multiplied the load at high rates until the pool fell
/// over (0.19 of ideal at the SLO against 0.60 without it, issue 20's measurements). Without
/// steering in the engine it is [`FewestStragglers`].
#[derive(Debug, Clone, Copy)]
pub struct ReadModeFirst;

impl ReadRouting for ReadModeFirst {
    fn name(&self) -> &'static str {
        "read-mode-first"
    }
    fn pick_copy(&self, m: &Members, copies: &[DiskId]) -> usize {
        let Some(s) = m.steering() else {
            return FewestStragglers.pick_copy(m, copies);
        };
        (0..copies.len())
            .min_by_key(|&i| {
                let d = copies[i];
                // Queue depth per unit of rate: a member cut to a quarter counts four times.
                let load = ((m.queue_depth(d) + 1) as f64 / s.rate_factor(d) * 16.0) as u64;
                (m.unresponsive(d), s.is_writer(d), m.stragglers(d), load)
            })
            .expect("at least one copy")
    }
    fn reconstruct_around(&self, m: &Members, d: DiskId) -> bool {
        m.unresponsive(d)
    }
}
