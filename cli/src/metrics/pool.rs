//! The pool-wide families of a scrape: what the pool is, its requests, steering around
//! slow members, the write paths and background work, bytes, integrity, the journal and
//! what recovery found at start.

use std::fmt::Error;

use fusionraid_core::meta::RecoveryReport;
use fusionraid_io::StatusSnapshot;
use fusionraid_io::driver::LatencyHistogram;
use fusionraid_io::driver::status::MetadataView;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Unit;

use super::encode::{counter, counter_f, gauge, histogram, one, ratio};
use super::render::SnapshotMetrics;

pub(super) fn encode(m: &SnapshotMetrics, e: &mut DescriptorEncoder) -> Result<(), Error> {
    let s = &m.doc.snapshot;
    gauge(
        e,
        "fusionraid_pool_info",
        "The pool served: name, id, scheme, layout (value 1).",
        None,
        [(
            vec![
                ("pool", m.doc.pool.clone()),
                ("uuid", m.doc.uuid.clone()),
                ("scheme", m.facts.scheme.clone()),
                ("layout", m.doc.layout.clone()),
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
    requests(s, e)?;
    steering(s, e)?;
    write_paths(s, e)?;
    bytes(s, e)?;
    integrity(s, e)?;
    if let Some(md) = &s.metadata {
        journal(s, md, e)?;
    }
    if let Some(r) = &m.facts.recovery {
        recovery(r, e)?;
    }
    Ok(())
}

fn requests(s: &StatusSnapshot, e: &mut DescriptorEncoder) -> Result<(), Error> {
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
        one(s.counters.rejected_busy),
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
    )
}

fn steering(s: &StatusSnapshot, e: &mut DescriptorEncoder) -> Result<(), Error> {
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
        one(s.counters.hedged_reads),
    )?;
    counter(
        e,
        "fusionraid_hedged_writes",
        "Writes placed a second time, away from a member that stalled under them.",
        None,
        one(s.counters.hedged_writes),
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
    )
}

fn write_paths(s: &StatusSnapshot, e: &mut DescriptorEncoder) -> Result<(), Error> {
    let c = &s.counters;
    counter(
        e,
        "fusionraid_full_stripe_writes",
        "Writes that filled whole stripes.",
        None,
        one(c.full_stripe_writes),
    )?;
    counter(
        e,
        "fusionraid_gathered_writes",
        "User writes of sequential streams held until their stripe filled and written with it.",
        None,
        one(c.gathered_writes),
    )?;
    counter(
        e,
        "fusionraid_row_writes",
        "Parity rows written: a page of every data column of a stripe and its parity, one small user write per data column.",
        None,
        one(c.row_writes),
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
        "fusionraid_rebuilt_in_place_columns",
        "Stale stripe columns rebuilt in place on a replacement member.",
        None,
        one(c.rebuilt_in_place),
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
    )
}

fn bytes(s: &StatusSnapshot, e: &mut DescriptorEncoder) -> Result<(), Error> {
    let c = &s.counters;
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
    )
}

fn integrity(s: &StatusSnapshot, e: &mut DescriptorEncoder) -> Result<(), Error> {
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
    )
}

fn recovery(r: &RecoveryReport, e: &mut DescriptorEncoder) -> Result<(), Error> {
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
    )
}

fn journal(s: &StatusSnapshot, m: &MetadataView, e: &mut DescriptorEncoder) -> Result<(), Error> {
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
    let flush = s
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
