//! The regression guard of the busy floor of write offload (issue 21: offload must stay off
//! when the SSDs are not busy; docs/EVALUATION.md, "The busy floor"): on a hybrid pool
//! under the main mix at a tenth of its rate, SeRW's relative rule alone still redirects
//! replica copies, the floor stops it; at half the rate the floor lets offload work.
//! Deterministic: same seed, same bytes.

use fusionraid_sim::{Load, Report, Scenario, Sim};

fn run(load: f64, floor: Option<f64>) -> Report {
    // The main mix for 2 s, its Table-4 rates scaled by `load`.
    let mut sc = Scenario::default_mix(2.0);
    if let Load::Workloads { scale, .. } = &mut sc.load {
        *scale = load;
    }
    sc.pool.disks = 10; // 8 SSDs, then the HDDs
    sc.pool.hdds = 2;
    sc.width = 7;
    sc.warmup_ns = 500_000_000;
    sc.seed = 1;
    sc.scheme_options.offload = true;
    sc.scheme_options.offload_floor = floor;
    Sim::new(&sc).expect("scenario").run().expect("run")
}

/// Offloaded copies per replicated block write.
fn redirected(r: &Report) -> f64 {
    let e = &r.engine;
    e.offloaded_writes as f64 / e.replicated_block_writes.max(1) as f64
}

#[test]
fn offload_stays_off_on_a_nearly_idle_pool_and_works_on_a_busy_one() {
    let idle_rule = redirected(&run(0.1, Some(0.0)));
    let idle = redirected(&run(0.1, None));
    let busy = redirected(&run(0.5, None));
    eprintln!(
        "redirected: load 0.1 rule alone {idle_rule:.4}, with the floor {idle:.4}; load 0.5 {busy:.4}"
    );
    assert!(idle_rule > 0.05, "the rule alone redirects at low load");
    assert!(idle < 0.01, "the floor keeps offload off at low load");
    assert!(busy > 0.05, "the floor lets offload work at high load");
}
