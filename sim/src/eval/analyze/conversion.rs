//! Fig. 13 a-c: the cost of in-position conversion (latency), write amplification and space.

use std::collections::BTreeMap;

use super::super::experiments::{ExpId, FIG13_SCHEMES, MAIN_MIX, Plan};
use super::super::paper::{
    FIG13_CONVERSION_WA_INCREASE, FIG13_SOURCE, FIG13_SPACE_CONV, FIG13_SPACE_NOCONV,
    FIG13_SPACE_RAID5, FIG13_SPACE_RAIDM,
};
use super::super::plot::{BarChart, Unit, bar_chart};
use super::super::result::RunResult;
use super::{
    Agg, Block, Cell, Comparison, ExperimentJson, ExperimentOutput, Figure, Results, Section,
    Table, comparison_table, latency_block, names,
};
use crate::workload::Workload;

const NOCONV: &str = "fusionraid, no conversion";

/// The Fig. 13b-c series and the run behind each (series, workload).
fn wa_run<'a>(plan: &Plan, res: &Results<'a>, series: &str, w: Workload) -> Option<&'a RunResult> {
    let spec = if series == NOCONV {
        plan.alone_wa_run("fusionraid", w, false)
    } else {
        plan.alone_wa_run(series, w, true)
    };
    res.get(&spec)
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

