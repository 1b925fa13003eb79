use super::*;

#[test]
fn default_mix_is_valid_and_uses_mols() {
    let s = Scenario::default_mix(1.0);
    s.validate().unwrap();
    assert_eq!(s.layout(), LayoutKind::Mols);
    let vols = s.volume_configs();
    assert_eq!(vols.len(), 4);
    assert!(vols.iter().all(|v| v.size_bytes % s.pool.block_size == 0));
    let mut odd = s.clone();
    odd.pool.disks = 30;
    assert!(matches!(odd.layout(), LayoutKind::Permutation { .. }));
}

#[test]
fn mixed_pools_expand_cycle_and_choose_their_detector() {
    let mut s = Scenario::default_mix(1.0);
    assert_eq!(s.pool.member_devices().unwrap(), vec!["dc"; 29]);
    s.pool.disks = 14;
    s.pool.device = "sandook12,consumer".into();
    let m = s.pool.member_devices().unwrap();
    assert_eq!(
        (m.len(), m[0].as_str(), m[12].as_str()),
        (14, "s39wna0kb01161", "consumer")
    );
    assert_eq!(m[13], "s39wna0kb01161");
    // One consumer-class member is enough for the consumer setting.
    assert_eq!(s.detector_config(), DetectorConfig::paper_consumer());
    s.pool.device = "sandook12,dc,hdd7200".into();
    assert_eq!(s.detector_config(), DetectorConfig::paper_dc());
    s.validate().unwrap();
    s.pool.device = "consumer".into();
    assert_eq!(s.detector_config(), DetectorConfig::paper_consumer());
    s.pool.disks = 11;
    s.pool.device = "sandook12".into();
    let e = s.validate().unwrap_err();
    assert!(e.contains("12 devices") && e.contains("11 disks"), "{e}");
    s.pool.device = "dc,,sn200".into();
    assert!(s.validate().unwrap_err().contains("unknown device ''"));
    assert_eq!(s.summary().device, "dc,,sn200");
}

#[test]
fn bad_scenarios_are_reported() {
    let mut s = Scenario::default_mix(1.0);
    s.pool.speed_factors = vec![(29, 2.0)];
    assert!(s.validate().unwrap_err().contains("disk 29"));
    // Would overflow the device model's clock (a panic).
    let mut s = Scenario::default_mix(1.0);
    s.pool.speed_factors = vec![(0, 1e300)];
    let e = s.validate().unwrap_err();
    assert!(e.contains("1e300") && e.contains("at most 1000"), "{e}");
    s.pool.speed_factors = vec![(0, MAX_SPEED_FACTOR)];
    s.validate().unwrap();
    // A warm-up as long as the run measured nothing, silently.
    let mut s = Scenario::default_mix(1.0);
    s.warmup_ns = 1_000_000_000;
    let e = s.validate().unwrap_err();
    assert!(
        e.contains("warm-up (1 s)") && e.contains("duration (1 s)"),
        "{e}"
    );
    s.warmup_ns = 999_999_999;
    s.validate().unwrap();
    let mut s = Scenario::default_mix(1.0);
    // The second would replace the first silently.
    s.pool.speed_factors = vec![(3, 2.0), (5, 4.0), (3, 8.0)];
    let e = s.validate().unwrap_err();
    assert!(e.contains("disk 3") && e.contains("two"), "{e}");
    let mut s = Scenario::default_mix(1.0);
    s.load = Load::Workloads {
        list: vec![],
        scale: 1.0,
    };
    assert!(s.validate().is_err());
    let mut s = Scenario::default_mix(1.0);
    s.size_only = false;
    assert!(s.validate().unwrap_err().contains("data mode"));
    s.volume_bytes = Some(1 << 30);
    s.validate().unwrap();
}

/// A volume given a level of its own gets it (a mirror with its copies as width), next
/// to the others at the scenario's level; unknown names and baselines are refused.
#[test]
fn volume_levels_mix_a_mirror_into_the_pool() {
    let mut s = Scenario::default_mix(1.0);
    let name = s.volume_configs()[1].name.clone();
    s.volume_levels = vec![(name.clone(), Level::Mirror { copies: 2 })];
    s.validate().unwrap();
    let vols = s.volume_configs();
    assert_eq!(
        (vols[1].level, vols[1].width),
        (Level::Mirror { copies: 2 }, 2)
    );
    assert_eq!((vols[0].level, vols[0].width), (Level::Raid5, 7));
    assert!(s.summary().volume_levels == vec![(name, "mirror".to_string())]);
    s.volume_levels = vec![("nope".into(), Level::Raid6)];
    assert!(s.validate().unwrap_err().contains("no volume 'nope'"));
    s.volume_levels = vec![(vols[0].name.clone(), Level::Raid6)];
    s.scheme = "raid50".into();
    assert!(s.validate().unwrap_err().contains("FusionRAID"));
}
