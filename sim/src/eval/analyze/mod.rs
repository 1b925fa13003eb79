//! From run results to what the report shows: per experiment a JSON document (cells of
//! aggregated figures, comparisons with the paper) and a section (tables, charts, notes).
//! One file per experiment; the shared pieces are here.

mod aging;
mod consumer;
mod conversion;
mod detector;
mod failslow;
mod incremental;
mod nvram;
mod overall;
mod pitfalls;
mod sandook;
mod segregation_bound;
mod sensitivity;
mod serw;
mod trace;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::experiments::{ExpId, Plan};
use super::plot::{Bar, BarChart, LineChart, Series, Unit, bar_chart, line_chart};
use super::result::{LatencyFigures, RunResult};
use super::runner::Outcome;
use super::spec::RunSpec;
use super::svg::fmt_us;

/// Results by run id, and the runs that failed.
pub struct Results<'a> {
    ok: HashMap<String, &'a RunResult>,
    failed: HashMap<String, &'a str>,
}

impl<'a> Results<'a> {
    pub fn new(outcomes: &'a [Outcome]) -> Self {
        let mut ok = HashMap::new();
        let mut failed = HashMap::new();
        for o in outcomes {
            match &o.result {
                Ok(r) => {
                    ok.insert(r.id.clone(), r);
                }
                Err(e) => {
                    failed.insert(o.spec.id(), e.as_str());
                }
            }
        }
        Results { ok, failed }
    }

    pub fn get(&self, spec: &RunSpec) -> Option<&'a RunResult> {
        self.ok.get(&spec.id()).copied()
    }

    pub fn error(&self, spec: &RunSpec) -> Option<&'a str> {
        self.failed.get(&spec.id()).copied()
    }
}

/// Mean, min and max of one figure over runs (mixes or seeds).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Agg {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Agg {
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Agg> {
        let v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        Some(Agg {
            mean: v.iter().sum::<f64>() / v.len() as f64,
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            n: v.len(),
        })
    }

    pub fn bar(self) -> Bar {
        Bar {
            value: self.mean,
            lo: self.min,
            hi: self.max,
        }
    }
}

/// The figures of one series (a system or a setting) for one workload.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Cell {
    pub series: String,
    pub workload: String,
    /// Runs that contributed.
    pub runs: usize,
    pub p50_us: Option<Agg>,
    pub p99_us: Option<Agg>,
    pub p999_us: Option<Agg>,
    pub slowest1_mean_us: Option<Agg>,
    /// Other figures (write amplification, space, spikes, ...), by name.
    pub extra: BTreeMap<String, Agg>,
}

impl Cell {
    pub fn latency(series: &str, workload: &str, figs: &[&LatencyFigures]) -> Cell {
        let agg = |f: fn(&LatencyFigures) -> f64| Agg::of(figs.iter().map(|l| f(l)));
        Cell {
            series: series.to_string(),
            workload: workload.to_string(),
            runs: figs.len(),
            p50_us: agg(|l| l.p50_us),
            p99_us: agg(|l| l.p99_us),
            p999_us: agg(|l| l.p999_us),
            slowest1_mean_us: agg(|l| l.slowest1_mean_us),
            extra: BTreeMap::new(),
        }
    }
}

/// One number of ours next to the paper's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub what: String,
    pub ours: Option<f64>,
    /// The paper's number, when it states one.
    pub paper: Option<f64>,
    /// How the paper states it (also for qualitative claims).
    pub paper_text: String,
    /// ours / paper.
    pub ratio: Option<f64>,
    pub unit: String,
    pub source: String,
}

impl Comparison {
    pub fn new(
        what: &str,
        ours: Option<f64>,
        paper: Option<f64>,
        unit: &str,
        source: &str,
    ) -> Self {
        let paper_text = paper.map_or("-".into(), |p| fmt_value(p, unit));
        Comparison {
            what: what.to_string(),
            ours,
            paper,
            paper_text,
            ratio: match (ours, paper) {
                (Some(o), Some(p)) if p != 0.0 => Some(o / p),
                _ => None,
            },
            unit: unit.to_string(),
            source: source.to_string(),
        }
    }

