//! What one run leaves behind: its spec, per-workload latency figures (with a CDF) and the
//! simulator's full report. Serialized as `runs/<id>.json`; holds nothing that depends on
//! the wall clock, the machine or the worker count.

use serde::Serialize;

use super::spec::RunSpec;
use crate::driver::Detailed;
use crate::slo::SloResult;
use crate::stats::{LatencyHist, OpHists, Report};

/// Quantiles at which CDFs are sampled: dense in the body, then the tail decade by decade.
pub const CDF_QUANTILES: [f64; 30] = [
    0.001, 0.01, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75,
    0.8, 0.85, 0.9, 0.925, 0.95, 0.97, 0.98, 0.99, 0.995, 0.999, 0.9995, 0.9999, 1.0,
];

/// Latency of one workload (or of the whole run) in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyFigures {
    pub requests: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// Mean of the slowest 1% (the paper's Table 5/6 "slowest 1%" figure).
    pub slowest1_mean_us: f64,
    pub read_p50_us: f64,
    pub read_p99_us: f64,
    pub write_p50_us: f64,
    pub write_p99_us: f64,
    /// `(latency_us, cumulative share)` at [`CDF_QUANTILES`].
    pub cdf: Vec<[f64; 2]>,
}

impl LatencyFigures {
    pub fn from_hists(h: &OpHists) -> Self {
        let all: LatencyHist = h.read.merged(&h.write);
        let s = all.summary();
        LatencyFigures {
            requests: s.count,
            mean_us: s.mean_us,
            p50_us: s.p50_us,
            p99_us: s.p99_us,
            p999_us: s.p999_us,
            max_us: s.max_us,
            slowest1_mean_us: all.tail_mean_us(0.01),
            read_p50_us: h.read.quantile_us(0.5),
            read_p99_us: h.read.quantile_us(0.99),
            write_p50_us: h.write.quantile_us(0.5),
            write_p99_us: h.write.quantile_us(0.99),
            cdf: all.cdf(&CDF_QUANTILES),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadResult {
    pub name: String,
    #[serde(flatten)]
    pub latency: LatencyFigures,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunResult {
    pub id: String,
    pub spec: RunSpec,
    /// In source order (the trace first where there is one).
    pub workloads: Vec<WorkloadResult>,
    pub all: LatencyFigures,
    /// The simulator's report (write amplification, space, spikes, redirection, ...).
    pub report: Report,
    /// A load search's runs and bracket ([`RunSpec::slo`]); the figures above are then the
    /// best load's run (or, where no load met the target, the lowest load's). Left out of
    /// the JSON for every other run, whose files keep their content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo: Option<SloResult>,
}

impl RunResult {
    pub fn new(spec: &RunSpec, d: &Detailed) -> Self {
        let workloads = d
            .report
            .latency
            .workloads
            .iter()
            .zip(&d.workloads)
            .map(|(w, h)| WorkloadResult {
                name: w.name.clone(),
                latency: LatencyFigures::from_hists(h),
            })
            .collect();
        RunResult {
            id: spec.id(),
            spec: spec.clone(),
            workloads,
            all: LatencyFigures::from_hists(&d.all),
            report: d.report.clone(),
            slo: None,
        }
    }

    /// The figures of workload `name` (or `trace`), if it had requests in the measured
    /// window (a light workload may have none in a short run).
    pub fn workload(&self, name: &str) -> Option<&LatencyFigures> {
        self.workloads
            .iter()
            .find(|w| w.name == name && w.latency.requests > 0)
            .map(|w| &w.latency)
    }

    /// Virtual time the run went on after arrivals stopped, as a share of the arrival
    /// window: near 0 when the pool kept up with the offered load, large when requests
    /// queued up and drained afterwards.
    pub fn drain_share(&self) -> f64 {
        match self.spec.duration_ms {
            Some(d) if d > 0 => {
                let ran_ms = (self.report.virtual_s - self.report.settled_s) * 1e3;
                ((ran_ms - d as f64) / d as f64).max(0.0)
            }
            _ => 0.0,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a run result serializes")
    }
}
