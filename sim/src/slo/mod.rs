//! Throughput at a latency target: the highest offered load whose latency percentile stays
//! under a bound (`fusionraid sim --slo p90:1ms`).
//!
//! [`search`] runs a scenario at several offered loads, every tenant's IOPS scaled by the
//! same factor, each run deterministic from the scenario's seed. From a start load it doubles
//! while the target is met (or halves while it is not) until one load meets it and another
//! does not, then bisects between the two until they are within the wanted precision, in a
//! bounded number of runs. A run fails the target when its percentile is at or over the bound,
//! but also when it drops requests (the driver's hold queue overflowed) or answers fewer than
//! a set share of its arrivals before arrivals stop: a saturated pool must not meet a latency
//! target by shedding or queueing the load it cannot serve.
//!
//! The result holds every run and the bracket; with an "ideal" figure (for instance the sum
//! of the members' peak IOPS) it also gives achieved / ideal.

mod bound;
mod table;
mod target;

use fusionraid_core::Nanos;
use fusionraid_devices::DeviceModel;
use serde::Serialize;

pub use bound::{
    IsolationFloor, SegregationBound, isolation_floor, parity_reads_on_writers, segregation_bound,
};
pub use target::{SloOps, SloTarget};

use crate::driver::{Detailed, Sim, SimError, build_fleet};
use crate::scenario::{Load, Scenario, ScenarioSummary};

/// How the search runs.
#[derive(Clone, Debug, PartialEq)]
pub struct SloOptions {
    /// Offered IOPS of the first run; `None` = the scenario's own load.
    pub start_iops: Option<f64>,
    /// Stop bisecting when the failing load is within this share above the passing one.
    pub precision: f64,
    /// Most runs in all (bracketing and bisection).
    pub max_runs: usize,
    /// A run must answer at least this share of its measured arrivals before arrivals stop.
    pub min_answered: f64,
    /// The reference the result is compared with (achieved / ideal), if any.
    pub ideal_iops: Option<f64>,
}

impl Default for SloOptions {
    fn default() -> Self {
        SloOptions {
            start_iops: None,
            precision: 0.02,
            max_runs: 20,
            min_answered: 0.95,
            ideal_iops: None,
        }
    }
}

impl SloOptions {
    /// Why these options cannot drive a search, if they cannot.
    pub fn problem(&self) -> Option<String> {
        let positive = |x: Option<f64>| x.is_none_or(|x| x.is_finite() && x > 0.0);
        if !positive(self.start_iops) {
            return Some("the start load must be a positive number of IOPS".into());
        }
        if !positive(self.ideal_iops) {
            return Some("the ideal must be a positive number of IOPS".into());
        }
        if !(self.precision > 0.0 && self.precision < 1.0) {
            return Some(format!("precision {} must be in (0, 1)", self.precision));
        }
        if self.max_runs < 2 {
            return Some("the search needs at least 2 runs".into());
        }
        (!(self.min_answered > 0.0 && self.min_answered <= 1.0))
            .then(|| format!("answered share {} must be in (0, 1]", self.min_answered))
    }
}

/// Why a run meets the target or not (the first reason that applies, in this order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    /// Requests were dropped.
    Dropped,
    /// Fewer than the wanted share of arrivals were answered before arrivals stopped.
    FellBehind,
    /// The percentile is at or over the bound.
    Latency,
}

/// One run of the search.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Probe {
    pub offered_iops: f64,
    /// Measured requests answered before arrivals stopped, per second of the window.
    pub achieved_iops: f64,
    /// Measured requests (arrived after the warm-up), answered at any time.
    pub measured: u64,
    /// The target's percentile, microseconds.
    pub latency_us: f64,
    pub dropped: u64,
    pub verdict: Verdict,
}

impl Probe {
    pub fn passed(&self) -> bool {
        self.verdict == Verdict::Pass
    }
}

/// What the search found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SloResult {
    /// The scenario at its own load (every run scales its tenants' rates).
    pub scenario: ScenarioSummary,
    pub target: SloTarget,
    pub min_answered: f64,
    /// Every run, in the order run.
    pub probes: Vec<Probe>,
    /// The highest load that met the target; `None` if none did.
    pub best: Option<Probe>,
    /// The lowest load above `best` that failed it; `None` if none did within the runs.
    pub fails_above: Option<Probe>,
    pub ideal_iops: Option<f64>,
    /// `best`'s achieved IOPS over `ideal_iops`.
    pub of_ideal: Option<f64>,
    /// Why the search stopped early, when a run measured too few requests to judge.
    pub note: Option<String>,
}

