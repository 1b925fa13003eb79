//! The `failslow` experiment (issue 23): every scheme on the main mix with no, one and two
//! fail-slow members.
//!
//! A fail-slow member keeps answering, only `factor` times slower in episodes
//! ([`fusionraid_devices::fail_slow`]). Field studies say how rare that state is (Tail at
//! Store, Perseus: [`super::paper`]); the experiment asks what each scheme does *given* it:
//! the main mix on the aged `dc` pool, and three [`Case`]s that share everything else
//! (seed, arrivals, device models): no fail-slow member, member 3, members 3 and 10 (in two
//! different 7-member groups of the grouped baselines). The episodes are periodic, so every
//! run of a size sees the same number of them whatever its seed.
//!
//! [`Figures`] are what the study reports per run: P50, P99 and P99.9 over every request,
//! the slowest workload's P99, and the detector's spikes per SSD-minute.

use fusionraid_devices::fail_slow::FailSlowSpec;
use serde::Serialize;

use super::experiments::{COMBINED, MAIN_MIX};
use super::result::RunResult;
use super::spec::{FailSlowSetting, LoadSpec, PoolSize, RunSpec};

/// Every scheme the study compares: the paper's systems, OpenZFS-style sit-out, Sandook, and
/// the combined system.
pub const FAILSLOW_SCHEMES: [&str; 10] = [
    "4-raid5",
    "raid50",
    "lograid",
    "toleraid",
    "sitout",
    "4-raidm",
    "sandook",
    "fusion-nd",
    "fusionraid",
    COMBINED,
];

/// Which members are fail-slow, in report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Case {
    None,
    One,
    Two,
}

impl Case {
    pub const ALL: [Case; 3] = [Case::None, Case::One, Case::Two];

    /// The fail-slow members. Disk 3 sits in the baselines' first 7-member group, disk 10
    /// in the second: two groups each carry one slow member.
    pub fn disks(self) -> &'static [usize] {
        match self {
            Case::None => &[],
            Case::One => &[3],
            Case::Two => &[3, 10],
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Case::None => "none",
            Case::One => "one (disk 3)",
            Case::Two => "two (disks 3, 10)",
        }
    }
}

/// How big the experiment is (part of [`super::Size`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailSlowSize {
    /// Seeds per scheme and case (consecutive from the plan's, as the replicates of the
    /// main-mix experiments).
    pub seeds: usize,
    pub duration_ms: u64,
    pub warmup_ms: u64,
    /// The fail-slow members' behaviour (`sim --fail-slow` text).
    #[serde(serialize_with = "super::spec::spec_text")]
    pub spec: FailSlowSpec,
}

impl FailSlowSize {
    /// The full run: `scripts/fail-slow-study.sh`'s defaults as of af6d562 (8 s of which
    /// 0.8 s warm-up, 5x for 2 s out of every 4: slow at 2-4 s and 6-8 s) with the
    /// evaluation's two seeds. The runs without a fail-slow member are then Fig. 12's.
    pub fn full() -> Self {
        FailSlowSize {
            seeds: 2,
            duration_ms: 8_000,
            warmup_ms: 800,
            spec: FailSlowSpec::parse("5x/2s/2s").expect("a valid spec"),
        }
    }

    /// The full run's timing scaled by `1 / div` (duration, warm-up, episodes and gaps), one
    /// seed: the same two episodes in a shorter run.
    pub fn scaled(div: u64) -> Self {
        let f = Self::full();
        let ms = |x: u64| x / div;
        FailSlowSize {
            seeds: 1,
            duration_ms: ms(f.duration_ms),
            warmup_ms: ms(f.warmup_ms),
            spec: FailSlowSpec::parse(&format!("5x/{0}ms/{0}ms", ms(2_000))).expect("valid"),
        }
    }

    /// `scheme` in `case`, seed number `rep` after `seed`, on `pool`.
    pub fn run(&self, scheme: &str, case: Case, seed: u64, rep: usize, pool: PoolSize) -> RunSpec {
        let load = LoadSpec::Mix {
            workloads: MAIN_MIX.to_vec(),
        };
        let mut r = RunSpec::new(
            scheme,
            load,
            self.duration_ms,
            seed.wrapping_add(rep as u64),
            pool,
        );
        r.warmup_ms = self.warmup_ms;
        r.fail_slow = (case != Case::None).then(|| FailSlowSetting {
            disks: case.disks().to_vec(),
            spec: self.spec,
        });
        r
    }
}

/// What one run gives the experiment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    /// The highest P99 of the run's workloads.
    pub worst_workload_p99_us: f64,
    pub spikes_per_ssd_minute: f64,
}

