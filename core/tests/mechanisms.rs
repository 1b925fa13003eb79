//! Targeted tests of FusionRAID's mechanisms through the public engine API: the two write
//! paths, the absence of read-modify-write, in-position conversion (paper Fig. 7), redirection
//! around an unresponsive disk, the conversion pause, and degraded reads.

mod common;

use std::ops::Range;

use common::Driver;
use common::fusion_pool::{driver_over, pool_geometry, small_pool};
use fusionraid_core::scheme::fusion::{
    FusionConfig, FusionScheme, LayoutKind, Level, VolumeConfig,
};
use fusionraid_core::{Data, DevOp, DiskId, EngineConfig, Op, Request};

const BS: u64 = 65536;

/// The volume every test here uses: RAID5 6+1, 96 blocks.
fn volume() -> VolumeConfig {
    VolumeConfig::new("v", Level::Raid5, 7, 96 * BS)
}

fn driver(tune: impl FnOnce(&mut FusionConfig)) -> Driver {
    small_pool(volume(), tune)
}

fn pattern(tag: u8, len: u64) -> Vec<u8> {
    (0..len)
        .map(|i| tag.wrapping_add((i / 4096) as u8))
        .collect()
}

fn write(d: &mut Driver, id: u64, offset: u64, data: Vec<u8>) {
    d.write_ok(id, offset, data);
}

fn read(d: &mut Driver, id: u64, offset: u64, len: u64) -> Vec<u8> {
    d.read_now(id, offset, len).expect("read ok")
}

/// Submit a one-page read of each block in `blocks`, ids from `*id` on, without waiting.
fn submit_page_reads(d: &mut Driver, id: &mut u64, blocks: Range<u64>) {
    for b in blocks {
        assert!(d.submit(Request {
            id: *id,
            volume: 0,
            op: Op::Read {
                offset: b * BS,
                len: 4096
            }
        }));
        *id += 1;
    }
}

#[test]
fn small_writes_are_replicated_and_large_writes_take_a_fresh_full_stripe() {
    let mut d = driver(|_| {});
    // One page of one block: 2 copies, each one page long, on two distinct disks.
    write(&mut d, 1, 3 * 4096, pattern(1, 4096));
    let w: Vec<_> = d.log.iter().filter(|o| o.write).copied().collect();
    assert_eq!(w.len(), 2);
    assert_ne!(w[0].disk, w[1].disk, "replicas must sit on distinct disks");
    assert!(w.iter().all(|o| o.len == 4096));
    assert_eq!(d.engine.stats().replicated_block_writes, 1);
    d.log.clear();
    // 4 whole blocks of one logical stripe (4 > floor(7/2) = 3): a new full stripe, 7 block
    // writes (4 data, 2 zero-padded, 1 parity) on 7 distinct disks, and no reads at all.
    write(&mut d, 2, 6 * BS, pattern(2, 4 * BS));
    let w: Vec<_> = d.log.iter().filter(|o| o.write).copied().collect();
    assert_eq!(w.len(), 7);
    assert!(w.iter().all(|o| o.len == BS));
    let mut disks: Vec<usize> = w.iter().map(|o| o.disk).collect();
    disks.sort();
    disks.dedup();
    assert_eq!(disks.len(), 7);
    assert_eq!(d.engine.stats().full_stripe_writes, 1);
    // 3 whole blocks (not more than the threshold): replicated, 6 block writes.
    d.log.clear();
    write(&mut d, 3, 12 * BS, pattern(3, 3 * BS));
    assert_eq!(d.log.iter().filter(|o| o.write).count(), 6);
    assert_eq!(read(&mut d, 4, 6 * BS, 4 * BS), pattern(2, 4 * BS));
    assert_eq!(read(&mut d, 5, 12 * BS, 3 * BS), pattern(3, 3 * BS));
    assert_eq!(read(&mut d, 6, 3 * 4096, 4096), pattern(1, 4096));
}

