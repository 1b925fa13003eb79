//! Not a paper figure: fail-slow members (issue 23). Every scheme on the main mix with no,
//! one and two fail-slow members; a case is a column of the block (its "workload" field
//! names the case), latencies are over every request of the run. The field studies' rates
//! say how rare the state is; the tables say what each scheme does in it.

use super::super::experiments::{ExpId, Plan};
use super::super::failslow::{Case, FAILSLOW_SCHEMES, Figures};
use super::super::paper::{
    PERSEUS_FAILSLOW_DRIVES, PERSEUS_SOURCE, TAIL_AT_STORE_FACTOR, TAIL_AT_STORE_GROUP_TIME,
    TAIL_AT_STORE_SLOW_TIME, TAIL_AT_STORE_SOURCE,
};
use super::super::plot::{BarChart, Unit, bar_chart};
use super::super::result::RunResult;
use super::super::svg::fmt_us;
use super::detector::run_extras;
use super::{
    Agg, Block, Cell, Comparison, ExperimentJson, ExperimentOutput, Figure, Results, Section,
    Table, comparison_table, fmt_value,
};

const NA: &str = "n/a (not in the paper)";

/// The runs of `scheme` in `case` that completed, one per seed.
fn runs<'a>(plan: &Plan, res: &Results<'a>, scheme: &str, case: Case) -> Vec<&'a RunResult> {
    (0..plan.size.failslow.seeds)
        .filter_map(|rep| res.get(&plan.failslow_run(scheme, case, rep)))
        .collect()
}

fn cell(plan: &Plan, res: &Results, scheme: &str, case: Case) -> Cell {
    let rs = runs(plan, res, scheme, case);
    let figs: Vec<_> = rs.iter().map(|r| &r.all).collect();
    let mut c = Cell::latency(scheme, case.label(), &figs);
    let worst = Agg::of(rs.iter().map(|r| Figures::of(r).worst_workload_p99_us));
    if let Some(w) = worst {
        c.extra.insert("worst_workload_p99_us".into(), w);
    }
    for (name, v) in run_extras(&rs) {
        if let Some(v) = v {
            c.extra.insert(name.to_string(), v);
        }
    }
    c
}

fn find<'c>(cells: &'c [Cell], scheme: &str, case: Case) -> Option<&'c Cell> {
    cells
        .iter()
        .find(|c| c.series == scheme && c.workload == case.label())
}

/// Mean over seeds of one figure of `scheme` in `case`.
fn mean(cells: &[Cell], scheme: &str, case: Case, pick: fn(&Cell) -> Option<Agg>) -> Option<f64> {
    find(cells, scheme, case).and_then(pick).map(|a| a.mean)
}

fn p99(c: &Cell) -> Option<Agg> {
    c.p99_us
}

fn p999(c: &Cell) -> Option<Agg> {
    c.p999_us
}

