//! fusionraid-sim: a deterministic discrete-event simulator that drives the core engine in
//! virtual time over the SSD/HDD models of `fusionraid-devices`, with trace readers and
//! workload generators.

pub mod driver;
pub mod eval;
pub mod fleet_curves;
pub mod plan;
pub mod scenario;
pub mod slo;
pub mod spike_probe;
pub mod stats;
pub mod trace;
pub mod workload;

pub use driver::{Detailed, Progress, Sim, SimError};
pub use scenario::{Load, PoolSpec, Scenario, build_scheme};
pub use stats::Report;
