//! Not a paper figure: the spike-sensitivity study. The main mix on every system while a
//! controlled spike process ([`fusionraid_devices::spikes`]) on every member sweeps spike
//! rate and length, so the report can say where each system's tail comes from and where
//! FusionRAID's advantage starts. A grid point is a column of the block (its "workload"
//! field names the point); latencies are over every request of the run.

use super::super::experiments::{COMBINED, ExpId, Plan, SENSITIVITY_SCHEMES};
use super::super::plot::{LineChart, Series, Unit, line_chart};
use super::super::result::RunResult;
use super::super::spec::SpikeSetting;
use super::super::svg::fmt_us;
use super::detector::run_extras;
use super::{
    Agg, Block, Cell, CellKind, Comparison, ExperimentJson, ExperimentOutput, Figure, Results,
    Section, Table, agg_text, comparison_table, names,
};

/// The column name of grid point `k`.
fn point_label(k: Option<SpikeSetting>) -> String {
    k.map_or("no spikes".to_string(), SpikeSetting::label)
}

fn cell(plan: &Plan, res: &Results, s: &str, k: Option<SpikeSetting>) -> Cell {
    let runs: Vec<&RunResult> = res.get(&plan.spike_run(s, k)).into_iter().collect();
    let figs: Vec<_> = runs.iter().map(|r| &r.all).collect();
    let mut c = Cell::latency(s, &point_label(k), &figs);
    if !runs.is_empty() {
        let share = k.map_or(0.0, SpikeSetting::unresponsive_share);
        c.extra.insert(
            "set_unresponsive_share".into(),
            Agg::of([share]).expect("finite"),
        );
        for (name, v) in run_extras(&runs) {
            if let Some(v) = v {
                c.extra.insert(name.to_string(), v);
            }
        }
    }
    c
}

/// A grid-point x system table of one figure, points in grid order.
fn table(title: &str, grid: &[Option<SpikeSetting>], cells: &[Cell], kind: CellKind) -> Table {
    let mut header = names(&["spikes per member", "member-time unresponsive"]);
    header.extend(SENSITIVITY_SCHEMES.iter().map(|s| s.to_string()));
    let rows = grid
        .iter()
        .map(|&k| {
            let p = point_label(k);
            let mut row = vec![p.clone(), share_text(k)];
            row.extend(SENSITIVITY_SCHEMES.iter().map(|s| {
                agg_text(
                    cells
                        .iter()
                        .find(|c| c.series == *s && c.workload == p)
                        .and_then(kind.pick),
                )
            }));
            row
        })
        .collect();
    Table {
        caption: format!("{title}: {}, every request of the run", kind.label),
        header,
        rows,
    }
}

fn share_text(k: Option<SpikeSetting>) -> String {
    let pct = k.map_or(0.0, SpikeSetting::unresponsive_share) * 100.0;
    if pct == 0.0 {
        "0".into()
    } else if pct < 0.1 {
        format!("{pct:.4}%")
    } else {
        format!("{pct:.2}%")
    }
}

/// One line per system: `kind` against member-time unresponsive (log-log); the grid point
/// without spikes has no place on a log axis and is in the tables.
fn chart(title: &str, grid: &[Option<SpikeSetting>], cells: &[Cell], kind: CellKind) -> Figure {
    let mut pts: Vec<(f64, String)> = grid
        .iter()
        .filter_map(|k| k.map(|k| (k.unresponsive_share() * 100.0, point_label(Some(k)))))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let series = SENSITIVITY_SCHEMES
        .iter()
        .map(|s| Series {
            name: s.to_string(),
            points: pts
                .iter()
                .filter_map(|(x, p)| {
                    let c = cells.iter().find(|c| c.series == *s && c.workload == *p)?;
                    Some((*x, (kind.pick)(c)?.mean))
                })
                .collect(),
            dashed: s.starts_with("fusion"),
        })
        .collect();
    Figure {
        file: format!("sensitivity_{}.svg", kind.key),
        caption: format!(
            "{title}: {} against member-time unresponsive (spike rate x length); fusion \
             systems dashed",
            kind.label
        ),
        svg: line_chart(&LineChart {
            title: format!("{title}: {}", kind.label),
            x_label: "member-time unresponsive, % (rate x length; log scale)".into(),
            y_label: format!("{} (log scale)", kind.label),
            x_unit: Unit::Plain,
            y_unit: Unit::Micros,
            x_log: true,
            y_log: true,
            y_range: None,
            series,
        }),
    }
}

