//! The `sandook` experiment: Sandook's mechanisms (issue 20, after Sandook, NSDI'26,
//! `shared/seeds/002_*.txt`), as the `sandook` scheme and as `fusionraid+` policies.
//!
//! Three parts, each a list of [`RunSpec`]s:
//!
//! - **Throughput at the SLO** ([`SloArm`]): Sandook's setting, 12 heterogeneous fitted
//!   drives (`sandook12`, fresh), 90% reads of 4 KiB, P90 < 1 ms; each arm is one load
//!   search ([`RunSpec::slo`], `sim --slo`) of a scheme with a set of mechanisms.
//! - **Isolation** ([`Tenancy`]): a read-only tenant alone on the same pool, and next to two
//!   write-heavy tenants, on `fusionraid`, `fusionraid+` and `sandook`.
//! - **The main mix** ([`MIX_VARIANTS`]): the paper's mix on aged `dc` members with the
//!   policies off (`fusionraid`) and on (`fusionraid+` with some or all mechanisms); the
//!   plain and all-mechanism runs are the ones Fig. 12 makes.

use serde::Serialize;

use super::spec::{LoadSpec, PoolSize, RunSpec, SloSpec};

/// Sandook's fleet: one fitted model per profiled serial (`fusionraid_devices::fleet`).
pub const FLEET: &str = "sandook12";
/// Members of the fleet; stripes of the RAID schemes are 6 wide (5+1).
pub const FLEET_DISKS: usize = 12;
pub const FLEET_WIDTH: usize = 6;
/// The talk's load: 90% reads of 4 KiB, uniform over 32 GiB (the search scales its rate).
pub const SLO_TENANT: &str = "read=0.9,bs=4k,iops=1M,footprint=32G";
/// The talk's target.
pub const SLO_TARGET: &str = "p90:1ms";
/// The reader of the isolation part and its two write-heavy neighbours.
pub const READER: &str = "reader";
pub const READER_TENANT: &str = "read=1.0,iops=400k,footprint=8G,name=reader";
pub const WRITER_TENANTS: [&str; 2] = [
    "read=0.2,bs=16k,iops=60k,footprint=8G,name=w1",
    "read=0.2,bs=16k,iops=60k,footprint=8G,name=w2",
];
/// The schemes of the isolation part.
pub const ISOLATION_SCHEMES: [&str; 3] = ["fusionraid", super::experiments::COMBINED, "sandook"];

/// One load search: a scheme and the mechanisms it steers with (`None`: the scheme has none
/// to choose, or all three, the default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SloArm {
    pub scheme: &'static str,
    pub steer: Option<&'static str>,
}

impl SloArm {
    /// The arms in report order: Sandook with none, one, two and all mechanisms, FusionRAID,
    /// FusionRAID with weights and congestion, and with all three.
    pub const ALL: [SloArm; 8] = [
        SloArm::new("sandook", Some("none")),
        SloArm::new("sandook", Some("weights")),
        SloArm::new("sandook", Some("segregation")),
        SloArm::new("sandook", Some("weights,congestion")),
        SloArm::new("sandook", None),
        SloArm::new("fusionraid", None),
        SloArm::new(super::experiments::COMBINED, Some("weights,congestion")),
        SloArm::new(super::experiments::COMBINED, None),
    ];
    /// Sandook with every mechanism: the issue's reference.
    pub const SANDOOK: SloArm = SloArm::new("sandook", None);
    /// Sandook without segregation (weights and congestion).
    pub const SANDOOK_NO_SEGREGATION: SloArm = SloArm::new("sandook", Some("weights,congestion"));
    /// Sandook with equal weights and nothing else.
    pub const SANDOOK_EQUAL: SloArm = SloArm::new("sandook", Some("none"));
    /// FusionRAID with every policy.
    pub const COMBINED: SloArm = SloArm::new(super::experiments::COMBINED, None);

    const fn new(scheme: &'static str, steer: Option<&'static str>) -> Self {
        SloArm { scheme, steer }
    }

