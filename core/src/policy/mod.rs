//! Policies: the decisions a scheme delegates about its members, each behind a narrow trait
//! and fed only by [`Members`], the per-member signals the engine keeps.
//!
//! - [`WritePlacement`]: which members new data should stay off while other room exists,
//!   and what a set of replica stripes costs (how the replicated area spreads its pairs).
//! - [`ReadRouting`]: which copy serves a read, when a RAID read is served by
//!   reconstruction instead of its own member, and where a hedged read may go.
//! - [`BackgroundAdmission`]: which members background work (conversion) may touch now.
//!
//! A scheme asks these questions in its read and write paths and keeps the mechanics (the
//! fallbacks to any healthy member, then to degraded stripes; the bookkeeping; the counters)
//! to itself, so a new policy is a new implementation here, not a new branch there. The
//! paper's FusionRAID is [`Policies::redirecting`]; its Fusion-ND is the same scheme with
//! [`Policies::non_redirecting`].

pub mod admission;

pub mod placement;
pub mod routing;
pub mod wear;

pub use crate::engine::members::Members;
pub use admission::{BackgroundAdmission, ForegroundPause, WriteSetPause};
pub use placement::{HealthOnly, SteerAroundSpikes, WritePlacement, WriteSetOnly};
pub use routing::{FewestStragglers, FirstCopy, ReadModeFirst, ReadRouting};
pub use wear::{WearLadder, WearSkewed};

use crate::types::DiskId;

/// The policies one scheme instance runs with.
pub struct Policies {
    pub placement: PlacementPolicy,
    pub routing: RoutingPolicy,
    pub admission: AdmissionPolicy,
}

impl Policies {
    /// FusionRAID (paper §4.3): new writes and reads go around members the spike detector
    /// marks unresponsive; conversion pauses on members busy with foreground I/O.
    pub fn redirecting(pause_fg_bytes_per_sec: f64) -> Self {
        Policies {
            placement: PlacementPolicy::SteerAroundSpikes(SteerAroundSpikes),
            routing: RoutingPolicy::FewestStragglers(FewestStragglers),
            admission: AdmissionPolicy::ForegroundPause(ForegroundPause {
                limit_bytes_per_sec: pause_fg_bytes_per_sec,
            }),
        }
    }

    /// FusionRAID with Sandook's steering (issue 20): writes and parity go to members in
    /// write mode, reads to copies in read mode, around spikes and congestion as well. Needs
    /// the scheme to hand the engine a [`crate::steer::Steering`]; without one it behaves as
    /// [`Policies::redirecting`].
    pub fn steered(pause_fg_bytes_per_sec: f64) -> Self {
        let pause = ForegroundPause {
            limit_bytes_per_sec: pause_fg_bytes_per_sec,
        };
        Policies {
            placement: PlacementPolicy::WriteSetOnly(WriteSetOnly),
            routing: RoutingPolicy::ReadModeFirst(ReadModeFirst),
            admission: AdmissionPolicy::WriteSetPause(WriteSetPause { pause }),
        }
    }

    /// The same policies with wear-aware placement on top (`wear`).
    pub fn skew_for_wear(&mut self, ladder: WearLadder) {
        let inner = std::mem::replace(&mut self.placement, PlacementPolicy::HealthOnly(HealthOnly));
        self.placement =
            PlacementPolicy::Custom(Box::new(WearSkewed::new(Box::new(inner), ladder)));
    }

    /// Fusion-ND (the paper's evaluation, §5): the same scheme with the detector's advice
    /// ignored; only failed members are avoided.
    pub fn non_redirecting(pause_fg_bytes_per_sec: f64) -> Self {
        Policies {
            placement: PlacementPolicy::HealthOnly(HealthOnly),
            routing: RoutingPolicy::FirstCopy(FirstCopy),
            admission: AdmissionPolicy::ForegroundPause(ForegroundPause {
                limit_bytes_per_sec: pause_fg_bytes_per_sec,
            }),
        }
    }
}

/// One policy of a kind: the built-in ones by value, so the engine's hot paths call them
/// directly (the write path asks placement about every candidate's members; through a
/// trait object that cost 1% of the engine's instructions per small write), any other one
/// as a trait object. Each forwards the trait's methods to what it holds.
macro_rules! dispatch {
    ($self:ident, $name:ident { $($variant:ident),* }, $p:ident => $call:expr) => {
        match $self {
            $($name::$variant($p) => $call,)*
            $name::Custom($p) => $call,
        }
    };
}

