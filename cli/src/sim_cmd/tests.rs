use super::*;
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: Args,
}

fn args(argv: &[&str]) -> Result<Args, String> {
    let cli = Cli::try_parse_from(std::iter::once("sim").chain(argv.iter().copied()))
        .map_err(|e| e.to_string())?;
    Ok(cli.args)
}

fn parse(argv: &[&str]) -> Result<Scenario, String> {
    args(argv)?.scenario().map_err(|e| e.to_string())
}

#[test]
fn defaults_are_the_paper_mix() {
    let sc = parse(&[]).unwrap();
    assert_eq!(sc, Scenario::default_mix(5.0));
}

#[test]
fn options_map_onto_the_scenario() {
    let sc = parse(&[
        "--workload",
        "tpcc,vd",
        "--workload",
        "proxy",
        "--clean",
        "--data",
        "--disks",
        "31",
        "--seed",
        "9",
        "--duration",
        "250ms",
        "--slow",
        "3=2.5",
        "--volume-size",
        "1GiB",
    ])
    .unwrap();
    assert!(!sc.pool.aged && !sc.size_only);
    assert_eq!((sc.pool.disks, sc.seed), (31, 9));
    assert_eq!(sc.duration_ns, Some(250_000_000));
    assert_eq!(sc.pool.speed_factors, vec![(3, 2.5)]);
    assert!(sc.pool.fail_slow.is_empty());
    assert_eq!(sc.volume_bytes, Some(1 << 30));
    match sc.load {
        Load::Workloads { list, .. } => assert_eq!(
            list,
            vec![Workload::Tpcc, Workload::VirtualDesktop, Workload::Proxy]
        ),
        Load::Synthetic { .. } | Load::Trace { .. } | Load::TraceMix { .. } => {
            panic!("expected workloads")
        }
    }
    let sc = parse(&["--trace", "x.trace", "--format", "msr", "--qd", "8"]).unwrap();
    assert!(matches!(
        sc.load,
        Load::Trace {
            mode: ReplayMode::ClosedLoop { queue_depth: 8 },
            ..
        }
    ));
    assert_eq!(sc.duration_ns, None);
}

#[test]
fn volume_spare_sets_every_volumes_share() {
    let sc = parse(&["--workload", "tpcc,vd", "--volume-spare", "0.1"]).unwrap();
    let shares: Vec<f64> = sc
        .volume_configs()
        .iter()
        .map(|v| v.spare_fraction)
        .collect();
    assert_eq!(shares, vec![0.1, 0.1]);
    assert_eq!(sc.summary().volume_spare, Some(0.1));
    sc.validate().unwrap();
    // Unset: the engine's default, and nothing about it in the report.
    let sc = parse(&[]).unwrap();
    assert!(sc.volume_configs().iter().all(|v| v.spare_fraction == 0.25));
    assert_eq!(sc.summary().volume_spare, None);
    let e = parse(&["--volume-spare", "5"])
        .unwrap()
        .validate()
        .unwrap_err();
    assert!(e.contains("volume spare share 5"), "{e}");
}

#[test]
fn device_lists_and_fleets_reach_the_pool() {
    let sc = parse(&["--device", "sandook12"]).unwrap();
    assert_eq!((sc.pool.disks, sc.pool.device.as_str()), (12, "sandook12"));
    let names = sc.pool.member_devices().unwrap();
    assert_eq!(
        (names[0].as_str(), names[11].as_str()),
        ("s39wna0kb01161", "sdm000024db4")
    );
    let sc = parse(&["--device", "sandook12", "--disks", "24"]).unwrap();
    assert_eq!(sc.pool.member_devices().unwrap()[23], "sdm000024db4");
    let sc = parse(&["--device", "pm1725a,sn200"]).unwrap();
    assert_eq!(sc.pool.disks, 29);
    assert_eq!(sc.pool.member_devices().unwrap()[28], "pm1725a");
    sc.validate().unwrap();
    let e = parse(&["--device", "sandook12", "--disks", "8"])
        .unwrap()
        .validate()
        .unwrap_err();
    assert!(e.contains("12 devices") && e.contains("8 disks"), "{e}");
}

