//! The schemes: data-placement and redundancy policies the engine drives through the
//! [`Scheme`] trait (defined with the engine, `crate::engine::scheme`).
//!
//! FusionRAID is one scheme; the baselines it is compared with (RAID5, RAID50, LogRAID,
//! ToleRAID, NV-RAID, RAIDM, Fusion-ND, sit-out) are others. Every driver (simulator,
//! io_uring server) runs every scheme unchanged because they only meet through that trait
//! and `Ctx`.

pub mod baselines;
pub mod fusion;
pub mod locks;

pub use crate::engine::scheme::{MetadataStatus, Scheme, VolumeStatus};
