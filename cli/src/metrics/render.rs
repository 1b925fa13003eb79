//! A status snapshot as Prometheus metrics: one `prometheus-client` collector built per
//! scrape from the snapshot the loop just produced (the engine's counters live in the
//! engine and the loop, not in metric objects, so nothing is double-counted or kept twice).
//!
//! Naming follows Prometheus: `fusionraid_` prefix, base units (seconds, bytes) in the name,
//! `_total` on counters (the encoder adds it, and the unit before it).

use std::fmt::Error;

use fusionraid_core::meta::RecoveryReport;
use fusionraid_io::driver::latency::BOUNDS_US;
use fusionraid_io::driver::status::MetadataView;
use fusionraid_io::driver::{LatencyHistogram, MemberState};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

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

type Labels = Vec<(&'static str, String)>;

/// One metric family: its descriptor, then one sample (or histogram) per label set.
fn family<T>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    ty: MetricType,
    rows: impl IntoIterator<Item = (Labels, T)>,
    mut sample: impl FnMut(&mut MetricEncoder, &T) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut rows = rows.into_iter().peekable();
    if rows.peek().is_none() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, unit.as_ref(), ty)?;
    for (labels, v) in rows {
        let mut f = m.encode_family(&labels)?;
        sample(&mut f, &v)?;
    }
    Ok(())
}

fn counter(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    rows: impl IntoIterator<Item = (Labels, u64)>,
) -> Result<(), Error> {
    family(enc, name, help, unit, MetricType::Counter, rows, |m, v| {
        m.encode_counter::<NoLabelSet, _, u64>(v, None)
    })
}

fn counter_f(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    rows: impl IntoIterator<Item = (Labels, f64)>,
) -> Result<(), Error> {
    family(enc, name, help, unit, MetricType::Counter, rows, |m, v| {
        m.encode_counter::<NoLabelSet, _, u64>(v, None)
    })
}

fn gauge<T: prometheus_client::encoding::EncodeGaugeValue>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    rows: impl IntoIterator<Item = (Labels, T)>,
) -> Result<(), Error> {
    family(enc, name, help, unit, MetricType::Gauge, rows, |m, v| {
        m.encode_gauge(v)
    })
}

fn histogram<'a>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (Labels, &'a LatencyHistogram)>,
) -> Result<(), Error> {
    family(
        enc,
        name,
        help,
        Some(Unit::Seconds),
        MetricType::Histogram,
        rows,
        |m, h| {
            // Per-bucket counts; the encoder makes them cumulative.
            let buckets: Vec<(f64, u64)> = h
                .counts
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    (
                        BOUNDS_US.get(i).map_or(f64::INFINITY, |&b| b as f64 / 1e6),
                        c,
                    )
                })
                .collect();
            m.encode_histogram::<NoLabelSet>(h.sum_ns as f64 / 1e9, h.count, &buckets, None)
        },
    )
}

/// Prometheus spells the unit of a ratio in the singular (the client's `Unit::Ratios` does not).
fn ratio() -> Unit {
    Unit::Other("ratio".into())
}

fn one<T>(v: T) -> [(Labels, T); 1] {
    [(Vec::new(), v)]
}

fn state_name(s: MemberState) -> &'static str {
    match s {
        MemberState::Healthy => "healthy",
        MemberState::Spiking => "spiking",
        MemberState::Failed => "failed",
        MemberState::Missing => "missing",
    }
}

