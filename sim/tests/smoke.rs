//! Every registered scheme runs a short mixed workload to the end with sane statistics; data
//! mode reads back what was written; backpressure holds requests instead of losing them.

use fusionraid_sim::scenario::{is_fusion, known_schemes};
use fusionraid_sim::stats::{LatencySummary, Report};
use fusionraid_sim::{Scenario, Sim};

fn small(secs: f64) -> Scenario {
    let mut sc = Scenario::default_mix(secs);
    sc.pool.capacity_bytes = Some(8 << 30);
    sc.volume_bytes = Some(1 << 30);
    sc
}

fn run(sc: &Scenario) -> Report {
    Sim::new(sc)
        .unwrap_or_else(|e| panic!("{}: {e}", sc.scheme))
        .run()
        .unwrap_or_else(|e| panic!("{}: {e}", sc.scheme))
}

fn sane(what: &str, s: &LatencySummary) {
    assert!(s.count > 0, "{what}: no requests");
    assert!(s.p50_us > 0.0, "{what}: zero median {s:?}");
    assert!(
        s.p50_us <= s.p99_us && s.p99_us <= s.p999_us && s.p999_us <= s.max_us,
        "{what}: quantiles out of order {s:?}"
    );
    assert!(s.mean_us > 0.0 && s.mean_us <= s.max_us, "{what}: {s:?}");
}

#[test]
fn every_registered_scheme_completes_with_sane_stats() {
    for name in known_schemes() {
        for aged in [false, true] {
            let mut sc = small(0.3);
            sc.scheme = name.to_string();
            sc.pool.aged = aged;
            let r = run(&sc);
            let what = format!("{name} aged={aged}");
            let q = &r.requests;
            assert!(q.completed > 500, "{what}: {q:?}");
            assert_eq!(q.completed, q.arrived, "{what}");
            assert_eq!(q.failed + q.dropped, 0, "{what}: {q:?}");
            assert!(q.reads > 0 && q.writes > 0, "{what}: {q:?}");
            sane(&format!("{what} read"), &r.latency.all.read);
            sane(&format!("{what} write"), &r.latency.all.write);
            assert_eq!(r.latency.workloads.len(), 4);
            for w in &r.latency.workloads {
                assert!(w.requests > 0 && w.iops > 0.0, "{what}: {w:?}");
            }
            let wa = &r.write_amplification;
            // A write buffer (NV-RAID) may absorb overwrites: below 1 is possible there.
            assert!(wa.engine > 0.0 && wa.flash > 0.9, "{what}: {wa:?}");
            if is_fusion(name) {
                assert!(wa.engine >= 1.0, "{what}: {wa:?}");
                assert!(
                    r.space.mapped_bytes >= 4 << 30,
                    "{what}: prefill maps every volume"
                );
                assert!(r.space.used_over_mapped >= 1.0, "{what}: {:?}", r.space);
            }
            assert_eq!(
                r.spikes.detected, r.spikes.detector_transitions,
                "{what}: every detector transition is a spike"
            );
            assert_eq!(r.engine.timer_bumps, 0, "{what}");
            assert_eq!(r.disks.len(), 29);
            assert!(r.virtual_s > 0.25, "{what}: {}", r.virtual_s);
            // Aged members start with the erased space a resting drive's background GC
            // restores (docs/DEVICE_MODELS.md), so a 0.3 s run need not stall them; the
            // aged state itself is checked by the device tests and the calibration tests.
            let table = r.to_table();
            assert!(table.contains("P99.9") && table.contains(name), "{table}");
        }
    }
}

#[test]
fn data_mode_reads_back_what_was_written() {
    for name in known_schemes() {
        for aged in [false, true] {
            let mut sc = small(0.15);
            sc.scheme = name.to_string();
            sc.size_only = false;
            sc.pool.aged = aged;
            sc.volume_bytes = Some(128 << 20);
            let r = run(&sc);
            let q = &r.requests;
            let what = format!("{name} aged={aged}");
            assert!(q.reads_verified > 100, "{what}: {q:?}");
            assert_eq!(q.read_mismatches, 0, "{what}: {:?}", q.first_mismatch);
            assert_eq!(q.failed, 0, "{what}");
        }
    }
}

#[test]
fn backpressure_holds_requests_and_loses_none() {
    let mut sc = small(0.2);
    sc.max_requests = 4;
    let r = run(&sc);
    let q = &r.requests;
    assert!(q.held > 0 && q.max_held > 0, "{q:?}");
    assert_eq!(q.dropped, 0);
    assert_eq!(q.completed, q.arrived);
    // With a tiny hold queue as well, the excess is dropped and counted.
    let mut sc = small(0.2);
    sc.max_requests = 2;
    sc.held_capacity = 2;
    let r = run(&sc);
    let q = &r.requests;
    assert!(q.dropped > 0, "{q:?}");
    assert_eq!(q.completed + q.dropped, q.arrived, "{q:?}");
}

#[test]
fn slow_member_and_unknown_scheme() {
    let mut sc = small(0.2);
    sc.pool.speed_factors = vec![(3, 20.0)];
    let r = run(&sc);
    let slow = &r.disks[3];
    let others = r.disks.iter().filter(|d| d.disk != 3);
    let typical = others.map(|d| d.mean_device_latency_us).fold(0.0, f64::max);
    assert_eq!(slow.speed_factor, 20.0);
    assert!(
        slow.mean_device_latency_us > typical,
        "{slow:?} vs {typical}"
    );

    let mut sc = small(0.2);
    sc.scheme = "raid9".into();
    let e = Sim::new(&sc).err().expect("unknown scheme").to_string();
    assert!(e.contains("raid9") && e.contains("fusionraid"), "{e}");
}

