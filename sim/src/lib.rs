//! fusionraid-sim: a deterministic discrete-event simulator that drives the core engine in
//! virtual time, with SSD/HDD models, trace readers and workload generators.

pub mod device;
pub mod trace;
pub mod workload;
