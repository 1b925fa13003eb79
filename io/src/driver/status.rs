//! What the loop reports about itself: members, volumes, counters and latencies. Plain data
//! with serde, so the CLI can ship it as JSON to `fusionraid status`.

use fusionraid_core::Engine;
use fusionraid_core::engine::stats::EngineStats;
use fusionraid_core::scheme::{MetadataStatus, VolumeStatus};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::devtime::DeviceTimer;
use super::latency::LatencyHistogram;
use super::usage::VolumeIo;
use crate::member::Member;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemberState {
    /// Serving normally.
    Healthy,
    /// The spike detector holds it unresponsive: reads and writes are steered around it.
    Spiking,
    /// Failed by an I/O error or by the operator; never used again.
    Failed,
    /// Absent at start (the pool runs degraded).
    Missing,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemberStatus {
    pub index: usize,
    pub name: String,
    /// "ssd", or "hdd" for a hybrid pool's HDD members (no stripes, write logs only).
    #[serde(default = "ssd")]
    pub tier: String,
    pub state: MemberState,
    pub size_bytes: u64,
    /// Device operations submitted and not completed.
    pub inflight: u64,
    /// Requests pending longer than the detector's threshold right now.
    pub stragglers: u32,
    /// Times the detector marked the member unresponsive.
    pub spikes: u64,
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Bytes discarded on the member (the pool told it they hold nothing).
    #[serde(default)]
    pub bytes_trimmed: u64,
    pub errors: u64,
    pub notes: Vec<String>,
    /// Device-level latency of reads and writes (submission to the member to completion).
    #[serde(default)]
    pub read_latency: LatencyHistogram,
    #[serde(default)]
    pub write_latency: LatencyHistogram,
    /// Seconds the detector held the member unresponsive since start, and bytes moved by
    /// background work (conversion, relocation, rebuild, scrub).
    #[serde(default)]
    pub unresponsive_seconds: f64,
    #[serde(default)]
    pub background_bytes: u64,
    /// Steering's view of the member, when the scheme steers (sandook, fusionraid+).
    #[serde(default)]
    pub steering: Option<MemberSteering>,
    /// Share of its rated endurance the member reports used (`Member::wear`; issue 22):
    /// an emulated SSD's model, an NVMe drive's SMART "Percentage Used".
    #[serde(default)]
    pub wear: Option<f64>,
    /// Bytes the device reports written over its life (`Member::device_written_bytes`:
    /// NVMe "Data Units Written"); `bytes_written` is what this `serve` wrote.
    #[serde(default)]
    pub device_written_bytes: Option<u64>,
}

fn ssd() -> String {
    "ssd".into()
}

/// A member as steering sees it: its mode, its shares of reads and writes (scaled by its rate
/// factor) and its congestion-control rate factor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemberSteering {
    pub writes_allowed: bool,
    pub read_weight: f64,
    pub write_weight: f64,
    pub rate_factor: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VolumeView {
    pub index: u32,
    pub name: String,
    pub level: String,
    pub size_bytes: u64,
    pub mapped_bytes: u64,
    pub raid_bytes: u64,
    pub replicated_bytes: u64,
    pub free_bytes: u64,
    pub conversion_backlog: u64,
    pub metadata_bytes: u64,
    /// Rebuild after a member failure, in words.
    #[serde(default)]
    pub rebuild: Option<String>,
    /// Where it stands: "rebuilding", "stalled", "committing" or "done"
    /// (`RebuildPhase::name`).
    #[serde(default)]
    pub rebuild_phase: Option<String>,
    /// Columns a replacement in place left stale, not rebuilt yet.
    #[serde(default)]
    pub stale_columns: u64,
    /// The last scrub, in words.
    #[serde(default)]
    pub scrub: Option<String>,
    /// Commands, latency and bytes as the volume's users saw them.
    #[serde(default)]
    pub io: VolumeIo,
    /// Rebuild (or rebalance) and scrub progress from 0 to 1.
    #[serde(default)]
    pub rebuild_progress: Option<f64>,
    #[serde(default)]
    pub scrub_progress: Option<f64>,
}

/// Latency percentiles in microseconds over every command since start.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyView {
    pub count: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// The durable-metadata journal (schemes that keep one).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MetadataView {
    pub commits: u64,
    pub checkpoints: u64,
    pub failed_commits: u64,
    pub journal_blocks_written: u64,
    pub records: u64,
    pub last_checkpoint_bytes: u64,
    pub held_stripes: u64,
    pub recovery: Option<String>,
    /// Time spent in successful commits, summed, in seconds.
    #[serde(default)]
    pub commit_seconds: f64,
    /// Whether that recovery found a clean shutdown (false: a crash).
    #[serde(default)]
    pub clean_shutdown: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusSnapshot {
    pub scheme: String,
    pub uptime_s: f64,
    pub members: Vec<MemberStatus>,
    pub volumes: Vec<VolumeView>,
    pub inflight_requests: u64,
    pub inflight_ios: u64,
    pub requests: u64,
    pub failed_requests: u64,
    pub redirected_writes: u64,
    /// Pair sets opened away from an unresponsive member (their writes steered around it).
    #[serde(default)]
    pub steered_pair_sets: u64,
    pub redirected_reads: u64,
    pub reconstructed_reads: u64,
    /// Device reads that failed their page checksum, pages lost beyond redundancy, and
    /// blocks moved off bad copies.
    #[serde(default)]
    pub checksum_errors: u64,
    #[serde(default)]
    pub unrecoverable_pages: u64,
    #[serde(default)]
    pub repaired_blocks: u64,
    #[serde(default)]
    pub parity_rewrites: u64,
    pub conversions: u64,
    pub write_amplification: f64,
    pub read_latency: LatencyView,
    pub write_latency: LatencyView,
    pub flush_latency: LatencyView,
    #[serde(default)]
    pub metadata: Option<MetadataView>,
    #[serde(default)]
    pub counters: PoolCounters,
}

/// Engine counters beyond those above, for the metrics endpoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolCounters {
    pub rejected_busy: u64,
    pub disk_failures: u64,
    pub hedged_reads: u64,
    #[serde(default)]
    pub hedged_writes: u64,
    pub full_stripe_writes: u64,
    /// User writes of sequential streams gathered into full-stripe writes.
    #[serde(default)]
    pub gathered_writes: u64,
    /// Parity rows written, each carrying one small user write per data column.
    #[serde(default)]
    pub row_writes: u64,
    pub replicated_block_writes: u64,
    pub relocations: u64,
    pub rebuilt_columns: u64,
    #[serde(default)]
    pub rebuilt_in_place: u64,
    pub write_retries: u64,
    pub user_bytes_written: u64,
    pub device_bytes_written_fg: u64,
    pub device_bytes_written_bg: u64,
    pub device_bytes_read_bg: u64,
    /// Write offload (issue 21): replica copies written to HDD logs, their bytes, and reads
    /// served from the logs (no SSD copy readable).
    #[serde(default)]
    pub offloaded_writes: u64,
    #[serde(default)]
    pub offloaded_bytes: u64,
    #[serde(default)]
    pub log_reads: u64,
}