    /// What the report calls the mechanisms.
    pub fn mechanisms(self) -> &'static str {
        match (self.scheme, self.steer) {
            ("fusionraid", _) => "(paper's policies)",
            (_, Some("none")) => "none (equal weights)",
            (_, Some("weights")) => "weights",
            (_, Some("segregation")) => "segregation",
            (_, Some("weights,congestion")) => "weights, congestion",
            (_, None) => "weights, segregation, congestion",
            (_, Some(other)) => other,
        }
    }

    pub fn label(self) -> String {
        format!("{}, {}", self.scheme, self.mechanisms())
    }
}

/// The reader alone on the pool, or next to the writers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tenancy {
    Private,
    Shared,
}

impl Tenancy {
    pub const ALL: [Tenancy; 2] = [Tenancy::Private, Tenancy::Shared];
}

/// The main mix's variants: the scheme and its mechanisms, policies off first.
pub const MIX_VARIANTS: [SloArm; 4] = [
    SloArm::new("fusionraid", None),
    SloArm::new(super::experiments::COMBINED, Some("weights,congestion")),
    SloArm::new(super::experiments::COMBINED, Some("segregation")),
    SloArm::new(super::experiments::COMBINED, None),
];

/// How big the experiment is (part of [`super::Size`]). The main mix's runs take the plan's
/// `main_ms` and replicates, as Fig. 12's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SandookSize {
    /// Arrivals per search run, and the unmeasured start of each.
    pub slo_ms: u64,
    pub slo_warmup_ms: u64,
    /// The search's first load, precision and most runs.
    pub slo_start_iops: f64,
    pub slo_precision: f64,
    pub slo_max_runs: usize,
    /// The isolation runs' arrivals and warm-up.
    pub isolation_ms: u64,
    pub isolation_warmup_ms: u64,
}

impl SandookSize {
    /// The full run: the `sim` commands of docs/EVALUATION.md (0.5 s of arrivals, 0.1 s of
    /// warm-up, 5% precision).
    pub fn full() -> Self {
        SandookSize {
            slo_ms: 500,
            slo_warmup_ms: 100,
            slo_start_iops: 2e6,
            slo_precision: 0.05,
            slo_max_runs: 20,
            isolation_ms: 500,
            isolation_warmup_ms: 100,
        }
    }

    fn fleet_run(&self, scheme: &str, tenants: Vec<String>, ms: u64, seed: u64) -> RunSpec {
        let pool = PoolSize::Members {
            disks: FLEET_DISKS,
            width: FLEET_WIDTH,
        };
        let mut r = RunSpec::new(scheme, LoadSpec::Synthetic { tenants }, ms, seed, pool);
        r.device = FLEET.to_string();
        // Sandook's drives were fresh.
        r.aged = false;
        r
    }

    /// The load search of `arm`.
    pub fn slo_run(&self, arm: SloArm, seed: u64) -> RunSpec {
        let mut r = self.fleet_run(arm.scheme, vec![SLO_TENANT.into()], self.slo_ms, seed);
        r.warmup_ms = self.slo_warmup_ms;
        r.steer = arm.steer.map(String::from);
        r.slo = Some(SloSpec {
            target: SLO_TARGET.into(),
            start_iops: self.slo_start_iops,
            precision: self.slo_precision,
            max_runs: self.slo_max_runs,
        });
        r
    }

