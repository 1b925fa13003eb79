//! Runs independent simulations on a pool of worker threads.
//!
//! Each run is deterministic given its spec (its own seed, its own engine, devices and
//! generators, nothing shared), so the results do not depend on the number of workers or on
//! which worker ran what; only wall-clock timings do, and they are kept apart. Workers take
//! the next run from a shared counter, grouped by device preset and seed (such runs share an
//! aged fleet, see `fleets`) and longest estimated first.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::fleets::FleetCache;
use super::result::RunResult;
use super::spec::{LoadSpec, RunSpec, SloSpec};
use crate::driver::Sim;
use crate::scenario::{Scenario, is_fusion};
use crate::slo::{self, SloOptions};

/// A run finished (or failed); `done` runs of `total` are finished now.
#[derive(Clone, Debug)]
pub struct RunEvent<'a> {
    pub id: &'a str,
    pub done: usize,
    pub total: usize,
    pub wall_s: f64,
    pub ok: bool,
}

/// The outcome of one run: the result, or why there is none (setup error, stuck
/// simulation, or a panic, i.e. a broken invariant).
#[derive(Clone, Debug)]
pub struct Outcome {
    pub spec: RunSpec,
    pub result: Result<RunResult, String>,
    pub wall_s: f64,
}

/// Runs every spec, `jobs` at a time, calling `on_done` as runs finish. Outcomes come back
/// in the order of `specs`.
pub fn run_all(
    specs: &[RunSpec],
    jobs: usize,
    on_done: &(dyn Fn(RunEvent) + Sync),
) -> Vec<Outcome> {
    // Runs of one device preset and seed share an aged fleet: run them together (fewer
    // fleets alive at once), the costliest group first and within a group the costliest
    // run first, so the pool ends on short runs. Stable: equal estimates keep plan order.
    let group = |r: &RunSpec| (r.device.clone(), r.seed);
    let mut group_cost: std::collections::HashMap<(String, u64), f64> = Default::default();
    for r in specs {
        *group_cost.entry(group(r)).or_default() += estimate(r);
    }
    let mut order: Vec<usize> = (0..specs.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&specs[a], &specs[b]);
        let (gx, gy) = (group(x), group(y));
        group_cost[&gy]
            .total_cmp(&group_cost[&gx])
            .then(gx.cmp(&gy))
            .then(estimate(y).total_cmp(&estimate(x)))
    });
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Outcome>>> = specs.iter().map(|_| Mutex::new(None)).collect();
    let scenarios: Vec<_> = specs.iter().map(RunSpec::scenario).collect();
    let fleets = FleetCache::new(&scenarios);
    let workers = jobs.clamp(1, specs.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = order.get(k) else { break };
                    let out = run_with(&specs[i], &fleets);
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    on_done(RunEvent {
                        id: &out.spec.id(),
                        done: n,
                        total: specs.len(),
                        wall_s: out.wall_s,
                        ok: out.result.is_ok(),
                    });
                    *slots[i].lock().expect("result slot") = Some(out);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .expect("result slot")
                .expect("every run was taken")
        })
        .collect()
}

/// One run, start to finish, on this thread.
pub fn run_one(spec: &RunSpec) -> Outcome {
    run_with(spec, &FleetCache::new([]))
}

fn run_with(spec: &RunSpec, fleets: &FleetCache) -> Outcome {
    let t0 = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let sc = spec.scenario();
        if let Some(o) = &spec.slo {
            return run_search(spec, &sc, o);
        }
        let sim = match fleets
            .take(&sc)
            .map_err(|e| format!("setup: devices: {e}"))?
        {
            Some(devices) => Sim::with_fleet(&sc, devices),
            None => Sim::new(&sc),
        }
        .map_err(|e| format!("setup: {e}"))?;
        let d = sim
            .run_detailed(&mut |_| {})
            .map_err(|e| format!("run: {e}"))?;
        Ok(RunResult::new(spec, &d))
    }))
    .unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        Err(format!("panic: {msg}"))
    });
    Outcome {
        spec: spec.clone(),
        result,
        wall_s: t0.elapsed().as_secs_f64(),
    }
}

/// A load search ([`RunSpec::slo`]): many runs of `sc` at scaled loads, on fresh copies of
/// one fleet the search builds (so it does not take one from the cache).
fn run_search(spec: &RunSpec, sc: &Scenario, o: &SloSpec) -> Result<RunResult, String> {
    let target = o.target()?;
    let opts = SloOptions {
        start_iops: Some(o.start_iops),
        precision: o.precision,
        max_runs: o.max_runs,
        ideal_iops: slo::ideal_iops(sc, &target)?,
        ..SloOptions::default()
    };
    let (found, kept) =
        slo::search_keeping(sc, &target, &opts, &mut |_| {}).map_err(|e| format!("search: {e}"))?;
    let d = kept.ok_or("search: no run finished")?;
    let mut r = RunResult::new(spec, &d);
    r.slo = Some(found);
    Ok(r)
}

/// Rough relative cost of a run, only for ordering: virtual time (FusionRAID on aged
/// members is the slowest to simulate, see docs/BENCHMARKS.md) plus the prefill.
fn estimate(r: &RunSpec) -> f64 {
    let ms = r.duration_ms.unwrap_or(150) as f64;
    let factor = if is_fusion(&r.scheme) && r.aged {
        3.0
    } else {
        1.0
    };
    let tenants = match &r.load {
        LoadSpec::Mix { workloads } => workloads.len(),
        LoadSpec::Trace { .. } => 1,
        LoadSpec::TraceMix { workloads, .. } => workloads.len() + 1,
        LoadSpec::RandomWrites { .. } => 1,
        LoadSpec::Synthetic { tenants } => tenants.len(),
    } as f64;
    let prefill = if r.prefill { 1_000.0 * tenants } else { 0.0 };
    // A search is several runs (about half its bound, from experience).
    let runs = r
        .slo
        .as_ref()
        .map_or(1.0, |o| (o.max_runs as f64 / 2.0).max(1.0));
    ms * factor * runs + prefill
}
