//! The paper's experiments as lists of runs. The same builders serve planning (which runs to
//! make) and analysis (which results belong to which bar), so the two cannot drift apart.

use std::path::PathBuf;

use fusionraid_core::rng::Rng;
use serde::Serialize;

use super::failslow::{Case, FAILSLOW_SCHEMES};
use super::pitfalls::Config;
use super::sandook::{ISOLATION_SCHEMES, MIX_VARIANTS, SloArm, Tenancy};
use super::serw::Arm;
use super::size::Size;
use super::spec::{DetectorSpec, LoadSpec, RunSpec, SpikeSetting};
use crate::workload::Workload;

/// The experiments, in report order. The string is the id used by `--only` and for the
/// per-experiment JSON file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpId {
    /// Fig. 10: 20 random 4-workload mixes, five systems.
    Fig10,
    /// Fig. 12: 4-RAID5 -> RAID50 -> 4-RAIDM -> Fusion-ND -> FusionRAID.
    Fig12,
    /// Fig. 13 a-c: conversion on/off, write amplification, space.
    Fig13,
    /// Fig. 13d and Table 6: detector sweep, spikes, redirection.
    Detector,
    /// Fig. 14: clean vs aged members.
    Fig14,
    /// Not in the paper: Fig. 12's systems on consumer SSD members, whose device model
    /// spikes (buffer flushes, blocking GC) far more than the aged `dc` model does.
    Consumer,
    /// Fig. 11b: NV-RAID buffer-size sweep.
    Fig11b,
    /// The real TPC-C trace, alone and as one tenant of a mix.
    Trace,
    /// Not in the paper: the main mix on every system while a controlled spike process on
    /// every member sweeps spike rate and length.
    Sensitivity,
    /// Not in the paper: the Pitfalls study's question (`shared/seeds/003_*.txt`), how much
    /// sustained 4 KiB random-write speed spare capacity buys, for one SSD, in-place RAID5,
    /// a FusionRAID mirror and a FusionRAID RAID5 volume ([`super::pitfalls`]).
    Pitfalls,
    /// Not in the paper: write offload from busy SSDs to HDD logs (issue 21, after the SeRW
    /// talk, `shared/seeds/004_*.txt`): the main mix at a few loads on SSDs alone, SSDs plus
    /// HDDs with offload off, and with it on ([`super::serw`]).
    Serw,
    /// Not in the paper: every scheme on the main mix with no, one and two fail-slow
    /// members (issue 23; [`super::failslow`]).
    FailSlow,
    /// Not in the paper: Sandook's mechanisms (issue 20, `shared/seeds/002_*.txt`):
    /// throughput at a P90 target on 12 heterogeneous drives, a reader's isolation from
    /// write-heavy tenants, the main mix with the policies on and off ([`super::sandook`]).
    Sandook,
}

impl ExpId {
    pub const ALL: [ExpId; 13] = [
        ExpId::Fig10,
        ExpId::Fig12,
        ExpId::Fig13,
        ExpId::Detector,
        ExpId::Fig14,
        ExpId::Consumer,
        ExpId::Fig11b,
        ExpId::Trace,
        ExpId::Sensitivity,
        ExpId::Pitfalls,
        ExpId::Serw,
        ExpId::FailSlow,
        ExpId::Sandook,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ExpId::Fig10 => "fig10",
            ExpId::Fig12 => "fig12",
            ExpId::Fig13 => "fig13",
            ExpId::Detector => "detector",
            ExpId::Fig14 => "fig14",
            ExpId::Consumer => "consumer",
            ExpId::Fig11b => "fig11b",
            ExpId::Trace => "trace",
            ExpId::Sensitivity => "sensitivity",
            ExpId::Pitfalls => "pitfalls",
            ExpId::Serw => "serw",
            ExpId::FailSlow => "failslow",
            ExpId::Sandook => "sandook",
        }
    }

    pub fn parse(s: &str) -> Result<ExpId, String> {
        ExpId::ALL
            .into_iter()
            .find(|e| e.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                let all: Vec<&str> = ExpId::ALL.iter().map(|e| e.name()).collect();
                format!("unknown experiment '{s}' (known: {})", all.join(", "))
            })
    }
}

