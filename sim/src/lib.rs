//! fusionraid-sim: a deterministic discrete-event simulator that drives the core engine in
//! virtual time, with SSD/HDD models, trace readers and workload generators.

pub mod device;
pub mod driver;
pub mod eval;
pub mod scenario;
pub mod stats;
pub mod trace;
pub mod workload;

pub use driver::{Detailed, Progress, Sim, SimError};
pub use scenario::{Load, PoolSpec, Scenario, build_scheme};
pub use stats::Report;