/// What the loop observes beside the engine (see `devtime`, `usage`).
pub(crate) struct Observed<'a> {
    pub devices: &'a DeviceTimer,
    pub volumes: &'a [VolumeIo],
    pub now: fusionraid_core::Nanos,
}

/// Per-class latency histograms kept by the loop (1 us .. 1 h, 3 significant digits).
pub struct Latencies {
    pub read: Histogram<u64>,
    pub write: Histogram<u64>,
    pub flush: Histogram<u64>,
}

impl Default for Latencies {
    fn default() -> Self {
        let h = || Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds");
        Latencies {
            read: h(),
            write: h(),
            flush: h(),
        }
    }
}

fn view(h: &Histogram<u64>) -> LatencyView {
    if h.is_empty() {
        return LatencyView::default();
    }
    LatencyView {
        count: h.len(),
        p50_us: h.value_at_quantile(0.5) as f64,
        p99_us: h.value_at_quantile(0.99) as f64,
        p999_us: h.value_at_quantile(0.999) as f64,
        max_us: h.max() as f64,
    }
}

pub(crate) fn snapshot(
    engine: &Engine,
    members: &[Option<Box<dyn Member>>],
    names: &[String],
    lat: &Latencies,
    uptime_s: f64,
    obs: &Observed,
) -> StatusSnapshot {
    let held = super::wear_feed::held_back(engine);
    let members = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut s = member_status(engine, i, name, members[i].as_deref(), obs);
            if i < 64 && held & (1 << i) != 0 {
                s.notes.push(
                    "held back by wear-aware placement: too close behind a more worn member".into(),
                );
            }
            s
        })
        .collect();
    let volumes = (0..engine.volume_count() as u32)
        .filter_map(|v| Some(volume_view(v, engine.volume_status(v)?, obs)))
        .collect();
    let st = engine.stats();
    StatusSnapshot {
        scheme: engine.scheme_name().to_string(),
        uptime_s,
        members,
        volumes,
        inflight_requests: engine.inflight_requests() as u64,
        inflight_ios: engine.inflight_ios() as u64,
        requests: st.requests,
        failed_requests: st.failed_requests,
        redirected_writes: st.redirected_writes,
        steered_pair_sets: st.steered_pair_sets,
        redirected_reads: st.redirected_reads,
        reconstructed_reads: st.reconstructed_reads,
        checksum_errors: st.checksum_errors,
        unrecoverable_pages: st.unrecoverable_pages,
        repaired_blocks: st.repaired_blocks,
        parity_rewrites: st.parity_rewrites,
        conversions: st.conversions,
        write_amplification: st.write_amplification(),
        read_latency: view(&lat.read),
        write_latency: view(&lat.write),
        flush_latency: view(&lat.flush),
        metadata: engine.scheme().metadata_status().map(metadata_view),
        counters: pool_counters(st),
    }
}

