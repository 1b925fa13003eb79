//! Plain-text rendering of a [`Report`].

use std::fmt::Write;

use super::latency::LatencySummary;
use super::report::Report;
use crate::scenario::{ScenarioSummary, SourceSummary, TenantSummary};

fn bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// Latency in a short human unit (us below 10 ms, ms above).
fn lat(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{:.1}ms", us / 1e3)
    } else {
        format!("{us:.0}us")
    }
}

/// `name (90% reads, 4 KiB, 200000 IOPS, 8.0 GiB)`.
fn tenant(t: &TenantSummary) -> String {
    let size = if t.read_kib == t.write_kib {
        format!("{} KiB", t.read_kib)
    } else {
        format!("reads {} KiB, writes {} KiB", t.read_kib, t.write_kib)
    };
    format!(
        "{} ({:.0}% reads, {size}, {:.0} IOPS, {})",
        t.name,
        t.read_share * 100.0,
        t.iops,
        bytes(t.footprint)
    )
}

/// " at Nx load" after a list of workloads, nothing at the nominal load.
fn load_suffix(load_scale: f64) -> String {
    if load_scale == 1.0 {
        String::new()
    } else {
        format!(" at {load_scale}x load")
    }
}

fn row(out: &mut String, name: &str, iops: Option<f64>, s: &LatencySummary) {
    let iops = iops.map_or(String::new(), |x| format!("{x:.0}"));
    let _ = writeln!(
        out,
        "  {name:<16} {:>9} {iops:>8} {:>9} {:>9} {:>9} {:>9} {:>9}",
        s.count,
        lat(s.mean_us),
        lat(s.p50_us),
        lat(s.p99_us),
        lat(s.p999_us),
        lat(s.max_us)
    );
}

/// The load of a run in words: its workloads, trace or tenants.
pub(crate) fn source_text(source: &SourceSummary) -> String {
    match source {
        SourceSummary::Workloads {
            workloads,
            load_scale,
        } => {
            let scale = load_suffix(*load_scale);
            format!("workloads {}{scale}", workloads.join("+"))
        }
        SourceSummary::Trace { path, format, mode } => {
            format!("trace {path} ({format}, {mode})")
        }
        SourceSummary::TraceMix {
            path,
            format,
            mode,
            workloads,
            load_scale,
        } => {
            let scale = load_suffix(*load_scale);
            let with = if workloads.is_empty() {
                String::new()
            } else {
                format!(" + workloads {}{scale}", workloads.join("+"))
            };
            format!("trace {path} ({format}, {mode}){with}")
        }
        SourceSummary::Synthetic { tenants } => {
            let each: Vec<String> = tenants.iter().map(tenant).collect();
            format!("synthetic {}", each.join(" + "))
        }
    }
}

/// Scheme, members, layout and seed of a run, on one line.
pub(crate) fn pool_line(s: &ScenarioSummary) -> String {
    let spare = s
        .volume_spare
        .map_or(String::new(), |v| format!(", volume spare {v}"));
    format!(
        "scheme {} | {} x {} ({}) | {} {} layout, {} KiB blocks{spare} | seed {}",
        s.scheme,
        s.disks,
        s.device,
        if s.aged { "aged" } else { "clean" },
        s.level,
        s.layout,
        s.block_size / 1024,
        s.seed
    )
}

impl Report {
    /// A readable summary: scenario, a latency table per workload and operation, then write
    /// amplification, space, spikes, redirection and backpressure.
    pub fn to_table(&self) -> String {
        let s = &self.scenario;
        let mut o = String::new();
        let source = source_text(&s.source);
        let _ = writeln!(o, "{}", pool_line(s));
        let _ = writeln!(
            o,
            "{source} | {:.3} s virtual | {} | {} events",
            self.virtual_s,
            if s.size_only { "size-only" } else { "data" },
            self.events
        );
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "  {:<16} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "latency", "requests", "IOPS", "mean", "median", "P99", "P99.9", "max"
        );
        for w in &self.latency.workloads {
            row(&mut o, &w.name, Some(w.iops), &w.latency.all);
            row(&mut o, "  read", None, &w.latency.read);
            row(&mut o, "  write", None, &w.latency.write);
        }
        let total_iops: f64 = self.latency.workloads.iter().map(|w| w.iops).sum();
        row(&mut o, "all", Some(total_iops), &self.latency.all.all);
        row(&mut o, "  read", None, &self.latency.all.read);
        row(&mut o, "  write", None, &self.latency.all.write);
        let _ = writeln!(o);

