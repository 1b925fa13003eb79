//! The real TPC-C trace excerpt: alone, and looped as one tenant of the main mix.

use super::super::experiments::{ExpId, Plan, TRACE_TENANTS};
use super::super::paper::TABLE4_SOURCE;
use super::super::result::LatencyFigures;
use super::{
    Comparison, ExperimentJson, ExperimentOutput, Results, Section, cdf_figures, comparison_table,
    latency_block, names,
};
use crate::trace::{TraceFormat, TraceStats, open_trace};
use crate::workload::Workload;

fn trace_stats(plan: &Plan) -> Option<TraceStats> {
    let it = open_trace(plan.trace.as_ref()?, TraceFormat::DiskSim).ok()?;
    let mut s = TraceStats::default();
    for r in it.flatten() {
        s.add(&r);
    }
    Some(s)
}

pub fn analyze(plan: &Plan, res: &Results) -> ExperimentOutput {
    let schemes = &plan.size.trace_schemes;
    let series = names(schemes);
    let alone_w = vec!["trace".to_string()];
    let alone = latency_block(
        "trace_alone",
        "TPC-C trace alone",
        &series,
        &alone_w,
        |s, w| {
            plan.trace_run(s)
                .and_then(|r| res.get(&r))
                .and_then(|r| r.workload(w))
                .into_iter()
                .collect()
        },
    );
    let mut mix_w = vec!["trace".to_string()];
    mix_w.extend(TRACE_TENANTS.iter().map(|w| w.name().to_string()));
    let mix = latency_block(
        "trace_mix",
        "TPC-C trace in a mix",
        &series,
        &mix_w,
        |s, w| {
            plan.trace_mix_run(s)
                .and_then(|r| res.get(&r))
                .and_then(|r| r.workload(w))
                .into_iter()
                .collect()
        },
    );
    let st = trace_stats(plan);
    let t4 = Workload::Tpcc.table4();
    let p99 = |b: &super::Block, s: &str| {
        b.cells
            .iter()
            .find(|c| c.series == s && c.workload == "trace")
            .and_then(|c| c.p99_us)
            .map(|a| a.mean)
    };
    let factor = |b: &super::Block, base: &str| match (p99(b, base), p99(b, "fusionraid")) {
        (Some(x), Some(f)) if f > 0.0 => Some(x / f),
        _ => None,
    };
    let synthetic = (0..plan.size.replicates)
        .filter_map(|r| res.get(&plan.main_run("fusionraid", r)))
        .filter_map(|r| r.workload("tpcc").map(|l| l.p99_us))
        .reduce(f64::max);
    let src = TABLE4_SOURCE;
    let comparisons = vec![
        Comparison::new(
            "trace IOPS vs Table 4 TPC-C",
            st.as_ref().map(TraceStats::iops),
            Some(t4.iops),
            "",
            src,
        ),
        Comparison::new(
            "trace write ratio vs Table 4 TPC-C",
            st.as_ref().map(TraceStats::write_ratio),
            Some(t4.write_ratio),
            "%",
            src,
        ),
        Comparison::new(
            "trace mean write size (KiB) vs Table 4 TPC-C",
            st.as_ref().map(|s| s.mean_write_bytes() / 1024.0),
            Some(t4.avg_write_kib),
            "",
            src,
        ),
        Comparison::text(
            "trace alone: P99 4-RAID5 / FusionRAID",
            factor(&alone.block, "4-raid5"),
            "n/a (not in the paper)",
            "x",
            "-",
        ),
        Comparison::text(
            "trace in the mix: P99 4-RAID5 / FusionRAID",
            factor(&mix.block, "4-raid5"),
            "n/a (not in the paper)",
            "x",
            "-",
        ),
        Comparison::text(
            "FusionRAID P99, trace in the mix / synthetic TPC-C in the main mix",
            match (p99(&mix.block, "fusionraid"), synthetic) {
                (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                _ => None,
            },
            "n/a",
            "x",
            "-",
        ),
    ];
    let curves: Vec<(String, &LatencyFigures)> = schemes
        .iter()
        .filter_map(|s| {
            let r = res.get(&plan.trace_run(s)?)?;
            Some((s.to_string(), r.workload("trace")?))
        })
        .collect();
    let mut figures = cdf_figures("trace_alone", "TPC-C trace alone", &curves);
    figures.extend(alone.figures);
    figures.extend(mix.figures);
    let mut tables = vec![comparison_table(
        "The trace against Table 4's TPC-C, and what it shows",
        &comparisons,
    )];
    tables.extend(alone.tables);
    tables.extend(mix.tables);
    let path = plan
        .trace
        .as_ref()
        .map_or("(no trace given)".into(), |p| p.display().to_string());
    ExperimentOutput {
        id: ExpId::Trace,
        json: ExperimentJson {
            experiment: ExpId::Trace.name(),
            title: "The real TPC-C trace".into(),
            blocks: vec![alone.block, mix.block],
            comparisons: comparisons.clone(),
            runs: Vec::new(),
            failed: Vec::new(),
            size: None,
        },
        section: Section {
            title: "8. The real TPC-C trace, alone and in a mix".into(),
            paragraphs: vec![format!(
                "`{path}` (DiskSim format, MQSim's excerpt of a real TPC-C block trace; {}), \
                 folded into one 64 GiB volume. Alone: replayed once at its own timestamps on \
                 aged members{}. In a mix: looped back to back for {} (every round touches \
                 the same blocks again) next to YCSB-A, TensorFlow and VD, i.e. the main mix \
                 with the real trace in the synthetic TPC-C generator's place. The paper used \
                 its own, longer TPC-C trace (Table 4), so no result here has a paper number; \
                 the table compares the traces themselves.",
                st.as_ref().map_or("unreadable".into(), |s| s.to_string()),
                plan.size.trace_ms.map_or(String::new(), |m| format!(
                    " (only its first {})",
                    super::dur(m)
                )),
                super::dur(plan.size.trace_mix_ms)
            )],
            tables,
            figures,
        },
        headline: comparisons[3..].to_vec(),
    }
}
