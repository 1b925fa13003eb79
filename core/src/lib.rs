//! fusionraid-core: the FusionRAID engine as a sans-IO state machine.
//!
//! See ARCHITECTURE.md at the repository root for the code map and the invariants.

#![warn(clippy::too_many_lines)]

pub mod detector;
pub mod engine;
pub mod fasthash;
pub mod layout;
pub mod meta;
pub mod parity;
pub mod policy;
pub mod rng;
pub mod scheme;
pub mod slab;
pub mod space;
pub mod steer;
pub mod types;
pub mod volume;

pub use engine::api::{
    Data, DevError, DevOp, DeviceIo, IoId, IoResult, Op, Reply, ReqError, Request, SharedBytes,
    VolumeId,
};
pub use engine::{Engine, EngineConfig};
pub use types::{DiskId, Nanos, PAGE_SIZE, Placement};