impl SloResult {
    /// Pretty JSON; deterministic for a given scenario, seed and commit.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a result always serializes")
    }

    /// The offered IOPS at the target, if a load met it.
    pub fn max_iops(&self) -> Option<f64> {
        self.best.as_ref().map(|p| p.offered_iops)
    }

    /// How far above `best` the failing load is, as a share (the precision reached).
    pub fn bracket(&self) -> Option<f64> {
        let (b, f) = (self.best.as_ref()?, self.fails_above.as_ref()?);
        Some(f.offered_iops / b.offered_iops - 1.0)
    }
}

/// Offered IOPS of a scenario's generated load: the sum of its tenants' rates.
pub fn offered_iops(sc: &Scenario) -> Option<f64> {
    match &sc.load {
        Load::Workloads { list, scale } => {
            Some(list.iter().map(|w| w.spec().iops).sum::<f64>() * scale)
        }
        Load::Synthetic { tenants } => Some(tenants.iter().map(|t| t.iops).sum()),
        Load::Trace { .. } | Load::TraceMix { .. } => None,
    }
}

/// The ideal throughput of the scenario's pool for its generated load: the sum of every
/// member's peak ([`crate::fleet_curves::PoolCurves::ideal_iops`]) at the load's write share,
/// by the 1 ms rule at the target's percentile (P50, P90 or P99, the nearest at or below).
pub fn ideal_iops(sc: &Scenario, target: &SloTarget) -> Result<Option<f64>, String> {
    let specs: Vec<crate::workload::WorkloadSpec> = match &sc.load {
        Load::Workloads { list, .. } => list.iter().map(|w| w.spec()).collect(),
        Load::Synthetic { tenants } => tenants.clone(),
        Load::Trace { .. } | Load::TraceMix { .. } => return Ok(None),
    };
    let total: f64 = specs.iter().map(|t| t.iops).sum();
    if total <= 0.0 {
        return Ok(None);
    }
    let writes = specs.iter().map(|t| t.iops * t.write_ratio).sum::<f64>() / total;
    let p = match target.percentile {
        x if x >= 99.0 => fusionraid_core::steer::Percentile::P99,
        x if x >= 90.0 => fusionraid_core::steer::Percentile::P90,
        _ => fusionraid_core::steer::Percentile::P50,
    };
    Ok(Some(
        crate::fleet_curves::pool_curves(&sc.pool)?.ideal_iops(writes, p),
    ))
}

/// The scenario with every tenant's rate scaled so the total offered load is `iops`.
pub fn at_offered(sc: &Scenario, iops: f64) -> Result<Scenario, String> {
    let base = offered_iops(sc)
        .ok_or("the SLO search scales generated load (Table-4 or synthetic tenants), not traces")?;
    if base.is_nan() || base <= 0.0 {
        return Err("the scenario offers no load to scale".into());
    }
    let factor = iops / base;
    let mut out = sc.clone();
    match &mut out.load {
        Load::Workloads { scale, .. } => *scale *= factor,
        Load::Synthetic { tenants } => tenants.iter_mut().for_each(|t| t.iops *= factor),
        Load::Trace { .. } | Load::TraceMix { .. } => unreachable!("no offered load"),
    }
    Ok(out)
}

/// Loads below this are not tried: the target is then out of reach at any load.
const MIN_IOPS: f64 = 1.0;
/// Growth of the load while bracketing.
const GROWTH: f64 = 2.0;

/// Finds the highest offered load of `base` (its tenants scaled together) meeting `target`;
/// `on_probe` sees each run as it ends (progress). Errors: bad options, a load that is not
/// generated, a run that could not be set up or finish, or a run too short to measure the
/// percentile.
pub fn search(
    base: &Scenario,
    target: &SloTarget,
    opts: &SloOptions,
    on_probe: &mut dyn FnMut(&Probe),
) -> Result<SloResult, SimError> {
    search_keeping(base, target, opts, on_probe).map(|(r, _)| r)
}

