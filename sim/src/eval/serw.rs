//! The `serw` experiment: write offload to HDD logs (issue 21, after SeRW,
//! `shared/seeds/004_*.txt`).
//!
//! A pool of a few aged `dc` SSDs runs the main mix scaled to a load; three arms share the
//! SSDs, the mix and the seed:
//!
//! - [`Arm::NoHdd`]: the SSDs alone (what a pool without HDDs gives);
//! - [`Arm::Off`]: the same SSDs plus `hdds` `hdd7200` members, offload off (the HDDs hold
//!   no stripes, so this should match [`Arm::NoHdd`]: a check that adding them costs nothing);
//! - [`Arm::On`]: the same hybrid pool with offload on (replica writes to busy SSDs go to an
//!   HDD log instead).
//!
//! [`Figures`] are what the talk reports: read mean and tail, SSD bytes written, the share of
//! replica writes redirected, HDD utilisation.

use std::path::PathBuf;

use serde::Serialize;

use super::experiments::MAIN_MIX;
use super::result::RunResult;
use super::spec::{LoadSpec, PoolSize, RunSpec};

/// One arm of the experiment, in report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    NoHdd,
    Off,
    On,
}

impl Arm {
    pub const ALL: [Arm; 3] = [Arm::NoHdd, Arm::Off, Arm::On];

    pub fn label(self) -> &'static str {
        match self {
            Arm::NoHdd => "SSDs only",
            Arm::Off => "+HDDs, offload off",
            Arm::On => "+HDDs, offload on",
        }
    }
}

/// How big the experiment is (part of [`super::Size`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SerwSize {
    /// Scales of the main mix's Table-4 IOPS, ascending. With 8 SSDs, 0.3 puts about the
    /// per-member load of the 29-member pool at 1.0 on each SSD (medium); 0.1 is low, 0.5
    /// high.
    pub loads: Vec<f64>,
    /// Seeds per load and arm (consecutive from the plan's).
    pub seeds: usize,
    pub ssds: usize,
    pub hdds: usize,
    pub width: usize,
    pub duration_ms: u64,
    pub warmup_ms: u64,
    /// `None`: members of the preset's capacity, volumes of each workload's footprint.
    pub member_bytes: Option<u64>,
    pub volume_bytes: Option<u64>,
}

impl SerwSize {
    /// The full run: the `sim` runs of docs/EVALUATION.md ("Hybrid SSD+HDD pools") with two
    /// seeds.
    pub fn full() -> Self {
        SerwSize {
            loads: vec![0.1, 0.3, 0.5],
            seeds: 2,
            ssds: 8,
            hdds: 2,
            width: 7,
            duration_ms: 5_000,
            warmup_ms: 1_000,
            member_bytes: None,
            volume_bytes: None,
        }
    }

    /// The run of `arm` at `load`, seed number `rep` after `seed`.
    pub fn run(&self, arm: Arm, load: f64, seed: u64, rep: usize) -> RunSpec {
        let load_spec = LoadSpec::Mix {
            workloads: MAIN_MIX.to_vec(),
        };
        let mut r = self.arm_run(arm, load_spec, seed, rep);
        r.load_scale = load;
        r
    }

    /// The run of `arm` replaying the trace at `path` once at its timestamps (the TPC-C
    /// trace, the talk's other workload), at most `duration_ms` of it, seed number `rep`.
    pub fn trace_run(
        &self,
        arm: Arm,
        path: PathBuf,
        duration_ms: Option<u64>,
        seed: u64,
        rep: usize,
    ) -> RunSpec {
        let mut r = self.arm_run(arm, LoadSpec::Trace { path }, seed, rep);
        r.duration_ms = duration_ms;
        r.warmup_ms = 0;
        r
    }

    /// `load` on `arm`'s pool, seed number `rep` after `seed`.
    fn arm_run(&self, arm: Arm, load: LoadSpec, seed: u64, rep: usize) -> RunSpec {
        let pool = match (self.member_bytes, self.volume_bytes) {
            (Some(member_bytes), Some(volume_bytes)) => PoolSize::Array {
                disks: self.ssds,
                width: self.width,
                member_bytes,
                volume_bytes,
            },
            _ => PoolSize::Members {
                disks: self.ssds,
                width: self.width,
            },
        };
        let mut r = RunSpec::new(
            "fusionraid",
            load,
            self.duration_ms,
            seed.wrapping_add(rep as u64),
            pool,
        );
        r.warmup_ms = self.warmup_ms;
        r.hdds = if arm == Arm::NoHdd { 0 } else { self.hdds };
        r.offload = arm == Arm::On;
        r
    }
}

/// What one run gives the experiment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    pub reads: u64,
    pub read_mean_us: f64,
    pub read_p99_us: f64,
    pub read_p999_us: f64,
    pub read_p9999_us: f64,
    /// Device bytes written to the SSD members over the run (after prefill).
    pub ssd_bytes_written: u64,
    /// Offloaded copies per replicated block write.
    pub redirected_share: f64,
    /// The busiest HDD's device time (its operations x their mean device latency) over the
    /// run's virtual time; 0 without HDDs.
    pub hdd_util: f64,
}

