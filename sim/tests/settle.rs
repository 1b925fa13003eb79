//! `Scenario::settle_ns`: after the last reply the engine keeps running on its timers, so
//! background conversion can proceed with no load, and the report says how long that took.

use fusionraid_sim::workload::Workload;
use fusionraid_sim::{Load, Scenario, Sim};

fn scenario(settle_ns: u64) -> Scenario {
    let mut sc = Scenario::default_mix(0.3);
    sc.pool.capacity_bytes = Some(8 << 30);
    sc.volume_bytes = Some(1 << 30);
    sc.prefill = false;
    sc.load = Load::Workloads {
        list: vec![Workload::YcsbA],
        scale: 1.0,
    };
    sc.settle_ns = settle_ns;
    sc
}

#[test]
fn settling_lets_conversion_run_after_the_load() {
    let busy = Sim::new(&scenario(0)).unwrap().run().unwrap();
    let settled = Sim::new(&scenario(10_000_000_000)).unwrap().run().unwrap();
    assert_eq!(busy.settled_s, 0.0);
    assert!(settled.settled_s > 0.0, "{}", settled.settled_s);
    assert!(settled.settled_s <= 10.0);
    assert!(settled.virtual_s >= busy.virtual_s + settled.settled_s - 1e-9);
    // The same requests, answered the same way: settling starts after the last reply.
    assert_eq!(busy.latency, settled.latency);
    assert!(
        settled.engine.conversions > busy.engine.conversions,
        "{} vs {}",
        settled.engine.conversions,
        busy.engine.conversions
    );
    assert!(settled.space.conversion_backlog < busy.space.conversion_backlog);
    assert!(settled.space.used_over_mapped < busy.space.used_over_mapped);
}