/// Issue 21: `--hdds N` adds N HDD members after the SSDs; an HDD preset in `--device`
/// makes its members HDDs too; the schemes see them as the pool's HDD tier.
#[test]
fn hdd_members_join_the_pool_as_its_hdd_tier() {
    let sc = parse(&[
        "--disks",
        "8",
        "--hdds",
        "2",
        "--width",
        "5",
        "--offload",
        "on",
    ])
    .unwrap();
    assert_eq!(sc.pool.disks, 10);
    let names = sc.pool.member_devices().unwrap();
    assert_eq!((names[7].as_str(), names[8].as_str()), ("dc", "hdd7200"));
    assert_eq!(sc.pool.hdd_members(), vec![8, 9]);
    assert_eq!(sc.scheme_params(1 << 40).pool.hdds, vec![8, 9]);
    assert!(sc.scheme_options.offload);
    assert_eq!(sc.layout(), LayoutKind::Mols, "MOLS over the 8 SSDs");
    sc.validate().unwrap();
    let sc = parse(&["--disks", "4", "--device", "dc,hdd7200"]).unwrap();
    assert_eq!(sc.pool.hdd_members(), vec![1, 3]);
    assert!(
        !parse(&[]).unwrap().scheme_options.offload,
        "off by default"
    );
}

#[test]
fn fail_slow_members_are_options() {
    let sc = parse(&["--fail-slow", "3+7=4x/2s/3s", "--fail-slow", "1=2x/1s/0.6%"]).unwrap();
    let disks: Vec<usize> = sc.pool.fail_slow.iter().map(|p| p.0).collect();
    assert_eq!(disks, [3, 7, 1]);
    assert_eq!(sc.pool.fail_slow[1].1.factor, 4.0);
    assert!(parse(&["--fail-slow", "3=4x"]).is_err());
    assert!(parse(&["--fail-slow", "x=4x/1s/1s"]).is_err());
    let dup = parse(&["--fail-slow", "3+3=4x/1s/1s"]).unwrap().validate();
    assert!(dup.unwrap_err().contains("two fail-slow"));
    let out = parse(&["--fail-slow", "29=4x/1s/1s"]).unwrap().validate();
    assert!(out.unwrap_err().contains("29 disks"));
}

#[test]
fn spikes_are_an_option_for_every_member() {
    let sc = parse(&["--spikes", "20/min:10ms"]).unwrap();
    let sp = sc.pool.spikes.unwrap();
    assert_eq!((sp.per_min, sp.length_ns), (20.0, 10_000_000));
    assert!(parse(&[]).unwrap().pool.spikes.is_none());
    assert!(parse(&["--spikes", "20/min"]).is_err());
    assert!(parse(&["--spikes", "6000/min:100ms"]).is_err());
}

