//! Not a paper figure: the Pitfalls study's question, sustained 4 KiB random-write speed-up
//! against spare share, for one SSD, in-place RAID5, a FusionRAID mirror and a FusionRAID
//! RAID5 volume ([`super::super::pitfalls`]), next to the study's speed-ups. Per device a
//! block: series = configurations, columns = spare shares, figures in the cells' extras.

use super::super::experiments::{ExpId, Plan};
use super::super::paper::{
    PITFALLS_PARITY_SPEEDUP, PITFALLS_PARITYLESS_SPEEDUP, PITFALLS_SOURCE, PITFALLS_SSD_IOPS,
    PITFALLS_SSD_SPEEDUP,
};
use super::super::pitfalls::{Config, SSD_QUEUE_DEPTH, SsdMeasure, run_ssd};
use super::super::plot::{Bar, BarChart, LineChart, Series, Unit, bar_chart, line_chart};
use super::{
    Agg, Block, Cell, Comparison, ExperimentJson, ExperimentOutput, Figure, Results, Section,
    Table, comparison_table, names,
};

/// One measured point: sustained writes per second and what the drives did for them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub iops: f64,
    /// Flash bytes per host byte the drives received.
    pub flash_wa: f64,
    /// Device bytes written per user byte (1 for the single SSD).
    pub device_per_user: f64,
}

/// The column name of spare share `s`.
fn share_label(s: f64) -> String {
    format!("spare {}%", (s * 100.0).round())
}

/// The study's largest speed-up for configuration `c`, as (low, high) of its range.
pub fn study_speedup(c: Config) -> (f64, f64) {
    match c {
        Config::Ssd => (PITFALLS_SSD_SPEEDUP, PITFALLS_SSD_SPEEDUP),
        Config::Mirror => PITFALLS_PARITYLESS_SPEEDUP,
        Config::Raid5 | Config::Fusion => PITFALLS_PARITY_SPEEDUP,
    }
}

fn study_text(c: Config) -> String {
    let (lo, hi) = study_speedup(c);
    let what = match c {
        Config::Ssd => "one SSD",
        Config::Mirror => "RAID0/1/10",
        Config::Raid5 | Config::Fusion => "RAID5/6",
    };
    if lo == hi {
        format!("up to {lo}x ({what})")
    } else {
        format!("up to {lo}-{hi}x ({what})")
    }
}

/// Every point of `device`: `points[config][share]`.
fn measure(plan: &Plan, res: &Results, device: &str) -> Vec<Vec<Option<Point>>> {
    let p = &plan.size.pitfalls;
    Config::ALL
        .iter()
        .map(|&c| {
            p.shares
                .iter()
                .map(|&s| match plan.pitfalls_run(c, device, s) {
                    None => {
                        run_ssd(&p.ssd_point(device, s, plan.seed))
                            .ok()
                            .map(|m: SsdMeasure| Point {
                                iops: m.iops,
                                flash_wa: m.flash_wa,
                                device_per_user: 1.0,
                            })
                    }
                    Some(spec) => res.get(&spec).and_then(|r| {
                        let w = r.report.latency.workloads.first()?;
                        let wa = &r.report.write_amplification;
                        Some(Point {
                            iops: w.iops,
                            flash_wa: wa.flash,
                            device_per_user: wa.engine,
                        })
                    }),
                })
                .collect()
        })
        .collect()
}

/// Speed-ups over the first share (None where either point is missing).
fn speedups(row: &[Option<Point>]) -> Vec<Option<f64>> {
    let base = row.first().copied().flatten().map(|p| p.iops);
    row.iter()
        .map(|p| match (p, base) {
            (Some(p), Some(b)) if b > 0.0 => Some(p.iops / b),
            _ => None,
        })
        .collect()
}

fn one(v: f64) -> Option<Agg> {
    Agg::of([v])
}

fn cells(plan: &Plan, pts: &[Vec<Option<Point>>]) -> Vec<Cell> {
    let shares = &plan.size.pitfalls.shares;
    let mut out = Vec::new();
    for (c, row) in Config::ALL.iter().zip(pts) {
        for ((s, p), up) in shares.iter().zip(row).zip(speedups(row)) {
            let mut cell = Cell {
                series: c.label().to_string(),
                workload: share_label(*s),
                runs: usize::from(p.is_some()),
                ..Cell::default()
            };
            if let Some(p) = p {
                let figs = [
                    ("iops", Some(p.iops)),
                    ("speedup", up),
                    ("flash_wa", Some(p.flash_wa)),
                    ("device_bytes_per_user_byte", Some(p.device_per_user)),
                ];
                for (k, v) in figs {
                    if let Some(a) = v.and_then(one) {
                        cell.extra.insert(k.to_string(), a);
                    }
                }
            }
            out.push(cell);
        }
    }
    out
}

