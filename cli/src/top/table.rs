//! The rows of `top`'s two tables as cells of fixed widths, shared by the terminal view
//! (ratatui tables) and the plain-text one, so both show the same thing at 80 columns.

use super::model::{View, bytes, count, lat, sparkline};

/// Width of the latency sparkline, in cells.
pub const SPARK: usize = 12;

pub struct Table {
    pub header: Vec<&'static str>,
    /// Column widths; the last column (a name) takes what is left.
    pub widths: Vec<u16>,
    /// Right-aligned columns.
    pub right: Vec<bool>,
    pub rows: Vec<Vec<String>>,
}

pub fn members(v: &View) -> Table {
    Table {
        header: vec![
            "#",
            "STATE",
            "IOPS",
            "MB/s",
            "P50",
            "P99",
            "P99 RECENT",
            "SPIKES",
            "STRAG",
            "Q",
            "NAME",
        ],
        widths: vec![2, 7, 6, 6, 6, 6, SPARK as u16, 6, 5, 3, 0],
        right: vec![
            true, false, true, true, true, true, false, true, true, true, false,
        ],
        rows: v
            .members
            .iter()
            .map(|m| {
                vec![
                    m.index.to_string(),
                    m.state.to_string(),
                    count(m.iops),
                    format!("{:.1}", m.mb_s),
                    lat(m.p50_us),
                    lat(m.p99_us),
                    sparkline(&m.history, SPARK),
                    count(m.spikes as f64),
                    m.stragglers.to_string(),
                    m.queue.to_string(),
                    m.name.clone(),
                ]
            })
            .collect(),
    }
}

pub fn volumes(v: &View) -> Table {
    Table {
        header: vec![
            "VOLUME", "IOPS", "MB/s", "P50", "P99", "MAPPED", "SIZE", "FREE", "BACKLOG",
        ],
        widths: vec![10, 7, 6, 6, 6, 7, 6, 7, 0],
        right: vec![false, true, true, true, true, true, true, true, true],
        rows: v
            .volumes
            .iter()
            .map(|r| {
                vec![
                    r.name.clone(),
                    count(r.iops),
                    format!("{:.1}", r.mb_s),
                    lat(r.p50_us),
                    lat(r.p99_us),
                    bytes(r.mapped),
                    bytes(r.size),
                    bytes(r.free),
                    r.backlog.to_string(),
                ]
            })
            .collect(),
    }
}

/// One progress bar: what it is, how far (0 to 1), and where it stands in words.
pub struct ProgressBar {
    pub label: String,
    pub done: f64,
    pub words: String,
}

/// Rebuild and scrub progress of every volume that has one.
pub fn progress(v: &View) -> Vec<ProgressBar> {
    let mut out = Vec::new();
    for r in &v.volumes {
        for (what, p) in [("rebuild", &r.rebuild), ("scrub", &r.scrub)] {
            if let Some(p) = p {
                out.push(ProgressBar {
                    label: format!("{} {what}", r.name),
                    done: p.done,
                    words: p.words.clone(),
                });
            }
        }
    }
    out
}

/// The first line: pool, scheme, uptime, refresh.
pub fn title(v: &View) -> String {
    format!(
        "fusionraid top: pool {} ({}), up {:.0} s, every {:.1} s",
        v.pool, v.scheme, v.uptime_s, v.interval_s
    )
}

/// The steering counters line.
pub fn steering(v: &View) -> String {
    format!(
        "steering: {} reads redirected, {} reconstructed, {} writes redirected",
        v.redirected_reads, v.reconstructed_reads, v.redirected_writes
    )
}

/// Cut `s` to `w` characters (with an ellipsis when cut).
pub fn fit(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    let mut t: String = s.chars().take(w.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// One table as text lines of at most `width` characters.
pub fn text(t: &Table, width: usize) -> Vec<String> {
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let w = t.widths[i] as usize;
            if i > 0 {
                s.push(' ');
            }
            if w == 0 {
                let left = width.saturating_sub(s.chars().count());
                s.push_str(&fit(c, left));
            } else if t.right[i] {
                s.push_str(&format!("{:>w$}", fit(c, w)));
            } else {
                s.push_str(&format!("{:<w$}", fit(c, w)));
            }
        }
        s.trim_end().to_string()
    };
    let header: Vec<String> = t.header.iter().map(|h| h.to_string()).collect();
    std::iter::once(line(&header))
        .chain(t.rows.iter().map(|r| line(r)))
        .collect()
}