impl SnapshotMetrics {
    fn members(&self, e: &mut DescriptorEncoder) -> Result<(), Error> {
        let ms = &self.doc.snapshot.members;
        let l =
            |i: usize| -> Labels { vec![("member", i.to_string()), ("name", ms[i].name.clone())] };
        let per = |f: &dyn Fn(usize) -> u64| -> Vec<(Labels, u64)> {
            (0..ms.len()).map(|i| (l(i), f(i))).collect()
        };
        // A state set: one series per state, 1 for the member's current one.
        let states = [
            MemberState::Healthy,
            MemberState::Spiking,
            MemberState::Failed,
            MemberState::Missing,
        ];
        let rows: Vec<(Labels, u64)> = (0..ms.len())
            .flat_map(|i| {
                states.iter().map(move |&s| {
                    let mut lab = l(i);
                    lab.push(("state", state_name(s).to_string()));
                    (lab, u64::from(ms[i].state == s))
                })
            })
            .collect();
        gauge(
            e,
            "fusionraid_member_state",
            "Member state: 1 for the current one (healthy; spiking: the detector steers I/O around it; failed; missing).",
            None,
            rows,
        )?;
        gauge(
            e,
            "fusionraid_member_size",
            "Usable size of the member.",
            Some(Unit::Bytes),
            per(&|i| ms[i].size_bytes),
        )?;
        counter(
            e,
            "fusionraid_member_reads",
            "Device reads issued to the member.",
            None,
            per(&|i| ms[i].reads),
        )?;
        counter(
            e,
            "fusionraid_member_writes",
            "Device writes issued to the member.",
            None,
            per(&|i| ms[i].writes),
        )?;
        counter(
            e,
            "fusionraid_member_read",
            "Bytes read from the member.",
            Some(Unit::Bytes),
            per(&|i| ms[i].bytes_read),
        )?;
        counter(
            e,
            "fusionraid_member_written",
            "Bytes written to the member.",
            Some(Unit::Bytes),
            per(&|i| ms[i].bytes_written),
        )?;
        counter(
            e,
            "fusionraid_member_background",
            "Bytes read and written by background work (conversion, relocation, rebuild, scrub).",
            Some(Unit::Bytes),
            per(&|i| ms[i].background_bytes),
        )?;
        counter(
            e,
            "fusionraid_member_errors",
            "Device I/O errors (any fails the member).",
            None,
            per(&|i| ms[i].errors),
        )?;
        counter(
            e,
            "fusionraid_member_spikes",
            "Times the spike detector marked the member unresponsive.",
            None,
            per(&|i| ms[i].spikes),
        )?;
        counter_f(
            e,
            "fusionraid_member_unresponsive",
            "Time the detector held the member unresponsive.",
            Some(Unit::Seconds),
            (0..ms.len()).map(|i| (l(i), ms[i].unresponsive_seconds)),
        )?;
        gauge(
            e,
            "fusionraid_member_stragglers",
            "Requests pending longer than the detector's window.",
            None,
            per(&|i| u64::from(ms[i].stragglers)),
        )?;
        gauge(
            e,
            "fusionraid_member_queue_depth",
            "Device operations submitted and not completed.",
            None,
            per(&|i| ms[i].inflight),
        )?;
        let lat = (0..ms.len()).flat_map(|i| {
            [
                ("read", &ms[i].read_latency),
                ("write", &ms[i].write_latency),
            ]
            .into_iter()
            .map(move |(op, h)| {
                let mut lab = l(i);
                lab.push(("op", op.to_string()));
                (lab, h)
            })
        });
        histogram(
            e,
            "fusionraid_member_latency",
            "Device-level latency, submission to completion.",
            lat,
        )
    }

