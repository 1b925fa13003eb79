//! The SLO search on a tiny pool: deterministic, its bracket holds, saturation fails the
//! target; synthetic tenants offer what they are asked.

use fusionraid_sim::slo::{SloOptions, SloResult, SloTarget, Verdict, at_offered, search};
use fusionraid_sim::workload::parse_synthetic;
use fusionraid_sim::{Load, Scenario, Sim};

/// Four fresh datacenter SSDs, one 2+1 RAID5 volume per tenant, 100 ms of arrivals of which
/// the first 40 ms are left out (the prefill's writes are still being programmed then).
fn tiny(tenants: &[&str]) -> Scenario {
    let mut sc = Scenario::default_mix(0.1);
    sc.warmup_ns = 40_000_000;
    sc.pool.disks = 4;
    sc.width = 3;
    sc.pool.aged = false;
    // Below the model's 2 GiB background-GC watermark a member would clean all the time.
    sc.pool.capacity_bytes = Some(8 << 30);
    sc.load = Load::Synthetic {
        tenants: tenants
            .iter()
            .enumerate()
            .map(|(i, t)| parse_synthetic(t, &format!("t{i}")).unwrap())
            .collect(),
    };
    sc
}

fn target() -> SloTarget {
    "p90:500us".parse().unwrap()
}

fn find(sc: &Scenario, opts: &SloOptions) -> SloResult {
    search(sc, &target(), opts, &mut |_| {}).unwrap()
}

#[test]
fn the_search_brackets_the_highest_load_and_repeats_itself() {
    let sc = tiny(&["read=0.9,iops=20k,footprint=16M"]);
    let opts = SloOptions {
        ideal_iops: Some(200_000.0),
        ..SloOptions::default()
    };
    let mut seen = 0;
    let r = search(&sc, &target(), &opts, &mut |_| seen += 1).unwrap();
    assert_eq!(seen, r.probes.len());
    assert!(r.probes.len() < opts.max_runs, "{}", r.to_table());
    let best = r.best.clone().expect("a load meets the target");
    let above = r.fails_above.clone().expect("a load fails it");
    assert!(best.passed() && target().met_by(best.latency_us));
    assert!(!above.passed());
    // The bracket: the failing load is above the passing one and within the precision.
    let width = r.bracket().unwrap();
    assert!(width > 0.0 && width <= opts.precision, "{width}");
    // Every load tried above the best failed; every one below the failure passed or was
    // bracketed away by a pass above it.
    for p in &r.probes {
        assert!(p.offered_iops <= best.offered_iops || !p.passed(), "{p:?}");
    }
    let share = r.of_ideal.unwrap();
    assert!((share - best.achieved_iops / 200_000.0).abs() < 1e-12);
    let table = r.to_table();
    assert!(table.contains("max load at the SLO") && table.contains("achieved / ideal"));

    // Same seed, same search; another seed, other runs.
    assert_eq!(find(&sc, &opts), r);
    let mut other = sc.clone();
    other.seed = 2;
    assert_ne!(find(&other, &opts).probes, r.probes);
}

#[test]
fn a_run_at_the_found_load_is_the_searchs_run() {
    // The search runs copies of one fleet; a run of its own must give the same figures.
    let sc = tiny(&["read=0.9,iops=20k,footprint=16M"]);
    let opts = SloOptions {
        max_runs: 4,
        ..SloOptions::default()
    };
    let r = find(&sc, &opts);
    let last = r.probes.last().unwrap();
    let alone = Sim::new(&at_offered(&sc, last.offered_iops).unwrap())
        .unwrap()
        .run_detailed(&mut |_| {})
        .unwrap();
    let all = alone.all.read.merged(&alone.all.write);
    assert_eq!(all.quantile_us(0.9), last.latency_us);
    assert_eq!(all.count(), last.measured);
}