#[test]
fn errors_are_clear() {
    let sc = parse(&["--scheme", "raid9"]).unwrap();
    let e = Sim::new(&sc).err().unwrap().to_string();
    assert!(
        e.contains("'raid9'") && e.contains("known: fusionraid"),
        "{e}"
    );
    assert!(parse(&["--workload", "nope"]).unwrap_err().contains("nope"));
    assert!(parse(&["--speed", "2"]).is_err()); // needs --trace
    for d in ["0", "1"] {
        let e = parse(&["--disks", d]).unwrap_err();
        assert!(e.contains("at least 2") && e.contains(d), "{e}");
    }
    // Options that would have no effect are refused, not ignored.
    let e = parse(&["--trace", "x.trace", "--load", "3"]).unwrap_err();
    assert!(e.contains("--load") && e.contains("--trace"), "{e}");
    let e = parse(&["--clean", "--spare", "0.5"]).unwrap_err();
    assert!(e.contains("--spare") && e.contains("--clean"), "{e}");
    assert!(parse(&["--aged", "--spare", "0.5"]).is_ok());
    assert!(parse(&["--clean", "--aged", "--spare", "0.5"]).is_ok()); // the last one wins
    assert!(parse(&["--duration", "5 parsecs"]).is_err());
    assert_eq!(parse_bytes("240GB"), Ok(240_000_000_000));
    assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
    assert_eq!(parse_duration("2m"), Ok(120_000_000_000));
    // These are refused: saturated to u64::MAX they would overflow
    // the run's deadlines, or ask for an exabyte-sized volume.
    assert!(
        parse_duration("99999999999h")
            .unwrap_err()
            .contains("too long")
    );
    assert!(
        parse_bytes("99999999999TiB")
            .unwrap_err()
            .contains("too large")
    );
    assert_eq!(parse_bytes("16777215T"), Ok(u64::MAX - (1 << 40) + 1));
    let long = parse(&["--duration", "99999h"]).unwrap().validate();
    assert!(long.unwrap_err().contains("year"));
    let huge = parse(&["--volume-size", "2000000TiB"]).unwrap().validate();
    assert!(huge.unwrap_err().contains("EiB"));
}

#[test]
fn synthetic_tenants_and_the_slo_search_are_options() {
    let argv = [
        "--synthetic",
        "read=0.9,iops=200k",
        "--synthetic",
        "iops=1k,bs=16k,footprint=1G,name=db",
        "--load",
        "2",
    ];
    let Load::Synthetic { tenants } = parse(&argv).unwrap().load else {
        panic!("expected synthetic tenants");
    };
    let got: Vec<(&str, f64)> = tenants.iter().map(|t| (&*t.name, t.iops)).collect();
    assert_eq!(got, vec![("syn0", 400_000.0), ("db", 2_000.0)]);
    assert_eq!(tenants[1].footprint, 1 << 30);
    let a = args(&["--slo", "read:p99.9:500us", "--slo-start", "1.5M"]).unwrap();
    let t = a.slo.unwrap();
    assert_eq!((t.percentile, t.limit_ns), (99.9, 500_000));
    assert_eq!(a.slo_start, Some(1.5e6));
    assert_eq!(
        (a.slo_precision, a.slo_max_runs, a.ideal_iops),
        (0.02, 20, None)
    );
}

#[test]
fn bad_synthetic_and_slo_values_are_explained() {
    let cases: [(&[&str], &[&str]); 8] = [
        (&["--synthetic", "read=0.9"], &["--synthetic", "no iops"]),
        (
            &["--synthetic", "iops=1k,bs=5k"],
            &["--synthetic", "multiple of 4 KiB"],
        ),
        (
            &["--synthetic", "iops=1k", "--workload", "tpcc"],
            &["--workload"],
        ),
        (&["--synthetic", "iops=1k", "--trace", "x"], &["--trace"]),
        (&["--slo", "p90"], &["--slo", "PERCENTILE:LATENCY"]),
        (&["--slo", "p90:1min"], &["unknown latency unit 'min'"]),
        (&["--slo-start", "1k"], &["--slo"]),
        (
            &["--slo", "p90:1ms", "--ideal-iops", "many"],
            &["--ideal-iops", "rate"],
        ),
    ];
    for (argv, want) in cases {
        let e = parse(argv).unwrap_err();
        assert!(want.iter().all(|w| e.contains(w)), "{argv:?}: {e}");
    }
    let e = parse(&["--slo", "p90:1ms", "--trace", "x"]).unwrap_err();
    assert!(e.contains("--slo") && e.contains("--trace"), "{e}");
}