/// Per grid point, each system's P99 over FusionRAID's, and what redirection did.
fn factors(grid: &[Option<SpikeSetting>], cells: &[Cell]) -> Table {
    let p99 = |s: &str, p: &str| {
        cells
            .iter()
            .find(|c| c.series == s && c.workload == p)
            .and_then(|c| c.p99_us)
            .map(|a| a.mean)
    };
    let extra = |s: &str, p: &str, k: &str| {
        cells
            .iter()
            .find(|c| c.series == s && c.workload == p)
            .and_then(|c| c.extra.get(k))
            .map(|a| a.mean)
    };
    let others: Vec<&str> = SENSITIVITY_SCHEMES
        .iter()
        .copied()
        .filter(|s| *s != "fusionraid")
        .collect();
    let mut header = names(&["spikes per member"]);
    header.extend(others.iter().map(|s| format!("{s} / fusionraid")));
    header.extend(names(&[
        "detector spikes / SSD-min (fusion-nd)",
        "writes redirected (fusionraid)",
        "reads redirected (fusionraid)",
    ]));
    let rows = grid
        .iter()
        .map(|&k| {
            let p = point_label(k);
            let mut row = vec![p.clone()];
            row.extend(
                others
                    .iter()
                    .map(|s| match (p99(s, &p), p99("fusionraid", &p)) {
                        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
                        _ => "-".into(),
                    }),
            );
            let show = |v: Option<f64>, pct: bool| match v {
                None => "-".to_string(),
                Some(v) if pct => format!("{:.2}%", v * 100.0),
                Some(v) => format!("{v:.1}"),
            };
            row.push(show(extra("fusion-nd", &p, "spikes_per_ssd_minute"), false));
            row.push(show(
                extra("fusionraid", &p, "redirected_write_share"),
                true,
            ));
            row.push(show(extra("fusionraid", &p, "redirected_read_share"), true));
            row
        })
        .collect();
    Table {
        caption: "P99 of every system over FusionRAID's at each grid point (above 1: \
                  FusionRAID's tail is lower), and the detector and redirection at work"
            .into(),
        header,
        rows,
    }
}