    fn volumes(&self, e: &mut DescriptorEncoder) -> Result<(), Error> {
        let vs = &self.doc.snapshot.volumes;
        let l = |i: usize| -> Labels {
            let name = self
                .doc
                .volume_names
                .get(vs[i].index as usize)
                .unwrap_or(&vs[i].name);
            vec![("volume", name.clone())]
        };
        let per = |f: &dyn Fn(usize) -> u64| -> Vec<(Labels, u64)> {
            (0..vs.len()).map(|i| (l(i), f(i))).collect()
        };
        let ops = |i: usize| {
            let io = &vs[i].io;
            [
                ("read", &io.read),
                ("write", &io.write),
                ("flush", &io.flush),
                ("trim", &io.other),
            ]
            .into_iter()
            .map(move |(op, h)| {
                let mut lab = l(i);
                lab.push(("op", op.to_string()));
                (lab, h)
            })
        };
        counter(
            e,
            "fusionraid_volume_requests",
            "Commands answered, by kind, as the volume's users sent them.",
            None,
            (0..vs.len()).flat_map(|i| ops(i).map(|(lab, h)| (lab, h.count))),
        )?;
        counter(
            e,
            "fusionraid_volume_request_errors",
            "Commands answered with an error.",
            None,
            per(&|i| vs[i].io.errors),
        )?;
        counter(
            e,
            "fusionraid_volume_read",
            "Bytes users read.",
            Some(Unit::Bytes),
            per(&|i| vs[i].io.bytes_read),
        )?;
        counter(
            e,
            "fusionraid_volume_written",
            "Bytes users wrote (zeroes included).",
            Some(Unit::Bytes),
            per(&|i| vs[i].io.bytes_written),
        )?;
        histogram(
            e,
            "fusionraid_volume_request_latency",
            "Command latency as users see it, admission to reply.",
            (0..vs.len()).flat_map(ops),
        )?;
        gauge(
            e,
            "fusionraid_volume_size",
            "Volume size.",
            Some(Unit::Bytes),
            per(&|i| vs[i].size_bytes),
        )?;
        gauge(
            e,
            "fusionraid_volume_mapped",
            "User data mapped (written and not trimmed).",
            Some(Unit::Bytes),
            per(&|i| vs[i].mapped_bytes),
        )?;
        gauge(
            e,
            "fusionraid_volume_raid",
            "Physical space in RAID-area stripes.",
            Some(Unit::Bytes),
            per(&|i| vs[i].raid_bytes),
        )?;
        gauge(
            e,
            "fusionraid_volume_replicated",
            "Physical space in replicated-area stripes.",
            Some(Unit::Bytes),
            per(&|i| vs[i].replicated_bytes),
        )?;
        gauge(
            e,
            "fusionraid_volume_free",
            "Physical space in free stripes.",
            Some(Unit::Bytes),
            per(&|i| vs[i].free_bytes),
        )?;
        gauge(
            e,
            "fusionraid_volume_metadata",
            "Metadata held in memory for the volume.",
            Some(Unit::Bytes),
            per(&|i| vs[i].metadata_bytes),
        )?;
        gauge(
            e,
            "fusionraid_volume_conversion_backlog",
            "Replica sets waiting for conversion to RAID stripes.",
            None,
            per(&|i| vs[i].conversion_backlog),
        )?;
        gauge(
            e,
            "fusionraid_volume_rebuild_progress",
            "Progress of the rebuild (or the rebalance after a replacement), 1 when done.",
            Some(ratio()),
            (0..vs.len()).filter_map(|i| Some((l(i), vs[i].rebuild_progress?))),
        )?;
        gauge(
            e,
            "fusionraid_volume_scrub_progress",
            "Progress of the last scrub, 1 when done.",
            Some(ratio()),
            (0..vs.len()).filter_map(|i| Some((l(i), vs[i].scrub_progress?))),
        )
    }