/// The copies of a replicated write refer to the user's payload, each to its own pages: no
/// copy per replica.
#[test]
fn replica_writes_share_the_payload() {
    let mut d = driver(|_| {});
    let payload = pattern(9, 3 * 4096);
    d.engine
        .submit(
            Request {
                id: 1,
                volume: 0,
                op: Op::Write {
                    offset: 5 * 4096,
                    data: Data::Bytes(payload.clone()),
                    fua: false,
                },
            },
            0,
        )
        .unwrap();
    let mut shared = Vec::new();
    while let Some(io) = d.engine.poll_device_io() {
        if let DevOp::Write { data, .. } = &io.op {
            let Data::Shared(s) = data else {
                panic!("replica write with its own copy: {data:?}");
            };
            shared.push(s.clone());
        }
    }
    assert_eq!(shared.len(), 2, "two copies");
    assert!(shared[0].shares_buffer_with(&shared[1]));
    assert!(shared.iter().all(|s| s.as_slice() == &payload[..]));
    // (Those writes were taken from the engine, not performed: a fresh engine goes on.)
    let mut d = driver(|_| {});

    // A new full stripe: the data columns the payload covers whole are its blocks, shared;
    // the zero-padded columns and the parity are buffers of their own.
    let payload = pattern(10, 4 * BS);
    d.engine
        .submit(
            Request {
                id: 2,
                volume: 0,
                op: Op::Write {
                    offset: 6 * BS,
                    data: Data::Bytes(payload.clone()),
                    fua: false,
                },
            },
            0,
        )
        .unwrap();
    let (mut shared, mut own) = (Vec::new(), 0);
    while let Some(io) = d.engine.poll_device_io() {
        match &io.op {
            DevOp::Write {
                data: Data::Shared(s),
                ..
            } => shared.push(s.clone()),
            DevOp::Write { .. } => own += 1,
            _ => {}
        }
    }
    assert_eq!(
        (shared.len(), own),
        (4, 3),
        "4 data blocks, 2 padding, 1 parity"
    );
    assert!(shared.iter().all(|s| s.shares_buffer_with(&shared[0])));
    let mut blocks: Vec<&[u8]> = shared.iter().map(|s| s.as_slice()).collect();
    blocks.sort();
    let mut want: Vec<&[u8]> = payload.chunks(BS as usize).collect();
    want.sort();
    assert_eq!(blocks, want);
}

/// Packs: single-page writes to different blocks at different page positions share one
/// replica slot (each page at its own position), so scattered small writes do not use up the
/// replicated area a block each; a page position once used is never handed out again.
#[test]
fn patches_of_different_blocks_share_a_replica_slot() {
    let mut d = driver(|_| {});
    let ppb = BS / 4096;
    // Block b gets page b: 16 blocks, 16 distinct positions, one slot's worth.
    for b in 0..ppb {
        write(&mut d, b, b * BS + b * 4096, pattern(b as u8, 4096));
    }
    let slots = |d: &Driver| {
        let mut s: Vec<(usize, u64)> = d
            .log
            .iter()
            .filter(|o| o.write)
            .map(|o| (o.disk, (o.offset - 4096) / BS)) // members start with 4 KiB of metadata
            .collect();
        s.sort();
        s.dedup();
        s
    };
    assert!(d.log.iter().filter(|o| o.write).all(|o| o.len == 4096));
    assert_eq!(
        slots(&d).len(),
        2,
        "16 patches of 16 blocks should fill the two copies of one slot: {:?}",
        slots(&d)
    );
    // The same positions again (new data for the same blocks): the used positions are not
    // reused, so a second slot (two more blocks) takes them.
    for b in 0..ppb {
        write(
            &mut d,
            100 + b,
            b * BS + b * 4096,
            pattern(100 + b as u8, 4096),
        );
    }
    assert_eq!(slots(&d).len(), 4, "second round: {:?}", slots(&d));
    for b in 0..ppb {
        assert_eq!(
            read(&mut d, 200 + b, b * BS + b * 4096, 4096),
            pattern(100 + b as u8, 4096)
        );
    }
    let st = d.engine.volume_status(0).expect("volume");
    assert_eq!(
        st.mapped_bytes,
        ppb * 4096,
        "only the patched pages are data"
    );
}