        let wa = &self.write_amplification;
        let _ = writeln!(
            o,
            "write amplification  engine {:.2}x ({} user -> {} fg + {} bg)  flash {:.2}x  total {:.2}x",
            wa.engine,
            bytes(wa.user_bytes),
            bytes(wa.device_fg_bytes),
            bytes(wa.device_bg_bytes),
            wa.flash,
            wa.total
        );
        let sp = &self.space;
        let _ = writeln!(
            o,
            "space                {} raid + {} replicated for {} mapped ({:.2}x), backlog {} sets, metadata {}",
            bytes(sp.raid_bytes),
            bytes(sp.replicated_bytes),
            bytes(sp.mapped_bytes),
            sp.used_over_mapped,
            sp.conversion_backlog,
            bytes(sp.metadata_bytes)
        );
        let k = &self.spikes;
        let _ = writeln!(
            o,
            "spikes (detector)    {} = {:.2} per device-minute, mean {:.2} ms, max {:.1} ms, {} of member-time",
            k.detected,
            k.per_device_minute,
            k.mean_ms,
            k.max_ms,
            pct(k.unresponsive_share)
        );
        let _ = writeln!(
            o,
            "device stalls        {} GC + {} buffer flush, {:.1} ms in total",
            k.device_gc_stalls, k.device_flush_stalls, k.device_stall_ms
        );
        if let Some(w) = &self.wear {
            let finite: Vec<f64> = w
                .hours_to_wear_out
                .iter()
                .copied()
                .filter(|&h| h > 0.0)
                .collect();
            if finite.is_empty() {
                // No member wore (a read-only load): there is no pace to project, and the
                // range of an empty list read "inf-0 h".
                let _ = writeln!(o, "wear                 no member wore during the run");
            } else {
                let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = finite.iter().copied().fold(0.0, f64::max);
                let _ = writeln!(
                    o,
                    "wear                 members wear out after {lo:.0}-{hi:.0} h at this load; successive wear-outs apart by at least {} (median {}) of the first",
                    pct(w.min_gap_share),
                    pct(w.median_gap_share)
                );
            }
        }
        let r = &self.redirection;
        let _ = writeln!(
            o,
            "redirection          writes {} of {} placements ({}), {} pair sets drawn away, reads {} ({} of user reads), {} rebuilt, {} hedged",
            r.redirected_writes,
            r.write_placements,
            pct(r.write_share),
            r.steered_pair_sets,
            r.redirected_reads,
            pct(r.read_share),
            r.reconstructed_reads,
            r.hedged_reads
        );
        if r.hedged_writes > 0 {
            let _ = writeln!(
                o,
                "hedged writes        {} placed again away from an unresponsive member, {} answered by the second placement",
                r.hedged_writes, r.hedged_writes_won
            );
        }
        let e = &self.engine;
        let _ = writeln!(
            o,
            "engine               {} full-stripe writes, {} replicated blocks, {} conversions, {} relocations",
            e.full_stripe_writes, e.replicated_block_writes, e.conversions, e.relocations
        );
        if e.offloaded_writes > 0 {
            let _ = writeln!(
                o,
                "offload              {} replica writes ({:.1} MB) to HDD logs, {} of replicated blocks; {} kept copies on a busy SSD",
                e.offloaded_writes,
                e.offloaded_bytes as f64 / 1e6,
                pct(e.offloaded_writes as f64 / e.replicated_block_writes.max(1) as f64),
                e.offload_primary_busy
            );
        }
        let q = &self.requests;
        let _ = writeln!(
            o,
            "requests             {} arrived, {} completed, {} failed, {} held (max {} at once), {} dropped",
            q.arrived, q.completed, q.failed, q.held, q.max_held, q.dropped
        );
        if q.trace_errors > 0 || q.truncated > 0 {
            let _ = writeln!(
                o,
                "trace                {} unreadable lines skipped{}, {} requests truncated",
                q.trace_errors,
                q.first_trace_error
                    .as_deref()
                    .map_or(String::new(), |e| format!(" (first: {e})")),
                q.truncated
            );
        }
        if !s.size_only {
            let _ = writeln!(
                o,
                "data check           {} reads verified, {} mismatches",
                q.reads_verified, q.read_mismatches
            );
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
        assert_eq!(lat(36.4), "36us");
        assert_eq!(lat(123_456.0), "123.5ms");
        assert_eq!(pct(0.0073), "0.73%");
    }
}