/// One row per scheme and case, as `scripts/fail-slow-study.sh` printed them.
fn main_table(plan: &Plan, cells: &[Cell]) -> Table {
    let us = |v: Option<f64>| v.map_or("-".into(), fmt_us);
    let mut rows = Vec::new();
    for s in FAILSLOW_SCHEMES {
        for case in Case::ALL {
            let Some(c) = find(cells, s, case).filter(|c| c.runs > 0) else {
                rows.push(vec![s.to_string(), case.label().into(), "(failed)".into()]);
                continue;
            };
            let extra = |k: &str| c.extra.get(k).map(|a| a.mean);
            rows.push(vec![
                s.to_string(),
                case.label().into(),
                us(c.p50_us.map(|a| a.mean)),
                us(c.p99_us.map(|a| a.mean)),
                us(c.p999_us.map(|a| a.mean)),
                us(extra("worst_workload_p99_us")),
                extra("spikes_per_ssd_minute").map_or("-".into(), |v| format!("{v:.1}")),
            ]);
        }
    }
    Table {
        caption: format!(
            "Every request of the four workloads after the warm-up, means over {} seed(s); \
             worst workload P99 is the highest of the four; spikes are the detector's \
             unresponsive periods per SSD-minute",
            plan.size.failslow.seeds
        ),
        header: [
            "scheme",
            "fail-slow",
            "P50",
            "P99",
            "P99.9",
            "worst workload P99",
            "spikes/SSD-min",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// Per scheme: P99 with slow members over its own healthy P99, and over FusionRAID's in
/// each case.
fn factor_table(cells: &[Cell]) -> Table {
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".into(),
    };
    let rows = FAILSLOW_SCHEMES
        .iter()
        .map(|&s| {
            let [none, one, two] = Case::ALL.map(|c| mean(cells, s, c, p99));
            let mut row = vec![s.to_string(), ratio(one, none), ratio(two, none)];
            row.extend(
                Case::ALL.map(|c| ratio(mean(cells, s, c, p99), mean(cells, "fusionraid", c, p99))),
            );
            row
        })
        .collect();
    Table {
        caption: "P99 with fail-slow members over the same scheme's healthy P99, and each \
                  scheme's P99 over FusionRAID's in the same case (above 1: FusionRAID's tail \
                  is lower)"
            .into(),
        header: [
            "scheme",
            "one / none",
            "two / none",
            "/ fusionraid, none",
            "/ fusionraid, one",
            "/ fusionraid, two",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// FusionRAID against Fusion-ND (what redirection buys) and RAID50 (fixed parity groups)
/// with one and two slow members, P99 and P99.9; then the fleet rates next to the state the
/// runs set.
fn comparisons(plan: &Plan, cells: &[Cell]) -> (Vec<Comparison>, Vec<Comparison>) {
    let mut ratios = Vec::new();
    for other in ["fusion-nd", "raid50"] {
        for case in [Case::One, Case::Two] {
            for (name, pick) in [("P99", p99 as fn(&Cell) -> Option<Agg>), ("P99.9", p999)] {
                let v = match (
                    mean(cells, other, case, pick),
                    mean(cells, "fusionraid", case, pick),
                ) {
                    (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                    _ => None,
                };
                let what = format!("{name} {other} / FusionRAID, fail-slow {}", case.label());
                ratios.push(Comparison::text(&what, v, NA, "x", "-"));
            }
        }
    }
    let s = &plan.size.failslow;
    let (members, pool_one) = pool_odds(plan);
    let context = vec![
        Comparison::text(
            &format!(
                "member-time slow, a fail-slow member of the runs ({}x)",
                s.spec.factor
            ),
            Some(s.spec.slow_share()),
            &format!(
                "{} of an SSD's time more than {}x slower than its group's peers",
                fmt_value(TAIL_AT_STORE_SLOW_TIME, "%"),
                TAIL_AT_STORE_FACTOR
            ),
            "%",
            TAIL_AT_STORE_SOURCE,
        ),
        Comparison::text(
            &format!("chance the {members}-member pool holds a fail-slow member (runs with one)"),
            Some(1.0),
            &format!(
                "{} ({} of drives fail-slow)",
                fmt_value(pool_one, "%"),
                fmt_value(PERSEUS_FAILSLOW_DRIVES, "%")
            ),
            "%",
            PERSEUS_SOURCE,
        ),
    ];
    (ratios, context)
}

/// P99 per scheme, one bar per case (log scale; whiskers the seeds' min and max).
fn chart(plan: &Plan, cells: &[Cell]) -> Figure {
    let title = "Fail-slow members: P99 over every request".to_string();
    let values = FAILSLOW_SCHEMES
        .iter()
        .map(|&s| {
            Case::ALL
                .iter()
                .map(|&c| find(cells, s, c).and_then(p99).map(Agg::bar))
                .collect()
        })
        .collect();
    Figure {
        file: "failslow_p99.svg".into(),
        caption: format!(
            "{title} per scheme with no, one and two members {} (means over {} seed(s), \
             whiskers min and max)",
            plan.size.failslow.spec, plan.size.failslow.seeds
        ),
        svg: bar_chart(&BarChart {
            title,
            y_label: "P99 (log scale)".into(),
            unit: Unit::Micros,
            log: true,
            groups: FAILSLOW_SCHEMES.iter().map(|s| s.to_string()).collect(),
            series: Case::ALL
                .iter()
                .map(|c| format!("fail-slow: {}", c.label()))
                .collect(),
            values,
        }),
    }
}

pub fn analyze(plan: &Plan, res: &Results) -> ExperimentOutput {
    let cells: Vec<Cell> = FAILSLOW_SCHEMES
        .iter()
        .flat_map(|&s| Case::ALL.map(|c| cell(plan, res, s, c)))
        .collect();
    let (ratios, context) = comparisons(plan, &cells);
    // FusionRAID's P99 against Fusion-ND's and RAID50's in both cases.
    let headline = ratios
        .iter()
        .filter(|c| c.what.starts_with("P99 "))
        .cloned()
        .collect();
    let mut comps = ratios.clone();
    comps.extend(context.iter().cloned());
    let tables = vec![
        main_table(plan, &cells),
        factor_table(&cells),
        comparison_table(
            "FusionRAID against Fusion-ND and RAID50 with fail-slow members",
            &ratios,
        ),
        comparison_table(
            "The runs' fail-slow state against the field studies' rates",
            &context,
        ),
    ];
    let block = Block {
        name: "failslow".into(),
        series: FAILSLOW_SCHEMES.iter().map(|s| s.to_string()).collect(),
        workloads: Case::ALL.iter().map(|c| c.label().to_string()).collect(),
        cells: cells.clone(),
    };
    ExperimentOutput {
        id: ExpId::FailSlow,
        json: ExperimentJson {
            experiment: ExpId::FailSlow.name(),
            title: "Fail-slow members".into(),
            blocks: vec![block],
            comparisons: comps,
            runs: Vec::new(),
            failed: Vec::new(),
            size: None,
        },
        section: Section {
            title: "12. Fail-slow members (not a paper figure)".into(),
            paragraphs: vec![intro(plan), fleet(plan)],
            tables,
            figures: vec![chart(plan, &cells)],
        },
        headline,
    }
}

fn intro(plan: &Plan) -> String {
    let s = &plan.size.failslow;
    format!(
        "Every scheme on the main mix (TPC-C, YCSB-A, TensorFlow, VD) on the aged `dc` pool, \
         {} of virtual time of which the first {} is warm-up, {} seed(s), in three cases \
         sharing the seed, the arrivals and the device models: no fail-slow member; disk 3 \
         fail-slow; disks 3 and 10 (in two different 7-member groups of the grouped \
         baselines). A fail-slow member runs `{}`: {}x slower in periodic episodes, every \
         service time and stall of a request submitted in one that much longer (the `sim \
         --fail-slow` option). Each run is what `fusionraid sim --scheme S --duration {} \
         --warmup {} --seed N [--fail-slow 3=SPEC | 3+10=SPEC] --json` gives.",
        super::dur(s.duration_ms),
        super::dur(s.warmup_ms),
        s.seeds,
        s.spec,
        s.spec.factor,
        super::dur(s.duration_ms).replace(' ', ""),
        super::dur(s.warmup_ms).replace(' ', ""),
    )
}

/// The pool's member count, and the chance that at least one of them is fail-slow at
/// Perseus's per-drive rate.
fn pool_odds(plan: &Plan) -> (usize, f64) {
    let members = plan
        .failslow_run("fusionraid", Case::One, 0)
        .scenario()
        .pool
        .disks;
    let one = 1.0 - (1.0 - PERSEUS_FAILSLOW_DRIVES).powi(members as i32);
    (members, one)
}

fn fleet(plan: &Plan) -> String {
    let (members, one) = pool_odds(plan);
    let p = PERSEUS_FAILSLOW_DRIVES;
    let two = (members * (members - 1) / 2) as f64 * p * p;
    format!(
        "How rare the state is: Tail at Store finds an SSD more than {}x slower than its RAID \
         group's peers {} of the time, and a group with such a drive {} of the time; Perseus \
         finds {} of drives fail-slow, so a {members}-member pool holds one with a chance of \
         about {} and two of about {}. The runs set the state (one or two members slow {} of \
         the run, far denser than the field's episodes), so the tables say what each scheme \
         does given a fail-slow member, not how often it pays for it.",
        TAIL_AT_STORE_FACTOR,
        fmt_value(TAIL_AT_STORE_SLOW_TIME, "%"),
        fmt_value(TAIL_AT_STORE_GROUP_TIME, "%"),
        fmt_value(p, "%"),
        fmt_value(one, "%"),
        fmt_value(two, "%"),
        fmt_value(plan.size.failslow.spec.slow_share(), "%"),
    )
}
