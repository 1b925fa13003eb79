//! `fusionraid sim --synthetic ... --slo ...` on a tiny pool: the search's table and JSON,
//! and a bad value refused with its option's name. Shapes and the bracket, never a number.

use std::process::Command;

use serde_json::Value;

/// Four fresh members, one tenant of 90% 4 KiB reads over 16 MiB, 100 ms of arrivals of
/// which the first 40 ms are not measured.
const TINY: [&str; 18] = [
    "sim",
    "--disks",
    "4",
    "--width",
    "3",
    "--clean",
    "--capacity",
    "8GiB",
    "--synthetic",
    "read=0.9,iops=20k,footprint=16M",
    "--duration",
    "100ms",
    "--warmup",
    "40ms",
    "--slo",
    "p90:500us",
    "--ideal-iops",
    "200k",
];

fn sim(extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fusionraid"))
        .args(TINY)
        .args(extra)
        .output()
        .expect("run fusionraid sim")
}

fn stdout(o: &std::process::Output) -> String {
    assert!(
        o.status.success(),
        "sim failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn the_search_prints_its_runs_and_the_load_at_the_slo() {
    let table = stdout(&sim(&[]));
    for want in [
        "synthetic syn0 (90% reads, 4 KiB, 20000 IOPS, 16.0 MiB)",
        "SLO P90 of all requests < 500 us",
        "offered IOPS",
        "max load at the SLO",
        "achieved / ideal",
    ] {
        assert!(table.contains(want), "{want}:\n{table}");
    }
    let json: Value = serde_json::from_str(&stdout(&sim(&["--json"]))).unwrap();
    let probes = json["probes"].as_array().unwrap();
    let best = json["best"]["offered_iops"].as_f64().unwrap();
    let above = json["fails_above"]["offered_iops"].as_f64().unwrap();
    assert!(best < above && above <= best * 1.02, "{best} {above}");
    assert_eq!(json["best"]["verdict"], "pass");
    assert_ne!(json["fails_above"]["verdict"], "pass");
    // The table lists the same runs.
    assert_eq!(
        table.lines().filter(|l| l.ends_with("pass")).count(),
        probes.iter().filter(|p| p["verdict"] == "pass").count()
    );
}

#[test]
fn a_bad_target_is_refused_with_its_option() {
    let o = Command::new(env!("CARGO_BIN_EXE_fusionraid"))
        .args(["sim", "--synthetic", "iops=1k", "--slo", "p90:1"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--slo") && e.contains("has no unit"), "{e}");
}
