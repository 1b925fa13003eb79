//! Turning the end state of a run into a [`Report`].

use fusionraid_core::DiskId;
use fusionraid_core::engine::stats::EngineStats;
use std::sync::atomic::Ordering;

use super::Sim;
use crate::stats::wear::WearReport;
use crate::stats::{
    DiskReport, EngineCounters, Latency, Redirection, Report, Space, Spikes, WorkloadLatency,
    WriteAmp,
};
use fusionraid_core::policy::WearLadder;

/// Counters accumulated after `base` (the prefill's).
fn since(now: &EngineStats, base: &EngineStats) -> EngineStats {
    EngineStats {
        requests: now.requests - base.requests,
        replies: now.replies - base.replies,
        failed_requests: now.failed_requests - base.failed_requests,
        rejected_busy: now.rejected_busy - base.rejected_busy,
        disk_failures: now.disk_failures - base.disk_failures,
        redirected_writes: now.redirected_writes - base.redirected_writes,
        steered_pair_sets: now.steered_pair_sets - base.steered_pair_sets,
        redirected_reads: now.redirected_reads - base.redirected_reads,
        reconstructed_reads: now.reconstructed_reads - base.reconstructed_reads,
        hedged_reads: now.hedged_reads - base.hedged_reads,
        hedged_raid_reads: now.hedged_raid_reads - base.hedged_raid_reads,
        hedged_raid_reads_won: now.hedged_raid_reads_won - base.hedged_raid_reads_won,
        hedged_writes: now.hedged_writes - base.hedged_writes,
        hedged_writes_won: now.hedged_writes_won - base.hedged_writes_won,
        full_stripe_writes: now.full_stripe_writes - base.full_stripe_writes,
        gathered_writes: now.gathered_writes - base.gathered_writes,
        row_writes: now.row_writes - base.row_writes,
        replicated_block_writes: now.replicated_block_writes - base.replicated_block_writes,
        conversions: now.conversions - base.conversions,
        relocations: now.relocations - base.relocations,
        pair_sets_freed_without_conversion: now.pair_sets_freed_without_conversion
            - base.pair_sets_freed_without_conversion,
        user_bytes_written: now.user_bytes_written - base.user_bytes_written,
        device_bytes_written_fg: now.device_bytes_written_fg - base.device_bytes_written_fg,
        device_bytes_written_bg: now.device_bytes_written_bg - base.device_bytes_written_bg,
        device_bytes_read_bg: now.device_bytes_read_bg - base.device_bytes_read_bg,
        write_retries: now.write_retries - base.write_retries,
        checksum_errors: now.checksum_errors - base.checksum_errors,
        unrecoverable_pages: now.unrecoverable_pages - base.unrecoverable_pages,
        repaired_blocks: now.repaired_blocks - base.repaired_blocks,
        rebuilt_columns: now.rebuilt_columns - base.rebuilt_columns,
        rebuilt_in_place: now.rebuilt_in_place - base.rebuilt_in_place,
        parity_rewrites: now.parity_rewrites - base.parity_rewrites,
        device_bytes_trimmed: now.device_bytes_trimmed - base.device_bytes_trimmed,
        trim_errors: now.trim_errors - base.trim_errors,
        stripes_trimmed: now.stripes_trimmed - base.stripes_trimmed,
        trims_dropped: now.trims_dropped - base.trims_dropped,
        offloaded_writes: now.offloaded_writes - base.offloaded_writes,
        offloaded_bytes: now.offloaded_bytes - base.offloaded_bytes,
        offload_primary_busy: now.offload_primary_busy - base.offload_primary_busy,
        log_reads: now.log_reads - base.log_reads,
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

impl Sim {
    pub(super) fn finish(mut self) -> Report {
        let open = self.spikes.finish(self.now);
        let wear = self.wear_report();
        // Reported times count from the start of the run.
        let now = self.now - self.start;
        let es = since(self.engine.stats(), &self.baseline);
        let window_s = self.measured_window() as f64 / 1e9;

        let workloads = self
            .sources
            .iter()
            .zip(&self.hists)
            .zip(&self.source_bytes)
            .map(|((s, h), &(read, written))| {
                let l = h.summary();
                WorkloadLatency {
                    name: s.name.clone(),
                    volume: s.volume,
                    requests: l.all.count,
                    iops: l.all.count as f64 / window_s,
                    read_mb_s: read as f64 / 1e6 / window_s,
                    write_mb_s: written as f64 / 1e6 / window_s,
                    latency: l,
                }
            })
            .collect::<Vec<_>>();

        let mut disks = Vec::with_capacity(self.devices.len());
        let (mut host_written, mut flash_written) = (0u64, 0u64);
        let (mut flush_stalls, mut gc_stalls, mut stall_ns) = (0u64, 0u64, 0u64);
        let (mut gc_stall_ns, mut gc_die_ns) = (0u64, 0u64);
        let mut transitions = 0u64;
        let mixed = self
            .devices
            .iter()
            .any(|d| d.name() != self.devices[0].name());
        for (i, dev) in self.devices.iter().enumerate() {
            let st = dev.stats();
            host_written += st.bytes_written;
            flash_written += st.flash_bytes_written;
            flush_stalls += st.flush_stalls;
            gc_stalls += st.gc_stalls;
            stall_ns += st.stall_ns;
            gc_stall_ns += st.gc_stall_ns;
            gc_die_ns += st.gc_die_ns;
            let det = &self.engine.disks().get(DiskId(i as u32)).detector;
            transitions += det.transitions();
            let sp = &self.spikes.disks()[i];
            let ops = st.reads + st.writes + st.trims + st.flushes;
            disks.push(DiskReport {
                disk: i as u32,
                device: mixed.then(|| dev.name().to_string()),
                speed_factor: self
                    .scenario
                    .pool
                    .speed_factors
                    .iter()
                    .rev()
                    .find(|(d, _)| *d == i)
                    .map_or(1.0, |&(_, f)| f),
                reads: st.reads,
                writes: st.writes,
                bytes_read: st.bytes_read,
                bytes_written: st.bytes_written,
                flash_wa: st.write_amplification(),
                spikes: sp.spikes,
                unresponsive_ms: sp.total_ns as f64 / 1e6,
                device_stalls: st.stalls(),
                mean_device_latency_us: if ops == 0 {
                    0.0
                } else {
                    (st.busy_latency_ns / u128::from(ops)) as f64 / 1e3
                },
            });
        }

        let sp = self.spikes.disks();
        let detected: u64 = sp.iter().map(|d| d.spikes).sum();
        let spike_ns: u64 = sp.iter().map(|d| d.total_ns).sum();
        let member_ns = now as f64 * self.devices.len() as f64;
        let spikes = Spikes {
            detected,
            per_device_minute: if now == 0 {
                0.0
            } else {
                detected as f64 / (member_ns / 60e9)
            },
            mean_ms: if detected == 0 {
                0.0
            } else {
                spike_ns as f64 / detected as f64 / 1e6
            },
            max_ms: sp.iter().map(|d| d.max_ns).max().unwrap_or(0) as f64 / 1e6,
            unresponsive_share: if now == 0 {
                0.0
            } else {
                spike_ns as f64 / member_ns
            },
            open_at_end: open,
            detector_transitions: transitions,
            device_flush_stalls: flush_stalls,
            device_gc_stalls: gc_stalls,
            device_stall_ms: stall_ns as f64 / 1e6,
            device_gc_stall_ms: gc_stall_ns as f64 / 1e6,
            device_gc_die_ms: gc_die_ns as f64 / 1e6,
        };

        let mut space = Space::default();
        for v in 0..self.volume_sizes.len() {
            if let Some(st) = self.engine.volume_status(v as u32) {
                space.raid_bytes += st.raid_bytes;
                space.replicated_bytes += st.replicated_bytes;
                space.free_bytes += st.free_bytes;
                space.mapped_bytes += st.mapped_bytes;
                space.metadata_bytes += st.metadata_bytes;
                space.conversion_backlog += st.conversion_backlog;
            }
        }
        space.used_over_mapped = ratio(
            space.raid_bytes + space.replicated_bytes,
            space.mapped_bytes,
        );

        let device_bytes = es.device_bytes_written_fg + es.device_bytes_written_bg;
        let write_amplification = WriteAmp {
            user_bytes: es.user_bytes_written,
            device_fg_bytes: es.device_bytes_written_fg,
            device_bg_bytes: es.device_bytes_written_bg,
            flash_bytes: flash_written,
            engine: ratio(device_bytes, es.user_bytes_written),
            flash: ratio(flash_written, host_written),
            total: ratio(flash_written, es.user_bytes_written),
        };

        let placements = es.full_stripe_writes + es.replicated_block_writes;
        let redirection = Redirection {
            redirected_writes: es.redirected_writes,
            write_placements: placements,
            write_share: ratio(es.redirected_writes, placements),
            steered_pair_sets: es.steered_pair_sets,
            redirected_reads: es.redirected_reads,
            read_share: ratio(es.redirected_reads, self.counts.reads),
            reconstructed_reads: es.reconstructed_reads,
            hedged_reads: es.hedged_reads,
            hedged_writes: es.hedged_writes,
            hedged_writes_won: es.hedged_writes_won,
        };

        let engine = EngineCounters {
            full_stripe_writes: es.full_stripe_writes,
            replicated_block_writes: es.replicated_block_writes,
            conversions: es.conversions,
            relocations: es.relocations,
            write_retries: es.write_retries,
            disk_failures: es.disk_failures,
            rejected_busy: es.rejected_busy,
            timer_bumps: self.timer_bumps,
            bytes_trimmed: es.device_bytes_trimmed,
            stripes_trimmed: es.stripes_trimmed,
            offloaded_writes: es.offloaded_writes,
            offloaded_bytes: es.offloaded_bytes,
            offload_primary_busy: es.offload_primary_busy,
        };

        let mut requests = std::mem::take(&mut self.counts);
        requests.held = self.hold.held;
        requests.max_held = self.hold.max_held;
        requests.dropped = self.hold.dropped;
        requests.trace_errors = self.trace_errors.count.load(Ordering::Relaxed);
        requests.first_trace_error = self
            .trace_errors
            .first
            .lock()
            .expect("trace error lock")
            .clone();
        if let Some(d) = &self.data {
            requests.reads_verified = d.oracle.verified_reads;
            requests.read_mismatches = d.oracle.mismatches;
            requests.first_mismatch = d.oracle.first_mismatch.clone();
        }

        Report {
            scenario: self.scenario.summary(),
            virtual_s: now as f64 / 1e9,
            settled_s: self.settled_ns as f64 / 1e9,
            events: self.processed,
            requests,
            latency: Latency {
                all: self.all.summary(),
                workloads,
            },
            write_amplification,
            space,
            spikes,
            redirection,
            engine,
            disks,
            wear,
        }
    }

    /// The members' wear over the run, when it is reported.
    fn wear_report(&self) -> Option<WearReport> {
        if !self.wants_wear() {
            return None;
        }
        let used = self
            .devices
            .iter()
            .zip(&self.wear_at_start)
            .map(|(d, &w0)| (d.wear().unwrap_or(0.0) - w0).max(0.0))
            .collect();
        let ladder = self.scenario.scheme_options.wear_gap.map(|g| {
            WearLadder::for_pool(g, self.devices.len(), &self.scenario.pool.hdd_members())
        });
        Some(WearReport::new(used, self.now - self.start, ladder))
    }
}