/// Where FusionRAID's advantage starts and how it grows: per spike length, the lowest rate
/// at which another system's P99 is at least [`ADVANTAGE`] times FusionRAID's; the largest
/// factor on the grid; and the factors at no spikes and at the grid's harshest point.
fn comparisons(grid: &[Option<SpikeSetting>], cells: &[Cell]) -> Vec<Comparison> {
    let p99 = |s: &str, k: Option<SpikeSetting>| {
        let p = point_label(k);
        cells
            .iter()
            .find(|c| c.series == s && c.workload == p)
            .and_then(|c| c.p99_us)
            .map(|a| a.mean)
    };
    let ratio = |s: &str, k| match (p99(s, k), p99("fusionraid", k)) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let harshest = grid
        .iter()
        .copied()
        .max_by(|a, b| {
            let share = |k: &Option<SpikeSetting>| k.map_or(0.0, SpikeSetting::unresponsive_share);
            share(a).total_cmp(&share(b))
        })
        .flatten();
    // Rate major, as the grid: the lowest rate of a length comes first.
    let mut sorted: Vec<SpikeSetting> = grid.iter().flatten().copied().collect();
    sorted.sort_by_key(|k| (k.length_us, k.per_min));
    let mut lengths: Vec<u64> = sorted.iter().map(|k| k.length_us).collect();
    lengths.dedup();
    let na = "n/a (not in the paper)";
    let src = "spike-sensitivity study (ours)";
    let mut cs = Vec::new();
    for other in ["4-raid5", "raid50", "fusion-nd", COMBINED] {
        cs.push(Comparison::text(
            &format!("P99 {other} / FusionRAID, no spikes"),
            ratio(other, None),
            na,
            "x",
            src,
        ));
        if let Some(h) = harshest {
            cs.push(Comparison::text(
                &format!("P99 {other} / FusionRAID, {}", h.label()),
                ratio(other, Some(h)),
                na,
                "x",
                src,
            ));
        }
        // Per spike length, the lowest rate at which the factor reaches ADVANTAGE.
        for &len in &lengths {
            let first = sorted
                .iter()
                .filter(|k| k.length_us == len)
                .find(|&&k| ratio(other, Some(k)).is_some_and(|r| r >= ADVANTAGE));
            cs.push(Comparison::text(
                &format!(
                    "lowest rate at which P99 {other} / FusionRAID >= {ADVANTAGE}x, spikes of {}",
                    fmt_us(len as f64)
                ),
                first.map(|k| f64::from(k.per_min)),
                na,
                "/min",
                src,
            ));
        }
        // The largest factor on the grid, and where.
        if let Some((k, r)) = sorted
            .iter()
            .filter_map(|&k| ratio(other, Some(k)).map(|r| (k, r)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
        {
            cs.push(Comparison::text(
                &format!(
                    "largest P99 {other} / FusionRAID on the grid ({})",
                    k.label()
                ),
                Some(r),
                na,
                "x",
                src,
            ));
        }
    }
    cs
}

/// The P99 factor that counts as an advantage.
const ADVANTAGE: f64 = 1.5;

pub fn analyze(plan: &Plan, res: &Results) -> ExperimentOutput {
    let title = "Spike sensitivity";
    let grid = plan.spike_grid();
    let points: Vec<String> = grid.iter().map(|&k| point_label(k)).collect();
    let mut cells = Vec::new();
    for s in SENSITIVITY_SCHEMES {
        for &k in &grid {
            cells.push(cell(plan, res, s, k));
        }
    }
    let comparisons = comparisons(&grid, &cells);
    let mut tables = vec![
        comparison_table(
            "Where FusionRAID's advantage starts and how it grows (P99 over all requests)",
            &comparisons,
        ),
        factors(&grid, &cells),
    ];
    let mut figures = Vec::new();
    for kind in [CellKind::P99, CellKind::P999, CellKind::MEDIAN] {
        tables.push(table(title, &grid, &cells, kind));
        if kind.key != "median" {
            figures.push(chart(title, &grid, &cells, kind));
        }
    }
    let rates: Vec<String> = plan
        .size
        .spike_rates
        .iter()
        .map(|r| r.to_string())
        .collect();
    let lengths: Vec<String> = plan
        .size
        .spike_lengths_us
        .iter()
        .map(|&l| fmt_us(l as f64))
        .collect();
    ExperimentOutput {
        id: ExpId::Sensitivity,
        json: ExperimentJson {
            experiment: ExpId::Sensitivity.name(),
            title: "Spike sensitivity: every system under a controlled spike process (not a \
                    paper figure)"
                .into(),
            blocks: vec![Block {
                name: "sensitivity".into(),
                series: names(&SENSITIVITY_SCHEMES),
                workloads: points,
                cells,
            }],
            comparisons,
            runs: Vec::new(),
            failed: Vec::new(),
            size: None,
        },
        section: Section {
            title: "9. Spike sensitivity: every system under a controlled spike process (not \
                    a paper figure)"
                .into(),
            paragraphs: vec![format!(
                "**Not one of the paper's experiments.** The main mix (TPC-C, YCSB-A, \
                 TensorFlow, VirtualDesktop) on 29 aged `dc` members, {} of virtual time, \
                 base seed, on every system the evaluation compares ({}), while every member \
                 runs a controlled spike process on top of its own model: unresponsive \
                 periods of a fixed length at a rate per member-minute (Poisson, each member \
                 from its own seed; docs/DEVICE_MODELS.md, \"Spike process\"). Grid: rates \
                 {{{}}} per minute x lengths {{{}}}. A member is unresponsive rate x length \
                 of the time. Latencies are over every request of the four workloads. The \
                 spike process is a knob, not a calibrated behaviour: it asks how each \
                 system's tail depends on spike rate and length.",
                super::dur(plan.size.sensitivity_ms),
                SENSITIVITY_SCHEMES.join(", "),
                rates.join(", "),
                lengths.join(", "),
            )],
            tables,
            figures,
        },
        headline: Vec::new(),
    }
}

/// What the report says about the combined system wherever it runs: what it is, and that it
/// has the paper's FusionRAID's space.
pub fn combined_note() -> String {
    format!(
        "`{COMBINED}` is FusionRAID with every policy the pool offers: Sandook's profile-guided \
         steering (load weights, read/write segregation, congestion control), proactive \
         discard of freed stripes and hedged writes (a write stuck on a member the detector \
         marks unresponsive is placed again elsewhere). It runs on the same members with the same volumes, RAID5 \
         6+1 geometry and spare share (the engine's default, 0.25 of the data) as the \
         paper's FusionRAID: the same space budget."
    )
}
