//! Reads rebuilt away from a slow member: ToleRAID's busy disk, sit-out's latency outlier.

use super::*;

/// Reads the same pattern over time against a member 100x slower than its peers.
fn slow_disk_reads(name: &str, cfg: BaselineConfig) -> (Mini, bool) {
    let size = cfg.volumes[0];
    let mut m = Mini::new(name, cfg);
    let data = pattern(size, 5);
    m.write(0, 0, data.clone());
    m.lat[1] = 5_000_000;
    let mut ids = Vec::new();
    let mut rng = crate::rng::Rng::new(3);
    for t in 0..300 {
        // Some writes keep latency samples flowing for the sit-out tracker.
        if t % 3 == 0 {
            let p = rng.below(size / 4096);
            m.submit(
                0,
                Op::Write {
                    offset: p * 4096,
                    data: Data::Bytes(
                        data[(p * 4096) as usize..(p * 4096 + 4096) as usize].to_vec(),
                    ),
                    fua: false,
                },
            );
        }
        let p = rng.below(size / 4096);
        ids.push((
            p,
            m.submit(
                0,
                Op::Read {
                    offset: p * 4096,
                    len: 4096,
                },
            ),
        ));
        let until = m.now + 100_000;
        m.run(Some(until));
    }
    m.run(None);
    let mut ok = true;
    for (p, id) in ids {
        let got = m.reply(id).0.result.unwrap().unwrap().into_bytes().unwrap();
        ok &= got == data[(p * 4096) as usize..(p * 4096 + 4096) as usize];
    }
    (m, ok)
}

#[test]
fn toleraid_rebuilds_reads_away_from_a_busy_disk() {
    let cfg = small(5, 5, 4096, vec![4 * 4096 * 16]);
    let (m, ok) = slow_disk_reads("toleraid", cfg.clone());
    assert!(ok, "rebuilt reads return the data");
    let st = m.e.stats();
    assert!(st.redirected_reads > 20, "{st:?}");
    assert!(st.reconstructed_reads >= st.redirected_reads);
    // Plain 4-RAID5 waits for the slow disk instead.
    let (m, ok) = slow_disk_reads("4-raid5", cfg);
    assert!(ok);
    assert_eq!(m.e.stats().redirected_reads, 0);
    assert_eq!(m.e.stats().reconstructed_reads, 0);
}

#[test]
fn sitout_rebuilds_reads_of_a_latency_outlier() {
    let mut cfg = small(5, 5, 4096, vec![4 * 4096 * 16]);
    cfg.sitout.check_interval_ns = 1_000_000;
    cfg.sitout.min_samples = 4;
    cfg.sitout.sit_out_ns = 1_000_000_000;
    let (m, ok) = slow_disk_reads("sitout", cfg);
    assert!(ok, "rebuilt reads return the data");
    let st = m.e.stats();
    assert!(st.redirected_reads > 20, "{st:?}");
    assert_eq!(st.reconstructed_reads, st.redirected_reads);
}

#[test]
fn sitout_tracker_flags_only_outliers() {
    let geo = ArrayGeom::new(1, 5, 1, 4096, 10, 0).unwrap();
    let mut so = array::SitOutTracker::new(
        SitOutConfig {
            min_samples: 2,
            check_interval_ns: 10,
            ..SitOutConfig::default()
        },
        5,
    );
    for d in 0..5u32 {
        for _ in 0..4 {
            let lat = if d == 3 {
                900_000
            } else {
                100_000 + d as u64 * 1000
            };
            so.observe(DiskId(d), lat, 0);
        }
    }
    // A bare Ctx: the check only looks at failures.
    let mut disks =
        crate::engine::disks::Disks::new(5, crate::detector::DetectorConfig::paper_dc(), 0);
    let mut ios = crate::engine::iotable::IoTable::default();
    let mut rng = crate::rng::Rng::new(1);
    let (mut oi, mut or, mut ui) = (Default::default(), Default::default(), 0usize);
    let mut stats = Default::default();
    let now = 20;
    let ctx = crate::engine::ctx::Ctx {
        now,
        rng: &mut rng,
        size_only: false,
        disks: &mut disks,
        ios: &mut ios,
        out_io: &mut oi,
        out_reply: &mut or,
        user_inflight: &mut ui,
        stats: &mut stats,
    };
    so.check(&ctx, &geo);
    assert!(so.sitting(DiskId(3), now));
    assert!(
        (0..5)
            .filter(|&d| d != 3)
            .all(|d| !so.sitting(DiskId(d), now))
    );
    assert_eq!(so.sit_outs, 1);
    assert!(
        so.next_deadline().is_none(),
        "no timer while nothing completes"
    );
}