fn table(plan: &Plan, device: &str, pts: &[Vec<Option<Point>>]) -> Table {
    let shares = &plan.size.pitfalls.shares;
    let f = |v: Option<f64>, d: usize| v.map_or("-".into(), |x| format!("{x:.d$}"));
    let mut rows = Vec::new();
    for (c, row) in Config::ALL.iter().zip(pts) {
        for ((s, p), up) in shares.iter().zip(row).zip(speedups(row)) {
            rows.push(vec![
                c.label().to_string(),
                c.spare_meaning().to_string(),
                format!("{}%", (s * 100.0).round()),
                f(p.map(|p| p.iops), 0),
                up.map_or("-".into(), |u| format!("{u:.2}x")),
                f(p.map(|p| p.flash_wa), 2),
                f(p.map(|p| p.device_per_user), 2),
                study_text(*c),
            ]);
        }
    }
    Table {
        caption: format!(
            "`{device}`: sustained 4 KiB random writes per second by spare share, speed-up over \
             spare {}%, the drives' flash bytes per host byte and device bytes per user byte \
             (arrays: over the whole run, warm-up included), and the study's largest speed-up",
            (shares[0] * 100.0).round()
        ),
        header: names(&[
            "configuration",
            "spare is",
            "spare",
            "IOPS",
            "speed-up",
            "flash WA",
            "device/user",
            "study",
        ]),
        rows,
    }
}

fn line_figure(plan: &Plan, device: &str, pts: &[Vec<Option<Point>>]) -> Figure {
    let shares = &plan.size.pitfalls.shares;
    let series = Config::ALL
        .iter()
        .zip(pts)
        .map(|(c, row)| Series {
            name: c.label().to_string(),
            points: shares
                .iter()
                .zip(speedups(row))
                .filter_map(|(s, u)| u.map(|u| (s * 100.0, u)))
                .collect(),
            dashed: matches!(c, Config::Ssd),
        })
        .collect();
    let title = format!("Pitfalls on {device}: random-write speed-up vs spare");
    Figure {
        file: format!("pitfalls_{device}.svg"),
        caption: format!(
            "{title} (over spare {}%). The study's largest: 19x one SSD, 15-19x RAID0/1/10, \
             9-14x RAID5/6.",
            (shares[0] * 100.0).round()
        ),
        svg: line_chart(&LineChart {
            title,
            x_label: "spare share (%)".into(),
            y_label: "sustained IOPS / IOPS at the first share".into(),
            x_unit: Unit::Plain,
            y_unit: Unit::Plain,
            x_log: false,
            y_log: false,
            y_range: None,
            series,
        }),
    }
}

/// Ours at the largest share on every device next to the study's largest speed-ups.
fn bar_figure(plan: &Plan, all: &[(&str, Vec<Vec<Option<Point>>>)]) -> Figure {
    let mut series: Vec<String> = all.iter().map(|(d, _)| format!("ours, {d}")).collect();
    series.push("study (range)".into());
    let values = Config::ALL
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let mut v: Vec<Option<Bar>> = all
                .iter()
                .map(|(_, pts)| {
                    speedups(&pts[i]).last().copied().flatten().map(|u| Bar {
                        value: u,
                        lo: u,
                        hi: u,
                    })
                })
                .collect();
            let (lo, hi) = study_speedup(c);
            v.push(Some(Bar {
                value: (lo + hi) / 2.0,
                lo,
                hi,
            }));
            v
        })
        .collect();
    let last = plan.size.pitfalls.shares.last().copied().unwrap_or(0.0);
    let title = format!(
        "Pitfalls: speed-up at spare {}% against the study's largest",
        (last * 100.0).round()
    );
    Figure {
        file: "pitfalls_vs_study.svg".into(),
        caption: format!(
            "{title} (the study's bars: middle of its range, whiskers the range; it does not \
             say at which spare share its largest speed-ups were measured)"
        ),
        svg: bar_chart(&BarChart {
            title,
            y_label: "speed-up over the first share".into(),
            unit: Unit::Plain,
            log: false,
            groups: Config::ALL.iter().map(|c| c.label().to_string()).collect(),
            series,
            values,
        }),
    }
}

fn comparisons(plan: &Plan, device: &str, pts: &[Vec<Option<Point>>]) -> Vec<Comparison> {
    let last = plan.size.pitfalls.shares.last().copied().unwrap_or(0.0);
    Config::ALL
        .iter()
        .zip(pts)
        .map(|(&c, row)| {
            let ours = speedups(row).last().copied().flatten();
            let what = format!(
                "{device}: {} speed-up at spare {}%",
                c.label(),
                (last * 100.0).round()
            );
            let (lo, hi) = study_speedup(c);
            let mut cmp = if lo == hi {
                Comparison::new(&what, ours, Some(hi), "x", PITFALLS_SOURCE)
            } else {
                Comparison::text(&what, ours, &study_text(c), "x", PITFALLS_SOURCE)
            };
            cmp.paper_text = study_text(c);
            cmp
        })
        .collect()
}

