//! What `top` shows, computed from two status documents an interval apart: rates and
//! latency percentiles over that interval (the histograms' difference), plus a short
//! history per member for the sparkline. Plain data, shared by the terminal view and the
//! plain-text one.

use std::collections::VecDeque;

use fusionraid_io::driver::status::VolumeView;
use fusionraid_io::driver::{LatencyHistogram, MemberState, MemberStatus};

use crate::status_doc::StatusDoc;

/// Refreshes of latency history kept per member (the sparkline's width at most).
pub const HISTORY: usize = 32;

pub struct MemberRow {
    pub index: usize,
    pub name: String,
    /// The state word: "spiking" also when the member spiked during the interval, since a
    /// spike often lasts milliseconds and would rarely be caught at the instant of a refresh.
    pub state: &'static str,
    pub iops: f64,
    pub mb_s: f64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    /// p99 of the recent intervals, oldest first.
    pub history: Vec<Option<f64>>,
    pub spikes: u64,
    pub stragglers: u32,
    pub queue: u64,
}

pub struct VolumeRow {
    pub name: String,
    pub iops: f64,
    pub mb_s: f64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub mapped: u64,
    pub size: u64,
    pub free: u64,
    pub backlog: u64,
    pub rebuild: Option<Progress>,
    pub scrub: Option<Progress>,
}

/// A rebuild's or scrub's progress.
pub struct Progress {
    /// From 0 to 1.
    pub done: f64,
    /// Where it stands, in words.
    pub words: String,
}

pub struct View {
    pub pool: String,
    pub scheme: String,
    pub uptime_s: f64,
    pub interval_s: f64,
    pub members: Vec<MemberRow>,
    pub volumes: Vec<VolumeRow>,
    pub redirected_reads: u64,
    pub reconstructed_reads: u64,
    pub redirected_writes: u64,
}

/// The latency history of every member across refreshes (bounded: `HISTORY` each).
#[derive(Default)]
pub struct History {
    members: Vec<VecDeque<Option<f64>>>,
}

fn merged(a: &LatencyHistogram, b: &LatencyHistogram) -> LatencyHistogram {
    let mut m = a.clone();
    for (x, y) in m.counts.iter_mut().zip(&b.counts) {
        *x += y;
    }
    m.count += b.count;
    m.sum_ns += b.sum_ns;
    m
}

fn state_word(s: MemberState, spiked: bool) -> &'static str {
    match s {
        MemberState::Failed => "failed",
        MemberState::Missing => "missing",
        MemberState::Spiking => "spiking",
        MemberState::Healthy if spiked => "spiking",
        MemberState::Healthy => "healthy",
    }
}

impl View {
    /// The view of `cur`, with rates since `prev` (taken `interval_s` earlier; `None`: the
    /// first document, rates since start).
    pub fn new(prev: Option<&StatusDoc>, cur: &StatusDoc, history: &mut History) -> View {
        let s = &cur.snapshot;
        let interval_s = match prev {
            Some(p) => (s.uptime_s - p.snapshot.uptime_s).max(1e-3),
            None => s.uptime_s.max(1e-3),
        };
        history.members.resize_with(s.members.len(), VecDeque::new);
        let members = s
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let before = prev.and_then(|p| p.snapshot.members.get(i));
                let since_start = prev.is_none();
                member_row(m, before, since_start, interval_s, &mut history.members[i])
            })
            .collect();
        let volumes = s
            .volumes
            .iter()
            .map(|v| {
                let before =
                    prev.and_then(|p| p.snapshot.volumes.iter().find(|b| b.index == v.index));
                let name = cur.volume_names.get(v.index as usize).unwrap_or(&v.name);
                volume_row(v, before, name, interval_s)
            })
            .collect();
        View {
            pool: cur.pool.clone(),
            scheme: s.scheme.clone(),
            uptime_s: s.uptime_s,
            interval_s,
            members,
            volumes,
            redirected_reads: s.redirected_reads,
            reconstructed_reads: s.reconstructed_reads,
            redirected_writes: s.redirected_writes,
        }
    }
}

