//! The report directory: `report.md`, `summary.json`, `timings.json`, `runs/`,
//! `experiments/`, `figures/`.

use std::fs;
use std::io;
use std::path::Path;

use serde::Serialize;

use super::analyze::{Comparison, Results, analyze};
use super::experiments::Plan;
use super::report::{Context, render};
use super::runner::Outcome;
use super::size::Size;

#[derive(Serialize)]
struct Summary<'a> {
    size: &'a Size,
    seed: u64,
    mixes: Vec<Vec<&'static str>>,
    trace: Option<String>,
    experiments: Vec<&'static str>,
    runs: usize,
    failed: Vec<(String, String)>,
    headline: Vec<Comparison>,
}

#[derive(Serialize)]
struct Timing {
    id: String,
    wall_s: f64,
}

#[derive(Serialize)]
struct Timings {
    jobs: usize,
    wall_s: f64,
    runs: Vec<Timing>,
}

#[derive(Serialize)]
struct FailedRun<'a> {
    id: String,
    spec: &'a super::spec::RunSpec,
    error: &'a str,
}

/// Removes the files an earlier evaluation left in `sub` (only `*.ext`), so the directory
/// holds exactly this evaluation's output.
fn clear(dir: &Path, ext: &str) -> io::Result<()> {
    if !dir.exists() {
        return fs::create_dir_all(dir);
    }
    for e in fs::read_dir(dir)? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == ext) && p.is_file() {
            fs::remove_file(p)?;
        }
    }
    Ok(())
}

fn json<T: Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("serializable");
    s.push('\n');
    s
}

/// Analyses `outcomes` (of `plan.all_runs()`) and writes the report directory.
pub fn write_output(
    dir: &Path,
    plan: &Plan,
    outcomes: &[Outcome],
    ctx: &Context,
) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let (runs, exps, figs) = (
        dir.join("runs"),
        dir.join("experiments"),
        dir.join("figures"),
    );
    clear(&runs, "json")?;
    clear(&exps, "json")?;
    clear(&figs, "svg")?;
    for o in outcomes {
        let id = o.spec.id();
        let text = match &o.result {
            Ok(r) => r.to_json() + "\n",
            Err(e) => json(&FailedRun {
                id: id.clone(),
                spec: &o.spec,
                error: e,
            }),
        };
        fs::write(runs.join(format!("{id}.json")), text)?;
    }
    let res = Results::new(outcomes);
    let outs: Vec<_> = plan
        .experiments
        .iter()
        .map(|&e| analyze(e, plan, &res))
        .collect();
    let mut names = std::collections::HashSet::new();
    for x in &outs {
        fs::write(exps.join(format!("{}.json", x.id.name())), json(&x.json))?;
        for f in &x.section.figures {
            assert!(names.insert(f.file.clone()), "two figures named {}", f.file);
            fs::write(figs.join(&f.file), &f.svg)?;
        }
    }
    let summary = Summary {
        size: &plan.size,
        seed: plan.seed,
        mixes: plan
            .mixes
            .iter()
            .map(|m| m.iter().map(|w| w.name()).collect())
            .collect(),
        trace: plan.trace.as_ref().map(|p| p.display().to_string()),
        experiments: plan.experiments.iter().map(|e| e.name()).collect(),
        runs: outcomes.len(),
        failed: outcomes
            .iter()
            .filter_map(|o| o.result.as_ref().err().map(|e| (o.spec.id(), e.clone())))
            .collect(),
        headline: outs.iter().flat_map(|x| x.headline.clone()).collect(),
    };
    fs::write(dir.join("summary.json"), json(&summary))?;
    let mut t: Vec<Timing> = outcomes
        .iter()
        .map(|o| Timing {
            id: o.spec.id(),
            wall_s: (o.wall_s * 1000.0).round() / 1000.0,
        })
        .collect();
    t.sort_by(|a, b| a.id.cmp(&b.id));
    let timings = Timings {
        jobs: ctx.jobs,
        wall_s: ctx.wall_s,
        runs: t,
    };
    fs::write(dir.join("timings.json"), json(&timings))?;
    fs::write(dir.join("report.md"), render(plan, &outs, outcomes, ctx))?;
    Ok(())
}