    pub fn text(what: &str, ours: Option<f64>, paper_text: &str, unit: &str, source: &str) -> Self {
        let mut c = Comparison::new(what, ours, None, unit, source);
        c.paper_text = paper_text.to_string();
        c
    }
}

/// A value in its unit: `us` as a latency, `%` as a percentage of a share, `x` as a factor.
pub fn fmt_value(v: f64, unit: &str) -> String {
    match unit {
        "us" => fmt_us(v),
        "%" => format!("{:.2}%", v * 100.0),
        "x" => format!("{v:.2}x"),
        "n" => format!("{v:.0}"),
        "" => format!("{v:.2}"),
        u => format!("{v:.2} {u}"),
    }
}

/// A virtual duration for the report's text: `40 ms`, `1.5 s`.
pub fn dur(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{} s", ms as f64 / 1e3)
    }
}

/// Cells of series x workloads: every pair has a cell.
#[derive(Clone, Debug, Serialize)]
pub struct Block {
    pub name: String,
    pub series: Vec<String>,
    pub workloads: Vec<String>,
    pub cells: Vec<Cell>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ExperimentJson {
    pub experiment: &'static str,
    pub title: String,
    pub blocks: Vec<Block>,
    pub comparisons: Vec<Comparison>,
    /// Ids of the runs used (their raw JSON is in `runs/`).
    pub runs: Vec<String>,
    /// Runs that failed, with the reason.
    pub failed: Vec<(String, String)>,
    /// The experiment's own sizes where `summary.json`'s `size` leaves them out (so that
    /// plans without the experiment keep their files); absent for the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<serde_json::Value>,
}

pub struct Table {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

pub struct Figure {
    /// File name in the output directory.
    pub file: String,
    pub caption: String,
    pub svg: String,
}

pub struct Section {
    pub title: String,
    pub paragraphs: Vec<String>,
    pub tables: Vec<Table>,
    pub figures: Vec<Figure>,
}

pub struct ExperimentOutput {
    pub id: ExpId,
    pub json: ExperimentJson,
    pub section: Section,
    /// The comparisons worth a line in the report's headline table.
    pub headline: Vec<Comparison>,
}

/// Builds the output of experiment `e`.
pub fn analyze(e: ExpId, plan: &Plan, res: &Results) -> ExperimentOutput {
    let mut out = match e {
        ExpId::Fig10 => overall::analyze(plan, res),
        ExpId::Fig12 => incremental::analyze(plan, res),
        ExpId::Fig13 => conversion::analyze(plan, res),
        ExpId::Detector => detector::analyze(plan, res),
        ExpId::Fig14 => aging::analyze(plan, res),
        ExpId::Consumer => consumer::analyze(plan, res),
        ExpId::Fig11b => nvram::analyze(plan, res),
        ExpId::Trace => trace::analyze(plan, res),
        ExpId::Sensitivity => sensitivity::analyze(plan, res),
        ExpId::Pitfalls => pitfalls::analyze(plan, res),
        ExpId::Serw => serw::analyze(plan, res),
        ExpId::FailSlow => failslow::analyze(plan, res),
        ExpId::Sandook => sandook::analyze(plan, res),
    };
    let runs = plan.runs_of(e);
    out.json.runs = runs.iter().map(RunSpec::id).collect();
    out.json.runs.dedup();
    out.json.failed = runs
        .iter()
        .filter_map(|r| res.error(r).map(|m| (r.id(), m.to_string())))
        .collect();
    out.json.failed.dedup();
    if runs
        .iter()
        .any(|r| r.scheme == super::experiments::COMBINED)
    {
        out.section.paragraphs.push(sensitivity::combined_note());
    }
    let health = health_note(&runs, res);
    out.section.paragraphs.extend(health);
    out
}

/// How the runs of an experiment went: failures, and runs whose pool could not keep up.
fn health_note(runs: &[RunSpec], res: &Results) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    let (mut n, mut failed, mut overloaded, mut held) = (0, 0, 0, 0);
    let mut worst = 0.0f64;
    for r in runs {
        if !seen.insert(r.id()) {
            continue;
        }
        n += 1;
        match res.get(r) {
            None => failed += 1,
            Some(x) => {
                let d = x.drain_share();
                if d > 0.5 {
                    overloaded += 1;
                }
                worst = worst.max(d);
                if x.report.requests.held > 0 {
                    held += 1;
                }
            }
        }
    }
    let mut s = format!("Runs: {n} distinct");
    if failed > 0 {
        s.push_str(&format!(", **{failed} failed** (see the failure list)"));
    }
    s.push_str(&format!(
        "; {overloaded} kept answering for more than half the arrival window after arrivals \
         stopped (the offered load exceeded what the pool delivered; longest drain {:.1}x the \
         window); {held} hit the engine's in-flight limit ({} requests) and queued in the driver.",
        worst,
        crate::Scenario::default_mix(1.0).max_requests
    ));
    Some(s)
}

/// Cells, a median and a P99 table, and median and P99 bar charts for series x workloads,
/// where `figs(series, workload)` lists the contributing runs' figures.
pub struct LatencyBlock {
    pub block: Block,
    pub tables: Vec<Table>,
    pub figures: Vec<Figure>,
}

pub fn latency_block<'r>(
    file_prefix: &str,
    title: &str,
    series: &[String],
    workloads: &[String],
    figs: impl Fn(&str, &str) -> Vec<&'r LatencyFigures>,
) -> LatencyBlock {
    let mut cells = Vec::new();
    for s in series {
        for w in workloads {
            cells.push(Cell::latency(s, w, &figs(s, w)));
        }
    }
    let mut tables = Vec::new();
    let mut figures = Vec::new();
    for kind in [CellKind::MEDIAN, CellKind::P99] {
        let (t, f) = cell_view(file_prefix, title, series, workloads, &cells, kind);
        tables.push(t);
        figures.push(f);
    }
    LatencyBlock {
        block: Block {
            name: file_prefix.to_string(),
            series: series.to_vec(),
            workloads: workloads.to_vec(),
            cells,
        },
        tables,
        figures,
    }
}