impl Figures {
    /// The figures of `r`, whose first `r.spec.hdds` members from the end are the HDDs.
    pub fn of(r: &RunResult) -> Figures {
        let read = &r.report.latency.all.read;
        let disks = &r.report.disks;
        let ssds = disks.len() - r.spec.hdds;
        let run_us = r.report.virtual_s * 1e6;
        let e = &r.report.engine;
        Figures {
            reads: read.count,
            read_mean_us: read.mean_us,
            read_p99_us: read.p99_us,
            read_p999_us: read.p999_us,
            read_p9999_us: read.p9999_us,
            ssd_bytes_written: disks[..ssds].iter().map(|d| d.bytes_written).sum(),
            redirected_share: e.offloaded_writes as f64 / e.replicated_block_writes.max(1) as f64,
            hdd_util: disks[ssds..]
                .iter()
                .map(|d| (d.reads + d.writes) as f64 * d.mean_device_latency_us / run_us.max(1.0))
                .fold(0.0, f64::max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::runner::run_one;
    use crate::eval::{ExpId, Plan, Size, SizeName};

    /// The runs: every load x seed x arm, the three arms of one load and seed on the same
    /// SSDs, mix and seed, only the HDDs and the switch differing; ids new and distinct.
    #[test]
    fn serw_runs_cover_every_load_seed_and_arm() {
        let p = Plan::new(Size::of(SizeName::Quick), 7, None, vec![ExpId::Serw]);
        let s = &p.size.serw;
        let runs = p.all_runs();
        assert_eq!(runs.len(), s.loads.len() * s.seeds * 3);
        let ids: std::collections::HashSet<String> = runs.iter().map(RunSpec::id).collect();
        assert_eq!(ids.len(), runs.len());
        let [none, off, on] = Arm::ALL.map(|a| p.serw_run(a, 0.3, 0));
        assert_eq!((none.hdds, off.hdds, on.hdds), (0, 2, 2));
        assert_eq!(
            (none.offload, off.offload, on.offload),
            (false, false, true)
        );
        let scs = [&none, &off, &on].map(|r| r.scenario());
        for sc in &scs {
            sc.validate().unwrap();
            assert_eq!((sc.seed, sc.width), (7, 7));
            assert!(
                matches!(sc.load, crate::scenario::Load::Workloads { scale, .. } if scale == 0.3)
            );
        }
        assert_eq!(scs.each_ref().map(|sc| sc.pool.disks), [8, 10, 10]);
        assert_eq!(scs[2].scheme_params(1 << 40).pool.hdds, vec![8, 9]);
        assert!(scs[2].scheme_options.offload && !scs[1].scheme_options.offload);
        assert_eq!(p.serw_run(Arm::On, 0.3, 1).seed, 8);
        // No run of another experiment is a `serw` run.
        let every = Plan::new(Size::of(SizeName::Quick), 7, None, ExpId::ALL.to_vec());
        for e in ExpId::ALL.iter().filter(|&&e| e != ExpId::Serw) {
            assert!(every.runs_of(*e).iter().all(|r| !ids.contains(&r.id())));
        }
    }

    /// With a trace, every seed adds the three pools replaying it once, whole, on the same
    /// pools as the mix runs; without one, none.
    #[test]
    fn serw_replays_the_trace_on_each_pool_when_there_is_one() {
        let trace = PathBuf::from("t.trace");
        let p = Plan::new(
            Size::of(SizeName::Quick),
            7,
            Some(trace.clone()),
            vec![ExpId::Serw],
        );
        let s = &p.size.serw;
        let runs = p.all_runs();
        assert_eq!(runs.len(), (s.loads.len() + 1) * s.seeds * 3);
        let [none, off, on] = Arm::ALL.map(|a| p.serw_trace_run(a, 0).expect("a trace"));
        for r in [&none, &off, &on] {
            assert!(matches!(&r.load, LoadSpec::Trace { path } if *path == trace));
            assert_eq!((r.duration_ms, r.warmup_ms, r.load_scale), (None, 0, 1.0));
            assert!(runs.contains(r));
        }
        assert_eq!((none.hdds, off.hdds, on.hdds), (0, 2, 2));
        assert_eq!((off.offload, on.offload), (false, true));
        assert_eq!(on.pool, p.serw_run(Arm::On, 0.3, 0).pool);
        let no_trace = Plan::new(Size::of(SizeName::Quick), 7, None, vec![ExpId::Serw]);
        assert!(no_trace.serw_trace_run(Arm::On, 0).is_none());
    }

    /// The tiny run (load 0.5, 60 ms on 4 GiB members): with offload on some replica writes
    /// go to the HDD logs, the HDDs do some work, and the SSDs write fewer bytes than with
    /// offload off, which writes nothing to the HDDs.
    #[test]
    fn tiny_offload_redirects_writes_and_cuts_ssd_bytes() {
        let p = Plan::new(Size::of(SizeName::Tiny), 1, None, vec![ExpId::Serw]);
        let load = p.size.serw.loads[0];
        let fig = |a: Arm| {
            let o = run_one(&p.serw_run(a, load, 0));
            Figures::of(o.result.as_ref().expect("the run completes"))
        };
        let (off, on) = (fig(Arm::Off), fig(Arm::On));
        assert!(off.reads > 0 && on.reads > 0);
        assert_eq!((off.redirected_share, off.hdd_util), (0.0, 0.0));
        assert!(on.redirected_share > 0.0, "{on:?}");
        assert!(on.hdd_util > 0.0, "{on:?}");
        assert!(
            on.ssd_bytes_written < off.ssd_bytes_written,
            "{off:?} {on:?}"
        );
    }
}
