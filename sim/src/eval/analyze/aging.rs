//! Fig. 14: clean vs aged members.

use super::super::experiments::{COMBINED, ExpId, FIG14_SCHEMES, MAIN_MIX, Plan};
use super::super::paper::FIG14_SOURCE;
use super::super::plot::{Bar, BarChart, Unit, bar_chart};
use super::super::svg::fmt_us;
use super::{
    Comparison, ExperimentJson, ExperimentOutput, Figure, Results, Section, Table,
    comparison_table, latency_block, names,
};

/// What the paper reports for aged relative to clean members: (median, P99).
fn expected(scheme: &str) -> (&'static str, &'static str) {
    match scheme {
        "fusionraid" => ("similar", "higher on aged"),
        COMBINED => ("not in the paper", "not in the paper"),
        _ => ("higher on aged", "similar"),
    }
}

/// Our aged/clean ratio in the paper's words: more than 10% apart counts as a difference.
fn verdict(ratio: f64) -> &'static str {
    if ratio > 1.1 {
        "higher on aged"
    } else if ratio < 1.0 / 1.1 {
        "lower on aged"
    } else {
        "similar"
    }
}

pub fn analyze(plan: &Plan, res: &Results) -> ExperimentOutput {
    let label = |s: &str, aged: bool| format!("{s} {}", if aged { "aged" } else { "clean" });
    let mut series = Vec::new();
    for s in FIG14_SCHEMES {
        series.push(label(s, false));
        series.push(label(s, true));
    }
    let work: Vec<String> = MAIN_MIX.iter().map(|w| w.name().to_string()).collect();
    let block = latency_block("fig14", "Fig. 14", &series, &work, |s, w| {
        let (scheme, state) = s.rsplit_once(' ').expect("label has a state");
        (0..plan.size.replicates)
            .filter_map(|r| {
                res.get(&if state == "aged" {
                    plan.main_run(scheme, r)
                } else {
                    plan.clean_run(scheme, r)
                })
            })
            .filter_map(|r| r.workload(w))
            .collect()
    });
    let pick = |s: &str, w: &str, p99: bool| {
        block
            .block
            .cells
            .iter()
            .find(|c| c.series == s && c.workload == w)
            .and_then(|c| if p99 { c.p99_us } else { c.p50_us })
            .map(|a| a.mean)
    };
    // Mean over the workloads of the per-workload means, over the workloads measured both
    // clean and aged (all of them unless a run had no request of one).
    let avg = |s: &str, p99: bool| {
        let (scheme, _) = s.rsplit_once(' ').expect("label has a state");
        let v: Vec<f64> = work
            .iter()
            .filter(|w| {
                pick(&label(scheme, false), w, p99).is_some()
                    && pick(&label(scheme, true), w, p99).is_some()
            })
            .filter_map(|w| pick(s, w, p99))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let mut rows = Vec::new();
    let mut comparisons = Vec::new();
    for s in FIG14_SCHEMES {
        let (em, ep) = expected(s);
        let mut row = vec![s.to_string()];
        for (p99, exp) in [(false, em), (true, ep)] {
            let (c, a) = (avg(&label(s, false), p99), avg(&label(s, true), p99));
            let ratio = match (c, a) {
                (Some(c), Some(a)) if c > 0.0 => Some(a / c),
                _ => None,
            };
            row.push(c.map_or("-".into(), fmt_us));
            row.push(a.map_or("-".into(), fmt_us));
            row.push(ratio.map_or("-".into(), |r| format!("{r:.2}")));
            row.push(format!("{} (paper: {exp})", ratio.map_or("-", verdict)));
            let what = format!("{s}: {} aged / clean", if p99 { "P99" } else { "median" });
            comparisons.push(Comparison::text(&what, ratio, exp, "x", FIG14_SOURCE));
        }
        rows.push(row);
    }
    let summary = Table {
        caption: "Fig. 14: median and P99 averaged over the main mix's workloads".into(),
        header: names(&[
            "system",
            "median clean",
            "median aged",
            "aged/clean",
            "median: ours (paper)",
            "P99 clean",
            "P99 aged",
            "aged/clean",
            "P99: ours (paper)",
        ]),
        rows,
    };
    let chart = |p99: bool| {
        let what = if p99 { "P99" } else { "median" };
        Figure {
            file: format!("fig14_avg_{}.svg", if p99 { "p99" } else { "median" }),
            caption: format!("Fig. 14: {what} averaged over workloads, clean vs aged"),
            svg: bar_chart(&BarChart {
                title: format!("Fig. 14: {what}, clean vs aged"),
                y_label: format!("{what} (log scale)"),
                unit: Unit::Micros,
                log: true,
                groups: names(&FIG14_SCHEMES),
                series: names(&["clean", "aged"]),
                values: FIG14_SCHEMES
                    .iter()
                    .map(|s| {
                        [false, true]
                            .iter()
                            .map(|&aged| avg(&label(s, aged), p99).map(Bar::single))
                            .collect()
                    })
                    .collect(),
            }),
        }
    };
    let mut figures = vec![chart(false), chart(true)];
    figures.extend(block.figures);
    let mut tables = vec![
        summary,
        comparison_table("Aged / clean against the paper's description", &comparisons),
    ];
    tables.extend(block.tables);
    ExperimentOutput {
        id: ExpId::Fig14,
        json: ExperimentJson {
            experiment: ExpId::Fig14.name(),
            title: "Clean vs aged members (paper Fig. 14)".into(),
            blocks: vec![block.block],
            comparisons: comparisons.clone(),
            runs: Vec::new(),
            failed: Vec::new(),
            size: None,
        },
        section: Section {
            title: "5. Clean vs aged members (paper Fig. 14)".into(),
            paragraphs: vec![format!(
                "RAID50, LogRAID and FusionRAID on the main mix, members fresh (secure-erased) \
                 or preconditioned to the paper's aged state, {} seed(s) of {}. The paper \
                 gives this figure without numbers; its text says RAID50 and LogRAID have a \
                 higher median on aged drives and the same tail, while FusionRAID keeps its \
                 median and has a better tail on clean drives. We call a ratio above 1.1 \
                 \"higher\", below 1/1.1 \"lower\", else \"similar\".",
                plan.size.replicates,
                super::dur(plan.size.main_ms)
            )],
            tables,
            figures,
        },
        // The combined system is not in the paper: its rows stay in the section.
        headline: comparisons
            .into_iter()
            .filter(|c| !c.what.starts_with(COMBINED))
            .collect(),
    }
}
