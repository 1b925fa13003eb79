//! The regression guard of what docs/EVALUATION.md ("Parity rows") claims for parity rows
//! (`--rows`, issue 19): 4 KiB random writes at 100K per second on 29 aged `dc` members, rows
//! on against off, write half the device bytes or less and cut the far tail; the paper's
//! main mix, where writes of one size are too sparse to fill a row, runs exactly as without
//! them. Deterministic: same seed, same bytes.

use fusionraid_sim::workload::parse_synthetic;
use fusionraid_sim::{Load, Report, Scenario, Sim};

fn run(mut sc: Scenario, rows: bool) -> Report {
    sc.scheme_options.row_ns = rows.then_some(500_000);
    Sim::new(&sc).expect("scenario").run().expect("run")
}

fn writes_100k(rows: bool) -> Report {
    let mut sc = Scenario::default_mix(2.0);
    let t = parse_synthetic("iops=100000,read=0,bs=4k,footprint=16G", "syn0").expect("spec");
    sc.load = Load::Synthetic { tenants: vec![t] };
    sc.seed = 1;
    run(sc, rows)
}

#[test]
fn rows_halve_the_bytes_written_and_cut_the_far_tail() {
    let (off, on) = (writes_100k(false), writes_100k(true));
    let (w_off, w_on) = (&off.latency.all.write, &on.latency.all.write);
    eprintln!(
        "engine WA {:.2} -> {:.2}; write p50 {} -> {}, p99 {} -> {}, p99.99 {} -> {}, max {} -> {}",
        off.write_amplification.engine,
        on.write_amplification.engine,
        w_off.p50_us,
        w_on.p50_us,
        w_off.p99_us,
        w_on.p99_us,
        w_off.p9999_us,
        w_on.p9999_us,
        w_off.max_us,
        w_on.max_us
    );
    assert!(off.write_amplification.engine > 1.9);
    assert!(on.write_amplification.engine < 1.3);
    assert!(w_on.p50_us < w_off.p50_us);
    assert!(w_on.p99_us < w_off.p99_us);
    assert!(w_on.max_us * 3.0 < w_off.max_us);
}

#[test]
fn the_main_mix_runs_as_without_rows() {
    let main = || {
        let mut sc = Scenario::default_mix(1.0);
        sc.volume_bytes = Some(1 << 30);
        sc
    };
    let (off, on) = (run(main(), false), run(main(), true));
    assert_eq!(
        serde_json::to_string(&off).unwrap(),
        serde_json::to_string(&on).unwrap()
    );
}
