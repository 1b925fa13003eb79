//! Sandook's mechanisms (issue 20) against the Sandook talk's numbers and the issue's
//! targets: throughput at the SLO, a reader's isolation, the main mix with the policies.

use std::collections::BTreeMap;

use super::super::experiments::{ExpId, MAIN_MIX, Plan};
use super::super::paper::{
    SANDOOK_OF_IDEAL, SANDOOK_RAW_GAIN, SANDOOK_SEGREGATION_IOPS, SANDOOK_SOURCE,
};
use super::super::plot::{Bar, BarChart, Unit, bar_chart};
use super::super::result::LatencyFigures;
use super::super::sandook::{
    FLEET, ISOLATION_SCHEMES, MIX_VARIANTS, READER, SLO_TARGET, SLO_TENANT, SloArm, Tenancy,
};
use super::super::svg::fmt_us;
use super::{
    Agg, Block, Cell, Comparison, ExperimentJson, ExperimentOutput, Figure, Results, Section,
    Table, comparison_table, latency_block,
};

/// The issue's targets.
const TARGET_OF_IDEAL: f64 = 0.95;
const TARGET_SEGREGATION: f64 = 1.5;
const TARGET_COMBINED_OF_SANDOOK: f64 = 0.90;
const TARGET_ISOLATION: f64 = 1.5;
const TARGET_MIX_P99_LOSS: f64 = 0.10;
const ISSUE: &str = "issue 20";

/// What a load search found.
#[derive(Clone, Copy, Debug, Default)]
struct Found {
    /// The highest offered load meeting the target, and what the pool answered at it.
    max_iops: Option<f64>,
    achieved_iops: Option<f64>,
    latency_us: Option<f64>,
    ideal_iops: Option<f64>,
    of_ideal: Option<f64>,
    /// The bracket's width (the lowest failing load over the best), if it closed.
    bracket: Option<f64>,
    probes: usize,
}

fn found(plan: &Plan, res: &Results, arm: SloArm) -> Option<Found> {
    let r = res.get(&plan.sandook_slo_run(arm))?;
    let s = r.slo.as_ref()?;
    Some(Found {
        max_iops: s.max_iops(),
        achieved_iops: s.best.as_ref().map(|b| b.achieved_iops),
        latency_us: s.best.as_ref().map(|b| b.latency_us),
        ideal_iops: s.ideal_iops,
        of_ideal: s.of_ideal,
        bracket: s.bracket(),
        probes: s.probes.len(),
    })
}

fn mega(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:.2} M", x / 1e6))
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:.1}%", x * 100.0))
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "not met" }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// The talk's figure next to an arm's row, where it states one.
fn talk(arm: SloArm) -> String {
    let (lo, hi) = SANDOOK_SEGREGATION_IOPS;
    if arm == SloArm::SANDOOK {
        format!(
            "{:.0}% of ideal; segregation {:.1} M -> {:.1} M ({:.1}x)",
            SANDOOK_OF_IDEAL * 100.0,
            lo / 1e6,
            hi / 1e6,
            hi / lo
        )
    } else if arm == SloArm::SANDOOK_EQUAL {
        format!("Sandook {SANDOOK_RAW_GAIN}x raw throughput over equal weights")
    } else {
        String::new()
    }
}

