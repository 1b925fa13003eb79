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

pub use crate::engine::members::Members;
pub use admission::{BackgroundAdmission, ForegroundPause};
pub use placement::{HealthOnly, SteerAroundSpikes, WritePlacement};
pub use routing::{FewestStragglers, FirstCopy, ReadRouting};

/// The policies one scheme instance runs with.
pub struct Policies {
    pub placement: Box<dyn WritePlacement>,
    pub routing: Box<dyn ReadRouting>,
    pub admission: Box<dyn BackgroundAdmission>,
}

impl Policies {
    /// FusionRAID (paper §4.3): new writes and reads go around members the spike detector
    /// marks unresponsive; conversion pauses on members busy with foreground I/O.
    pub fn redirecting(pause_fg_bytes_per_sec: f64) -> Self {
        Policies {
            placement: Box::new(SteerAroundSpikes),
            routing: Box::new(FewestStragglers),
            admission: Box::new(ForegroundPause {
                limit_bytes_per_sec: pause_fg_bytes_per_sec,
            }),
        }
    }

    /// Fusion-ND (the paper's evaluation, §5): the same scheme with the detector's advice
    /// ignored; only failed members are avoided.
    pub fn non_redirecting(pause_fg_bytes_per_sec: f64) -> Self {
        Policies {
            placement: Box::new(HealthOnly),
            routing: Box::new(FirstCopy),
            admission: Box::new(ForegroundPause {
                limit_bytes_per_sec: pause_fg_bytes_per_sec,
            }),
        }
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