/// [`search`], also handing back the full output of one run: the best load's, or where no
/// load met the target the lowest load's (the `sandook` evaluation keeps it as the run's
/// report).
pub fn search_keeping(
    base: &Scenario,
    target: &SloTarget,
    opts: &SloOptions,
    on_probe: &mut dyn FnMut(&Probe),
) -> Result<(SloResult, Option<Detailed>), SimError> {
    let bad = SimError::Scenario;
    if let Some(p) = opts.problem().or_else(|| target.problem()) {
        return Err(bad(p));
    }
    let own = offered_iops(base).ok_or_else(|| bad(at_offered(base, 1.0).unwrap_err()))?;
    base.validate().map_err(bad)?;
    let fleet = build_fleet(&base.pool, base.seed).map_err(SimError::Device)?;
    let mut s = Search {
        base,
        target,
        opts,
        fleet,
        probes: Vec::new(),
        best: None,
        fail: None,
        note: None,
        on_probe,
        kept: None,
    };
    s.bracket(opts.start_iops.unwrap_or(own))?;
    s.bisect()?;
    let kept = s.kept.take().map(|(_, _, d)| d);
    Ok((s.result(), kept))
}

type Fleet = Vec<Box<dyn DeviceModel>>;

struct Search<'a> {
    base: &'a Scenario,
    target: &'a SloTarget,
    opts: &'a SloOptions,
    /// The members every run starts from (built once: ageing them is most of a short run).
    fleet: Fleet,
    probes: Vec<Probe>,
    /// Indices in `probes` of the highest pass and of the lowest failure above it.
    best: Option<usize>,
    fail: Option<usize>,
    /// Why the search stopped short of a bracket, if a run measured too few requests.
    note: Option<String>,
    on_probe: &'a mut dyn FnMut(&Probe),
    /// The run [`search_keeping`] hands back so far: its load, whether it passed, its output.
    kept: Option<(f64, bool, Detailed)>,
}

impl Search<'_> {
    /// Doubles from `start` while the target is met, halves while it is not, until both a
    /// pass and a failure are known (or the runs or the loads run out).
    fn bracket(&mut self, start: f64) -> Result<(), SimError> {
        let mut x = start;
        while self.probes.len() < self.opts.max_runs && x >= MIN_IOPS {
            let Some(passed) = self.run(x)? else { break };
            if self.best.is_some() && self.fail.is_some() {
                break;
            }
            x = if passed { x * GROWTH } else { x / GROWTH };
        }
        Ok(())
    }

    /// Halves the bracket until the failure is within `precision` of the pass.
    fn bisect(&mut self) -> Result<(), SimError> {
        while let (Some(b), Some(f)) = (self.best, self.fail)
            && self.probes.len() < self.opts.max_runs
        {
            let (lo, hi) = (self.probes[b].offered_iops, self.probes[f].offered_iops);
            if hi / lo - 1.0 <= self.opts.precision {
                break;
            }
            if self.run((lo + hi) / 2.0)?.is_none() {
                break;
            }
        }
        Ok(())
    }

    /// One run at `offered` IOPS; keeps the bracket (the highest pass, the lowest failure
    /// above it) and says whether it passed, or `None` when the run measured too few
    /// requests to judge (an error if it is the first).
    fn run(&mut self, offered: f64) -> Result<Option<bool>, SimError> {
        let sc = at_offered(self.base, offered).map_err(SimError::Scenario)?;
        let copy: Option<Fleet> = self.fleet.iter().map(|d| d.clone_box()).collect();
        let sim = match copy {
            Some(f) => Sim::with_fleet(&sc, f)?,
            None => Sim::new(&sc)?,
        };
        let detailed = sim.run_detailed(&mut |_| {})?;
        let p = match self.judge(offered, &sc, &detailed) {
            Ok(p) => p,
            Err(short) if self.probes.is_empty() => return Err(SimError::Scenario(short)),
            Err(short) => {
                self.note = Some(short);
                return Ok(None);
            }
        };
        (self.on_probe)(&p);
        let passed = p.passed();
        let i = self.probes.len();
        let offered_at = |j: Option<usize>| j.map(|j| self.probes[j].offered_iops);
        if passed && offered_at(self.best).is_none_or(|b| offered > b) {
            self.best = Some(i);
        }
        if !passed && offered_at(self.fail).is_none_or(|f| offered < f) {
            self.fail = Some(i);
        }
        let keep = match &self.kept {
            None => true,
            Some((o, true, _)) => passed && offered > *o,
            Some((o, false, _)) => passed || offered < *o,
        };
        if keep {
            self.kept = Some((offered, passed, detailed));
        }
        self.probes.push(p);
        Ok(Some(passed))
    }

    /// The probe of a finished run, or why it measured too few requests.
    fn judge(&self, offered: f64, sc: &Scenario, d: &Detailed) -> Result<Probe, String> {
        let hist = match self.target.ops {
            SloOps::All => d.all.read.merged(&d.all.write),
            SloOps::Read => d.all.read.clone(),
            SloOps::Write => d.all.write.clone(),
        };
        let measured = d.all.read.count() + d.all.write.count();
        // At least ten requests beyond the percentile, or it is one request's latency.
        let need = (10.0 / (1.0 - self.target.quantile())).ceil() as u64;
        if hist.count() < need {
            return Err(format!(
                "at {offered:.0} IOPS a run measures {} requests, fewer than the {need} a {} \
                 needs (a longer duration measures more)",
                hist.count(),
                self.target.label()
            ));
        }
        let latency_us = hist.quantile_us(self.target.quantile());
        let dropped = d.report.requests.dropped;
        let answered = d.answered_in_window as f64 / measured.max(1) as f64;
        let verdict = if dropped > 0 {
            Verdict::Dropped
        } else if answered < self.opts.min_answered {
            Verdict::FellBehind
        } else if !self.target.met_by(latency_us) {
            Verdict::Latency
        } else {
            Verdict::Pass
        };
        Ok(Probe {
            offered_iops: offered,
            achieved_iops: d.answered_in_window as f64 / window_s(sc),
            measured,
            latency_us,
            dropped,
            verdict,
        })
    }

    fn result(self) -> SloResult {
        let best = self.best.map(|i| self.probes[i].clone());
        let fails_above = self.fail.map(|i| self.probes[i].clone());
        // Without a pass the lowest failure bounds nothing from above.
        let fails_above = best.as_ref().and(fails_above);
        let of_ideal = best
            .as_ref()
            .zip(self.opts.ideal_iops)
            .map(|(b, ideal)| b.achieved_iops / ideal);
        SloResult {
            scenario: self.base.summary(),
            target: *self.target,
            min_answered: self.opts.min_answered,
            probes: self.probes,
            best,
            fails_above,
            ideal_iops: self.opts.ideal_iops,
            of_ideal,
            note: self.note,
        }
    }
}