impl Figures {
    pub fn of(r: &RunResult) -> Figures {
        Figures {
            p50_us: r.all.p50_us,
            p99_us: r.all.p99_us,
            p999_us: r.all.p999_us,
            worst_workload_p99_us: r
                .workloads
                .iter()
                .map(|w| w.latency.p99_us)
                .fold(0.0, f64::max),
            spikes_per_ssd_minute: r.report.spikes.per_device_minute,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::runner::run_one;
    use crate::eval::{ExpId, Plan, Size, SizeName};

    /// The runs: every scheme x case x seed; the fail-slow members in the spec only when
    /// there are some, and the run without them the plain main-mix run (the same id, so
    /// an evaluation makes it once for every experiment that has it).
    #[test]
    fn failslow_runs_cover_every_scheme_and_case() {
        for name in [SizeName::Tiny, SizeName::Quick, SizeName::Full] {
            let p = Plan::new(Size::of(name), 7, None, vec![ExpId::FailSlow]);
            let s = &p.size.failslow;
            let runs = p.all_runs();
            assert_eq!(runs.len(), FAILSLOW_SCHEMES.len() * 3 * s.seeds);
            let ids: std::collections::HashSet<String> = runs.iter().map(RunSpec::id).collect();
            assert_eq!(ids.len(), runs.len());
            for scheme in FAILSLOW_SCHEMES {
                for rep in 0..s.seeds {
                    let [none, one, two] = Case::ALL.map(|c| p.failslow_run(scheme, c, rep));
                    assert!(none.fail_slow.is_none());
                    let json = serde_json::to_string(&none).unwrap();
                    assert!(!json.contains("fail_slow"), "{json}");
                    assert_eq!(one.fail_slow.as_ref().unwrap().disks, [3]);
                    assert_eq!(two.fail_slow.as_ref().unwrap().disks, [3, 10]);
                    for r in [&none, &one, &two] {
                        assert_eq!((r.seed, r.scheme.as_str()), (7 + rep as u64, scheme));
                        assert!(runs.contains(r));
                        let sc = r.scenario();
                        sc.validate().unwrap();
                        assert_eq!(
                            sc.pool.fail_slow.len(),
                            r.fail_slow.as_ref().map_or(0, |f| f.disks.len())
                        );
                    }
                    let spec = &one.fail_slow.as_ref().unwrap().spec;
                    assert_eq!(*spec, s.spec);
                    // Both episodes of each slow member fall inside the measured window.
                    let fusionraid_devices::fail_slow::SlowSchedule::Periodic { on_ns, off_ns } =
                        spec.schedule
                    else {
                        panic!("periodic episodes");
                    };
                    assert_eq!(2 * (on_ns + off_ns), s.duration_ms * 1_000_000);
                    assert!(s.warmup_ms * 1_000_000 < off_ns);
                }
            }
        }
        // The full size is the script's: 8 s, 0.8 s warm-up, 5x/2s/2s; its healthy runs
        // are Fig. 12's.
        let p = Plan::new(Size::of(SizeName::Full), 1, None, vec![ExpId::FailSlow]);
        let r = p.failslow_run("raid50", Case::Two, 1);
        assert!(
            r.id()
                .starts_with("raid50_tpcc+ycsb-a+tf+vd_aged_fs3+10_5x-2s-2s_8000ms_s2_")
        );
        assert_eq!(r.warmup_ms, 800);
        assert_eq!(
            p.failslow_run("fusionraid", Case::None, 1),
            p.main_run("fusionraid", 1)
        );
        // The quick size's healthy runs are the sensitivity study's runs without spikes.
        let q = Plan::new(Size::of(SizeName::Quick), 1, None, vec![ExpId::FailSlow]);
        assert_eq!(
            q.failslow_run("raid50", Case::None, 0),
            q.spike_run("raid50", None)
        );
    }

    /// At the tiny size (40 ms, 5x for 10 ms of every 20), one fail-slow member makes
    /// RAID50's P99 worse than with none: its group's stripe writes wait for the slow
    /// member. (Asserted on the deterministic runs; the numbers themselves mean nothing.)
    #[test]
    fn tiny_one_fail_slow_member_worsens_raid50s_tail() {
        let p = Plan::new(Size::of(SizeName::Tiny), 1, None, vec![ExpId::FailSlow]);
        let fig = |c: Case| {
            let o = run_one(&p.failslow_run("raid50", c, 0));
            Figures::of(o.result.as_ref().expect("the run completes"))
        };
        let (none, one) = (fig(Case::None), fig(Case::One));
        assert!(none.p99_us > 0.0);
        assert!(one.p99_us > 1.5 * none.p99_us, "{none:?} {one:?}");
    }
}
