//! Same scenario, same seed: the same report, byte for byte. A different seed: a different one.

use fusionraid_sim::{Scenario, Sim};

/// A short run on a small pool that still has GC spikes, redirection and conversion in it.
fn scenario(seed: u64) -> Scenario {
    let mut sc = Scenario::default_mix(0.4);
    sc.pool.capacity_bytes = Some(8 << 30);
    sc.volume_bytes = Some(1 << 30);
    sc.seed = seed;
    sc
}

fn json(sc: &Scenario) -> String {
    Sim::new(sc).unwrap().run().unwrap().to_json()
}

#[test]
fn same_seed_gives_identical_json() {
    let a = json(&scenario(7));
    let b = json(&scenario(7));
    assert!(a.len() > 1000, "{a}");
    assert_eq!(a, b, "two runs with one seed differ");
    let c = json(&scenario(8));
    assert_ne!(a, c, "a different seed gave the same report");
}

#[test]
fn data_mode_and_trace_replay_are_deterministic_too() {
    let mut sc = scenario(3);
    sc.size_only = false;
    sc.volume_bytes = Some(128 << 20);
    sc.duration_ns = Some(150_000_000);
    assert_eq!(json(&sc), json(&sc));
    let mut sc = scenario(3);
    sc.load = fusionraid_sim::Load::Trace {
        path: concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/data/traces/tpcc-small.trace"
        )
        .into(),
        format: fusionraid_sim::trace::TraceFormat::DiskSim,
        mode: fusionraid_sim::trace::ReplayMode::ClosedLoop { queue_depth: 8 },
    };
    sc.duration_ns = None;
    assert_eq!(json(&sc), json(&sc));
}
