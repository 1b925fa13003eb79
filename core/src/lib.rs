//! fusionraid-core: the FusionRAID engine as a sans-IO state machine.
//!
//! See ARCHITECTURE.md at the repository root for the code map and the invariants.

pub mod detector;
pub mod layout;
pub mod parity;
pub mod rng;
pub mod types;

pub use types::{DiskId, Nanos, PAGE_SIZE, Placement};