/// Member `m`'s row over the interval since `before` (`None`: rates since start). A
/// spike counts as seen during the interval only between two documents (`since_start`
/// false). Adds the interval's p99 to the member's `history`.
fn member_row(
    m: &MemberStatus,
    before: Option<&MemberStatus>,
    since_start: bool,
    interval_s: f64,
    history: &mut VecDeque<Option<f64>>,
) -> MemberRow {
    let lat = merged(&m.read_latency, &m.write_latency);
    let lat = match before {
        Some(b) => lat.since(&merged(&b.read_latency, &b.write_latency)),
        None => lat,
    };
    let ops0 = before.map_or(0, |b| b.reads + b.writes);
    let bytes0 = before.map_or(0, |b| b.bytes_read + b.bytes_written);
    let spikes_now = m.spikes.saturating_sub(before.map_or(0, |b| b.spikes));
    let p99 = lat.quantile_us(0.99);
    if history.len() == HISTORY {
        history.pop_front();
    }
    history.push_back(p99);
    MemberRow {
        index: m.index,
        name: m.name.clone(),
        state: state_word(m.state, !since_start && spikes_now > 0),
        iops: (m.reads + m.writes).saturating_sub(ops0) as f64 / interval_s,
        mb_s: (m.bytes_read + m.bytes_written).saturating_sub(bytes0) as f64 / interval_s / 1e6,
        p50_us: lat.quantile_us(0.5),
        p99_us: p99,
        history: history.iter().copied().collect(),
        spikes: m.spikes,
        stragglers: m.stragglers,
        queue: m.inflight,
    }
}

/// Volume `v`'s row over the interval since `before` (`None`: rates since start).
fn volume_row(
    v: &VolumeView,
    before: Option<&VolumeView>,
    name: &str,
    interval_s: f64,
) -> VolumeRow {
    let io = &v.io;
    let req0 = before.map_or(0, |b| b.io.requests());
    let bytes0 = before.map_or(0, |b| b.io.bytes_read + b.io.bytes_written);
    let lat = merged(&io.read, &io.write);
    let lat = match before {
        Some(b) => lat.since(&merged(&b.io.read, &b.io.write)),
        None => lat,
    };
    let progress = |done: Option<f64>, words: &Option<String>| {
        done.zip(words.clone())
            .map(|(done, words)| Progress { done, words })
    };
    VolumeRow {
        name: name.to_string(),
        iops: io.requests().saturating_sub(req0) as f64 / interval_s,
        mb_s: (io.bytes_read + io.bytes_written).saturating_sub(bytes0) as f64 / interval_s / 1e6,
        p50_us: lat.quantile_us(0.5),
        p99_us: lat.quantile_us(0.99),
        mapped: v.mapped_bytes,
        size: v.size_bytes,
        free: v.free_bytes,
        backlog: v.conversion_backlog,
        rebuild: progress(v.rebuild_progress, &v.rebuild),
        scrub: progress(v.scrub_progress, &v.scrub),
    }
}

/// A latency in the unit that keeps it short: "85us", "1.2ms", "350ms", "2.1s", "-".
pub fn lat(us: Option<f64>) -> String {
    match us {
        None => "-".into(),
        Some(u) if u < 1000.0 => format!("{u:.0}us"),
        Some(u) if u < 10_000.0 => format!("{:.1}ms", u / 1000.0),
        Some(u) if u < 1_000_000.0 => format!("{:.0}ms", u / 1000.0),
        Some(u) => format!("{:.1}s", u / 1e6),
    }
}

/// A count in at most five characters: "950", "12.3k", "1.2M".
pub fn count(v: f64) -> String {
    if v < 10_000.0 {
        format!("{v:.0}")
    } else if v < 1e6 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{:.1}M", v / 1e6)
    }
}

/// Bytes with a binary unit: "512M", "1.5G".
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "K", "M", "G", "T"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if v < 10.0 && u > 0 {
        format!("{v:.1}{}", UNITS[u])
    } else {
        format!("{v:.0}{}", UNITS[u])
    }
}

/// A sparkline of `points` (log scale, so a 10 ms spike and a 100 us baseline both show),
/// the last `width` of them; missing points (no I/O) are blanks.
pub fn sparkline(points: &[Option<f64>], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let pts = &points[points.len().saturating_sub(width)..];
    let logs: Vec<Option<f64>> = pts.iter().map(|p| p.map(|v| v.max(1.0).log10())).collect();
    let (lo, hi) = logs
        .iter()
        .flatten()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    let mut s: String = logs
        .iter()
        .map(|p| match p {
            None => ' ',
            Some(v) if hi - lo < 0.3 => BARS[1 + ((v / 7.0 * 6.0) as usize).min(5)],
            Some(v) => BARS[(((v - lo) / (hi - lo)) * 7.0).round() as usize],
        })
        .collect();
    while s.chars().count() < width {
        s.insert(0, ' ');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_fit_their_columns() {
        assert_eq!(lat(Some(85.0)), "85us");
        assert_eq!(lat(Some(1234.0)), "1.2ms");
        assert_eq!(lat(Some(350_000.0)), "350ms");
        assert_eq!(lat(Some(2_100_000.0)), "2.1s");
        assert_eq!(count(12_345.0), "12.3k");
        assert_eq!(bytes(512 << 20), "512M");
        assert_eq!(bytes(3 << 29), "1.5G");
        let s = sparkline(&[Some(100.0), None, Some(10_000.0)], 5);
        assert_eq!(s.chars().count(), 5);
        assert!(s.ends_with('█') && s.contains('▁'), "{s}");
    }
}