    /// The reader on `scheme`, alone or shared; every mechanism on where the scheme steers.
    pub fn isolation_run(&self, scheme: &str, t: Tenancy, seed: u64) -> RunSpec {
        let mut tenants = vec![READER_TENANT.to_string()];
        if t == Tenancy::Shared {
            tenants.extend(WRITER_TENANTS.map(String::from));
        }
        let mut r = self.fleet_run(scheme, tenants, self.isolation_ms, seed);
        r.warmup_ms = self.isolation_warmup_ms;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::runner::run_one;
    use crate::eval::{ExpId, Plan, Size, SizeName};
    use crate::scenario::Load;

    /// The runs cover every arm: a search per SLO arm, the reader alone and shared per
    /// scheme, the main mix per variant and replicate; ids distinct; the steering, the
    /// search and the tenants reach the scenario; the plain and all-mechanism main-mix runs
    /// are Fig. 12's own.
    #[test]
    fn sandook_runs_cover_every_arm() {
        let p = Plan::new(Size::of(SizeName::Quick), 3, None, vec![ExpId::Sandook]);
        let runs = p.all_runs();
        let reps = p.size.replicates;
        assert_eq!(
            runs.len(),
            SloArm::ALL.len() + 2 * ISOLATION_SCHEMES.len() + MIX_VARIANTS.len() * reps
        );
        let ids: std::collections::HashSet<String> = runs.iter().map(RunSpec::id).collect();
        assert_eq!(ids.len(), runs.len());
        for a in SloArm::ALL {
            let r = p.sandook_slo_run(a);
            assert_eq!((r.scheme.as_str(), r.steer.as_deref()), (a.scheme, a.steer));
            assert!(r.slo.is_some() && !r.aged && r.device == FLEET);
            let sc = r.scenario();
            sc.validate().unwrap();
            assert_eq!((sc.pool.disks, sc.width, sc.seed), (12, 6, 3));
            assert!(matches!(&sc.load, Load::Synthetic { tenants } if tenants.len() == 1));
        }
        let none = p.sandook_slo_run(SloArm::SANDOOK_EQUAL).scenario();
        let st = &none.scheme_options.steer;
        assert!(!st.profile_weights && !st.segregation && !st.congestion);
        let wc = p.sandook_slo_run(SloArm::SANDOOK_NO_SEGREGATION).scenario();
        let st = &wc.scheme_options.steer;
        assert!(st.profile_weights && !st.segregation && st.congestion);
        let all = p.sandook_slo_run(SloArm::SANDOOK).scenario();
        assert_eq!(
            all.scheme_options.steer,
            fusionraid_core::steer::SteerConfig::default()
        );
        let shared = p
            .sandook_isolation_run("sandook", Tenancy::Shared)
            .scenario();
        let Load::Synthetic { tenants } = &shared.load else {
            panic!("synthetic tenants")
        };
        let names: Vec<&str> = tenants.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["reader", "w1", "w2"]);
        assert_eq!(tenants[1].write_sizes.mean_bytes(), 16384.0);
        assert!((tenants[1].write_ratio - 0.8).abs() < 1e-9);
        let fig12 = p.runs_of(ExpId::Fig12);
        for rep in 0..reps {
            assert!(fig12.contains(&p.sandook_mix_run(MIX_VARIANTS[0], rep)));
            assert!(fig12.contains(&p.sandook_mix_run(MIX_VARIANTS[3], rep)));
            assert!(!fig12.contains(&p.sandook_mix_run(MIX_VARIANTS[1], rep)));
        }
    }

    /// The new fields stay out of the JSON at their defaults (so no earlier run changes its
    /// id or file), and show in the id when set.
    #[test]
    fn steering_and_search_fields_are_absent_at_their_defaults() {
        let p = Plan::new(Size::of(SizeName::Quick), 1, None, vec![ExpId::Sandook]);
        let plain = p.main_run("fusionraid", 0);
        let json = serde_json::to_string(&plain).unwrap();
        assert!(!json.contains("steer") && !json.contains("slo"), "{json}");
        let v = p.sandook_mix_run(MIX_VARIANTS[1], 0);
        assert!(v.id().contains("_steer-weights+congestion_"), "{}", v.id());
        let s = p.sandook_slo_run(SloArm::SANDOOK);
        assert!(
            s.id().starts_with("sandook_syn1_sandook12_clean_"),
            "{}",
            s.id()
        );
        assert!(s.id().contains("_slo-p90-1ms_"), "{}", s.id());
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains(r#""slo":{"target":"p90:1ms""#), "{json}");
        assert!(!json.contains("steer"), "{json}");
    }

    /// The tiny isolation runs on `fusionraid`: the reader next to the write-heavy tenants
    /// waits far longer at P99 than with the pool to itself (deterministic; 137 us against
    /// 2.3 ms when written: the writers share its members and their flash).
    #[test]
    fn tiny_writers_slow_the_reader() {
        let p = Plan::new(Size::of(SizeName::Tiny), 1, None, vec![ExpId::Sandook]);
        let p99 = |t| {
            let o = run_one(&p.sandook_isolation_run("fusionraid", t));
            let r = o.result.expect("the run completes");
            r.workload(READER).expect("the reader ran").read_p99_us
        };
        let (alone, shared) = (p99(Tenancy::Private), p99(Tenancy::Shared));
        assert!(shared > 2.0 * alone, "alone {alone} us, shared {shared} us");
    }
}