#[test]
fn no_write_path_ever_reads() {
    let mut d = driver(|_| {});
    let mut rng = fusionraid_core::rng::Rng::new(11);
    for i in 0..400 {
        let pages = 96 * BS / 4096;
        let p0 = rng.below(pages);
        let n = 1 + rng.below((pages - p0).min(40));
        write(&mut d, i, p0 * 4096, pattern(i as u8, n * 4096));
    }
    let fg_reads = d.log.iter().filter(|o| o.read && !o.background).count();
    assert_eq!(
        fg_reads, 0,
        "a user write caused a device read (read-modify-write)"
    );
}

/// Paper Fig. 7: two stripes of a pair set hold copies of blocks; one copy was invalidated by
/// a later update. Conversion fills the parity of one stripe (invalid block included), frees
/// the other, and every block stays readable, including after losing any one disk.
#[test]
fn figure_7_in_position_conversion() {
    let mut d = driver(common::convert_when_idle);
    // As in the figure (blocks 2, 17, 95 and one invalidated copy), single-block writes fill
    // the slots of one pair set and one block is rewritten elsewhere. A 6+1 stripe has 6 data columns, so a pair set has 6 slots: fill them, then rewrite 2.
    for (i, b) in [2u64, 17, 95, 40, 41, 42].iter().enumerate() {
        write(&mut d, i as u64, b * BS, pattern(10 + i as u8, BS));
    }
    write(&mut d, 9, 2 * BS, pattern(99, BS));
    let before = d.engine.volume_status(0).unwrap();
    assert!(before.replicated_bytes > 0);
    // Let the idle trigger fire.
    assert_eq!(d.engine.stats().conversions, 0);
    d.run_until(Some(d.now + 100_000_000));
    d.drain();
    let after = d.engine.volume_status(0).unwrap();
    assert!(d.engine.stats().conversions >= 1, "no conversion ran");
    assert!(
        after.replicated_bytes < before.replicated_bytes,
        "before {before:?}\nafter {after:?}\n{}",
        d.engine.scheme().debug_state()
    );
    assert!(after.raid_bytes > before.raid_bytes);
    // Conversion read only data columns and wrote only parity: no user data moved.
    let bg_writes: Vec<_> = d.log.iter().filter(|o| o.write && o.background).collect();
    assert!(!bg_writes.is_empty());
    assert!(
        bg_writes.len() as u64 <= d.engine.stats().conversions,
        "conversion wrote more than one parity block per set"
    );
    d.engine.scheme().check_invariants();
    let expect = [
        (2u64, 99u8),
        (17, 11),
        (95, 12),
        (40, 13),
        (41, 14),
        (42, 15),
    ];
    for &(b, tag) in &expect {
        assert_eq!(
            read(&mut d, 100 + b, b * BS, BS),
            pattern(tag, BS),
            "block {b}"
        );
    }
    // Parity is right: fail each disk in turn (on a fresh copy of the state we can't clone,
    // so fail one disk and read everything back through reconstruction).
    d.engine.fail_disk(DiskId(0), d.now);
    d.disks[0].failed = true;
    for &(b, tag) in &expect {
        assert_eq!(
            read(&mut d, 200 + b, b * BS, BS),
            pattern(tag, BS),
            "block {b} after losing disk 0"
        );
    }
}

