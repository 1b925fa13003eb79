//! Which rows of a measured profile the fit scores and the calibration test checks.
//!
//! "Below saturation" has two readings. Sandook's (the profiles README): P99 under 1 ms and
//! no lost requests. On mixed read/write curves P99 crosses 1 ms from read/write
//! interference long before throughput runs out (P50 still 20-70 us), so the fit also uses
//! a P90 rule: P90 under 1 ms and no lost requests.

use crate::profile::{Profile, ProfileRow};

/// P90 at or above this (us), or any dropped request, marks a row as saturated. (Sandook
/// uses P99 >= 1000 us, but on mixed curves P99 crosses 1 ms from read/write interference
/// long before the drive runs out of throughput.)
pub const SATURATION_P90_US: f64 = 1000.0;

/// Rows before the first saturated one.
pub fn below_saturation(p: &Profile) -> &[ProfileRow] {
    let n = p
        .rows
        .iter()
        .take_while(|r| {
            r.dropped == 0 && r.pct_us[1].is_finite() && r.pct_us[1] < SATURATION_P90_US
        })
        .count();
    &p.rows[..n]
}

/// For each fraction `f`, the row whose offered load is nearest `f` x the highest load in
/// `rows` (duplicates removed, in load order).
pub fn rows_at<'a>(rows: &'a [ProfileRow], fractions: &[f64]) -> Vec<&'a ProfileRow> {
    let Some(top) = rows.last().map(|r| r.target_iops) else {
        return Vec::new();
    };
    let mut out: Vec<&ProfileRow> = Vec::new();
    for f in fractions {
        let want = f * top;
        let r = rows
            .iter()
            .min_by(|a, b| {
                (a.target_iops - want)
                    .abs()
                    .total_cmp(&(b.target_iops - want).abs())
            })
            .expect("non-empty");
        if !out.iter().any(|x| std::ptr::eq(*x, r)) {
            out.push(r);
        }
    }
    out.sort_by(|a, b| a.target_iops.total_cmp(&b.target_iops));
    out
}

/// Loads (as fractions of the last unsaturated one) the fit compares at.
pub const FIT_LOADS: [f64; 4] = [0.05, 0.35, 0.65, 0.95];

/// Sandook's saturation rule (profiles README): P99 at or above 1000 us, or lost requests.
pub const SANDOOK_P99_US: f64 = 1000.0;

/// Low / mid / high loads, as fractions of the last load below saturation, at which the
/// calibration test compares the frozen presets with the curves.
pub const CHECK_LOADS: [f64; 3] = [0.1, 0.5, 0.9];

/// A measured row sits on a cliff when its P99 differs more than 2x from a neighbouring
/// row's: one sweep step (a few % of load) then moves P99 by more than the test's +-35%, so
/// a comparison there measures sampling noise rather than the model.
fn on_cliff(rows: &[ProfileRow], i: usize) -> bool {
    let p = rows[i].p99_us();
    let steep = |j: usize| {
        let q = rows[j].p99_us();
        q > 2.0 * p || p > 2.0 * q
    };
    (i > 0 && steep(i - 1)) || (i + 1 < rows.len() && steep(i + 1))
}

/// Nearest row to each of `fractions` x the top load of `range`, skipping cliff rows.
fn resolved_rows_at<'a>(all: &'a [ProfileRow], n: usize, fractions: &[f64]) -> Vec<&'a ProfileRow> {
    let ok: Vec<usize> = (0..n).filter(|&i| !on_cliff(all, i)).collect();
    let Some(top) = n.checked_sub(1).map(|i| all[i].target_iops) else {
        return Vec::new();
    };
    let mut out: Vec<&ProfileRow> = Vec::new();
    for f in fractions {
        let want = f * top;
        if let Some(&i) = ok.iter().min_by(|&&a, &&b| {
            (all[a].target_iops - want)
                .abs()
                .total_cmp(&(all[b].target_iops - want).abs())
        }) && !out.iter().any(|x| std::ptr::eq(*x, &all[i]))
        {
            out.push(&all[i]);
        }
    }
    out.sort_by(|a, b| a.target_iops.total_cmp(&b.target_iops));
    out
}

/// The rows the calibration test checks: [`CHECK_LOADS`] of the range below Sandook's
/// saturation point (P99 < 1 ms), avoiding cliff rows. When that range has fewer than three
/// resolved rows (a mix whose P99 crosses 1 ms from read/write interference within the first
/// load steps, while P50 is still ~20-70 us), the range below the P90 rule is used instead.
pub fn check_rows(p: &Profile) -> Vec<&ProfileRow> {
    let rows = resolved_rows_at(&p.rows, p.unsaturated(SANDOOK_P99_US).len(), &CHECK_LOADS);
    if rows.len() == CHECK_LOADS.len() {
        return rows;
    }
    resolved_rows_at(&p.rows, below_saturation(p).len(), &CHECK_LOADS)
}

/// The rows the fit scores: spread over the whole unsaturated range, plus the checked ones
/// (mixed curves turn steeply in the checked range, where a coarse spread would miss them).
pub fn fit_rows<'a>(p: &'a Profile, loads: &[f64]) -> Vec<&'a ProfileRow> {
    let mut rows = rows_at(below_saturation(p), loads);
    for r in check_rows(p) {
        if !rows.iter().any(|x| std::ptr::eq(*x, r)) {
            rows.push(r);
        }
    }
    rows.sort_by(|a, b| a.target_iops.total_cmp(&b.target_iops));
    rows
}