/// The measured window in seconds: the arrivals after the warm-up.
fn window_s(sc: &Scenario) -> f64 {
    let d: Nanos = sc.duration_ns.unwrap_or(0);
    (d.saturating_sub(sc.warmup_ns)).max(1) as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Workload, parse_synthetic};

    #[test]
    fn loads_scale_every_tenant_together() {
        let mix = Scenario::default_mix(1.0);
        let table4: f64 = [
            Workload::Tpcc,
            Workload::YcsbA,
            Workload::TensorFlow,
            Workload::VirtualDesktop,
        ]
        .iter()
        .map(|w| w.table4().iops)
        .sum();
        assert_eq!(offered_iops(&mix), Some(table4));
        let doubled = at_offered(&mix, 2.0 * table4).unwrap();
        assert!(matches!(doubled.load, Load::Workloads { scale, .. } if scale == 2.0));
        let mut syn = mix.clone();
        syn.load = Load::Synthetic {
            tenants: vec![
                parse_synthetic("iops=300", "a").unwrap(),
                parse_synthetic("iops=100", "b").unwrap(),
            ],
        };
        let Load::Synthetic { tenants } = at_offered(&syn, 1000.0).unwrap().load else {
            panic!("still synthetic");
        };
        assert_eq!((tenants[0].iops, tenants[1].iops), (750.0, 250.0));
    }

    #[test]
    fn bad_options_are_named() {
        let ok = SloOptions::default();
        assert_eq!(ok.problem(), None);
        let cases = [
            (
                SloOptions {
                    start_iops: Some(0.0),
                    ..ok.clone()
                },
                "start load",
            ),
            (
                SloOptions {
                    ideal_iops: Some(f64::NAN),
                    ..ok.clone()
                },
                "ideal",
            ),
            (
                SloOptions {
                    precision: 1.0,
                    ..ok.clone()
                },
                "precision",
            ),
            (
                SloOptions {
                    max_runs: 1,
                    ..ok.clone()
                },
                "at least 2 runs",
            ),
            (
                SloOptions {
                    min_answered: 0.0,
                    ..ok.clone()
                },
                "answered share",
            ),
        ];
        for (o, want) in cases {
            let p = o.problem().unwrap();
            assert!(p.contains(want), "{p}");
        }
    }
}