#[test]
fn writes_and_replica_reads_avoid_an_unresponsive_disk() {
    // Room for many pair sets, so small writes stay on the replicated path (with 8 disks and
    // 7-wide stripes, a full stripe avoiding one disk is rare; the paper's pools are larger).
    let mut d = driver(|c| c.volumes[0].replicated_fraction = 0.8);
    // A full stripe (RAID area, one block on almost every disk) and some replicated blocks.
    write(&mut d, 1, 0, pattern(1, 6 * BS));
    for b in 0..6u64 {
        write(&mut d, 10 + b, (10 + b) * BS, pattern(10 + b as u8, BS));
    }
    // Disk 3 stalls: every I/O takes 20 ms. RAID reads keep landing on it (nothing flags it
    // yet), so requests pending longer than the window (1 ms) pile up as stragglers.
    d.disks[3].spike_until = u64::MAX;
    d.disks[3].spike_factor = 200;
    let mut id = 100;
    for round in 0..30u64 {
        submit_page_reads(&mut d, &mut id, 0..6);
        d.run_until(Some(d.now + 300_000 + round));
    }
    assert!(
        d.engine.disks().get(DiskId(3)).detector.is_unresponsive(),
        "detector did not flag the stalled disk"
    );
    d.log.clear();
    // New small writes while disk 3 is unresponsive: none lands on disk 3. Each is 15 of a
    // block's 16 pages, so it needs a pack of its own and the spare slots run out.
    for b in 20..40u64 {
        assert!(
            d.engine.disks().get(DiskId(3)).detector.is_unresponsive(),
            "disk 3 recovered during the write phase (b = {b}, stragglers {})",
            d.engine.disks().get(DiskId(3)).detector.stragglers()
        );
        assert!(d.submit_write(id, b * BS, pattern(b as u8, 15 * 4096)));
        id += 1;
        d.run_until(Some(d.now + 10_000));
    }
    let on3 = d.log.iter().filter(|o| o.write && o.disk == 3).count();
    assert_eq!(on3, 0, "writes went to the unresponsive disk");
    // And the engine says so: first choices on disk 3 passed over (spare slots, open
    // packs), and pair sets drawn away from it once the spare slots ran out.
    let st = d.engine.stats();
    assert!(st.redirected_writes > 0, "no redirection counted: {st:?}");
    assert!(
        st.steered_pair_sets > 0,
        "no steered pair set counted: {st:?}"
    );
    // Replicated reads go to the other copy.
    d.log.clear();
    submit_page_reads(&mut d, &mut id, 10..16);
    d.run_until(Some(d.now + 10_000));
    assert_eq!(
        d.log.iter().filter(|o| o.read && o.disk == 3).count(),
        0,
        "a replicated read went to the unresponsive disk"
    );
    // RAID reads of blocks on disk 3 are rebuilt from the rest of the stripe instead.
    d.log.clear();
    let rebuilt = d.engine.stats().reconstructed_reads;
    submit_page_reads(&mut d, &mut id, 0..6);
    d.run_until(Some(d.now + 10_000));
    assert_eq!(
        d.log.iter().filter(|o| o.read && o.disk == 3).count(),
        0,
        "a RAID read went to the unresponsive disk"
    );
    assert!(d.engine.stats().reconstructed_reads > rebuilt);
    d.disks[3].spike_until = 0;
    d.drain();
    let _ = d.take_replies();
    for b in 20..40u64 {
        assert_eq!(read(&mut d, id + b, b * BS, 4096), pattern(b as u8, 4096));
    }
}

#[test]
fn raid_reads_of_a_failed_disk_are_reconstructed() {
    let mut d = driver(|_| {});
    write(&mut d, 1, 0, pattern(5, 6 * BS)); // a full logical stripe: RAID path
    d.engine.fail_disk(DiskId(2), d.now);
    d.disks[2].failed = true;
    d.log.clear();
    assert_eq!(read(&mut d, 2, 0, 6 * BS), pattern(5, 6 * BS));
    assert!(
        d.log.iter().all(|o| o.disk != 2),
        "read touched the failed disk"
    );
    assert!(d.engine.stats().reconstructed_reads > 0);
    // Writes after the failure avoid the failed disk entirely.
    d.log.clear();
    write(&mut d, 3, 50 * BS, pattern(6, 2 * BS));
    write(&mut d, 4, 60 * BS, pattern(7, 6 * BS));
    assert!(d.log.iter().all(|o| o.disk != 2));
    assert_eq!(read(&mut d, 5, 50 * BS, 2 * BS), pattern(6, 2 * BS));
    assert_eq!(read(&mut d, 6, 60 * BS, 6 * BS), pattern(7, 6 * BS));
}

