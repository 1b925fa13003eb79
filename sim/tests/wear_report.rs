//! The wear report and wear-aware placement on pools the other tests do not build: a
//! hybrid pool (HDD members report no wear) and a load that wears nothing.

use fusionraid_sim::scenario::Load;
use fusionraid_sim::workload::parse_synthetic;
use fusionraid_sim::{Scenario, Sim};

/// Six `dc` SSDs (width 5), `hdds` HDDs after them, one synthetic tenant, wear reported.
fn pool(hdds: usize, tenant: &str) -> Scenario {
    let mut sc = Scenario::default_mix(0.3);
    sc.pool.disks = 6 + hdds;
    sc.pool.hdds = hdds;
    sc.width = 5;
    sc.volume_bytes = Some(256 << 20);
    sc.load = Load::Synthetic {
        tenants: vec![parse_synthetic(tenant, "syn0").expect("tenant")],
    };
    sc.report_wear = true;
    sc
}

/// With two HDDs in the pool, the ladder held back nobody (their unknown wear stopped it)
/// and the report's projection gave the HDDs wear-out times and counted them as the
/// held-back members (a held-back pace of 0).
#[test]
fn a_hybrid_pool_holds_ssds_back_and_projects_only_them() {
    let mut sc = pool(2, "iops=20k,read=0,footprint=256M");
    sc.scheme_options.wear_gap = Some(0.05);
    let r = Sim::new(&sc).expect("sim").run().expect("run");
    let w = r.wear.expect("wear report");
    let p = w.projected_hours_to_wear_out.clone().expect("projection");
    assert_eq!(&p[6..], &[0.0, 0.0], "{p:?}");
    assert!(p[..6].iter().all(|&h| h > 0.0), "{p:?}");
    assert_eq!(w.gaps_hours.len(), 5, "{w:?}");
    // Held back, an SSD takes fewer writes than the others, but some.
    let k = w.held_back_pace.expect("pace");
    assert!(k > 0.0 && k < 1.0, "held-back pace {k}");
    // Held back for real: the last SSD (least worn among equals) wrote less than the first.
    assert!(r.disks[5].writes < r.disks[0].writes, "{:?}", r.disks);
}

/// A read-only run wears no member: the table said "wear out after inf-0 h".
#[test]
fn a_run_that_wears_nothing_says_so() {
    let sc = pool(0, "iops=5k,read=1,footprint=256M");
    let r = Sim::new(&sc).expect("sim").run().expect("run");
    let table = r.to_table();
    assert!(table.contains("no member wore during the run"), "{table}");
    assert!(!table.contains("inf"), "{table}");
}