/// A member four times slower than the others: FusionRAID steers writes around it both
/// ways the engine can (placements that pass over their first choice, pair sets drawn away
/// from it) and the report counts both; Fusion-ND, the same engine without redirection,
/// steers nothing.
#[test]
fn a_slow_member_is_steered_around_and_the_report_counts_it() {
    let mut sc = small(0.2);
    sc.pool.speed_factors = vec![(3, 4.0)];
    let r = run(&sc).redirection;
    assert!(r.redirected_writes > 0, "{r:?}");
    assert!(r.steered_pair_sets > 0, "{r:?}");
    assert!(r.write_share > 0.0 && r.write_share < 1.0, "{r:?}");

    sc.scheme = "fusion-nd".into();
    let r = run(&sc).redirection;
    assert_eq!((r.redirected_writes, r.steered_pair_sets), (0, 0), "{r:?}");
}

/// 4-RAIDM on a small group under overwrites cleans continuously. A cleaner that appends
/// each run of a victim's live pages at the next head opens a fresh mirror unit at each
/// head for one victim: with user writes held at the reserve, every victim takes more free
/// units than it gives back until none is left for the cleaner itself, and the run stops
/// with "simulation stuck" (`fusionraid sim --scheme 4-raidm --disks 7 --workload tpcc
/// --volume-size 4MiB --duration 300ms --clean`).
#[test]
fn raidm_cleaning_a_small_group_never_stalls() {
    for seed in [1, 2] {
        let mut sc = Scenario::default_mix(0.3);
        sc.scheme = "4-raidm".into();
        sc.pool.disks = 7;
        sc.pool.aged = false;
        sc.seed = seed;
        sc.volume_bytes = Some(4 << 20);
        sc.load = fusionraid_sim::Load::Workloads {
            list: vec![fusionraid_sim::workload::Workload::Tpcc],
            scale: 1.0,
        };
        let r = run(&sc);
        assert_eq!(r.requests.completed, r.requests.arrived, "seed {seed}");
        assert_eq!(r.requests.failed, 0, "seed {seed}");
        assert!(r.requests.completed > 1000, "seed {seed}: {:?}", r.requests);
    }
}

/// Data mode without the prefill: every scheme reads back what was written and zeros where
/// nothing was. The in-place baselines read never-written blocks from their members, so
/// their members start zeroed (with the driver's 0xEE fill they would report thousands of
/// false mismatches: those schemes assume zeroed members, md `--assume-clean`).
#[test]
fn data_mode_without_prefill_reads_zeros_where_nothing_was_written() {
    for name in known_schemes() {
        let mut sc = small(0.2);
        sc.scheme = name.to_string();
        sc.size_only = false;
        sc.prefill = false;
        sc.volume_bytes = Some(256 << 20);
        sc.load = fusionraid_sim::Load::Workloads {
            list: vec![
                fusionraid_sim::workload::Workload::YcsbB,
                fusionraid_sim::workload::Workload::Tpcc,
            ],
            scale: 1.0,
        };
        let r = run(&sc);
        let q = &r.requests;
        assert_eq!(q.read_mismatches, 0, "{name}: {:?}", q.first_mismatch);
        assert!(q.reads_verified > 100, "{name}: {q:?}");
    }
}

/// A pool of the 12 profiled NVMe drives, and one mixing them with consumer members: both run
/// to the end, the report names each member's preset, and the detector follows the classes.
#[test]
fn mixed_device_pools_run_and_report_their_members() {
    let mut sc = small(0.3);
    sc.pool.device = "sandook12".into();
    sc.pool.disks = 12;
    sc.width = 6;
    let r = run(&sc);
    assert_eq!(r.requests.completed, r.requests.arrived);
    assert!(r.requests.completed > 500, "{:?}", r.requests);
    assert_eq!(
        (r.scenario.disks, r.scenario.device.as_str()),
        (12, "sandook12")
    );
    assert!(
        r.scenario.detector.starts_with("slot 500 us"),
        "{}",
        r.scenario.detector
    );
    let names: Vec<&str> = r.disks.iter().filter_map(|d| d.device.as_deref()).collect();
    assert_eq!(names.len(), 12);
    assert_eq!((names[0], names[11]), ("s39wna0kb01161", "sdm000024db4"));
    assert!(r.disks.iter().all(|d| d.reads + d.writes > 0));
    sane("sandook12 read", &r.latency.all.read);

    sc.pool.device = "sandook12,consumer".into();
    sc.pool.disks = 14;
    let r = run(&sc);
    assert_eq!(r.requests.completed, r.requests.arrived);
    assert_eq!(r.disks[12].device.as_deref(), Some("consumer"));
    assert!(
        r.scenario.detector.starts_with("slot 200 us"),
        "{}",
        r.scenario.detector
    );
    // A single-preset pool's report is unchanged: no per-member preset.
    let r = run(&small(0.1));
    assert!(r.disks.iter().all(|d| d.device.is_none()));
    // The scenario's `device` only.
    assert_eq!(r.to_json().matches("\"device\"").count(), 1);
}