pub fn analyze(plan: &Plan, res: &Results) -> ExperimentOutput {
    // (a) latency with conversion on and off, main mix.
    let a_series = names(&["fusionraid", NOCONV]);
    let main: Vec<String> = MAIN_MIX.iter().map(|w| w.name().to_string()).collect();
    let a = latency_block("fig13a", "Fig. 13a", &a_series, &main, |s, w| {
        (0..plan.size.replicates)
            .filter_map(|r| {
                res.get(&if s == NOCONV {
                    plan.noconv_run(r)
                } else {
                    plan.main_run(s, r)
                })
            })
            .filter_map(|r| r.workload(w))
            .collect()
    });
    let p99_cost: Vec<f64> = main
        .iter()
        .filter_map(|w| {
            let get = |s: &str| {
                a.block
                    .cells
                    .iter()
                    .find(|c| c.series == s && &c.workload == w)
                    .and_then(|c| c.p99_us)
            };
            Some(get("fusionraid")?.mean / get(NOCONV)?.mean)
        })
        .collect();

    // (b, c) write amplification and space, each workload alone, no prefill.
    let mut b_series = names(&FIG13_SCHEMES);
    b_series.push(NOCONV.to_string());
    let wa_ws = &plan.size.wa_workloads;
    let all: Vec<String> = wa_ws.iter().map(|w| w.name().to_string()).collect();
    let mut cells = Vec::new();
    for s in &b_series {
        for &w in wa_ws {
            let r = wa_run(plan, res, s, w);
            let mut extra = BTreeMap::new();
            if let Some(r) = r {
                let rep = &r.report;
                let mut put = |k: &str, v: f64| {
                    extra.insert(k.to_string(), Agg::of([v]).expect("finite"));
                };
                put("write_amplification", rep.write_amplification.engine);
                put("flash_write_amplification", rep.write_amplification.total);
                put("space_over_user_data", rep.space.used_over_mapped);
                put(
                    "conversion_backlog_sets",
                    rep.space.conversion_backlog as f64,
                );
                put(
                    "user_write_mib",
                    rep.write_amplification.user_bytes as f64 / 1048576.0,
                );
            }
            cells.push(Cell {
                series: s.clone(),
                workload: w.name().to_string(),
                runs: usize::from(r.is_some()),
                extra,
                ..Cell::default()
            });
        }
    }
    let val = |s: &str, w: &str, k: &str| {
        cells
            .iter()
            .find(|c| c.series == s && c.workload == w)
            .and_then(|c| c.extra.get(k))
            .map(|a| a.mean)
    };
    let over = |s: &str, k: &str| all.iter().filter_map(|w| val(s, w, k)).collect::<Vec<_>>();
    let wa_increase: Vec<f64> = all
        .iter()
        .filter_map(|w| {
            let on = val("fusionraid", w, "write_amplification")?;
            let off = val(NOCONV, w, "write_amplification")?;
            (off > 0.0).then(|| on / off - 1.0)
        })
        .collect();
    let below_raidm: Vec<&String> = all
        .iter()
        .filter(|w| {
            matches!(
                (val("fusionraid", w, "write_amplification"), val("4-raidm", w, "write_amplification")),
                (Some(f), Some(m)) if f < m
            )
        })
        .collect();
    let src = FIG13_SOURCE;
    let comparisons = vec![
        Comparison::text(
            "P99 with / without conversion, main mix, mean over workloads",
            mean(&p99_cost),
            "overhead \"quite small\" (no number)",
            "x",
            src,
        ),
        Comparison::new(
            "write amplification added by conversion, mean over workloads",
            mean(&wa_increase),
            Some(FIG13_CONVERSION_WA_INCREASE),
            "%",
            src,
        ),
        Comparison::text(
            "workloads where FusionRAID writes less than 4-RAIDM",
            Some(below_raidm.len() as f64),
            "most; VD the exception",
            "n",
            src,
        ),
        Comparison::new(
            "space / user data, 4-RAID5",
            mean(&over("4-raid5", "space_over_user_data")),
            Some(FIG13_SPACE_RAID5),
            "x",
            src,
        ),
        Comparison::new(
            "space / user data, 4-RAIDM",
            mean(&over("4-raidm", "space_over_user_data")),
            Some(FIG13_SPACE_RAIDM),
            "x",
            src,
        ),
        Comparison::new(
            "space / user data, FusionRAID, conversion off",
            mean(&over(NOCONV, "space_over_user_data")),
            Some(FIG13_SPACE_NOCONV),
            "x",
            src,
        ),
        Comparison::new(
            "space / user data, FusionRAID, conversion on",
            mean(&over("fusionraid", "space_over_user_data")),
            Some(FIG13_SPACE_CONV),
            "x",
            src,
        ),
    ];
    let headline = vec![comparisons[1].clone(), comparisons[6].clone()];

    let table = |key: &str, caption: &str| Table {
        caption: caption.to_string(),
        header: std::iter::once("workload".to_string())
            .chain(b_series.iter().cloned())
            .collect(),
        rows: all
            .iter()
            .map(|w| {
                std::iter::once(w.clone())
                    .chain(
                        b_series
                            .iter()
                            .map(|s| val(s, w, key).map_or("-".into(), |v| format!("{v:.2}"))),
                    )
                    .collect()
            })
            .collect(),
    };
    let chart = |key: &str, file: &str, title: &str| Figure {
        file: file.to_string(),
        caption: title.to_string(),
        svg: bar_chart(&BarChart {
            title: title.to_string(),
            y_label: title.to_string(),
            unit: Unit::Plain,
            log: false,
            groups: all.clone(),
            series: b_series.clone(),
            values: all
                .iter()
                .map(|w| {
                    b_series
                        .iter()
                        .map(|s| val(s, w, key).map(super::super::plot::Bar::single))
                        .collect()
                })
                .collect(),
        }),
    };
    let mut tables = vec![comparison_table(
        "Conversion, write amplification and space",
        &comparisons,
    )];
    tables.extend(a.tables);
    tables.push(table(
        "write_amplification",
        "Fig. 13b: write amplification (device bytes written / user bytes written), each workload alone",
    ));
    tables.push(table(
        "space_over_user_data",
        "Fig. 13c: space consumed / user data written, each workload alone",
    ));
    tables.push(table(
        "conversion_backlog_sets",
        "Replica sets still waiting for conversion at the end of the run",
    ));
    let mut figures = a.figures;
    figures.push(chart(
        "write_amplification",
        "fig13b_wa.svg",
        "Fig. 13b: write amplification",
    ));
    figures.push(chart(
        "space_over_user_data",
        "fig13c_space.svg",
        "Fig. 13c: space / user data",
    ));

    ExperimentOutput {
        id: ExpId::Fig13,
        json: ExperimentJson {
            experiment: ExpId::Fig13.name(),
            title: "Conversion: latency, write amplification, space (paper Fig. 13a-c)".into(),
            blocks: vec![
                a.block,
                Block {
                    name: "fig13bc".into(),
                    series: b_series,
                    workloads: all,
                    cells,
                },
            ],
            comparisons,
            runs: Vec::new(),
            failed: Vec::new(),
            size: None,
        },
        section: Section {
            title:
                "3. In-position conversion: latency, write amplification, space (paper Fig. 13a-c)"
                    .into(),
            paragraphs: vec![
                format!(
                    "(a) FusionRAID on the main mix with background conversion on (the default: \
                     paused while a member serves more than 40 MB/s of foreground traffic) and \
                     off, {} seed(s) of {}.",
                    plan.size.replicates,
                    super::dur(plan.size.main_ms)
                ),
                format!(
                    "(b, c) {} each alone for {} on aged members, without prefill, so that \
                     write amplification and space count only what the run wrote (reads of \
                     unwritten blocks cost no device I/O here, so these runs' latencies are \
                     not used). After the last reply the engine keeps running on its own \
                     timers, with no load, for up to {} or until no conversion is left or \
                     pending: the paper's space \"with conversion fully performed\". Write \
                     amplification is device bytes written by the scheme (foreground and \
                     background, conversion included) over user bytes; the SSDs' own GC is in \
                     the JSON as flash_write_amplification. Space is the physical space \
                     holding the volume's data (stripes with parity and holes, replica slots) \
                     over the user data mapped at the end. For the in-place schemes the whole \
                     volume counts as mapped, so their ratio is the stripe geometry. The \
                     last table shows the replica sets left unconverted at the end.",
                    if plan.size.wa_workloads.len() == 8 {
                        "The 8 Table-4 workloads".to_string()
                    } else {
                        plan.size
                            .wa_workloads
                            .iter()
                            .map(|w| w.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    },
                    super::dur(plan.size.alone_ms),
                    super::dur(plan.size.settle_ms)
                ),
            ],
            tables,
            figures,
        },
        headline,
    }
}