    fn pool(&self, e: &mut DescriptorEncoder) -> Result<(), Error> {
        let s = &self.doc.snapshot;
        let c = &s.counters;
        gauge(
            e,
            "fusionraid_pool_info",
            "The pool served: name, id, scheme, layout (value 1).",
            None,
            [(
                vec![
                    ("pool", self.doc.pool.clone()),
                    ("uuid", self.doc.uuid.clone()),
                    ("scheme", self.facts.scheme.clone()),
                    ("layout", self.doc.layout.clone()),
                ],
                1u64,
            )],
        )?;
        gauge(
            e,
            "fusionraid_uptime",
            "Time since serve started.",
            Some(Unit::Seconds),
            one(s.uptime_s),
        )?;
        counter(
            e,
            "fusionraid_requests",
            "Engine requests submitted.",
            None,
            one(s.requests),
        )?;
        counter(
            e,
            "fusionraid_failed_requests",
            "Engine requests answered with an error.",
            None,
            one(s.failed_requests),
        )?;
        counter(
            e,
            "fusionraid_busy_requests",
            "Engine requests refused as busy (backpressure).",
            None,
            one(c.rejected_busy),
        )?;
        gauge(
            e,
            "fusionraid_inflight_requests",
            "Engine requests in flight.",
            None,
            one(s.inflight_requests),
        )?;
        gauge(
            e,
            "fusionraid_inflight_device_ios",
            "Device I/Os in flight.",
            None,
            one(s.inflight_ios),
        )?;
        counter(
            e,
            "fusionraid_redirected_reads",
            "Reads served from another copy than the first choice (a spiking member).",
            None,
            one(s.redirected_reads),
        )?;
        counter(
            e,
            "fusionraid_reconstructed_reads",
            "Reads rebuilt from parity instead of read from their member.",
            None,
            one(s.reconstructed_reads),
        )?;
        counter(
            e,
            "fusionraid_hedged_reads",
            "Reads sent twice to beat a slow member.",
            None,
            one(c.hedged_reads),
        )?;
        counter(
            e,
            "fusionraid_redirected_writes",
            "Writes steered away from a spiking member.",
            None,
            one(s.redirected_writes),
        )?;
        counter(
            e,
            "fusionraid_steered_pair_sets",
            "Pair sets opened away from an unresponsive member.",
            None,
            one(s.steered_pair_sets),
        )?;
        counter(
            e,
            "fusionraid_full_stripe_writes",
            "Writes that filled whole stripes.",
            None,
            one(c.full_stripe_writes),
        )?;
        counter(
            e,
            "fusionraid_replicated_block_writes",
            "Blocks written to the replicated area.",
            None,
            one(c.replicated_block_writes),
        )?;
        counter(
            e,
            "fusionraid_conversions",
            "Replica sets converted to RAID stripes.",
            None,
            one(s.conversions),
        )?;
        counter(
            e,
            "fusionraid_relocations",
            "Blocks moved by relocation (compaction, repair, rebuild).",
            None,
            one(c.relocations),
        )?;
        counter(
            e,
            "fusionraid_rebuilt_columns",
            "Stripe columns rebuilt into spare space.",
            None,
            one(c.rebuilt_columns),
        )?;
        counter(
            e,
            "fusionraid_member_failures",
            "Members failed since start.",
            None,
            one(c.disk_failures),
        )?;
        counter(
            e,
            "fusionraid_write_retries",
            "Writes retried elsewhere after a member failed under them.",
            None,
            one(c.write_retries),
        )?;
        counter(
            e,
            "fusionraid_user_written",
            "Bytes users wrote, as the engine counts them.",
            Some(Unit::Bytes),
            one(c.user_bytes_written),
        )?;
        counter(
            e,
            "fusionraid_device_foreground_written",
            "Bytes written to members on the user path.",
            Some(Unit::Bytes),
            one(c.device_bytes_written_fg),
        )?;
        counter(
            e,
            "fusionraid_device_background_written",
            "Bytes written to members by background work.",
            Some(Unit::Bytes),
            one(c.device_bytes_written_bg),
        )?;
        counter(
            e,
            "fusionraid_device_background_read",
            "Bytes read from members by background work.",
            Some(Unit::Bytes),
            one(c.device_bytes_read_bg),
        )?;
        gauge(
            e,
            "fusionraid_write_amplification",
            "Device bytes written per user byte written, pool-wide since start.",
            Some(ratio()),
            one(s.write_amplification),
        )?;
        counter(
            e,
            "fusionraid_checksum_errors",
            "Device reads that failed their page checksum.",
            None,
            one(s.checksum_errors),
        )?;
        counter(
            e,
            "fusionraid_repaired_blocks",
            "Blocks moved off bad copies.",
            None,
            one(s.repaired_blocks),
        )?;
        counter(
            e,
            "fusionraid_parity_rewrites",
            "Stripe parities found wrong by a scrub and rewritten.",
            None,
            one(s.parity_rewrites),
        )?;
        gauge(
            e,
            "fusionraid_unrecoverable_pages",
            "Pages with no good copy left (reads fail until rewritten).",
            None,
            one(s.unrecoverable_pages),
        )?;
        if let Some(m) = &s.metadata {
            self.journal(e, m)?;
        }
        if let Some(r) = &self.facts.recovery {
            gauge(
                e,
                "fusionraid_recovery_checkpoint",
                "Size of the checkpoint recovery started from.",
                Some(Unit::Bytes),
                one(r.checkpoint_bytes),
            )?;
            gauge(
                e,
                "fusionraid_recovery_replayed_blocks",
                "Journal blocks replayed at start.",
                None,
                one(r.blocks_replayed),
            )?;
            gauge(
                e,
                "fusionraid_recovery_replayed_records",
                "Journal records replayed at start.",
                None,
                one(r.records_replayed),
            )?;
            gauge(
                e,
                "fusionraid_recovery_ignored_blocks",
                "Valid journal blocks past the first gap, never committed, ignored at start.",
                None,
                one(r.blocks_ignored),
            )?;
            gauge(
                e,
                "fusionraid_recovery_unreadable_members",
                "Members whose metadata could not be read at start.",
                None,
                one(r.members_missing as u64),
            )?;
            gauge(
                e,
                "fusionraid_recovery_failed_members",
                "Members the journal says failed before this start.",
                None,
                one(r.members_failed.len() as u64),
            )?;
        }
        Ok(())
    }