/// One latency figure of the cells: its file-name key, its label, where it is in a cell.
#[derive(Clone, Copy)]
pub struct CellKind {
    pub key: &'static str,
    pub label: &'static str,
    pub pick: fn(&Cell) -> Option<Agg>,
}

impl CellKind {
    pub const MEDIAN: CellKind = CellKind {
        key: "median",
        label: "Median latency",
        pick: |c| c.p50_us,
    };
    pub const P99: CellKind = CellKind {
        key: "p99",
        label: "P99 latency",
        pick: |c| c.p99_us,
    };
    pub const P999: CellKind = CellKind {
        key: "p999",
        label: "P99.9 latency",
        pick: |c| c.p999_us,
    };
    pub const SLOWEST1: CellKind = CellKind {
        key: "slowest1",
        label: "Mean of the slowest 1%",
        pick: |c| c.slowest1_mean_us,
    };
}

/// A workload x series table and a grouped bar chart (log scale, `<file_prefix>_<key>.svg`)
/// of one figure of `cells`, which has a cell for every pair.
pub fn cell_view(
    file_prefix: &str,
    title: &str,
    series: &[String],
    workloads: &[String],
    cells: &[Cell],
    kind: CellKind,
) -> (Table, Figure) {
    let CellKind { key, label, pick } = kind;
    let cell = |s: &str, w: &str| {
        cells
            .iter()
            .find(|c| c.series == s && c.workload == w)
            .expect("cell for every pair")
    };
    let mut header = vec!["workload".to_string()];
    header.extend(series.iter().cloned());
    let rows = workloads
        .iter()
        .map(|w| {
            std::iter::once(w.clone())
                .chain(series.iter().map(|s| agg_text(pick(cell(s, w)))))
                .collect()
        })
        .collect();
    let table = Table {
        caption: format!("{title}: {label} (mean over runs, min-max in brackets)"),
        header,
        rows,
    };
    let chart = BarChart {
        title: format!("{title}: {label}"),
        y_label: format!("{label} (log scale)"),
        unit: Unit::Micros,
        log: true,
        groups: workloads.to_vec(),
        series: series.to_vec(),
        values: workloads
            .iter()
            .map(|w| {
                series
                    .iter()
                    .map(|s| pick(cell(s, w)).map(Agg::bar))
                    .collect()
            })
            .collect(),
    };
    let figure = Figure {
        file: format!("{file_prefix}_{key}.svg"),
        caption: format!("{title}: {label}; bars are means over runs, whiskers min and max"),
        svg: bar_chart(&chart),
    };
    (table, figure)
}

