//! Workload generators against the paper's Table 4, plus the complementarity report.

use fusionraid_sim::trace::{IoKind, TraceStats};
use fusionraid_sim::workload::{
    ComplementarityReport, Mix, PAPER_FOUR_WAY, PAPER_TWO_WAY, SlotSeries, Workload,
    complementarity,
};

const SEC: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

/// Long enough for hundreds of ON/OFF cycles of every workload (TensorFlow's are 1 s long).
fn window(w: Workload) -> u64 {
    match w {
        Workload::TensorFlow => 1500 * SEC,
        _ => 300 * SEC,
    }
}

#[test]
fn generators_match_table4() {
    for w in Workload::ALL {
        let t = w.table4();
        let d = window(w);
        let spec = w.spec();
        let mut s = TraceStats::default();
        for r in w.generator_for(1, 0, d) {
            assert_eq!(r.offset % 4096, 0, "{w}");
            assert_eq!(r.len % 4096, 0, "{w}");
            assert!(
                r.len > 0 && r.offset + r.len <= spec.footprint,
                "{w}: {r:?}"
            );
            assert_ne!(r.kind, IoKind::Trim);
            s.add(&r);
        }
        let iops = s.records as f64 / (d as f64 / 1e9);
        let wkib = s.mean_write_bytes() / 1024.0;
        println!(
            "{w:<10} IOPS {iops:7.1} (table {:6.0})  writes {:5.1}% (table {:4.1}%)  \
             mean write {wkib:6.1} KiB (table {:5.1})  mean read {:6.1} KiB",
            t.iops,
            s.write_ratio() * 100.0,
            t.write_ratio * 100.0,
            t.avg_write_kib,
            s.mean_read_bytes() / 1024.0
        );
        assert!((iops / t.iops - 1.0).abs() < 0.10, "{w}: IOPS {iops}");
        assert!(
            (s.write_ratio() - t.write_ratio).abs() < 0.03,
            "{w}: write ratio"
        );
        assert!(
            (wkib / t.avg_write_kib - 1.0).abs() < 0.10,
            "{w}: write size {wkib}"
        );
    }
}

#[test]
fn generators_are_deterministic() {
    for w in Workload::ALL {
        let a: Vec<_> = w.generator_for(77, 2, 2 * SEC).collect();
        let b: Vec<_> = w.generator_for(77, 2, 2 * SEC).collect();
        assert_eq!(a, b, "{w}");
        let c: Vec<_> = w
            .generator(78, 2)
            .with_max_records(a.len().max(1) as u64)
            .collect();
        assert_ne!(a, c, "{w}: another seed should differ");
    }
}

#[test]
fn arrivals_are_bursty_at_one_millisecond() {
    // Index of dispersion of per-ms request counts: 1 for Poisson, well above for ON/OFF.
    for w in [
        Workload::Tpcc,
        Workload::YcsbA,
        Workload::VirtualDesktop,
        Workload::Exchange,
    ] {
        let d = 60 * SEC;
        let mut counts = vec![0u32; (d / MS) as usize];
        for r in w.generator_for(3, 0, d) {
            counts[(r.time_ns / MS) as usize] += 1;
        }
        let n = counts.len() as f64;
        let mean = counts.iter().map(|&c| c as f64).sum::<f64>() / n;
        let var = counts
            .iter()
            .map(|&c| (c as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        println!(
            "{w:<10} per-ms requests: mean {mean:.2}, dispersion {:.1}",
            var / mean
        );
        assert!(var / mean > 1.5, "{w}: dispersion {}", var / mean);
    }
}

#[test]
fn record_and_series_complementarity_agree() {
    let ws = [Workload::Exchange, Workload::YcsbA];
    let d = 20 * SEC;
    let direct = complementarity(Mix::of_workloads(&ws, 5, d), 2, MS);
    let series: Vec<SlotSeries> = ws
        .iter()
        .map(|w| SlotSeries::from_records(w.generator_for(5, 0, d), MS, d))
        .collect();
    let via = fusionraid_sim::workload::complementarity_of(&[&series[0], &series[1]]);
    assert!((direct - via).abs() < 1e-12, "{direct} vs {via}");
    assert!((0.0..=1.0).contains(&direct));
}

#[test]
fn complementarity_report_next_to_the_paper() {
    let report = ComplementarityReport::run(1, 60 * SEC, MS);
    println!("{report}");
    assert_eq!(report.pairs.len(), 28);
    assert_eq!(report.quads.len(), 70);
    for m in report.pairs.iter().chain(&report.quads) {
        assert!((0.0..=1.0).contains(&m.share), "{m:?}");
    }
    let (two, four) = (report.two_way(), report.four_way());
    println!(
        "measured 2-mix {:.1}% / 4-mix {:.1}%; paper {:.1}% / {:.1}%; 4-mixes >= 2-mixes: {}",
        two * 100.0,
        four * 100.0,
        PAPER_TWO_WAY * 100.0,
        PAPER_FOUR_WAY * 100.0,
        four >= two
    );
}
