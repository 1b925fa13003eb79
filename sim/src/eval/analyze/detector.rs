//! Table 6 (Fusion-ND -> FusionRAID: slowest 1%, redirected writes, spikes) and Fig. 13d
//! (the detector's x̂ x t sweep).

use super::super::experiments::{ExpId, MAIN_MIX, Plan, SWEEP_MIX};
use super::super::paper::{
    FIG13D_SOURCE, TABLE6_REDIRECTED_WRITES, TABLE6_SLOWEST1_FACTOR, TABLE6_SOURCE,
    TABLE6_SPIKE_MS, TABLE6_SPIKES_PER_SSD_MIN,
};
use super::super::result::RunResult;
use super::super::svg::fmt_us;
use super::{
    Agg, Cell, Comparison, ExperimentJson, ExperimentOutput, Results, Section, Table, agg_text,
    cdf_figures, comparison_table, latency_block, names,
};

const ND: &str = "fusion-nd (no redirection)";

/// Run-level figures as cell extras.
pub(super) fn run_extras(rs: &[&RunResult]) -> Vec<(&'static str, Option<Agg>)> {
    let f = |g: fn(&RunResult) -> f64| Agg::of(rs.iter().map(|r| g(r)));
    vec![
        (
            "spikes_per_ssd_minute",
            f(|r| r.report.spikes.per_device_minute),
        ),
        ("mean_spike_ms", f(|r| r.report.spikes.mean_ms)),
        (
            "unresponsive_share",
            f(|r| r.report.spikes.unresponsive_share),
        ),
        (
            "redirected_write_share",
            f(|r| r.report.redirection.write_share),
        ),
        (
            "redirected_read_share",
            f(|r| r.report.redirection.read_share),
        ),
    ]
}

fn mean_of(rs: &[&RunResult], g: fn(&RunResult) -> f64) -> Option<f64> {
    Agg::of(rs.iter().map(|r| g(r))).map(|a| a.mean)
}

/// Table 6's comparisons with the paper and its slowest-1% table, from cells with the
/// series `fusion-nd` and `fusionraid` over `workloads` and those systems' runs. The
/// `consumer` experiment uses it with consumer members.
pub(super) fn table6_comparisons(
    caption: &str,
    cells: &[Cell],
    workloads: &[String],
    nd: &[&RunResult],
    fr: &[&RunResult],
) -> (Vec<Comparison>, Table) {
    let slow = |s: &str, w: &str| {
        cells
            .iter()
            .find(|c| c.series == s && c.workload == w)
            .and_then(|c| c.slowest1_mean_us)
            .map(|a| a.mean)
    };
    let factors: Vec<(String, Option<f64>, Option<f64>)> = workloads
        .iter()
        .map(|w| (w.clone(), slow("fusion-nd", w), slow("fusionraid", w)))
        .collect();
    let fac: Vec<f64> = factors
        .iter()
        .filter_map(|(_, a, b)| Some(a.as_ref()? / b.filter(|x| *x > 0.0)?))
        .collect();
    let s6 = TABLE6_SOURCE;
    let comparisons = vec![
        Comparison::new(
            "slowest-1% mean, Fusion-ND / FusionRAID, smallest",
            fac.iter().copied().reduce(f64::min),
            Some(TABLE6_SLOWEST1_FACTOR.0),
            "x",
            s6,
        ),
        Comparison::new(
            "slowest-1% mean, Fusion-ND / FusionRAID, largest",
            fac.iter().copied().reduce(f64::max),
            Some(TABLE6_SLOWEST1_FACTOR.1),
            "x",
            s6,
        ),
        Comparison::new(
            "share of writes redirected (FusionRAID)",
            mean_of(fr, |r| r.report.redirection.write_share),
            Some(TABLE6_REDIRECTED_WRITES),
            "%",
            s6,
        ),
        Comparison::new(
            "spikes per SSD-minute (Fusion-ND, detection on)",
            mean_of(nd, |r| r.report.spikes.per_device_minute),
            Some(TABLE6_SPIKES_PER_SSD_MIN),
            "",
            s6,
        ),
        Comparison::new(
            "mean spike duration (Fusion-ND)",
            mean_of(nd, |r| r.report.spikes.mean_ms * 1e3),
            Some(TABLE6_SPIKE_MS * 1e3),
            "us",
            s6,
        ),
        Comparison::text(
            "share of member-time unresponsive (Fusion-ND)",
            mean_of(nd, |r| r.report.spikes.unresponsive_share),
            "not stated",
            "%",
            s6,
        ),
    ];
    let table = Table {
        caption: caption.to_string(),
        header: names(&[
            "workload",
            "Fusion-ND",
            "FusionRAID",
            "Fusion-ND / FusionRAID",
        ]),
        rows: factors
            .iter()
            .map(|(w, a, b)| {
                vec![
                    w.clone(),
                    a.map_or("-".into(), fmt_us),
                    b.map_or("-".into(), fmt_us),
                    match (a, b) {
                        (Some(a), Some(b)) if *b > 0.0 => format!("{:.2}x", a / b),
                        _ => "-".into(),
                    },
                ]
            })
            .collect(),
    };
    (comparisons, table)
}