/// FusionRAID with every policy the pool offers (Sandook's steering: weights, read/write
/// segregation, congestion control; proactive discard; hedged writes), on the same pool, volumes and spare
/// share as the paper's FusionRAID: every experiment comparing systems runs it next to them.
pub const COMBINED: &str = "fusionraid+";
/// Fig. 10's systems (paper §5.2), and the combined system.
pub const FIG10_SCHEMES: [&str; 6] = [
    "4-raid5",
    "raid50",
    "lograid",
    "toleraid",
    "fusionraid",
    COMBINED,
];
/// Fig. 12's steps (paper §5.3), and the combined system.
pub const FIG12_SCHEMES: [&str; 6] = [
    "4-raid5",
    "raid50",
    "4-raidm",
    "fusion-nd",
    "fusionraid",
    COMBINED,
];
/// Fig. 13b-c's systems; FusionRAID runs with conversion on and off.
pub const FIG13_SCHEMES: [&str; 4] = ["4-raid5", "4-raidm", "fusionraid", COMBINED];
/// Fig. 14's systems.
pub const FIG14_SCHEMES: [&str; 4] = ["raid50", "lograid", "fusionraid", COMBINED];
/// The spike-sensitivity study's systems: every one the evaluation compares on the main mix.
pub const SENSITIVITY_SCHEMES: [&str; 8] = [
    "4-raid5",
    "raid50",
    "lograid",
    "toleraid",
    "4-raidm",
    "fusion-nd",
    "fusionraid",
    COMBINED,
];
/// The device preset of the `consumer` experiment (Intel 545s class).
pub const CONSUMER_DEVICE: &str = "consumer";
/// Fig. 11b's workloads (each alone on the pool).
pub const FIG11B_WORKLOADS: [Workload; 2] = [Workload::YcsbA, Workload::Tpcc];

/// The mix of paper §5.3-5.4: TPC-C, YCSB-A, TensorFlow, VirtualDesktop.
pub const MAIN_MIX: [Workload; 4] = [
    Workload::Tpcc,
    Workload::YcsbA,
    Workload::TensorFlow,
    Workload::VirtualDesktop,
];
/// The detector sweep shows Exchange (Fig. 13d); it replaces TensorFlow in the main mix.
pub const SWEEP_MIX: [Workload; 4] = [
    Workload::Tpcc,
    Workload::YcsbA,
    Workload::VirtualDesktop,
    Workload::Exchange,
];
/// Tenants next to the looped trace: the main mix with the real trace in TPC-C's place.
pub const TRACE_TENANTS: [Workload; 3] = [
    Workload::YcsbA,
    Workload::TensorFlow,
    Workload::VirtualDesktop,
];