#[test]
fn conversion_pauses_while_disks_are_busy_with_foreground_io() {
    let run = |pause: f64| {
        let mut d = driver(|c| {
            // A replicated area far from its cap: only the pause decides.
            c.volumes[0].replicated_fraction = 0.9;
            c.conversion.enabled = true;
            c.conversion.idle_ns = None;
            c.conversion.replicated_high_water = 0.0; // always wants to convert
            c.conversion.pause_fg_bytes_per_sec = pause;
        });
        for b in 0..30u64 {
            assert!(d.submit_write(b, b * BS, pattern(b as u8, BS)));
            d.run_until(Some(d.now + 200_000));
        }
        d.drain();
        d.engine.stats().conversions
    };
    // Every disk sees far more than 1 byte/s of foreground traffic: conversion waits.
    assert_eq!(run(1.0), 0);
    assert!(run(1e15) > 0);
}

/// Issue 21, part 1: a hybrid pool's HDD members hold no stripes. Eight SSDs (MOLS needs a
/// prime power) at pool indices around two HDDs (3 and 9): small and large writes,
/// conversion and reads all stay on the SSDs, and the data reads back.
#[test]
fn hdd_members_hold_no_stripes() {
    let pool = pool_geometry(10, BS, LayoutKind::Mols, vec![3, 9]);
    let mut cfg = FusionConfig::new(pool, vec![volume()]);
    cfg.max_request_bytes = 24 * BS;
    common::convert_when_idle(&mut cfg);
    let scheme = FusionScheme::new(cfg).unwrap();
    assert!(scheme.is_hdd_member(DiskId(9)) && !scheme.is_hdd_member(DiskId(8)));
    let mut d = driver_over(scheme, EngineConfig::new(10), 7);
    let mut want = vec![0u8; (96 * BS) as usize];
    for i in 0..40u64 {
        let (off, len) = if i % 5 == 0 {
            ((i % 12) * 7 * BS, 6 * BS)
        } else {
            ((i * 13 % 95) * BS + (i % 16) * 4096, 4096 * (1 + i % 3))
        };
        let data = pattern(i as u8, len);
        want[off as usize..(off + len) as usize].copy_from_slice(&data);
        write(&mut d, i, off, data);
    }
    d.run_until(Some(d.now + 100_000_000));
    d.settle();
    assert!(d.engine.stats().conversions >= 1, "no conversion ran");
    for b in (0..96).step_by(16) {
        let got = read(&mut d, 1000 + b, b * BS, 16 * BS);
        assert!(
            got == want[(b * BS) as usize..((b + 16) * BS) as usize],
            "block {b}"
        );
    }
    let touched: Vec<usize> = d.log.iter().map(|o| o.disk).collect();
    assert!(!touched.is_empty());
    assert!(
        !touched.iter().any(|&disk| disk == 3 || disk == 9),
        "an HDD member got volume I/O"
    );
    // Every SSD holds part of the volume.
    for ssd in [0, 1, 2, 4, 5, 6, 7, 8] {
        assert!(touched.contains(&ssd), "SSD {ssd} unused");
    }
}

/// A layout over the SSDs must fit them: the tier check names the HDDs.
#[test]
fn hdd_members_must_leave_ssds_for_the_stripes() {
    let pool = |hdds| pool_geometry(8, BS, LayoutKind::Permutation { seed: 1 }, hdds);
    let vols = || vec![volume()];
    // 6 SSDs can not hold a 7-wide stripe.
    let e = FusionScheme::new(FusionConfig::new(pool(vec![6, 7]), vols()))
        .err()
        .unwrap();
    assert!(e.to_string().contains("too wide"), "{e}");
    let e = FusionScheme::new(FusionConfig::new(pool(vec![7, 2]), vols()))
        .err()
        .unwrap();
    assert!(e.to_string().contains("ascending"), "{e}");
    assert!(FusionScheme::new(FusionConfig::new(pool(vec![7]), vols())).is_ok());
}
