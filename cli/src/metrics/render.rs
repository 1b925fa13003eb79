//! A status snapshot as Prometheus metrics: one `prometheus-client` collector built per
//! scrape from the snapshot the loop just produced (the engine's counters live in the
//! engine and the loop, not in metric objects, so nothing is double-counted or kept twice).
//!
//! Naming follows Prometheus: `fusionraid_` prefix, base units (seconds, bytes) in the name,
//! `_total` on counters (the encoder adds it, and the unit before it). The families are
//! encoded per member (`members.rs`), per volume (`volumes.rs`) and pool-wide (`pool.rs`),
//! through the helpers of `encode.rs`.

use std::fmt::Error;

use fusionraid_core::meta::RecoveryReport;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

use super::{members, pool, volumes};
use crate::status_doc::StatusDoc;

/// What the endpoint knows beside the snapshot: fixed at start.
#[derive(Clone, Debug, Default)]
pub struct PoolFacts {
    pub scheme: String,
    /// What recovery found when `serve` started (journaled pools).
    pub recovery: Option<RecoveryReport>,
}

#[derive(Debug)]
pub struct SnapshotMetrics {
    pub doc: StatusDoc,
    pub facts: PoolFacts,
}

impl Collector for SnapshotMetrics {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), Error> {
        members::encode(&self.doc.snapshot.members, &mut e)?;
        volumes::encode(&self.doc.snapshot.volumes, &self.doc.volume_names, &mut e)?;
        pool::encode(self, &mut e)
    }
}