/// `mean (min-max)` in latency units, or `-`.
pub fn agg_text(a: Option<Agg>) -> String {
    match a {
        None => "-".into(),
        Some(a) if a.n == 1 || a.min == a.max => fmt_us(a.mean),
        Some(a) => format!("{} ({}-{})", fmt_us(a.mean), fmt_us(a.min), fmt_us(a.max)),
    }
}

/// A CDF chart (latency on a log axis) and a tail chart (1 - CDF on a log axis) of named
/// latency distributions.
pub fn cdf_figures(
    file_prefix: &str,
    title: &str,
    curves: &[(String, &LatencyFigures)],
) -> Vec<Figure> {
    let series = |tail: bool| {
        curves
            .iter()
            .map(|(name, f)| Series {
                name: name.clone(),
                points: f
                    .cdf
                    .iter()
                    .map(|p| (p[0], if tail { 1.0 - p[1] } else { p[1] }))
                    .collect(),
                dashed: false,
            })
            .collect::<Vec<_>>()
    };
    let cdf = LineChart {
        title: format!("{title}: latency CDF"),
        x_label: "latency (log scale)".into(),
        y_label: "share of requests".into(),
        x_unit: Unit::Micros,
        y_unit: Unit::Plain,
        x_log: true,
        y_log: false,
        y_range: Some((0.0, 1.0)),
        series: series(false),
    };
    let tail = LineChart {
        title: format!("{title}: tail (1 - CDF)"),
        x_label: "latency (log scale)".into(),
        y_label: "share slower (log scale)".into(),
        x_unit: Unit::Micros,
        y_unit: Unit::Plain,
        x_log: true,
        y_log: true,
        y_range: Some((1e-4, 1.0)),
        series: series(true),
    };
    vec![
        Figure {
            file: format!("{file_prefix}_cdf.svg"),
            caption: format!("{title}: latency CDF"),
            svg: line_chart(&cdf),
        },
        Figure {
            file: format!("{file_prefix}_tail.svg"),
            caption: format!("{title}: share of requests slower than x (log-log)"),
            svg: line_chart(&tail),
        },
    ]
}

/// Markdown table of comparisons.
pub fn comparison_table(caption: &str, cs: &[Comparison]) -> Table {
    Table {
        caption: caption.to_string(),
        header: ["figure", "ours", "paper", "ours/paper", "source"]
            .map(String::from)
            .to_vec(),
        rows: cs
            .iter()
            .map(|c| {
                vec![
                    c.what.clone(),
                    c.ours.map_or("-".into(), |v| fmt_value(v, &c.unit)),
                    c.paper_text.clone(),
                    c.ratio.map_or("-".into(), |r| format!("{r:.2}")),
                    c.source.clone(),
                ]
            })
            .collect(),
    }
}

pub fn names(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}
