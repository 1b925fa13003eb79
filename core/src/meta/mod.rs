//! Durable metadata: the mapping survives power loss and restarts.
//!
//! FusionRAID keeps its mapping tables in battery-backed DRAM; we have none, so every
//! mapping change is a *record* in a write-ahead journal, and the whole mapping is
//! periodically written as a *checkpoint*. Both live in the reserved region at the start of
//! every member (`layout`), each journal block and checkpoint chunk on `copies` members so
//! the metadata tolerates as many member losses as the most redundant volume.
//!
//! The durable state is deliberately small: the Block Mapping Table, the patch lists and the
//! *structure* of replica pair sets (`image`). Everything else (stripe states, valid bits,
//! which slots are live, free space) is derived from it on recovery, so those transitions
//! need no records and can never disagree with the mapping.
//!
//! Safety rests on two rules, both enforced by the scheme (see `scheme::fusion::durable`):
//! 1. A record is appended only after the data it points to is on the members, and a commit
//!    flushes every member written since the previous commit before it writes journal blocks.
//! 2. A stripe freed by a mapping change is not reused until the commit holding that change
//!    is durable (`StripeTable::set_hold`), so a durable mapping never points at a stripe that
//!    was handed out again: conversion and compaction never overwrite the only copy.
//!
//! docs/FORMAT.md describes the bytes and the crash analysis of every update path.

pub mod frame;
pub mod image;
pub mod journal;
pub mod layout;
mod le_reader;
pub mod record;
pub mod recover;

pub use image::{Image, SetImage, VolImage};
pub use journal::{ImageBound, Journal, JournalConfig};
pub use layout::MetaLayout;
pub use record::Record;
pub use recover::{RecoveryError, RecoveryReport, recover_image};