/// A [`WritePlacement`].
pub enum PlacementPolicy {
    SteerAroundSpikes(SteerAroundSpikes),
    HealthOnly(HealthOnly),
    WriteSetOnly(WriteSetOnly),
    Custom(Box<dyn WritePlacement>),
}

impl WritePlacement for PlacementPolicy {
    fn name(&self) -> &'static str {
        dispatch!(self, PlacementPolicy { SteerAroundSpikes, HealthOnly, WriteSetOnly }, p => p.name())
    }
    #[inline]
    fn steer_clear(&self, m: &Members, d: DiskId) -> bool {
        dispatch!(self, PlacementPolicy { SteerAroundSpikes, HealthOnly, WriteSetOnly }, p => p.steer_clear(m, d))
    }
    #[inline]
    fn steers(&self) -> bool {
        dispatch!(self, PlacementPolicy { SteerAroundSpikes, HealthOnly, WriteSetOnly }, p => p.steers())
    }
    fn pair_set_cost(&self, m: &Members, stripes: &[&[DiskId]], dcols: usize) -> usize {
        dispatch!(self, PlacementPolicy { SteerAroundSpikes, HealthOnly, WriteSetOnly }, p => p.pair_set_cost(m, stripes, dcols))
    }
    fn candidates(&self) -> usize {
        dispatch!(self, PlacementPolicy { SteerAroundSpikes, HealthOnly, WriteSetOnly }, p => p.candidates())
    }
    fn rather_not(&self, m: &Members, d: DiskId) -> bool {
        dispatch!(self, PlacementPolicy { SteerAroundSpikes, HealthOnly, WriteSetOnly }, p => p.rather_not(m, d))
    }
    #[inline]
    fn has_preferences(&self) -> bool {
        dispatch!(self, PlacementPolicy { SteerAroundSpikes, HealthOnly, WriteSetOnly }, p => p.has_preferences())
    }
}

/// A [`ReadRouting`].
pub enum RoutingPolicy {
    FewestStragglers(FewestStragglers),
    FirstCopy(FirstCopy),
    ReadModeFirst(ReadModeFirst),
    Custom(Box<dyn ReadRouting>),
}

impl ReadRouting for RoutingPolicy {
    fn name(&self) -> &'static str {
        dispatch!(self, RoutingPolicy { FewestStragglers, FirstCopy, ReadModeFirst }, p => p.name())
    }
    #[inline]
    fn pick_copy(&self, m: &Members, copies: &[DiskId]) -> usize {
        dispatch!(self, RoutingPolicy { FewestStragglers, FirstCopy, ReadModeFirst }, p => p.pick_copy(m, copies))
    }
    #[inline]
    fn reconstruct_around(&self, m: &Members, d: DiskId) -> bool {
        dispatch!(self, RoutingPolicy { FewestStragglers, FirstCopy, ReadModeFirst }, p => p.reconstruct_around(m, d))
    }
    fn may_hedge_to(&self, m: &Members, d: DiskId) -> bool {
        dispatch!(self, RoutingPolicy { FewestStragglers, FirstCopy, ReadModeFirst }, p => p.may_hedge_to(m, d))
    }
}

/// A [`BackgroundAdmission`].
pub enum AdmissionPolicy {
    ForegroundPause(ForegroundPause),
    WriteSetPause(WriteSetPause),
    Custom(Box<dyn BackgroundAdmission>),
}

impl BackgroundAdmission for AdmissionPolicy {
    fn name(&self) -> &'static str {
        dispatch!(self, AdmissionPolicy { ForegroundPause, WriteSetPause }, p => p.name())
    }
    #[inline]
    fn may_convert_on(&self, m: &Members, d: DiskId) -> bool {
        dispatch!(self, AdmissionPolicy { ForegroundPause, WriteSetPause }, p => p.may_convert_on(m, d))
    }
    fn may_write_on(&self, m: &Members, d: DiskId) -> bool {
        dispatch!(self, AdmissionPolicy { ForegroundPause, WriteSetPause }, p => p.may_write_on(m, d))
    }
    fn may_trim_on(&self, m: &Members, d: DiskId) -> bool {
        dispatch!(self, AdmissionPolicy { ForegroundPause, WriteSetPause }, p => p.may_trim_on(m, d))
    }
}

impl std::fmt::Debug for Policies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policies")
            .field("placement", &self.placement.name())
            .field("routing", &self.routing.name())
            .field("admission", &self.admission.name())
            .finish()
    }
}