    fn journal(&self, e: &mut DescriptorEncoder, m: &MetadataView) -> Result<(), Error> {
        counter(
            e,
            "fusionraid_journal_commits",
            "Journal commits.",
            None,
            one(m.commits),
        )?;
        counter_f(
            e,
            "fusionraid_journal_commit",
            "Time spent in successful journal commits (divided by commits: the mean).",
            Some(Unit::Seconds),
            one(m.commit_seconds),
        )?;
        counter(
            e,
            "fusionraid_journal_failed_commits",
            "Journal commits that failed.",
            None,
            one(m.failed_commits),
        )?;
        counter(
            e,
            "fusionraid_journal_checkpoints",
            "Checkpoints written.",
            None,
            one(m.checkpoints),
        )?;
        counter(
            e,
            "fusionraid_journal_blocks_written",
            "Journal blocks written.",
            None,
            one(m.journal_blocks_written),
        )?;
        counter(
            e,
            "fusionraid_journal_records",
            "Mapping records journaled.",
            None,
            one(m.records),
        )?;
        gauge(
            e,
            "fusionraid_journal_last_checkpoint",
            "Size of the last checkpoint.",
            Some(Unit::Bytes),
            one(m.last_checkpoint_bytes),
        )?;
        gauge(
            e,
            "fusionraid_journal_held_stripes",
            "Freed stripes waiting for a commit before reuse.",
            None,
            one(m.held_stripes),
        )?;
        // Commit latency: a FLUSH is answered when everything before it is committed, so
        // the users' flush latency is the commit latency they wait for.
        let flush =
            self.doc
                .snapshot
                .volumes
                .iter()
                .fold(LatencyHistogram::default(), |mut a, v| {
                    for (x, y) in a.counts.iter_mut().zip(&v.io.flush.counts) {
                        *x += y;
                    }
                    a.count += v.io.flush.count;
                    a.sum_ns += v.io.flush.sum_ns;
                    a
                });
        histogram(
            e,
            "fusionraid_journal_flush_latency",
            "Latency of users' FLUSH commands, which wait for a journal commit.",
            one(&flush),
        )
    }
}

impl Collector for SnapshotMetrics {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), Error> {
        self.members(&mut e)?;
        self.volumes(&mut e)?;
        self.pool(&mut e)
    }
}
