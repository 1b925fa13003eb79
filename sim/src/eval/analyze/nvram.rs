//! Fig. 11b: NV-RAID with growing NVRAM buffers against FusionRAID.

use super::super::experiments::{COMBINED, ExpId, FIG11B_WORKLOADS, Plan};
use super::super::paper::{
    FIG11B_SOURCE, FIG11B_TPCC_MEDIANS_256G, FIG11B_YCSBA_MEDIANS_256G,
    FIG11B_YCSBA_SMALL_BUFFER_FACTOR, FIG11B_YCSBA_SMALL_BUFFER_P99_US,
};
use super::super::plot::{LineChart, Series, Unit, line_chart};
use super::super::result::RunResult;
use super::{
    Comparison, ExperimentJson, ExperimentOutput, Figure, Results, Section, Table,
    comparison_table, latency_block, names,
};
use crate::workload::Workload;

fn label(mib: u64) -> String {
    if mib >= 1024 {
        format!("nvraid {}GiB", mib / 1024)
    } else {
        format!("nvraid {mib}MiB")
    }
}

pub fn analyze(plan: &Plan, res: &Results) -> ExperimentOutput {
    let sizes = &plan.size.nvram_mib;
    let mut series = vec!["fusionraid".to_string(), COMBINED.to_string()];
    series.extend(sizes.iter().map(|&m| label(m)));
    let work: Vec<String> = FIG11B_WORKLOADS
        .iter()
        .map(|w| w.name().to_string())
        .collect();
    let run = |s: &str, w: Workload| -> Option<&RunResult> {
        if s == COMBINED {
            return res.get(&plan.combined_alone_run(w));
        }
        let mib = sizes.iter().copied().find(|&m| label(m) == s);
        res.get(&plan.nvram_run(w, mib))
    };
    let wl = |name: &str| {
        FIG11B_WORKLOADS
            .into_iter()
            .find(|w| w.name() == name)
            .expect("a Fig. 11b workload")
    };
    let block = latency_block("fig11b", "Fig. 11b", &series, &work, |s, w| {
        run(s, wl(w))
            .and_then(|r| r.workload(w))
            .into_iter()
            .collect()
    });
    let get = |s: &str, w: Workload, p99: bool| {
        run(s, w)
            .and_then(|r| r.workload(w.name()))
            .map(|l| if p99 { l.p99_us } else { l.p50_us })
    };
    // Largest buffer below 8 GiB, the 8 GiB point and the largest buffer.
    let small = sizes.iter().copied().filter(|&m| m < 8 << 10).max();
    let eight = sizes.iter().copied().find(|&m| m == 8 << 10);
    let largest = sizes.iter().copied().max();
    let ya = Workload::YcsbA;
    let tp = Workload::Tpcc;
    let nv = |m: Option<u64>, w: Workload, p99: bool| m.and_then(|m| get(&label(m), w, p99));
    let fus = |w: Workload, p99: bool| get("fusionraid", w, p99);
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let src = FIG11B_SOURCE;
    let big = largest.map_or("-".into(), label);
    let comparisons = vec![
        Comparison::text(
            &format!("YCSB-A NV-RAID P99, {}", small.map_or("-".into(), label)),
            nv(small, ya, true),
            &format!(
                "over {} below 8 GB",
                super::super::svg::fmt_us(FIG11B_YCSBA_SMALL_BUFFER_P99_US)
            ),
            "us",
            src,
        ),
        Comparison::new(
            &format!(
                "YCSB-A P99 NV-RAID ({}) / FusionRAID",
                small.map_or("-".into(), label)
            ),
            ratio(nv(small, ya, true), fus(ya, true)),
            Some(FIG11B_YCSBA_SMALL_BUFFER_FACTOR),
            "x",
            src,
        ),
        Comparison::text(
            "TPC-C P99 NV-RAID (8 GiB) / FusionRAID",
            ratio(nv(eight, tp, true), fus(tp, true)),
            "fairly close",
            "x",
            src,
        ),
        Comparison::new(
            &format!("TPC-C median NV-RAID ({big})"),
            nv(largest, tp, false),
            Some(FIG11B_TPCC_MEDIANS_256G.0),
            "us",
            src,
        ),
        Comparison::new(
            "TPC-C median FusionRAID",
            fus(tp, false),
            Some(FIG11B_TPCC_MEDIANS_256G.1),
            "us",
            src,
        ),
        Comparison::new(
            &format!("YCSB-A median NV-RAID ({big})"),
            nv(largest, ya, false),
            Some(FIG11B_YCSBA_MEDIANS_256G.0),
            "us",
            src,
        ),
        Comparison::new(
            "YCSB-A median FusionRAID",
            fus(ya, false),
            Some(FIG11B_YCSBA_MEDIANS_256G.1),
            "us",
            src,
        ),
    ];
    let headline = comparisons[1..3].to_vec();
    let chart = |p99: bool| {
        let what = if p99 { "P99" } else { "median" };
        let mut ss = Vec::new();
        for w in FIG11B_WORKLOADS {
            ss.push(Series {
                name: format!("NV-RAID {}", w.name()),
                points: sizes
                    .iter()
                    .filter_map(|&m| Some((m as f64 / 1024.0, get(&label(m), w, p99)?)))
                    .collect(),
                dashed: false,
            });
        }
        let (lo, hi) = (
            *sizes.iter().min().unwrap_or(&1) as f64 / 1024.0,
            *sizes.iter().max().unwrap_or(&1) as f64 / 1024.0,
        );
        for w in FIG11B_WORKLOADS {
            ss.push(Series {
                name: format!("FusionRAID {}", w.name()),
                points: fus(w, p99).map_or(Vec::new(), |v| vec![(lo, v), (hi, v)]),
                dashed: true,
            });
        }
        Figure {
            file: format!("fig11b_by_size_{}.svg", if p99 { "p99" } else { "median" }),
            caption: format!("Fig. 11b: {what} of NV-RAID by buffer size; FusionRAID dashed"),
            svg: line_chart(&LineChart {
                title: format!("Fig. 11b: {what} vs NVRAM buffer size"),
                x_label: "NVRAM buffer (GiB, log scale)".into(),
                y_label: format!("{what} (log scale)"),
                x_unit: Unit::Plain,
                y_unit: Unit::Micros,
                x_log: true,
                y_log: true,
                y_range: None,
                series: ss,
            }),
        }
    };
    let written = Table {
        caption: "User data written per run (a buffer larger than this never fills)".into(),
        header: names(&["workload", "GiB written"]),
        rows: FIG11B_WORKLOADS
            .iter()
            .map(|&w| {
                let b = run("fusionraid", w).map(|r| r.report.write_amplification.user_bytes);
                vec![
                    w.name().to_string(),
                    b.map_or("-".into(), |b| {
                        format!("{:.2}", b as f64 / (1u64 << 30) as f64)
                    }),
                ]
            })
            .collect(),
    };
    let mut tables = vec![comparison_table("NV-RAID against FusionRAID", &comparisons)];
    tables.extend(block.tables);
    tables.push(written);
    let mut figures = vec![chart(true), chart(false)];
    figures.extend(block.figures);
    ExperimentOutput {
        id: ExpId::Fig11b,
        json: ExperimentJson {
            experiment: ExpId::Fig11b.name(),
            title: "NV-RAID buffer size (paper Fig. 11b)".into(),
            blocks: vec![block.block],
            comparisons,
            runs: Vec::new(),
            failed: Vec::new(),
            size: None,
        },
        section: Section {
            title: "7. NV-RAID buffer-size sweep (paper Fig. 11b)".into(),
            paragraphs: vec![format!(
                "YCSB-A and TPC-C each alone on aged members for {}: NV-RAID (an NVRAM \
                 write buffer above RAID50, 100 ns per 64-byte line) with buffers of {} against \
                 FusionRAID. The paper's sizes are GB, ours GiB. NV-RAID destages a stripe \
                 once the buffer is half full or the stripe's oldest page is 1 s old (the \
                 scheme's defaults), so beyond about a second of writes a larger buffer changes \
                 little in a run this short.",
                super::dur(plan.size.alone_ms),
                sizes
                    .iter()
                    .map(|&m| label(m).replace("nvraid ", ""))
                    .collect::<Vec<_>>()
                    .join(", ")
            )],
            tables,
            figures,
        },
        headline,
    }
}