#[test]
fn saturation_fails_the_target_even_when_latency_would_not() {
    let mut sc = tiny(&["read=0.9,iops=20k,footprint=16M"]);
    // Far beyond what four SATA members serve: requests queue in the driver.
    let opts = SloOptions {
        start_iops: Some(600_000.0),
        max_runs: 2,
        ..SloOptions::default()
    };
    let lax: SloTarget = "p50:1s".parse().unwrap();
    let r = search(&sc, &lax, &opts, &mut |_| {}).unwrap();
    assert_eq!(r.probes[0].verdict, Verdict::FellBehind, "{}", r.to_table());
    assert!(r.probes[0].achieved_iops < 0.95 * 600_000.0);
    // With a small hold queue the same load is dropped instead.
    sc.held_capacity = 64;
    let r = search(&sc, &lax, &opts, &mut |_| {}).unwrap();
    assert_eq!(r.probes[0].verdict, Verdict::Dropped, "{}", r.to_table());
    assert!(r.probes[0].dropped > 0);
}

#[test]
fn unreachable_targets_and_bad_inputs_are_reported() {
    let sc = tiny(&["read=0.9,iops=20k,footprint=16M"]);
    // No load is fast enough: the search halves until runs measure too few requests.
    let r = search(
        &sc,
        &"p90:1us".parse().unwrap(),
        &SloOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert!(r.best.is_none() && r.fails_above.is_none());
    assert!(r.note.as_deref().unwrap().contains("fewer than"), "{r:?}");
    assert!(r.to_table().contains("no load met the SLO"));
    let opts = SloOptions {
        precision: 0.0,
        ..SloOptions::default()
    };
    let e = search(&sc, &target(), &opts, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("precision"), "{e}");
    let mut trace = sc.clone();
    trace.load = Load::Trace {
        path: "x.trace".into(),
        format: "disksim".parse().unwrap(),
        mode: fusionraid_sim::trace::ReplayMode::Timestamp { speed: 1.0 },
    };
    let e = search(&trace, &target(), &SloOptions::default(), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("not traces"), "{e}");
}

#[test]
fn synthetic_tenants_get_the_share_and_rate_they_ask_for() {
    let mut sc = tiny(&[
        "read=0.9,iops=20k,footprint=16M",
        "read=30%,bs=16k,iops=5k,footprint=32M,name=small",
    ]);
    sc.duration_ns = Some(400_000_000);
    let r = Sim::new(&sc).unwrap().run().unwrap();
    let window = 0.36;
    let want = [("t0", 0.9, 20_000.0, 4096), ("small", 0.3, 5_000.0, 16384)];
    for (w, (name, read, iops, bs)) in r.latency.workloads.iter().zip(want) {
        assert_eq!(w.name, name);
        let l = &w.latency;
        let share = l.read.count as f64 / l.all.count as f64;
        assert!((share - read).abs() < 0.03, "{name}: read share {share}");
        assert!(
            (w.iops / iops - 1.0).abs() < 0.05,
            "{name}: {} IOPS",
            w.iops
        );
        let mb = (w.read_mb_s + w.write_mb_s) * 1e6 * window;
        assert!(
            (mb / (l.all.count * bs) as f64 - 1.0).abs() < 1e-9,
            "{name}"
        );
    }
    let table = r.to_table();
    assert!(
        table.contains("small (30% reads, 16 KiB, 5000 IOPS, 32.0 MiB)"),
        "{table}"
    );
    let mut twins = tiny(&["iops=1k,name=a", "iops=1k,name=a"]);
    assert!(
        twins
            .validate()
            .unwrap_err()
            .contains("two synthetic tenants")
    );
    twins.load = Load::Synthetic { tenants: vec![] };
    assert!(
        twins
            .validate()
            .unwrap_err()
            .contains("no synthetic tenants")
    );
}

/// `search_keeping` gives the same result as `search` and hands back the best load's run:
/// its answered requests are the best probe's achieved rate over the window.
#[test]
fn the_kept_run_is_the_best_loads() {
    let sc = tiny(&["read=0.9,iops=20k,footprint=16M"]);
    let opts = SloOptions::default();
    let (r, kept) =
        fusionraid_sim::slo::search_keeping(&sc, &target(), &opts, &mut |_| {}).unwrap();
    assert_eq!(r, find(&sc, &opts));
    let best = r.best.expect("a load meets the target");
    let d = kept.expect("a run is kept");
    let window_s = (sc.duration_ns.unwrap() - sc.warmup_ns) as f64 / 1e9;
    assert_eq!(d.answered_in_window as f64 / window_s, best.achieved_iops);
}