/// `count` random 4-workload mixes of the 8 Table-4 workloads. They come in complementary
/// pairs (a random split of the eight into two halves), so every workload runs in exactly
/// half of the mixes (10 of 20; the paper's random draw gave 9-13), and no mix repeats while
/// unused pairs remain. Each mix lists its workloads in Table-4 order.
pub fn random_mixes(count: usize, seed: u64) -> Vec<Vec<Workload>> {
    let mut rng = Rng::new(seed ^ 0x6d69_7865_7331);
    let mut out: Vec<Vec<Workload>> = Vec::with_capacity(count);
    while out.len() < count {
        let mut pick = None;
        for _ in 0..1000 {
            let mut ws = Workload::ALL.to_vec();
            for i in (1..ws.len()).rev() {
                ws.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let (mut a, mut b) = (ws[..4].to_vec(), ws[4..].to_vec());
            a.sort();
            b.sort();
            let fresh = !out.contains(&a) && !out.contains(&b);
            pick = Some((a, b));
            if fresh {
                break;
            }
        }
        let (a, b) = pick.expect("at least one draw");
        out.push(a);
        if out.len() < count {
            out.push(b);
        }
    }
    out
}

/// Everything the evaluation runs, for one size and base seed.
#[derive(Clone, Debug)]
pub struct Plan {
    pub size: Size,
    pub seed: u64,
    pub mixes: Vec<Vec<Workload>>,
    /// The TPC-C trace; `None` skips the trace experiment.
    pub trace: Option<PathBuf>,
    pub experiments: Vec<ExpId>,
}

impl Plan {
    pub fn new(size: Size, seed: u64, trace: Option<PathBuf>, experiments: Vec<ExpId>) -> Plan {
        Plan {
            mixes: random_mixes(size.mixes, seed),
            size,
            seed,
            trace,
            experiments,
        }
    }

    fn mix(&self, ws: &[Workload]) -> LoadSpec {
        LoadSpec::Mix {
            workloads: ws.to_vec(),
        }
    }

    /// Fig. 10: `scheme` on mix `i`. The seed depends on the mix, not the scheme, so every
    /// system sees the same arrivals and the same device models.
    pub fn fig10_run(&self, scheme: &str, i: usize) -> RunSpec {
        let load = self.mix(&self.mixes[i]);
        RunSpec::new(
            scheme,
            load,
            self.size.mix_ms,
            // Wrapping: `--seed 18446744073709551615` overflowed here (a panic).
            self.seed.wrapping_add(i as u64),
            self.size.pool,
        )
    }

    /// The main mix (§5.3), replicate `rep`, aged members.
    pub fn main_run(&self, scheme: &str, rep: usize) -> RunSpec {
        let load = self.mix(&MAIN_MIX);
        RunSpec::new(
            scheme,
            load,
            self.size.main_ms,
            self.seed.wrapping_add(rep as u64),
            self.size.pool,
        )
    }

    /// The `consumer` experiment: [`Self::main_run`] on consumer members. Aged like every
    /// other run (the consumer model supports the paper's ageing: it rests between its GC
    /// watermarks), and with no detector given, so the scenario picks the consumer setting.
    pub fn consumer_run(&self, scheme: &str, rep: usize) -> RunSpec {
        let mut r = self.main_run(scheme, rep);
        r.device = CONSUMER_DEVICE.to_string();
        r
    }

    /// Fig. 13a: FusionRAID with conversion off on the main mix.
    pub fn noconv_run(&self, rep: usize) -> RunSpec {
        let mut r = self.main_run("fusionraid", rep);
        r.conversion = false;
        r
    }

    /// Fig. 14: the main mix on clean members.
    pub fn clean_run(&self, scheme: &str, rep: usize) -> RunSpec {
        let mut r = self.main_run(scheme, rep);
        r.aged = false;
        r
    }

    /// `scheme` running workload `w` alone for the alone-run length (Fig. 11b, Fig. 13b-c).
    fn alone_run(&self, scheme: &str, w: Workload) -> RunSpec {
        RunSpec::new(
            scheme,
            self.mix(&[w]),
            self.size.alone_ms,
            self.seed,
            self.size.pool,
        )
    }

    /// Fig. 13b-c: one workload alone, no prefill (so space and write amplification count
    /// only what the run wrote).
    pub fn alone_wa_run(&self, scheme: &str, w: Workload, conversion: bool) -> RunSpec {
        let mut r = self.alone_run(scheme, w);
        r.prefill = false;
        r.conversion = conversion;
        r.settle_ms = self.size.settle_ms;
        r
    }

    /// Fig. 13d: FusionRAID with detector `d` on the sweep mix.
    pub fn sweep_run(&self, d: Option<DetectorSpec>, scheme: &str) -> RunSpec {
        let load = self.mix(&SWEEP_MIX);
        let mut r = RunSpec::new(scheme, load, self.size.main_ms, self.seed, self.size.pool);
        r.detector = d;
        r
    }

    /// FusionRAID at grid point `d` of the sweep (the default detector where `d` is it).
    pub fn sweep_point(&self, d: DetectorSpec) -> RunSpec {
        let d = (d != DetectorSpec::paper_dc()).then_some(d);
        self.sweep_run(d, "fusionraid")
    }

    /// The sweep's grid, x̂ major.
    pub fn sweep_grid(&self) -> Vec<DetectorSpec> {
        let mut g = Vec::new();
        for &x_high in &self.size.x_high {
            for &t_us in &self.size.t_us {
                g.push(DetectorSpec { t_us, x_high });
            }
        }
        g
    }

    /// Fig. 11b: `w` alone on NV-RAID with a buffer of `mib` MiB, or on FusionRAID (`None`).
    pub fn nvram_run(&self, w: Workload, mib: Option<u64>) -> RunSpec {
        let scheme = if mib.is_some() {
            "nvraid"
        } else {
            "fusionraid"
        };
        let mut r = self.alone_run(scheme, w);
        r.nvram_bytes = mib.map(|m| m << 20);
        r
    }

    /// Fig. 11b's runs of the combined system: `w` alone, as FusionRAID's.
    pub fn combined_alone_run(&self, w: Workload) -> RunSpec {
        self.alone_run(COMBINED, w)
    }

    /// The trace once at its timestamps, alone.
    pub fn trace_run(&self, scheme: &str) -> Option<RunSpec> {
        let path = self.trace.clone()?;
        let mut r = RunSpec::new(
            scheme,
            LoadSpec::Trace { path },
            0,
            self.seed,
            self.size.pool,
        );
        r.duration_ms = self.size.trace_ms;
        r.warmup_ms = 0;
        Some(r)
    }

    /// The trace looped next to [`TRACE_TENANTS`].
    pub fn trace_mix_run(&self, scheme: &str) -> Option<RunSpec> {
        let path = self.trace.clone()?;
        let load = LoadSpec::TraceMix {
            path,
            workloads: TRACE_TENANTS.to_vec(),
        };
        Some(RunSpec::new(
            scheme,
            load,
            self.size.trace_mix_ms,
            self.seed,
            self.size.pool,
        ))
    }

    /// The sensitivity grid: no spikes first, then every rate above 0 x every length.
    pub fn spike_grid(&self) -> Vec<Option<SpikeSetting>> {
        let mut g = Vec::new();
        if self.size.spike_rates.contains(&0) {
            g.push(None);
        }
        for &per_min in self.size.spike_rates.iter().filter(|&&r| r > 0) {
            for &length_us in &self.size.spike_lengths_us {
                g.push(Some(SpikeSetting { per_min, length_us }));
            }
        }
        g
    }

    /// The sensitivity study: `scheme` on the main mix (aged `dc` members, the first seed)
    /// with spike process `k` on every member.
    pub fn spike_run(&self, scheme: &str, k: Option<SpikeSetting>) -> RunSpec {
        let mut r = RunSpec::new(
            scheme,
            self.mix(&MAIN_MIX),
            self.size.sensitivity_ms,
            self.seed,
            self.size.pool,
        );
        r.spikes = k;
        r
    }

    /// The `pitfalls` experiment's simulator run of configuration `c` (an array; `None` for
    /// the single SSD, which [`super::pitfalls::run_ssd`] measures) on `device` at `share`.
    pub fn pitfalls_run(&self, c: Config, device: &str, share: f64) -> Option<RunSpec> {
        self.size.pitfalls.run(c, device, share, self.seed)
    }

    /// The `serw` experiment's run of `arm` at `load` (a scale of the main mix), seed
    /// number `rep`.
    pub fn serw_run(&self, arm: Arm, load: f64, rep: usize) -> RunSpec {
        self.size.serw.run(arm, load, self.seed, rep)
    }

    /// The `serw` experiment's replay of the TPC-C trace on `arm`, seed number `rep` (none
    /// without a trace).
    pub fn serw_trace_run(&self, arm: Arm, rep: usize) -> Option<RunSpec> {
        let path = self.trace.clone()?;
        Some(
            self.size
                .serw
                .trace_run(arm, path, self.size.trace_ms, self.seed, rep),
        )
    }

    /// The `failslow` experiment's run of `scheme` in `case`, seed number `rep`.
    pub fn failslow_run(&self, scheme: &str, case: Case, rep: usize) -> RunSpec {
        self.size
            .failslow
            .run(scheme, case, self.seed, rep, self.size.pool)
    }

    /// The `sandook` experiment's load search of `arm`.
    pub fn sandook_slo_run(&self, arm: SloArm) -> RunSpec {
        self.size.sandook.slo_run(arm, self.seed)
    }

    /// The `sandook` experiment's reader on `scheme`, alone or next to the writers.
    pub fn sandook_isolation_run(&self, scheme: &str, t: Tenancy) -> RunSpec {
        self.size.sandook.isolation_run(scheme, t, self.seed)
    }

    /// The main mix (replicate `rep`) on `v`'s scheme with its mechanisms: with none named,
    /// the very run of Fig. 12.
    pub fn sandook_mix_run(&self, v: SloArm, rep: usize) -> RunSpec {
        let mut r = self.main_run(v.scheme, rep);
        r.steer = v.steer.map(String::from);
        r
    }

    /// The runs of one experiment, in a fixed order.
    pub fn runs_of(&self, e: ExpId) -> Vec<RunSpec> {
        let reps = 0..self.size.replicates;
        let mut v = Vec::new();
        match e {
            ExpId::Fig10 => {
                for i in 0..self.mixes.len() {
                    v.extend(FIG10_SCHEMES.iter().map(|s| self.fig10_run(s, i)));
                }
            }
            ExpId::Fig12 => {
                for r in reps {
                    v.extend(FIG12_SCHEMES.iter().map(|s| self.main_run(s, r)));
                }
            }
            ExpId::Fig13 => {
                for r in reps {
                    v.push(self.main_run("fusionraid", r));
                    v.push(self.noconv_run(r));
                }
                for &w in &self.size.wa_workloads {
                    v.extend(FIG13_SCHEMES.iter().map(|s| self.alone_wa_run(s, w, true)));
                    v.push(self.alone_wa_run("fusionraid", w, false));
                }
            }
            ExpId::Detector => {
                for r in reps {
                    v.push(self.main_run("fusion-nd", r));
                    v.push(self.main_run("fusionraid", r));
                }
                v.push(self.sweep_run(None, "fusion-nd"));
                v.extend(self.sweep_grid().into_iter().map(|d| self.sweep_point(d)));
            }
            ExpId::Fig14 => {
                for r in reps {
                    for s in FIG14_SCHEMES {
                        v.push(self.main_run(s, r));
                        v.push(self.clean_run(s, r));
                    }
                }
            }
            ExpId::Consumer => {
                for r in reps {
                    v.extend(FIG12_SCHEMES.iter().map(|s| self.consumer_run(s, r)));
                }
            }
            ExpId::Fig11b => {
                for w in FIG11B_WORKLOADS {
                    v.push(self.nvram_run(w, None));
                    v.push(self.combined_alone_run(w));
                    v.extend(
                        self.size
                            .nvram_mib
                            .iter()
                            .map(|&m| self.nvram_run(w, Some(m))),
                    );
                }
            }
            ExpId::Trace => {
                for &s in &self.size.trace_schemes {
                    v.extend(self.trace_run(s));
                    v.extend(self.trace_mix_run(s));
                }
            }
            ExpId::Sensitivity => {
                for k in self.spike_grid() {
                    v.extend(SENSITIVITY_SCHEMES.iter().map(|s| self.spike_run(s, k)));
                }
            }
            ExpId::Pitfalls => {
                let p = &self.size.pitfalls;
                for &d in &p.devices {
                    for c in Config::ALL {
                        v.extend(p.shares.iter().filter_map(|&s| self.pitfalls_run(c, d, s)));
                    }
                }
            }
            ExpId::Serw => {
                let s = &self.size.serw;
                for &load in &s.loads {
                    for rep in 0..s.seeds {
                        v.extend(Arm::ALL.iter().map(|&a| self.serw_run(a, load, rep)));
                    }
                }
                for rep in 0..s.seeds {
                    v.extend(Arm::ALL.iter().filter_map(|&a| self.serw_trace_run(a, rep)));
                }
            }
            ExpId::FailSlow => {
                for rep in 0..self.size.failslow.seeds {
                    for case in Case::ALL {
                        v.extend(
                            FAILSLOW_SCHEMES
                                .iter()
                                .map(|s| self.failslow_run(s, case, rep)),
                        );
                    }
                }
            }
            ExpId::Sandook => {
                v.extend(SloArm::ALL.map(|a| self.sandook_slo_run(a)));
                for s in ISOLATION_SCHEMES {
                    v.extend(Tenancy::ALL.map(|t| self.sandook_isolation_run(s, t)));
                }
                for r in reps {
                    v.extend(MIX_VARIANTS.map(|m| self.sandook_mix_run(m, r)));
                }
            }
        }
        v
    }

    /// Every distinct run of the selected experiments, first occurrence order.
    pub fn all_runs(&self) -> Vec<RunSpec> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for &e in &self.experiments {
            for r in self.runs_of(e) {
                if seen.insert(r.id()) {
                    out.push(r);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