/// Member `i` (`m`: `None` when missing) as the engine and the loop see it.
fn member_status(
    engine: &Engine,
    i: usize,
    name: &str,
    m: Option<&dyn Member>,
    obs: &Observed,
) -> MemberStatus {
    let d = engine.disks().get(fusionraid_core::DiskId(i as u32));
    let state = match (m, d.failed, d.detector.is_unresponsive()) {
        (None, _, _) => MemberState::Missing,
        (_, true, _) => MemberState::Failed,
        (_, _, true) => MemberState::Spiking,
        _ => MemberState::Healthy,
    };
    MemberStatus {
        index: i,
        name: name.to_string(),
        tier: if engine.scheme().is_hdd(fusionraid_core::DiskId(i as u32)) {
            "hdd"
        } else {
            "ssd"
        }
        .into(),
        state,
        size_bytes: m.map_or(0, |m| m.size_bytes()),
        inflight: m.map_or(0, |m| m.inflight() as u64),
        stragglers: d.detector.stragglers(),
        spikes: d.detector.transitions(),
        reads: d.counters.reads,
        writes: d.counters.writes,
        bytes_read: d.counters.bytes_read,
        bytes_written: d.counters.bytes_written,
        bytes_trimmed: d.counters.bytes_trimmed,
        errors: d.counters.errors,
        notes: m.map_or_else(Vec::new, |m| m.notes()),
        read_latency: obs.devices.members[i].read.clone(),
        write_latency: obs.devices.members[i].write.clone(),
        unresponsive_seconds: d.detector.unresponsive_ns(obs.now) as f64 / 1e9,
        background_bytes: d.counters.background_bytes,
        wear: m.and_then(|m| m.wear()),
        device_written_bytes: m.and_then(|m| m.device_written_bytes()),
        steering: engine.disks().steering().map(|st| {
            let id = fusionraid_core::DiskId(i as u32);
            MemberSteering {
                writes_allowed: st.is_writer(id),
                read_weight: st.read_weight(id),
                write_weight: st.write_weight(id),
                rate_factor: st.rate_factor(id),
            }
        }),
    }
}

/// Volume `v` as the engine reports it, with its users' commands as the loop counted them.
fn volume_view(v: u32, s: VolumeStatus, obs: &Observed) -> VolumeView {
    VolumeView {
        index: v,
        name: s.name,
        level: s.level,
        size_bytes: s.size_bytes,
        mapped_bytes: s.mapped_bytes,
        raid_bytes: s.raid_bytes,
        replicated_bytes: s.replicated_bytes,
        free_bytes: s.free_bytes,
        conversion_backlog: s.conversion_backlog,
        metadata_bytes: s.metadata_bytes,
        rebuild: s.rebuild,
        rebuild_phase: s.rebuild_phase.map(|p| p.name().to_string()),
        stale_columns: s.stale_columns,
        scrub: s.scrub,
        io: obs.volumes.get(v as usize).cloned().unwrap_or_default(),
        rebuild_progress: s.rebuild_progress,
        scrub_progress: s.scrub_progress,
    }
}

fn metadata_view(m: MetadataStatus) -> MetadataView {
    MetadataView {
        commits: m.commits,
        checkpoints: m.checkpoints,
        failed_commits: m.failed_commits,
        journal_blocks_written: m.journal_blocks_written,
        records: m.records,
        last_checkpoint_bytes: m.last_checkpoint_bytes,
        held_stripes: m.held_stripes,
        recovery: m.recovery,
        commit_seconds: m.commit_ns as f64 / 1e9,
        clean_shutdown: m.clean_shutdown,
    }
}

fn pool_counters(st: &EngineStats) -> PoolCounters {
    PoolCounters {
        rejected_busy: st.rejected_busy,
        disk_failures: st.disk_failures,
        hedged_reads: st.hedged_reads,
        hedged_writes: st.hedged_writes,
        full_stripe_writes: st.full_stripe_writes,
        gathered_writes: st.gathered_writes,
        row_writes: st.row_writes,
        replicated_block_writes: st.replicated_block_writes,
        relocations: st.relocations,
        rebuilt_columns: st.rebuilt_columns,
        rebuilt_in_place: st.rebuilt_in_place,
        write_retries: st.write_retries,
        user_bytes_written: st.user_bytes_written,
        device_bytes_written_fg: st.device_bytes_written_fg,
        device_bytes_written_bg: st.device_bytes_written_bg,
        device_bytes_read_bg: st.device_bytes_read_bg,
        offloaded_writes: st.offloaded_writes,
        offloaded_bytes: st.offloaded_bytes,
        log_reads: st.log_reads,
    }
}