fn intro(plan: &Plan) -> String {
    let p = &plan.size.pitfalls;
    let size = |b: u64| {
        if b >= 1 << 30 {
            format!("{} GiB", b as f64 / (1u64 << 30) as f64)
        } else {
            format!("{} MiB", b >> 20)
        }
    };
    let shares: Vec<String> = p
        .shares
        .iter()
        .map(|s| format!("{}%", (s * 100.0).round()))
        .collect();
    format!(
        "**Not one of the paper's experiments.** The Pitfalls study (`shared/seeds/003`) found \
         spare capacity the strongest lever on sustained random-write speed: up to 19x on one \
         SSD ({} -> {} IOPS), 15-19x on RAID0/1/10 and 9-14x on RAID5/6, the spare being \
         device capacity left unwritten. Here, on aged `{}` members of {} at spare \
         {{{}}}: the **single SSD** is the device model alone, {} 4 KiB random writes in \
         flight over `1 - spare` of it, the rest never written (measured for {} after {} of \
         warm-up writes); **in-place RAID5** is the `4-raid5` baseline, one 4+1 array \
         on {} members whose volume covers `1 - spare` of each, the rest never written; the \
         **FusionRAID mirror** (2 copies) and **FusionRAID RAID5 4+1** volumes are {} on the \
         same {} members with the engine's spare share (spare stripes / data) set to \
         the share, members aged to the paper's state. The arrays are offered {} 4 KiB \
         random writes per second over the whole volume (above what any sustains); IOPS are \
         those completed after the warm-up ({} of {} in place, {} of {} FusionRAID). The two \
         spares differ: the drives' GC only gains from capacity never written (or \
         discarded), and FusionRAID's spare stripes are written (proactive discard is off \
         here, the engine's default), so its share buys cheaper cleaning in the engine, not \
         drive spare. The study does not say at which share its largest speed-ups were \
         measured; ours are at the largest share run.",
        PITFALLS_SSD_IOPS.0,
        PITFALLS_SSD_IOPS.1,
        p.devices.join("`, `"),
        size(p.member_bytes),
        shares.join(", "),
        SSD_QUEUE_DEPTH,
        super::dur(p.ssd_measure_ms),
        size(p.ssd_warm_bytes),
        p.disks,
        size(p.volume_bytes),
        p.disks,
        p.offered_iops,
        super::dur(p.raid5_ms - p.raid5_warmup_ms),
        super::dur(p.raid5_ms),
        super::dur(p.fusion_ms - p.fusion_warmup_ms),
        super::dur(p.fusion_ms),
    )
}

pub fn analyze(plan: &Plan, res: &Results) -> ExperimentOutput {
    let p = &plan.size.pitfalls;
    let all: Vec<(&str, Vec<Vec<Option<Point>>>)> = p
        .devices
        .iter()
        .map(|&d| (d, measure(plan, res, d)))
        .collect();
    let mut blocks = Vec::new();
    let mut tables = Vec::new();
    let mut figures = Vec::new();
    let mut comps = Vec::new();
    for (d, pts) in &all {
        blocks.push(Block {
            name: format!("pitfalls_{d}"),
            series: Config::ALL.iter().map(|c| c.label().to_string()).collect(),
            workloads: p.shares.iter().map(|&s| share_label(s)).collect(),
            cells: cells(plan, pts),
        });
        tables.push(table(plan, d, pts));
        figures.push(line_figure(plan, d, pts));
        comps.extend(comparisons(plan, d, pts));
    }
    figures.push(bar_figure(plan, &all));
    tables.push(comparison_table(
        "Speed-up at the largest share against the study's largest speed-ups",
        &comps,
    ));
    let mut paragraphs = vec![intro(plan)];
    if p.shares.first().is_some_and(|&s| s > 0.0) {
        paragraphs.push(format!(
            "Speed-ups are over spare {}%, the smallest share run, not over 0%.",
            (p.shares[0] * 100.0).round()
        ));
    }
    let title = "Pitfalls: random-write speed-up vs spare capacity (not a paper figure)";
    ExperimentOutput {
        id: ExpId::Pitfalls,
        json: ExperimentJson {
            experiment: ExpId::Pitfalls.name(),
            title: title.into(),
            blocks,
            comparisons: comps.clone(),
            runs: Vec::new(),
            failed: Vec::new(),
            size: None,
        },
        section: Section {
            title: format!("10. {title}"),
            paragraphs,
            tables,
            figures,
        },
        headline: comps
            .into_iter()
            .filter(|c| c.what.contains(Config::Ssd.label()) || c.what.contains("FusionRAID"))
            .collect(),
    }
}
