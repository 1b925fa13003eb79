//! The result of a run: plain serializable data. [`Report::to_table`] renders it for people,
//! `serde_json` for programs. A report holds nothing that depends on the wall clock or the
//! machine, so the same scenario, seed and commit give the same bytes.

use serde::Serialize;

use super::latency::OpLatency;
use crate::scenario::ScenarioSummary;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    pub scenario: ScenarioSummary,
    /// Virtual time at the end of the run (the last user reply, or later if it drained or
    /// settled).
    pub virtual_s: f64,
    /// Of which spent after the last reply letting background work finish
    /// (`Scenario::settle_ns`); rates such as spikes per minute include it.
    pub settled_s: f64,
    /// Events the driver processed (arrivals, completions, timeouts).
    pub events: u64,
    pub requests: Requests,
    pub latency: Latency,
    pub write_amplification: WriteAmp,
    pub space: Space,
    pub spikes: Spikes,
    pub redirection: Redirection,
    pub engine: EngineCounters,
    pub disks: Vec<DiskReport>,
    /// Members' wear and wear-out times (`Scenario::report_wear` or wear-aware placement).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wear: Option<super::wear::WearReport>,
}

/// User requests, as the driver saw them.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Requests {
    /// Produced by the sources (before any backpressure).
    pub arrived: u64,
    /// Answered by the engine, successfully or not.
    pub completed: u64,
    pub failed: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Arrivals the engine refused with `Busy` and the driver held back.
    pub held: u64,
    /// Most requests held at once.
    pub max_held: u64,
    /// Arrivals dropped because the hold queue was full.
    pub dropped: u64,
    /// Trace requests cut to the scheme's maximum request size.
    pub truncated: u64,
    /// Trace lines that could not be read (skipped).
    pub trace_errors: u64,
    pub first_trace_error: Option<String>,
    /// Reads whose data differed from what was written (data mode only; must be 0).
    pub read_mismatches: u64,
    /// Reads whose pages could be checked (data mode only).
    pub reads_verified: u64,
    pub first_mismatch: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Latency {
    /// Every request of the run (after the warm-up).
    pub all: OpLatency,
    pub workloads: Vec<WorkloadLatency>,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct WorkloadLatency {
    pub name: String,
    pub volume: u32,
    pub requests: u64,
    /// Completed requests per second of measured virtual time.
    pub iops: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    pub latency: OpLatency,
}

/// Bytes written at each level and their ratios.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct WriteAmp {
    pub user_bytes: u64,
    pub device_fg_bytes: u64,
    /// Background writes: conversion parity, compaction.
    pub device_bg_bytes: u64,
    /// What the device models programmed into flash, GC copies included.
    pub flash_bytes: u64,
    /// Device bytes / user bytes (the scheme's own amplification).
    pub engine: f64,
    /// Flash bytes / device host bytes (the SSDs' GC).
    pub flash: f64,
    /// Flash bytes / user bytes.
    pub total: f64,
}

/// Physical space the volumes occupy against the user data they hold (end of run).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Space {
    pub raid_bytes: u64,
    pub replicated_bytes: u64,
    pub free_bytes: u64,
    pub mapped_bytes: u64,
    /// The schemes' own estimate of their in-memory metadata. Left out of the JSON: the
    /// FusionRAID patch table sizes it from a `HashMap`'s capacity, which depends on the
    /// process's random hash seed, so it is not reproducible to the byte.
    #[serde(skip)]
    pub metadata_bytes: u64,
    /// Replica sets waiting for conversion.
    pub conversion_backlog: u64,
    /// (raid + replicated) / mapped: about 2 for replicated data, (k)/(k-m) for parity.
    pub used_over_mapped: f64,
}

/// Detector-reported spikes, and the stalls the device models actually produced.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Spikes {
    /// Entries into the unresponsive state over all members.
    pub detected: u64,
    pub per_device_minute: f64,
    pub mean_ms: f64,
    pub max_ms: f64,
    /// Share of member-time spent unresponsive.
    pub unresponsive_share: f64,
    /// Spikes still open when the run ended (closed at the end for the durations).
    pub open_at_end: u64,
    /// Sum of the detectors' own transition counters (equals `detected`).
    pub detector_transitions: u64,
    /// Ground truth from the device models: blocking stalls they scheduled.
    pub device_flush_stalls: u64,
    pub device_gc_stalls: u64,
    pub device_stall_ms: f64,
    /// The part of `device_stall_ms` in GC passes.
    pub device_gc_stall_ms: f64,
    /// Die time the members' garbage collection took (copies and erases), summed.
    pub device_gc_die_ms: f64,
}

/// Requests steered around unresponsive members.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Redirection {
    /// Write placements (a new stripe or a replica block) that skipped their first choice.
    pub redirected_writes: u64,
    /// Write placements made: full-stripe writes + replicated block writes.
    pub write_placements: u64,
    /// redirected_writes / write_placements.
    pub write_share: f64,
    /// Pair sets opened on stripes drawn away from an unresponsive member: the small
    /// writes they take avoid it without a first choice to count as redirected.
    pub steered_pair_sets: u64,
    /// Read parts served by another replica or rebuilt from parity to avoid a slow member.
    pub redirected_reads: u64,
    /// redirected_reads / user reads.
    pub read_share: f64,
    pub reconstructed_reads: u64,
    pub hedged_reads: u64,
    /// Writes placed a second time away from an unresponsive member (hedged writes), and
    /// those the second placement answered (left out at zero, like other optional counters).
    #[serde(skip_serializing_if = "is_zero", default)]
    pub hedged_writes: u64,
    #[serde(skip_serializing_if = "is_zero", default)]
    pub hedged_writes_won: u64,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct EngineCounters {
    pub full_stripe_writes: u64,
    pub replicated_block_writes: u64,
    pub conversions: u64,
    pub relocations: u64,
    pub write_retries: u64,
    pub disk_failures: u64,
    pub rejected_busy: u64,
    /// Times the driver pushed an engine deadline that did not advance (should stay 0).
    pub timer_bumps: u64,
    /// Bytes discarded on members (proactive discard; left out of the report when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub bytes_trimmed: u64,
    /// Spare stripes discarded.
    #[serde(skip_serializing_if = "is_zero")]
    pub stripes_trimmed: u64,
    /// Replica writes offloaded to HDD logs, and their bytes (issue 21; left out when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub offloaded_writes: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub offloaded_bytes: u64,
    /// Replica writes whose kept copy (never offloaded) went to an SSD the rule found busy.
    #[serde(skip_serializing_if = "is_zero")]
    pub offload_primary_busy: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct DiskReport {
    pub disk: u32,
    /// The member's device preset, in pools that mix presets (a single-preset pool's is the
    /// scenario's `device`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    pub speed_factor: f64,
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub flash_wa: f64,
    pub spikes: u64,
    pub unresponsive_ms: f64,
    pub device_stalls: u64,
    pub mean_device_latency_us: f64,
}

impl Report {
    /// Pretty JSON; deterministic for a given scenario, seed and commit.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }
}
