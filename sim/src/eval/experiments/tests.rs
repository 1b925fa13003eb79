use super::*;
use crate::eval::size::SizeName;

#[test]
fn mixes_are_balanced_distinct_and_seeded() {
    let m = random_mixes(20, 1);
    assert_eq!(m.len(), 20);
    for w in Workload::ALL {
        assert_eq!(m.iter().filter(|x| x.contains(&w)).count(), 10, "{w}");
    }
    let mut d = m.clone();
    d.sort();
    d.dedup();
    assert_eq!(d.len(), 20);
    assert!(
        m.iter()
            .all(|x| x.len() == 4 && x.windows(2).all(|p| p[0] < p[1]))
    );
    assert_eq!(m, random_mixes(20, 1));
    assert_ne!(m, random_mixes(20, 2));
    assert_eq!(random_mixes(3, 1).len(), 3);
}

#[test]
fn shared_runs_are_made_once() {
    let p = Plan::new(
        Size::of(SizeName::Quick),
        1,
        Some("t.trace".into()),
        ExpId::ALL.to_vec(),
    );
    let all = p.all_runs();
    let total: usize = ExpId::ALL.iter().map(|&e| p.runs_of(e).len()).sum();
    assert!(all.len() < total, "{} vs {total}", all.len());
    let mut ids: Vec<String> = all.iter().map(RunSpec::id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), all.len());
    // The main FusionRAID run serves Fig. 12, 13a, 14 and Table 6.
    let main = p.main_run("fusionraid", 0).id();
    for e in [ExpId::Fig12, ExpId::Fig13, ExpId::Detector, ExpId::Fig14] {
        assert!(p.runs_of(e).iter().any(|r| r.id() == main), "{e:?}");
    }
    // Consumer runs share nothing with the dc ones.
    let consumer = p.runs_of(ExpId::Consumer);
    assert_eq!(consumer.len(), FIG12_SCHEMES.len() * p.size.replicates);
    assert!(
        consumer
            .iter()
            .all(|r| r.device == CONSUMER_DEVICE && r.aged)
    );
    assert!(
        consumer
            .iter()
            .all(|r| !p.runs_of(ExpId::Fig12).contains(r))
    );
    let no_trace = Plan::new(Size::of(SizeName::Quick), 1, None, vec![ExpId::Trace]);
    assert!(no_trace.all_runs().is_empty());
}

/// The base seed plus a mix or replicate number wraps around, so the largest seed does
/// not overflow (a panic of `fusionraid eval --seed 18446744073709551615`).
#[test]
fn the_largest_base_seed_wraps() {
    let p = Plan::new(
        Size::of(SizeName::Quick),
        u64::MAX,
        None,
        ExpId::ALL.to_vec(),
    );
    assert!(!p.all_runs().is_empty());
    assert_eq!(p.fig10_run("fusionraid", 1).seed, 0);
    assert_eq!(p.main_run("fusionraid", 0).seed, u64::MAX);
    assert_eq!(ExpId::parse("FIG11B"), Ok(ExpId::Fig11b));
    assert!(ExpId::parse("fig99").unwrap_err().contains("fig10"));
    assert_eq!(ExpId::parse("consumer"), Ok(ExpId::Consumer));
}

/// The `pitfalls` runs: one per device x array configuration x share, the in-place
/// RAID5 volume shrinking with the share and its members aged with that share unwritten,
/// the FusionRAID volumes keeping their size and taking the share as their own.
#[test]
fn pitfalls_runs_cover_every_array_configuration_and_share() {
    use crate::eval::pitfalls::Config;
    use crate::eval::spec::PoolSize;
    let p = Plan::new(Size::of(SizeName::Quick), 1, None, vec![ExpId::Pitfalls]);
    let ps = &p.size.pitfalls;
    let runs = p.all_runs();
    assert_eq!(runs.len(), ps.devices.len() * 3 * ps.shares.len());
    assert!(p.pitfalls_run(Config::Ssd, "dc", 0.0).is_none());
    let vol = |r: &RunSpec| match r.pool {
        PoolSize::Array { volume_bytes, .. } => volume_bytes,
        _ => panic!("not an array pool"),
    };
    let r5: Vec<RunSpec> = ps
        .shares
        .iter()
        .map(|&s| p.pitfalls_run(Config::Raid5, "dc", s).unwrap())
        .collect();
    assert!(r5.windows(2).all(|w| vol(&w[1]) < vol(&w[0])));
    assert!(r5.iter().zip(&ps.shares).all(|(r, &s)| r.member_spare == s));
    let full = ps.member_bytes as f64 * (ps.width - 1) as f64;
    assert!(vol(&r5[0]) as f64 > 0.99 * full && (vol(&r5[0]) as f64) <= full);
    let m = p.pitfalls_run(Config::Mirror, "consumer", 0.5).unwrap();
    let f = p.pitfalls_run(Config::Fusion, "consumer", 0.5).unwrap();
    assert_eq!(
        (m.level.as_deref(), f.level.as_deref()),
        (Some("mirror"), None)
    );
    assert_eq!((m.volume_spare, m.member_spare), (Some(0.5), 0.0));
    assert_eq!(vol(&m), ps.volume_bytes);
    let sc = m.scenario();
    sc.validate().unwrap();
    assert_eq!(
        (sc.pool.disks, sc.pool.device.as_str()),
        (ps.disks, "consumer")
    );
    assert_eq!(sc.volume_configs()[0].level.name(), "mirror");
    assert_eq!(r5[1].scenario().pool.spare, ps.shares[1]);
    // The experiments up to pitfalls together: the pitfalls runs are new ids, none
    // shared (the `serw` test checks its own).
    let every = Plan::new(
        Size::of(SizeName::Quick),
        1,
        None,
        ExpId::ALL[..10].to_vec(),
    );
    let others: usize = ExpId::ALL[..9]
        .iter()
        .map(|&e| every.runs_of(e).len())
        .sum();
    assert!(every.all_runs().len() <= others + runs.len());
    let ids: std::collections::HashSet<String> = runs.iter().map(RunSpec::id).collect();
    assert_eq!(ids.len(), runs.len());
    for e in &ExpId::ALL[..9] {
        assert!(every.runs_of(*e).iter().all(|r| !ids.contains(&r.id())));
    }
}

#[test]
fn dc_run_ids_did_not_change_when_the_device_joined_the_spec() {
    // Pinned from `fusionraid eval --quick --list` before the device field existed:
    // every earlier output file keeps its name and content.
    let p = Plan::new(Size::of(SizeName::Quick), 1, None, vec![ExpId::Fig12]);
    assert_eq!(
        p.main_run("fusionraid", 0).id(),
        "fusionraid_tpcc+ycsb-a+tf+vd_aged_1500ms_s1_25c2182b"
    );
}
