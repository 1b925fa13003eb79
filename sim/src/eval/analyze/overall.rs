//! Fig. 10: the five systems over random 4-workload mixes.

use super::super::experiments::{FIG10_SCHEMES, Plan};
use super::super::paper::{FIG10, FIG10_SOURCE};
use super::{
    Cell, Comparison, ExperimentJson, ExperimentOutput, Results, Section, Table, comparison_table,
    latency_block, names,
};
use crate::eval::experiments::ExpId;
use crate::workload::Workload;

/// FusionRAID against `base` over the workloads both have: (mean, max) of the median
/// reduction 1 - fus/base and of the P99 factor base/fus, from the cells' means.
pub fn versus(cells: &[Cell], base: &str, fus: &str) -> Option<((f64, f64), (f64, f64))> {
    let (red, fac) = per_workload(cells, base, fus);
    if red.is_empty() || fac.is_empty() {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some(((mean(&red), max(&red)), (mean(&fac), max(&fac))))
}

/// Geometric mean over workloads of the median ratio base / FusionRAID: unlike the mean
/// reduction it is not dominated by one workload where FusionRAID is far slower.
pub fn median_factor_geomean(cells: &[Cell], base: &str, fus: &str) -> Option<f64> {
    let (red, _) = per_workload(cells, base, fus);
    let logs: Vec<f64> = red
        .iter()
        .filter(|r| **r < 1.0)
        .map(|r| (1.0 / (1.0 - r)).ln())
        .collect();
    (!logs.is_empty() && logs.len() == red.len())
        .then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// Per workload: median reductions 1 - fus/base and P99 factors base/fus.
fn per_workload(cells: &[Cell], base: &str, fus: &str) -> (Vec<f64>, Vec<f64>) {
    let mut red = Vec::new();
    let mut fac = Vec::new();
    for c in cells.iter().filter(|c| c.series == fus) {
        let Some(b) = cells
            .iter()
            .find(|b| b.series == base && b.workload == c.workload)
        else {
            continue;
        };
        if let (Some(f), Some(bb)) = (c.p50_us, b.p50_us)
            && bb.mean > 0.0
        {
            red.push(1.0 - f.mean / bb.mean);
        }
        if let (Some(f), Some(bb)) = (c.p99_us, b.p99_us)
            && f.mean > 0.0
        {
            fac.push(bb.mean / f.mean);
        }
    }
    (red, fac)
}

pub fn analyze(plan: &Plan, res: &Results) -> ExperimentOutput {
    let series = names(&FIG10_SCHEMES);
    let workloads: Vec<String> = Workload::ALL.iter().map(|w| w.name().to_string()).collect();
    let block = latency_block("fig10", "Fig. 10", &series, &workloads, |s, w| {
        (0..plan.mixes.len())
            .filter(|&i| plan.mixes[i].iter().any(|x| x.name() == w))
            .filter_map(|i| res.get(&plan.fig10_run(s, i)))
            .filter_map(|r| r.workload(w))
            .collect()
    });
    let mut comparisons = Vec::new();
    let mut headline = Vec::new();
    for claim in FIG10 {
        let v = versus(&block.block.cells, claim.baseline, "fusionraid");
        let b = claim.baseline;
        let rows = [
            (
                format!("median reduction vs {b}, mean over workloads"),
                v.map(|x| x.0.0),
                claim.median_reduction_avg,
                "%",
                true,
            ),
            (
                format!("median reduction vs {b}, largest"),
                v.map(|x| x.0.1),
                claim.median_reduction_max,
                "%",
                false,
            ),
            (
                format!("P99 {b} / FusionRAID, mean over workloads"),
                v.map(|x| x.1.0),
                claim.p99_factor_avg,
                "x",
                true,
            ),
            (
                format!("P99 {b} / FusionRAID, largest"),
                v.map(|x| x.1.1),
                claim.p99_factor_max,
                "x",
                false,
            ),
        ];
        for (what, ours, paper, unit, head) in rows {
            let c = Comparison::new(&what, ours, Some(paper), unit, FIG10_SOURCE);
            if head {
                headline.push(c.clone());
            }
            comparisons.push(c);
        }
        let geo = Comparison::text(
            &format!("median {b} / FusionRAID, geometric mean over workloads"),
            median_factor_geomean(&block.block.cells, b, "fusionraid"),
            "not stated (the paper averages reductions)",
            "x",
            FIG10_SOURCE,
        );
        headline.push(geo.clone());
        comparisons.push(geo);
    }
    let mixes = Table {
        caption: "The mixes (seed = base seed + mix number)".into(),
        header: names(&["mix", "workloads", "seed"]),
        rows: plan
            .mixes
            .iter()
            .enumerate()
            .map(|(i, m)| {
                vec![
                    i.to_string(),
                    m.iter().map(|w| w.name()).collect::<Vec<_>>().join(", "),
                    plan.seed.wrapping_add(i as u64).to_string(),
                ]
            })
            .collect(),
    };
    let mut tables = vec![comparison_table(
        "FusionRAID against each baseline (reductions and factors computed per workload from the bar means, then averaged over the 8 workloads)",
        &comparisons,
    )];
    tables.extend(block.tables);
    tables.push(mixes);
    let per = plan.mixes.len() / 2;
    ExperimentOutput {
        id: ExpId::Fig10,
        json: ExperimentJson {
            experiment: ExpId::Fig10.name(),
            title: "Overall comparison over random 4-workload mixes (paper Fig. 10)".into(),
            blocks: vec![block.block],
            comparisons,
            runs: Vec::new(),
            failed: Vec::new(),
            size: None,
        },
        section: Section {
            title: "1. Overall comparison over random 4-workload mixes (paper Fig. 10)".into(),
            paragraphs: vec![format!(
                "{} mixes of 4 of the 8 Table-4 workloads, each run on 4-RAID5, RAID50, LogRAID, \
                 ToleRAID and FusionRAID with the same seed (same arrivals, same device models) for \
                 {} of virtual time, the first 10% left out of the statistics. Mixes come in \
                 complementary pairs, so each workload runs in {per} mixes (the paper's random \
                 draw: 9-13 executions). Bars are the mean over a workload's executions, whiskers \
                 its min and max, as in the paper's figure; both charts use a log scale because \
                 our values span several decades.",
                plan.mixes.len(),
                super::dur(plan.size.mix_ms)
            )],
            tables,
            figures: block.figures,
        },
        headline,
    }
}