pub fn analyze(plan: &Plan, res: &Results) -> ExperimentOutput {
    let reps = 0..plan.size.replicates;
    let main_runs = |s: &str| -> Vec<&RunResult> {
        reps.clone()
            .filter_map(|r| res.get(&plan.main_run(s, r)))
            .collect()
    };
    let nd = main_runs("fusion-nd");
    let fr = main_runs("fusionraid");

    // Table 6, on the main mix.
    let t6_series = names(&["fusion-nd", "fusionraid"]);
    let main: Vec<String> = MAIN_MIX.iter().map(|w| w.name().to_string()).collect();
    let mut t6 = latency_block("table6", "Table 6", &t6_series, &main, |s, w| {
        main_runs(s)
            .into_iter()
            .filter_map(|r| r.workload(w))
            .collect()
    });
    for c in &mut t6.block.cells {
        let rs = if c.series == "fusion-nd" { &nd } else { &fr };
        for (k, v) in run_extras(rs) {
            if let Some(v) = v {
                c.extra.insert(k.to_string(), v);
            }
        }
    }
    let (comparisons, t6_table) = table6_comparisons(
        "Table 6: mean latency of the slowest 1% of requests",
        &t6.block.cells,
        &main,
        &nd,
        &fr,
    );
    let headline = comparisons.clone();

    // Fig. 13d: the sweep, on the sweep mix.
    let grid = plan.sweep_grid();
    let mut sw_series = vec![ND.to_string()];
    sw_series.extend(grid.iter().map(|d| d.label()));
    let sweep_run = |s: &str| -> Option<&RunResult> {
        if s == ND {
            return res.get(&plan.sweep_run(None, "fusion-nd"));
        }
        let d = grid.iter().find(|d| d.label() == s)?;
        res.get(&plan.sweep_point(*d))
    };
    let sw_work: Vec<String> = SWEEP_MIX.iter().map(|w| w.name().to_string()).collect();
    let mut sw = latency_block("fig13d", "Fig. 13d sweep", &sw_series, &sw_work, |s, w| {
        sweep_run(s)
            .and_then(|r| r.workload(w))
            .into_iter()
            .collect()
    });
    for c in &mut sw.block.cells {
        let rs: Vec<&RunResult> = sweep_run(&c.series).into_iter().collect();
        for (k, v) in run_extras(&rs) {
            if let Some(v) = v {
                c.extra.insert(k.to_string(), v);
            }
        }
    }
    let ex = |s: &str| {
        sw.block
            .cells
            .iter()
            .find(|c| c.series == s && c.workload == "exchange")
    };
    let pct = |c: Option<&super::Cell>, k: &str| {
        c.and_then(|c| c.extra.get(k))
            .map_or("-".into(), |a| format!("{:.2}%", a.mean * 100.0))
    };
    let num = |c: Option<&super::Cell>, k: &str| {
        c.and_then(|c| c.extra.get(k))
            .map_or("-".into(), |a| format!("{:.2}", a.mean))
    };
    let sweep_table = Table {
        caption: "Fig. 13d: Exchange latency and detector activity per setting (y = 10, x̌ = 0)"
            .into(),
        header: names(&[
            "setting",
            "Exchange P50",
            "P99",
            "P99.9",
            "slowest 1%",
            "spikes / SSD-min",
            "mean spike ms",
            "member-time unresponsive",
            "writes redirected",
        ]),
        rows: sw_series
            .iter()
            .map(|s| {
                let c = ex(s);
                vec![
                    s.clone(),
                    agg_text(c.and_then(|c| c.p50_us)),
                    agg_text(c.and_then(|c| c.p99_us)),
                    agg_text(c.and_then(|c| c.p999_us)),
                    agg_text(c.and_then(|c| c.slowest1_mean_us)),
                    num(c, "spikes_per_ssd_minute"),
                    num(c, "mean_spike_ms"),
                    pct(c, "unresponsive_share"),
                    pct(c, "redirected_write_share"),
                ]
            })
            .collect(),
    };
    let curves: Vec<(String, &super::super::result::LatencyFigures)> = sw_series
        .iter()
        .filter_map(|s| Some((s.clone(), sweep_run(s)?.workload("exchange")?)))
        .collect();
    let mut figures = t6.figures;
    figures.extend(sw.figures);
    figures.extend(cdf_figures(
        "fig13d_exchange",
        "Fig. 13d: Exchange",
        &curves,
    ));
    let mut tables = vec![
        comparison_table(
            "Table 6: Fusion-ND -> FusionRAID on the main mix",
            &comparisons,
        ),
        t6_table,
        sweep_table,
    ];
    tables.extend(t6.tables);
    tables.extend(sw.tables);
    ExperimentOutput {
        id: ExpId::Detector,
        json: ExperimentJson {
            experiment: ExpId::Detector.name(),
            title: "Spike detection and redirection (paper Table 6, Fig. 13d)".into(),
            blocks: vec![t6.block, sw.block],
            comparisons,
            runs: Vec::new(),
            failed: Vec::new(),
            size: None,
        },
        section: Section {
            title: "4. Spike detection and redirection (paper Table 6 and Fig. 13d)".into(),
            paragraphs: vec![
                format!(
                    "Table 6 compares Fusion-ND (detector on, redirection off) with FusionRAID on \
                     the main mix ({} seed(s) of {}); spikes are the detector's \
                     unresponsive periods as seen on Fusion-ND, where redirection cannot change \
                     the load the members see.",
                    plan.size.replicates,
                    super::dur(plan.size.main_ms)
                ),
                format!(
                    "The sweep varies x̂ (stragglers that mark a member unresponsive) and t = \
                     y x slot (how old a request must be to count as a straggler), y = 10 and \
                     x̌ = 0 fixed as in the paper, on a mix with Exchange in TensorFlow's place \
                     (Fig. 13d plots Exchange): TPC-C, YCSB-A, VD, Exchange; {}, one seed. \
                     The engine's default for datacenter SSDs is x̂ = 2, t = 5 ms. The paper \
                     gives no numbers for this figure ({FIG13D_SOURCE}).",
                    super::dur(plan.size.main_ms)
                ),
            ],
            tables,
            figures,
        },
        headline,
    }
}
