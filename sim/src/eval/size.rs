//! How big an evaluation is: run counts and virtual durations for `--tiny` (tests), `--quick`
//! and the full run. Only sizes differ between them, never the setup of a run.

use serde::Serialize;

use super::experiments::FIG10_SCHEMES;
use super::failslow::FailSlowSize;
use super::pitfalls::PitfallsSize;
use super::sandook::SandookSize;
use super::serw::SerwSize;
use super::spec::{PoolSize, names};
use crate::workload::Workload;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeName {
    /// Seconds on a laptop; tiny members and volumes. For tests: checks that every part of
    /// the report is produced, says nothing about the numbers.
    Tiny,
    /// A few minutes on two cores: every experiment, fewer and shorter runs.
    Quick,
    /// The paper's run counts (20 mixes), longer runs.
    Full,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Size {
    pub name: SizeName,
    pub pool: PoolSize,
    /// Fig. 10: random 4-workload mixes (the paper: 20).
    pub mixes: usize,
    /// Fig. 10: virtual time per mix run.
    pub mix_ms: u64,
    /// Seeds of the single-mix experiments (Fig. 12, 13a, 14, Table 6, the sweep).
    pub replicates: usize,
    /// Virtual time of those runs.
    pub main_ms: u64,
    /// Virtual time of single-workload runs (Fig. 11b, 13b-c).
    pub alone_ms: u64,
    /// Fig. 13b-c: after the run, how long conversion may go on with no load (the paper's
    /// space "with conversion fully performed").
    pub settle_ms: u64,
    /// Fig. 13b-c: the workloads run alone (the paper: all 8).
    #[serde(serialize_with = "names")]
    pub wa_workloads: Vec<Workload>,
    /// Virtual time of the looped trace mixed with generated tenants.
    pub trace_mix_ms: u64,
    /// The trace alone: `None` replays all of it, else the first this many milliseconds.
    pub trace_ms: Option<u64>,
    /// Systems of the trace experiment (Fig. 10's five in the full run).
    pub trace_schemes: Vec<&'static str>,
    /// Fig. 13d sweep: x̂ values and thresholds t (microseconds), y = 10 and x̌ = 0.
    pub x_high: Vec<u32>,
    pub t_us: Vec<u64>,
    /// Fig. 11b: NV-RAID buffer sizes in MiB.
    pub nvram_mib: Vec<u64>,
    /// Spike sensitivity: virtual time per run, spike rates (per member-minute; 0 is the
    /// run without spikes) and lengths (microseconds) of the grid.
    pub sensitivity_ms: u64,
    pub spike_rates: Vec<u32>,
    pub spike_lengths_us: Vec<u64>,
    /// The `pitfalls` experiment: devices, spare shares, pool and run lengths.
    pub pitfalls: PitfallsSize,
    /// The `serw` experiment: loads, seeds, pool and run lengths.
    pub serw: SerwSize,
    /// The `failslow` experiment: seeds, run length, the slow members' behaviour.
    pub failslow: FailSlowSize,
    /// The `sandook` experiment: the load searches' and isolation runs' lengths. Left out
    /// of `summary.json` (the experiment's own JSON has it), so evaluations without it
    /// keep their files.
    #[serde(skip)]
    pub sandook: SandookSize,
}

impl Size {
    pub fn of(name: SizeName) -> Size {
        match name {
            SizeName::Tiny => Size {
                name,
                pool: PoolSize::Tiny {
                    member_bytes: 4 << 30,
                    volume_bytes: 512 << 20,
                },
                mixes: 2,
                mix_ms: 40,
                replicates: 1,
                main_ms: 40,
                alone_ms: 40,
                settle_ms: 2_000,
                wa_workloads: Workload::ALL.to_vec(),
                trace_mix_ms: 40,
                trace_ms: Some(20),
                trace_schemes: FIG10_SCHEMES.to_vec(),
                x_high: vec![1, 4],
                t_us: vec![2_500, 10_000],
                nvram_mib: vec![64, 512],
                sensitivity_ms: 40,
                spike_rates: vec![0, 60],
                spike_lengths_us: vec![100_000],
                pitfalls: PitfallsSize {
                    devices: vec!["dc"],
                    shares: vec![0.0, 0.5],
                    disks: 5,
                    width: 5,
                    member_bytes: 32 << 30,
                    volume_bytes: 64 << 20,
                    offered_iops: 160_000,
                    raid5_warmup_ms: 10,
                    raid5_ms: 40,
                    fusion_warmup_ms: 10,
                    fusion_ms: 40,
                    ssd_warm_bytes: 8 << 30,
                    ssd_measure_ms: 500,
                },
                serw: SerwSize {
                    loads: vec![0.5],
                    seeds: 1,
                    duration_ms: 60,
                    warmup_ms: 10,
                    member_bytes: Some(4 << 30),
                    volume_bytes: Some(512 << 20),
                    ..SerwSize::full()
                },
                // 40 ms with 5x/10ms/10ms: the main runs' length (so the healthy runs are
                // the sensitivity study's), the full run's episodes scaled with it.
                failslow: FailSlowSize::scaled(200),
                sandook: SandookSize {
                    slo_ms: 10,
                    slo_warmup_ms: 2,
                    slo_start_iops: 2e6,
                    slo_precision: 0.5,
                    slo_max_runs: 3,
                    isolation_ms: 20,
                    isolation_warmup_ms: 5,
                },
            },
            SizeName::Quick => Size {
                name,
                pool: PoolSize::Paper,
                mixes: 2,
                mix_ms: 1_000,
                replicates: 1,
                main_ms: 1_500,
                alone_ms: 1_000,
                settle_ms: 60_000,
                // The main mix's workloads, VD (the paper's exception) among them.
                wa_workloads: super::experiments::MAIN_MIX.to_vec(),
                trace_mix_ms: 1_000,
                trace_ms: None,
                trace_schemes: vec!["4-raid5", "fusionraid", super::experiments::COMBINED],
                x_high: vec![1, 4],
                t_us: vec![2_500, 10_000],
                nvram_mib: vec![1 << 10, 64 << 10],
                sensitivity_ms: 1_000,
                spike_rates: vec![0, 5, 60],
                spike_lengths_us: vec![10_000, 100_000],
                pitfalls: PitfallsSize {
                    shares: vec![0.0, 0.5],
                    volume_bytes: 512 << 20,
                    raid5_warmup_ms: 45_000,
                    raid5_ms: 55_000,
                    fusion_warmup_ms: 15_000,
                    fusion_ms: 25_000,
                    ssd_warm_bytes: 8 << 30,
                    ssd_measure_ms: 10_000,
                    ..PitfallsSize::full()
                },
                serw: SerwSize {
                    seeds: 1,
                    duration_ms: 3_000,
                    ..SerwSize::full()
                },
                // 1 s with 5x/250ms/250ms, one seed: the healthy runs are the sensitivity
                // study's runs without spikes.
                failslow: FailSlowSize::scaled(8),
                // Four runs per search (4M, 8M, then two halvings): a bracket of about
                // +-20%, where the full run's is 5%. Sandook's searches cost most (about
                // 5x FusionRAID's at this size).
                sandook: SandookSize {
                    slo_ms: 30,
                    slo_warmup_ms: 10,
                    slo_start_iops: 4e6,
                    slo_precision: 0.3,
                    slo_max_runs: 4,
                    isolation_ms: 100,
                    isolation_warmup_ms: 20,
                },
            },
            SizeName::Full => Size {
                name,
                pool: PoolSize::Paper,
                mixes: 20,
                mix_ms: 5_000,
                replicates: 2,
                main_ms: 8_000,
                alone_ms: 8_000,
                settle_ms: 60_000,
                wa_workloads: Workload::ALL.to_vec(),
                trace_mix_ms: 8_000,
                trace_ms: None,
                trace_schemes: FIG10_SCHEMES.to_vec(),
                x_high: vec![1, 2, 4, 8],
                t_us: vec![2_500, 5_000, 10_000],
                nvram_mib: vec![
                    256,
                    1 << 10,
                    4 << 10,
                    8 << 10,
                    16 << 10,
                    64 << 10,
                    256 << 10,
                ],
                sensitivity_ms: 4_000,
                spike_rates: vec![0, 5, 20, 60],
                spike_lengths_us: vec![1_000, 10_000, 100_000],
                pitfalls: PitfallsSize::full(),
                serw: SerwSize::full(),
                failslow: FailSlowSize::full(),
                sandook: SandookSize::full(),
            },
        }
    }
}