fn slo_table(plan: &Plan, fs: &[Option<Found>]) -> Table {
    let ideal = fs.iter().flatten().find_map(|f| f.ideal_iops);
    let rows = SloArm::ALL
        .iter()
        .zip(fs)
        .map(|(&a, f)| {
            let f = f.unwrap_or_default();
            vec![
                a.scheme.to_string(),
                a.mechanisms().to_string(),
                mega(f.max_iops),
                mega(f.achieved_iops),
                f.latency_us.map_or("-".into(), fmt_us),
                pct(f.of_ideal),
                f.bracket
                    .map_or("-".into(), |b| format!("+{:.1}%", b * 100.0)),
                f.probes.to_string(),
                talk(a),
            ]
        })
        .collect();
    let s = &plan.size.sandook;
    Table {
        caption: format!(
            "Throughput at the SLO (P90 < 1 ms) on `{FLEET}`: the highest offered load meeting \
             it, what the pool answered in the window at that load, its P90, the answered \
             share of ideal ({}, the sum of the members' P90 peaks at 10% writes), how far \
             above the first failing load was, and the runs the search made ({} of arrivals \
             each, {} warm-up)",
            mega(ideal),
            super::dur(s.slo_ms),
            super::dur(s.slo_warmup_ms)
        ),
        header: [
            "scheme",
            "mechanisms",
            "max IOPS at the SLO",
            "answered",
            "P90 there",
            "of ideal",
            "fails at",
            "runs",
            "the talk",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

fn at(fs: &[Option<Found>], arm: SloArm) -> Found {
    let i = SloArm::ALL
        .iter()
        .position(|&a| a == arm)
        .expect("an arm of the list");
    fs[i].unwrap_or_default()
}

/// Against the talk, then the issue's throughput targets.
fn slo_comparisons(fs: &[Option<Found>]) -> (Vec<Comparison>, Vec<Comparison>) {
    let (all, noseg, equal, comb) = (
        at(fs, SloArm::SANDOOK),
        at(fs, SloArm::SANDOOK_NO_SEGREGATION),
        at(fs, SloArm::SANDOOK_EQUAL),
        at(fs, SloArm::COMBINED),
    );
    let (lo, hi) = SANDOOK_SEGREGATION_IOPS;
    let seg = ratio(all.max_iops, noseg.max_iops);
    let over_equal = ratio(all.max_iops, equal.max_iops);
    let of_sandook = ratio(comb.max_iops, all.max_iops);
    let src = SANDOOK_SOURCE;
    let talk = vec![
        Comparison::new(
            "sandook: answered share of ideal at the SLO",
            all.of_ideal,
            Some(SANDOOK_OF_IDEAL),
            "%",
            src,
        ),
        Comparison::new(
            "sandook: segregation's gain at the SLO (all three / weights + congestion)",
            seg,
            Some(hi / lo),
            "x",
            src,
        ),
        Comparison::new(
            "sandook: gain over equal weights at the SLO (all three / none)",
            over_equal,
            Some(SANDOOK_RAW_GAIN),
            "x",
            src,
        ),
    ];
    let targets = vec![
        Comparison::new(
            &format!(
                "target: sandook >= 95% of ideal at the SLO ({})",
                met(all.of_ideal.is_some_and(|x| x >= TARGET_OF_IDEAL))
            ),
            all.of_ideal,
            Some(TARGET_OF_IDEAL),
            "%",
            ISSUE,
        ),
        Comparison::new(
            &format!(
                "target: segregation >= 1.5x at the SLO ({})",
                met(seg.is_some_and(|x| x >= TARGET_SEGREGATION))
            ),
            seg,
            Some(TARGET_SEGREGATION),
            "x",
            ISSUE,
        ),
        Comparison::new(
            &format!(
                "target: fusionraid+ >= 90% of sandook at the SLO ({})",
                met(of_sandook.is_some_and(|x| x >= TARGET_COMBINED_OF_SANDOOK))
            ),
            of_sandook,
            Some(TARGET_COMBINED_OF_SANDOOK),
            "%",
            ISSUE,
        ),
    ];
    (talk, targets)
}

/// The reader's P99 and the writers' worst P99 of one isolation run.
#[derive(Clone, Copy, Default)]
struct Iso {
    reader_p99_us: Option<f64>,
    writers_p99_us: Option<f64>,
}

fn iso(plan: &Plan, res: &Results, scheme: &str, t: Tenancy) -> Iso {
    let Some(r) = res.get(&plan.sandook_isolation_run(scheme, t)) else {
        return Iso::default();
    };
    let writers = r
        .workloads
        .iter()
        .filter(|w| w.name != READER && w.latency.requests > 0)
        .map(|w| w.latency.p99_us)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    Iso {
        reader_p99_us: r.workload(READER).map(|l| l.p99_us),
        writers_p99_us: writers,
    }
}

fn isolation(plan: &Plan, res: &Results) -> (Block, Table, Vec<Comparison>, Figure) {
    let mut cells = Vec::new();
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    let mut values = Vec::new();
    for s in ISOLATION_SCHEMES {
        let [alone, shared] = Tenancy::ALL.map(|t| iso(plan, res, s, t));
        let factor = ratio(shared.reader_p99_us, alone.reader_p99_us);
        for (t, x) in Tenancy::ALL.iter().zip([alone, shared]) {
            let p99 = x.reader_p99_us.and_then(|v| Agg::of([v]));
            let mut extra = BTreeMap::new();
            if let Some(w) = x.writers_p99_us.and_then(|v| Agg::of([v])) {
                extra.insert("writers_worst_p99_us".to_string(), w);
            }
            cells.push(Cell {
                series: s.to_string(),
                workload: format!("{t:?}").to_lowercase(),
                runs: usize::from(p99.is_some()),
                p99_us: p99,
                extra,
                ..Cell::default()
            });
        }
        let t = |v: Option<f64>| v.map_or("-".into(), fmt_us);
        rows.push(vec![
            s.to_string(),
            t(alone.reader_p99_us),
            t(shared.reader_p99_us),
            factor.map_or("-".into(), |f| format!("{f:.2}x")),
            t(shared.writers_p99_us),
        ]);
        targets.push(Comparison::new(
            &format!(
                "target: {s} reader P99 shared / private <= 1.5x ({})",
                met(factor.is_some_and(|f| f <= TARGET_ISOLATION))
            ),
            factor,
            Some(TARGET_ISOLATION),
            "x",
            ISSUE,
        ));
        let bar = |v: Option<f64>| {
            v.map(|value| Bar {
                value,
                lo: value,
                hi: value,
            })
        };
        values.push(vec![bar(alone.reader_p99_us), bar(shared.reader_p99_us)]);
    }
    let sz = &plan.size.sandook;
    let table = Table {
        caption: format!(
            "A read-only tenant (400K 4 KiB reads/s over 8 GiB) with the pool to itself and \
             next to two write-heavy tenants (60K IOPS each, 80% writes of 16 KiB), on \
             `{FLEET}` (fresh), every steering mechanism on where the scheme steers; {} of \
             arrivals, {} warm-up. The issue's target: the reader's P99 within 1.5x of its \
             private P99",
            super::dur(sz.isolation_ms),
            super::dur(sz.isolation_warmup_ms)
        ),
        header: [
            "scheme",
            "reader P99, private",
            "reader P99, shared",
            "shared / private",
            "writers' worst P99",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    };
    let block = Block {
        name: "sandook_isolation".into(),
        series: ISOLATION_SCHEMES.iter().map(|s| s.to_string()).collect(),
        workloads: vec!["private".into(), "shared".into()],
        cells,
    };
    let title = "Sandook: a reader's P99 alone and next to write-heavy tenants".to_string();
    let figure = Figure {
        file: "sandook_isolation_p99.svg".into(),
        caption: format!("{title} (log scale)"),
        svg: bar_chart(&BarChart {
            title,
            y_label: "reader P99 (log scale)".into(),
            unit: Unit::Micros,
            log: true,
            groups: ISOLATION_SCHEMES.iter().map(|s| s.to_string()).collect(),
            series: vec!["private".into(), "shared".into()],
            values,
        }),
    };
    (block, table, targets, figure)
}

fn slo_chart(fs: &[Option<Found>]) -> Figure {
    let values = fs
        .iter()
        .map(|f| {
            let v = f.and_then(|f| f.of_ideal).map(|x| x * 100.0);
            let talk = SANDOOK_OF_IDEAL * 100.0;
            vec![
                v.map(|value| Bar {
                    value,
                    lo: value,
                    hi: value,
                }),
                Some(Bar {
                    value: talk,
                    lo: talk,
                    hi: talk,
                }),
            ]
        })
        .collect();
    let title = "Sandook: throughput at P90 < 1 ms, % of ideal".to_string();
    Figure {
        file: "sandook_slo_of_ideal.svg".into(),
        caption: format!("{title}, per scheme and mechanisms, next to the talk's 95% (Sandook)"),
        svg: bar_chart(&BarChart {
            title,
            y_label: "answered IOPS at the SLO, % of ideal".into(),
            unit: Unit::Plain,
            log: false,
            groups: SloArm::ALL.iter().map(|a| a.label()).collect(),
            series: vec!["ours".into(), "talk (Sandook)".into()],
            values,
        }),
    }
}

/// The main mix per variant: P99 per workload, and the worst change of each `fusionraid+`
/// variant against `fusionraid`.
fn mix(plan: &Plan, res: &Results) -> (super::LatencyBlock, Table, Vec<Comparison>) {
    let series: Vec<String> = MIX_VARIANTS.iter().map(|v| v.label()).collect();
    let mut workloads: Vec<String> = MAIN_MIX.iter().map(|w| w.name().to_string()).collect();
    workloads.push("all".into());
    let figs = |v: SloArm, w: &str| -> Vec<&LatencyFigures> {
        (0..plan.size.replicates)
            .filter_map(|rep| {
                let r = res.get(&plan.sandook_mix_run(v, rep))?;
                if w == "all" {
                    Some(&r.all)
                } else {
                    r.workload(w)
                }
            })
            .collect()
    };
    let p99 = |v: SloArm, w: &str| Agg::of(figs(v, w).iter().map(|l| l.p99_us)).map(|a| a.mean);
    let lb = latency_block(
        "sandook_mix",
        "Sandook: the main mix with the policies",
        &series,
        &workloads,
        |s, w| {
            let v = MIX_VARIANTS[series.iter().position(|x| x == s).expect("a series")];
            figs(v, w)
        },
    );
    let base = MIX_VARIANTS[0];
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    for &v in &MIX_VARIANTS[1..] {
        let mut row = vec![v.label()];
        let mut worst: Option<(f64, &str)> = None;
        for w in &workloads {
            let c = ratio(p99(v, w), p99(base, w)).map(|r| r - 1.0);
            if let Some(c) = c
                && w != "all"
                && worst.is_none_or(|(x, _)| c > x)
            {
                worst = Some((c, w));
            }
            row.push(c.map_or("-".into(), |c| format!("{:+.1}%", c * 100.0)));
        }
        rows.push(row);
        let (c, w) = worst.map_or((None, "-"), |(c, w)| (Some(c), w));
        targets.push(Comparison::text(
            &format!(
                "target: {} loses <= 10% of P99 on every workload (worst: {w}; {})",
                v.label(),
                met(c.is_some_and(|c| c <= TARGET_MIX_P99_LOSS))
            ),
            c,
            "<= +10.00%",
            "%",
            ISSUE,
        ));
    }
    let mut header = vec!["variant".to_string()];
    header.extend(workloads.iter().cloned());
    let table = Table {
        caption: format!(
            "The main mix on the paper's aged `dc` pool ({} of arrivals, {} replicate(s)): P99 \
             change of each `fusionraid+` variant against `fusionraid` (the issue allows no \
             workload more than +10%)",
            super::dur(plan.size.main_ms),
            plan.size.replicates
        ),
        header,
        rows,
    };
    (lb, table, targets)
}

pub fn analyze(plan: &Plan, res: &Results) -> ExperimentOutput {
    let fs: Vec<Option<Found>> = SloArm::ALL.iter().map(|&a| found(plan, res, a)).collect();
    let slo_cells = SloArm::ALL
        .iter()
        .zip(&fs)
        .map(|(a, f)| {
            let mut extra = BTreeMap::new();
            if let Some(f) = f {
                let named = [
                    ("max_iops", f.max_iops),
                    ("achieved_iops", f.achieved_iops),
                    ("p90_us", f.latency_us),
                    ("ideal_iops", f.ideal_iops),
                    ("of_ideal", f.of_ideal),
                ];
                for (k, v) in named {
                    if let Some(a) = v.and_then(|v| Agg::of([v])) {
                        extra.insert(k.to_string(), a);
                    }
                }
            }
            Cell {
                series: a.label(),
                workload: SLO_TARGET.into(),
                runs: usize::from(f.is_some()),
                extra,
                ..Cell::default()
            }
        })
        .collect();
    let slo_block = Block {
        name: "sandook_slo".into(),
        series: SloArm::ALL.iter().map(|a| a.label()).collect(),
        workloads: vec![SLO_TARGET.into()],
        cells: slo_cells,
    };
    let (talk, mut targets) = slo_comparisons(&fs);
    let curve_sources = super::segregation_bound::sources();
    let (bound, bound_comps) = super::segregation_bound::bound_table(&curve_sources);
    let (iso_block, iso_table, iso_targets, iso_fig) = isolation(plan, res);
    let (mix_lb, mix_table, mix_targets) = mix(plan, res);
    targets.extend(iso_targets);
    targets.extend(mix_targets);
    let mut comps = talk.clone();
    comps.extend(bound_comps);
    comps.extend(targets.iter().cloned());
    let headline: Vec<Comparison> = talk.iter().take(1).chain(&targets).cloned().collect();
    let mut tables = vec![
        slo_table(plan, &fs),
        bound,
        comparison_table("Against the Sandook talk and the issue's targets", &comps),
        iso_table,
        super::segregation_bound::isolation_table(&curve_sources),
        mix_table,
    ];
    tables.extend(mix_lb.tables);
    let mut figures = vec![slo_chart(&fs), iso_fig];
    figures.extend(mix_lb.figures);
    ExperimentOutput {
        id: ExpId::Sandook,
        json: ExperimentJson {
            experiment: ExpId::Sandook.name(),
            title: "Sandook's mechanisms".into(),
            blocks: vec![slo_block, iso_block, mix_lb.block],
            comparisons: comps,
            runs: Vec::new(),
            failed: Vec::new(),
            size: serde_json::to_value(&plan.size.sandook).ok(),
        },
        section: Section {
            title: "13. Sandook's mechanisms (issue 20; not a paper figure)".into(),
            paragraphs: vec![intro(plan)],
            tables,
            figures,
        },
        headline,
    }
}

fn intro(plan: &Plan) -> String {
    let s = &plan.size.sandook;
    format!(
        "Sandook steers load by the members' load-latency curves (weights), keeps reads off \
         the members taking writes (segregation) and backs off congested members \
         (congestion); `sandook` is its two-replica log, `fusionraid+` FusionRAID with the \
         same mechanisms as policies. Throughput at the SLO is a load search per scheme and \
         mechanisms (`sim --slo {SLO_TARGET} --slo-start {:.0} --slo-precision {}`, at most \
         {} runs) on `{FLEET}` (12 heterogeneous drives fitted one per profiled serial, \
         fresh, stripes 6 wide) under `--synthetic {SLO_TENANT}`, every tenant's rate \
         scaled; a run fails the target when its P90 is 1 ms or more, when it drops requests \
         or when it answers under 95% of its arrivals in time. The main mix runs on the \
         paper's aged `dc` pool: `fusionraid` and `fusionraid+` with all three mechanisms are \
         Fig. 12's runs.",
        s.slo_start_iops, s.slo_precision, s.slo_max_runs
    )
}