/// Options a scheme ignores are refused for it, not silently dropped: `--scheme 4-raid5
/// --hedge 500us` ran unhedged with status 0.
#[test]
fn options_a_scheme_ignores_are_refused() {
    for (opt, val) in [
        ("--hedge", "500us"),
        ("--raid-hedge", "2ms"),
        ("--write-hedge", "1ms"),
        ("--trim", "on"),
        ("--conversion", "off"),
        ("--wear", "0.05"),
        ("--offload", "on"),
    ] {
        let e = parse(&["--scheme", "raid5", opt, val]).unwrap_err();
        assert!(e.contains(opt) && e.contains("not raid5"), "{opt}: {e}");
        parse(&["--scheme", "fusion-nd", opt, val]).unwrap();
    }
    let e = parse(&["--scheme", "lograid", "--steer", "weights"]).unwrap_err();
    assert!(e.contains("--steer") && e.contains("not lograid"), "{e}");
    parse(&["--scheme", "sandook", "--steer", "weights"]).unwrap();
    parse(&["--scheme", "fusionraid+", "--steer", "none"]).unwrap();
    // Reporting wear is for every scheme; an unknown scheme is left to the builder.
    parse(&["--scheme", "4-raidm", "--wear", "report"]).unwrap();
    parse(&["--scheme", "nosuch", "--hedge", "1ms"]).unwrap();
}

/// A load offering under one request in the duration reported zeros with status 0.
#[test]
fn a_run_in_which_nothing_arrives_fails() {
    let a = args(&[
        "--disks",
        "4",
        "--width",
        "3",
        "--clean",
        "--capacity",
        "8GiB",
        "--synthetic",
        "iops=1k,footprint=16M",
        "--duration",
        "1ns",
        "--no-prefill",
        "--json",
    ])
    .unwrap();
    let e = run(a).unwrap_err().to_string();
    assert!(e.contains("no request arrived"), "{e}");
}

/// A mistyped rate is refused before the run, not simulated for hours: `iops=1e12` over
/// 300 ms, or the paper's mix at a load of a million.
#[test]
fn an_offered_load_no_run_can_take_is_refused() {
    for argv in [
        &["--synthetic", "iops=1e12", "--duration", "300ms"][..],
        &["--load", "1000000", "--duration", "10s"][..],
    ] {
        let e = parse(argv).unwrap().validate().unwrap_err();
        assert!(
            e.contains("requests") && e.contains("lower"),
            "{argv:?}: {e}"
        );
    }
    // Large but sane loads still run.
    let sane = |argv: &[&str]| parse(argv).unwrap().validate().unwrap();
    sane(&["--synthetic", "iops=8M", "--duration", "1s"]);
    sane(&["--load", "10", "--duration", "30s"]);
}

/// A negative replay speed reaches the replay's own check (a clear message) instead of
/// being taken for an unknown option by the argument parser.
#[test]
fn a_negative_speed_is_parsed_as_a_number() {
    let sc = parse(&["--trace", "t.trace", "--speed", "-1"]).unwrap();
    assert!(
        matches!(
            sc.load,
            Load::Trace { mode: ReplayMode::Timestamp { speed }, .. } if speed == -1.0
        ),
        "{:?}",
        sc.load
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
        crate::fuzz_util::cases(256)
    ))]

    /// Any --duration / --warmup / --volume-size / --block-size text: an error, or a
    /// scenario whose validation and derived sizes do not overflow.
    #[test]
    fn size_and_time_flags_never_overflow(
        d in "[0-9]{1,22}(\\.[0-9]{0,3})?(ns|us|ms|s|m|h|)",
        w in "[0-9]{1,22}(\\.[0-9]{0,3})?(ns|us|ms|s|m|h|)",
        v in "[0-9]{1,22}(\\.[0-9]{0,3})?(|k|KiB|GB|TiB|tb)",
        b in "[0-9]{1,8}(|k|KiB|M)",
    ) {
        // A warm-up must be shorter than the duration: not the same text for both.
        let argv = ["--duration", &d, "--warmup", &w, "--volume-size", &v, "--block-size", &b];
        if let Ok(sc) = parse(&argv)
            && sc.validate().is_ok()
        {
            let sizes: Vec<u64> = sc.volume_configs().iter().map(|c| c.size_bytes).collect();
            proptest::prop_assert!(sizes.iter().all(|&s| s > 0));
            let _ = sc.summary();
        }
    }
}
