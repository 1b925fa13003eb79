//! Fig. 12: the techniques added one at a time, on the main mix.

use super::super::experiments::{ExpId, FIG12_SCHEMES, MAIN_MIX, Plan};
use super::super::paper::{
    FIG12_RAIDM_MEDIAN_REDUCTION, FIG12_RAIDM_P99_FACTOR, FIG12_RAIDM_TPCC_P99_US, FIG12_SOURCE,
};
use super::super::spec::RunSpec;
use super::{
    Cell, Comparison, ExperimentJson, ExperimentOutput, LatencyBlock, Results, Section,
    comparison_table, latency_block, names,
};

/// Per workload: (1 - a/b) of the medians and b/a of the P99s, from the cell means.
fn ratios(cells: &[Cell], a: &str, b: &str) -> (Vec<f64>, Vec<f64>) {
    let (mut red, mut fac) = (Vec::new(), Vec::new());
    for ca in cells.iter().filter(|c| c.series == a) {
        let Some(cb) = cells
            .iter()
            .find(|c| c.series == b && c.workload == ca.workload)
        else {
            continue;
        };
        if let (Some(x), Some(y)) = (ca.p50_us, cb.p50_us)
            && y.mean > 0.0
        {
            red.push(1.0 - x.mean / y.mean);
        }
        if let (Some(x), Some(y)) = (ca.p99_us, cb.p99_us)
            && x.mean > 0.0
        {
            fac.push(y.mean / x.mean);
        }
    }
    (red, fac)
}

fn min(v: &[f64]) -> Option<f64> {
    v.iter().copied().reduce(f64::min)
}

fn max(v: &[f64]) -> Option<f64> {
    v.iter().copied().reduce(f64::max)
}

/// Fig. 12's five systems on the main mix, `run(scheme, replicate)` giving each run: the
/// latency cells, the median and P99 tables and charts (`<file_prefix>_median.svg`, ...).
/// The `consumer` experiment uses it with consumer members.
pub(super) fn fig12_block(
    plan: &Plan,
    res: &Results,
    file_prefix: &str,
    title: &str,
    run: impl Fn(&str, usize) -> RunSpec,
) -> LatencyBlock {
    let series = names(&FIG12_SCHEMES);
    let workloads: Vec<String> = MAIN_MIX.iter().map(|w| w.name().to_string()).collect();
    latency_block(file_prefix, title, &series, &workloads, |s, w| {
        (0..plan.size.replicates)
            .filter_map(|r| res.get(&run(s, r)))
            .filter_map(|r| r.workload(w))
            .collect()
    })
}

/// Fig. 12's comparisons with the paper's text, from the cells of [`fig12_block`].
pub(super) fn fig12_comparisons(cells: &[Cell]) -> Vec<Comparison> {
    let (red, fac) = ratios(cells, "4-raidm", "4-raid5");
    let tpcc = cells
        .iter()
        .find(|c| c.series == "4-raidm" && c.workload == "tpcc")
        .and_then(|c| c.p99_us)
        .map(|a| a.mean);
    let (fr, ff) = ratios(cells, "fusionraid", "4-raid5");
    let s = FIG12_SOURCE;
    vec![
        Comparison::new(
            "4-RAIDM median reduction vs 4-RAID5, smallest",
            min(&red),
            Some(FIG12_RAIDM_MEDIAN_REDUCTION.0),
            "%",
            s,
        ),
        Comparison::new(
            "4-RAIDM median reduction vs 4-RAID5, largest",
            max(&red),
            Some(FIG12_RAIDM_MEDIAN_REDUCTION.1),
            "%",
            s,
        ),
        Comparison::new(
            "P99 4-RAID5 / 4-RAIDM, smallest",
            min(&fac),
            Some(FIG12_RAIDM_P99_FACTOR.0),
            "x",
            s,
        ),
        Comparison::new(
            "P99 4-RAID5 / 4-RAIDM, largest",
            max(&fac),
            Some(FIG12_RAIDM_P99_FACTOR.1),
            "x",
            s,
        ),
        Comparison::new(
            "4-RAIDM P99 under TPC-C",
            tpcc,
            Some(FIG12_RAIDM_TPCC_P99_US),
            "us",
            s,
        ),
        Comparison::text(
            "P99 4-RAID5 / FusionRAID, smallest over workloads",
            min(&ff),
            "no number (figure only)",
            "x",
            s,
        ),
        Comparison::text(
            "median reduction FusionRAID vs 4-RAID5, mean over workloads",
            (!fr.is_empty()).then(|| fr.iter().sum::<f64>() / fr.len() as f64),
            "no number (figure only)",
            "%",
            s,
        ),
    ]
}

pub fn analyze(plan: &Plan, res: &Results) -> ExperimentOutput {
    let block = fig12_block(plan, res, "fig12", "Fig. 12", |s, r| plan.main_run(s, r));
    let comparisons = fig12_comparisons(&block.block.cells);
    let headline = comparisons[2..5].to_vec();
    let mut tables = vec![comparison_table(
        "Replicated writes alone (4-RAID5 -> 4-RAIDM), per workload of the main mix",
        &comparisons,
    )];
    tables.extend(block.tables);
    ExperimentOutput {
        id: ExpId::Fig12,
        json: ExperimentJson {
            experiment: ExpId::Fig12.name(),
            title: "Incremental impact of the techniques (paper Fig. 12)".into(),
            blocks: vec![block.block],
            comparisons,
            runs: Vec::new(),
            failed: Vec::new(),
            size: None,
        },
        section: Section {
            title: "2. Incremental impact: 4-RAID5 -> RAID50 -> 4-RAIDM -> Fusion-ND -> FusionRAID (paper Fig. 12)".into(),
            paragraphs: vec![format!(
                "The main mix of paper §5.3 (TPC-C, YCSB-A, TensorFlow, VirtualDesktop) on aged \
                 members, {} seed(s), {} of virtual time each. RAID50 shares the whole pool, \
                 4-RAIDM replaces parity writes by mirrored log writes in 4 separate groups, \
                 Fusion-ND adds the shared declustered pool and two-phase writes without \
                 redirection, FusionRAID adds spike detection and redirection.",
                plan.size.replicates,
                super::dur(plan.size.main_ms)
            )],
            tables,
            figures: block.figures,
        },
        headline,
    }
}
