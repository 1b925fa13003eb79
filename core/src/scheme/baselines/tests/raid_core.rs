//! The md-like RAID core: md's RMW/RCW choice, parity after partial writes, batching, degraded
//! writes.

use super::*;

/// md's rule: pre-reads for RMW = written columns + parity, for RCW = unwritten data
/// columns; fewer wins, a tie goes to RCW; full stripes read nothing.
#[test]
fn rmw_vs_rcw_follows_md() {
    let bs = 16384u64;
    let stripe = 6 * bs;
    let mut m = Mini::new("4-raid5", small(7, 7, bs, vec![8 * stripe]));
    let step = |m: &mut Mini, off: u64, len: u64| {
        let before = m.device_reads();
        m.write(0, off, pattern(len, off));
        m.device_reads() - before
    };
    // One page of one column: RMW reads 2 (old data, parity) instead of 5.
    assert_eq!(step(&mut m, 0, 4096), 2);
    // Five whole columns: RCW reads the sixth column only.
    assert_eq!(step(&mut m, stripe, 5 * bs), 1);
    // Three columns: RMW 4 vs RCW 3: RCW.
    assert_eq!(step(&mut m, 2 * stripe, 3 * bs), 3);
    // Two columns: RMW 3 vs RCW 4: RMW.
    assert_eq!(step(&mut m, 3 * stripe, 2 * bs), 3);
    // A full stripe: no reads.
    let full = m.e.stats().full_stripe_writes;
    assert_eq!(step(&mut m, 4 * stripe, stripe), 0);
    assert_eq!(m.e.stats().full_stripe_writes, full + 1);

    // 3+1: one column written is a tie (2 vs 2), which md breaks towards RCW: the two other
    // data columns are read, not the parity.
    let mut m = Mini::new("4-raid5", small(4, 4, bs, vec![3 * bs * 4]));
    let geo = ArrayGeom::new(1, 4, 1, bs, 100, 0).unwrap();
    let pdisk = geo.disk(0, 3).index();
    m.write(0, 0, pattern(4096, 1));
    assert_eq!(m.device_reads(), 2);
    assert_eq!(m.disk_reads(pdisk), 0);
}

fn check_parity(m: &Mini, geo: &ArrayGeom, stripes: u64) {
    let dcols = geo.dcols();
    for s in 0..stripes {
        for p in 0..geo.ppb {
            let col = |c: usize| {
                let (d, off) = geo.offset(s, c, p);
                m.mem[d.index()][off as usize..off as usize + PS].to_vec()
            };
            let data: Vec<Vec<u8>> = (0..dcols).map(col).collect();
            let refs: Vec<&[u8]> = data.iter().map(|v| v.as_slice()).collect();
            let mut pp = vec![0u8; PS];
            let mut qq = vec![0u8; PS];
            if geo.nparity == 1 {
                parity::gen_p(&refs, &mut pp);
            } else {
                parity::gen_pq(&refs, &mut pp, &mut qq);
                assert_eq!(col(dcols + 1), qq, "Q of stripe {s} page {p}");
            }
            assert_eq!(col(dcols), pp, "P of stripe {s} page {p}");
        }
    }
}

/// After many overlapping partial writes (RMW, RCW, merged batches), every stripe's parity on
/// the members equals parity recomputed from its data, for RAID5 and RAID6.
#[test]
fn parity_after_rmw_equals_recomputed() {
    for (np, delay) in [(1, None), (2, None), (1, Some(30_000)), (2, Some(30_000))] {
        let bs = 8192u64;
        let mut cfg = small(12, 6, bs, vec![40 * bs, 40 * bs]);
        cfg.nparity = np;
        cfg.raid5.batch_delay_ns = delay;
        let mut m = Mini::new("4-raid5", cfg);
        let mut rng = crate::rng::Rng::new(7 + np as u64);
        for round in 0..40u64 {
            for _ in 0..6 {
                let vol = rng.below(2) as u32;
                let p0 = rng.below(80);
                let n = 1 + rng.below((80 - p0).min(12));
                m.submit(
                    vol,
                    Op::Write {
                        offset: p0 * 4096,
                        data: Data::Bytes(pattern(n * 4096, round * 100 + p0)),
                        fua: false,
                    },
                );
            }
            m.run(None);
        }
        assert!(m.replies.iter().all(|r| r.0.result.is_ok()));
        let geo = ArrayGeom::new(2, 6, np, bs, 100, 0).unwrap();
        let stripes = 2 * (40 * bs).div_ceil(geo.stripe_data_bytes());
        check_parity(&m, &geo, stripes);
    }
}

/// With a batching delay, six concurrent single-chunk writes of one stripe become one full
/// stripe write with no pre-reads; without it the first one starts alone and pre-reads.
#[test]
fn batching_delay_fills_stripes() {
    let bs = 4096u64;
    for (delay, expect_reads) in [(Some(100_000), false), (None, true)] {
        let mut cfg = small(7, 7, bs, vec![6 * bs * 4]);
        cfg.raid5.batch_delay_ns = delay;
        let mut m = Mini::new("4-raid5", cfg);
        for c in 0..6 {
            m.submit(
                0,
                Op::Write {
                    offset: c * bs,
                    data: Data::Bytes(pattern(bs, c)),
                    fua: false,
                },
            );
        }
        m.run(None);
        assert_eq!(m.device_reads() > 0, expect_reads, "delay {delay:?}");
        assert_eq!(
            m.read(0, 0, 6 * bs),
            (0..6).flat_map(|c| pattern(bs, c)).collect::<Vec<_>>()
        );
    }
}

/// Writes to a degraded array keep everything readable: a write that skips the failed column
/// (rebuild mode) and one that covers it (degraded RCW), then reads rebuild the lost column.
#[test]
fn degraded_writes_stay_reconstructable() {
    for np in [1, 2] {
        let bs = 8192u64;
        let mut cfg = small(6, 6, bs, vec![30 * bs]);
        cfg.nparity = np;
        let mut m = Mini::new("4-raid5", cfg);
        let mut oracle = vec![0u8; 30 * bs as usize];
        let w = |m: &mut Mini, o: &mut Vec<u8>, off: u64, len: u64, tag: u64| {
            let d = pattern(len, tag);
            o[off as usize..(off + len) as usize].copy_from_slice(&d);
            m.write(0, off, d);
        };
        w(&mut m, &mut oracle, 0, 30 * bs, 1);
        for d in 0..np {
            m.e.fail_disk(DiskId(d as u32 * 2), m.now);
        }
        for (i, off) in [0u64, 4096, 3 * bs, 7 * bs + 4096, 12 * bs]
            .into_iter()
            .enumerate()
        {
            w(&mut m, &mut oracle, off, 3 * 4096, 10 + i as u64);
        }
        w(&mut m, &mut oracle, 20 * bs, 4 * bs, 99);
        assert_eq!(m.read(0, 0, 30 * bs), oracle);
        assert!(m.e.stats().reconstructed_reads > 0);
    }
}
