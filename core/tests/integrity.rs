//! Data integrity: page checksums catch silent corruption on a member, reads are served from
//! a good copy or rebuilt from parity, and the block is repaired (moved off the bad copy).

mod common;

use common::{Driver, OpRecord};
use fusionraid_core::scheme::fusion::{
    FusionConfig, FusionScheme, LayoutKind, Level, PoolGeometry, VolumeConfig,
};
use fusionraid_core::{Engine, EngineConfig};

const BS: u64 = 65536;

fn driver() -> Driver {
    driver_with(|_| {})
}

fn driver_with(tune: impl FnOnce(&mut FusionConfig)) -> Driver {
    // 8 disks, MOLS, one RAID5 6+1 volume of 96 blocks; conversion off (unless `tune` turns
    // it on) so blocks stay where the test put them.
    let pool = PoolGeometry {
        disks: 8,
        disk_bytes: u64::MAX / 4,
        block_size: BS,
        data_offset: 4096,
        layout: LayoutKind::Mols,
        hdds: Vec::new(),
    };
    let mut cfg = FusionConfig::new(pool, vec![VolumeConfig::new("v", Level::Raid5, 7, 96 * BS)]);
    cfg.conversion.enabled = false;
    cfg.max_request_bytes = 24 * BS;
    tune(&mut cfg);
    let scheme = FusionScheme::new(cfg).unwrap();
    let disk_bytes = 4096 + scheme.blocks_per_disk() * BS;
    Driver::new(
        Engine::new(EngineConfig::new(8), Box::new(scheme), 0),
        8,
        disk_bytes,
        11,
    )
}

fn pattern(tag: u8, len: u64) -> Vec<u8> {
    (0..len)
        .map(|i| tag.wrapping_add((i / 4096) as u8).wrapping_mul(7) ^ (i as u8))
        .collect()
}

/// Write and return the device writes it issued.
fn write(d: &mut Driver, id: u64, offset: u64, data: Vec<u8>) -> Vec<OpRecord> {
    d.log.clear();
    d.write_ok(id, offset, data);
    d.log.iter().filter(|o| o.write).copied().collect()
}

fn read(d: &mut Driver, id: u64, offset: u64, len: u64) -> Result<Vec<u8>, String> {
    d.read_now(id, offset, len)
}

/// Flip a byte of a member, under the engine's feet (bit rot, a misdirected write).
fn corrupt(d: &mut Driver, at: &OpRecord, byte: u64) {
    d.disks[at.disk].bytes[(at.offset + byte) as usize] ^= 0x5A;
}

#[test]
fn a_corrupt_replica_is_caught_served_from_the_other_copy_and_repaired() {
    let mut d = driver();
    let w = write(&mut d, 1, 5 * BS, pattern(1, BS));
    assert_eq!(w.len(), 2, "one block, two replicas");
    // The read goes to the first copy when both disks are equally idle: corrupt that one.
    corrupt(&mut d, &w[0], 3 * 4096 + 17);
    assert_eq!(read(&mut d, 2, 5 * BS, BS).unwrap(), pattern(1, BS));
    assert_eq!(d.engine.stats().checksum_errors, 1);
    // The repair moves the block off the bad copy (its own read may meet the bad copy
    // again, and goes to the good one).
    d.settle();
    let st = d.engine.stats().clone();
    assert_eq!(st.unrecoverable_pages, 0);
    assert_eq!(st.repaired_blocks, 1);
    d.engine.scheme().check_invariants();
    assert_eq!(read(&mut d, 3, 5 * BS, BS).unwrap(), pattern(1, BS));
    assert_eq!(
        d.engine.stats().checksum_errors,
        st.checksum_errors,
        "no bad copy is read again"
    );
}

#[test]
fn a_corrupt_raid_block_is_rebuilt_from_parity_and_repaired() {
    let mut d = driver();
    // A full logical stripe (6 blocks > threshold): a fresh RAID stripe, columns in order.
    let w = write(&mut d, 1, 0, pattern(2, 6 * BS));
    assert_eq!(w.len(), 7);
    corrupt(&mut d, &w[2], 4096 + 9); // block 2, page 1
    let rebuilt = d.engine.stats().reconstructed_reads;
    assert_eq!(read(&mut d, 2, 0, 6 * BS).unwrap(), pattern(2, 6 * BS));
    assert_eq!(d.engine.stats().checksum_errors, 1);
    assert!(
        d.engine.stats().reconstructed_reads > rebuilt,
        "served from parity"
    );
    d.settle();
    let st = d.engine.stats().clone();
    assert_eq!(st.repaired_blocks, 1);
    d.engine.scheme().check_invariants();
    assert_eq!(read(&mut d, 3, 0, 6 * BS).unwrap(), pattern(2, 6 * BS));
    assert_eq!(d.engine.stats().checksum_errors, st.checksum_errors);
}

#[test]
fn a_page_bad_in_every_copy_fails_its_read_and_nothing_else() {
    let mut d = driver();
    let w = write(&mut d, 1, 9 * BS, pattern(3, BS));
    for c in &w {
        corrupt(&mut d, c, 100);
    }
    let e = read(&mut d, 2, 9 * BS, BS).unwrap_err();
    assert!(e.contains("checksum"), "{e}");
    assert!(d.engine.stats().unrecoverable_pages > 0);
    // The other pages of the block and the other blocks still read.
    assert_eq!(
        read(&mut d, 3, 9 * BS + 4096, BS - 4096).unwrap(),
        pattern(3, BS)[4096..].to_vec()
    );
}

#[test]
fn scrub_repairs_a_bad_second_copy_and_a_bad_parity_that_reads_never_touch() {
    let mut d = driver();
    let rep = write(&mut d, 1, 40 * BS, pattern(4, BS));
    let raid = write(&mut d, 2, 0, pattern(5, 6 * BS));
    assert_eq!((rep.len(), raid.len()), (2, 7));
    corrupt(&mut d, &rep[1], 2 * 4096 + 1); // the copy reads do not choose
    corrupt(&mut d, &raid[6], 4096 + 5); // parity, page 1
    assert_eq!(read(&mut d, 3, 40 * BS, BS).unwrap(), pattern(4, BS));
    assert_eq!(read(&mut d, 4, 0, 6 * BS).unwrap(), pattern(5, 6 * BS));
    assert_eq!(
        d.engine.stats().checksum_errors,
        0,
        "reads never see either"
    );

    let now = d.now;
    d.engine.start_scrub(now).unwrap();
    assert!(d.engine.start_scrub(now).is_err(), "one scrub at a time");
    d.settle();
    let status = d.engine.volume_status(0).unwrap().scrub.unwrap();
    assert!(status.starts_with("done"), "{status}");
    assert!(status.contains("1 bad copies"), "{status}");
    assert!(status.contains("1 rewritten"), "{status}");
    let st = d.engine.stats().clone();
    assert_eq!(st.checksum_errors, 1);
    assert_eq!(st.repaired_blocks, 1);
    d.engine.scheme().check_invariants();

    // The parity is right again: with block 2's member gone, block 2 is rebuilt from it.
    let gone = raid[2].disk;
    d.engine
        .fail_disk(fusionraid_core::DiskId(gone as u32), d.now);
    d.disks[gone].failed = true;
    assert_eq!(
        read(&mut d, 5, 2 * BS, BS).unwrap(),
        pattern(5, 6 * BS)[2 * BS as usize..3 * BS as usize].to_vec()
    );
    assert_eq!(read(&mut d, 6, 40 * BS, BS).unwrap(), pattern(4, BS));
    assert_eq!(d.engine.stats().checksum_errors, 1);

    // A second scrub of a clean pool finds nothing.
    d.settle();
    let now = d.now;
    d.engine.start_scrub(now).unwrap();
    d.settle();
    let status = d.engine.volume_status(0).unwrap().scrub.unwrap();
    assert!(status.contains(" 0 bad copies"), "{status}");
    assert!(status.contains(" 0 rewritten"), "{status}");
}

/// Both copies of a replicated block go bad before its pair set is converted. The data is
/// lost (its reads fail, and keep failing), but it must not hold the pair set forever: the
/// repair finds no good copy and moves the block as it is (its checksums still mark it
/// lost), the conversion then goes ahead and the engine goes quiet. Otherwise conversion and
/// repair would be retried every scan, forever, and the replicated area never come back.
#[test]
fn a_block_lost_in_both_copies_does_not_stall_conversion() {
    let mut d = driver_with(common::convert_when_idle);
    // Six whole blocks fill one pair set's six slots.
    let blocks = [2u64, 17, 95, 40, 41, 42];
    let mut copies = Vec::new();
    for (i, &b) in blocks.iter().enumerate() {
        let w = write(&mut d, i as u64, b * BS, pattern(20 + i as u8, BS));
        assert_eq!(w.len(), 2, "a replicated block write");
        if b == 17 {
            copies = w;
        }
    }
    for c in &copies {
        corrupt(&mut d, c, 3 * 4096 + 5);
    }
    d.run_until(Some(d.now + 200_000_000));
    let st = d.engine.stats().clone();
    assert!(st.conversions >= 1, "the pair set was never converted");
    assert!(st.unrecoverable_pages >= 1);
    assert_eq!(st.repaired_blocks, 0, "a lost block is moved, not repaired");
    // Quiet: nothing more to do in the background.
    d.log.clear();
    d.run_until(Some(d.now + 500_000_000));
    assert!(
        d.log.is_empty(),
        "background I/O goes on: {} ops",
        d.log.len()
    );
    // The lost page fails its read, the rest of the volume is intact.
    let err = read(&mut d, 100, 17 * BS, BS).unwrap_err();
    assert!(err.contains("lost"), "{err}");
    for (i, &b) in blocks.iter().enumerate().filter(|(_, b)| **b != 17) {
        assert_eq!(
            read(&mut d, 200 + b, b * BS, BS).unwrap(),
            pattern(20 + i as u8, BS)
        );
    }
    // Scrubs know the page is lost: they leave it out instead of queueing a repair that
    // could only move it again (every pass would move the block once more).
    for pass in 0..2 {
        let before = d.engine.stats().clone();
        let now = d.now;
        d.engine.start_scrub(now).unwrap();
        d.pump(); // the scrub's first reads
        d.settle();
        let status = d.engine.volume_status(0).unwrap().scrub.unwrap();
        assert!(status.contains(" 0 bad copies"), "pass {pass}: {status}");
        assert!(
            status.contains(", 1 pages known lost"),
            "pass {pass}: {status}"
        );
        let st = d.engine.stats();
        assert_eq!(
            st.relocations, before.relocations,
            "pass {pass} moved blocks"
        );
        assert_eq!(st.checksum_errors, before.checksum_errors, "pass {pass}");
    }
    // Writing the block again makes it whole, and scrubs check all of it again.
    write(&mut d, 300, 17 * BS, pattern(99, BS));
    assert_eq!(read(&mut d, 301, 17 * BS, BS).unwrap(), pattern(99, BS));
    let now = d.now;
    d.engine.start_scrub(now).unwrap();
    d.pump();
    d.settle();
    let status = d.engine.volume_status(0).unwrap().scrub.unwrap();
    assert!(status.contains(" 0 bad copies"), "{status}");
    assert!(!status.contains("known lost"), "{status}");
    d.engine.scheme().check_invariants();
}

/// Issue 19, case 4: after a member's pages are corrupted and scrubbed, status must not show
/// twice as many checksum errors as blocks repaired, as it would if each bad copy counted
/// once for the scrub that finds it and once more for the repair's own read of it (a RAID
/// block is read directly before it is rebuilt from parity). One bad copy, one error.
#[test]
fn a_bad_copy_counts_once_however_often_it_is_read() {
    let mut d = driver();
    // Three full stripes; one data block of each gets a bad page.
    for s in 0..3u64 {
        let raid = write(&mut d, 1 + s, s * 6 * BS, pattern(6, 6 * BS));
        assert_eq!(raid.len(), 7);
        corrupt(&mut d, &raid[2 * s as usize], s * 4096 + 3);
    }
    let now = d.now;
    d.engine.start_scrub(now).unwrap();
    d.settle();
    let status = d.engine.volume_status(0).unwrap().scrub.unwrap();
    assert!(status.contains(" 3 bad copies"), "{status}");
    let st = d.engine.stats().clone();
    assert_eq!(st.repaired_blocks, 3, "{st:?}");
    assert_eq!(st.checksum_errors, 3, "one error per bad copy: {st:?}");
    for s in 0..3u64 {
        assert_eq!(
            read(&mut d, 10 + s, s * 6 * BS, 6 * BS).unwrap(),
            pattern(6, 6 * BS)
        );
    }
    assert_eq!(d.engine.stats().checksum_errors, 3);
}

/// Issue 19: scrub progress read "scrubbing blocks 100%", then "scrubbing parity 0%": a
/// share of one pass. It is a share of everything the scrub checks (every copy of every
/// page, then each RAID stripe for its parity), so it only grows, and reaches 100% when
/// the scrub is done.
#[test]
fn scrub_progress_is_a_share_of_both_passes_and_only_grows() {
    let mut d = driver();
    // RAID stripes and replicated blocks both.
    write(&mut d, 1, 0, pattern(7, 24 * BS));
    for b in 30..50u64 {
        write(&mut d, 100 + b, b * BS, pattern(8, BS / 2));
    }
    let now = d.now;
    d.engine.start_scrub(now).unwrap();
    let mut seen = Vec::new();
    for _ in 0..1_000_000 {
        let status = d.engine.volume_status(0).unwrap().scrub.unwrap();
        if status.starts_with("done") {
            break;
        }
        let pct: u64 = status
            .split_whitespace()
            .find_map(|w| w.trim_end_matches(':').strip_suffix('%')?.parse().ok())
            .unwrap_or_else(|| panic!("no percentage in {status:?}"));
        if seen.last() != Some(&pct) {
            seen.push(pct);
        }
        let t = d.now + 20_000;
        d.run_until(Some(t));
    }
    let status = d.engine.volume_status(0).unwrap().scrub.unwrap();
    assert!(status.starts_with("done"), "{status}");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "went back: {seen:?}");
    assert!(seen.iter().all(|&p| p < 100), "100% before done: {seen:?}");
    assert!(seen.len() > 3, "too few steps to tell: {seen:?}");
}

/// The cleaner reads the pages it moves straight from the RAID block its plan found them in,
/// and checks them as any read does: a page that went bad there is rebuilt from parity and
/// moved as it was written, not as the member now holds it.
#[test]
fn a_corrupt_page_the_cleaner_moves_is_rebuilt_not_copied() {
    let mut d = driver_with(common::convert_when_idle);
    // Two full stripes of six blocks each: two fresh RAID stripes, columns in order.
    let a = write(&mut d, 1, 0, pattern(5, 6 * BS));
    let b = write(&mut d, 2, 6 * BS, pattern(6, 6 * BS));
    assert_eq!((a.len(), b.len()), (7, 7));
    // Rewrite all but the first block of each: each stripe keeps one live column, and one
    // target stripe can take both.
    for (i, blk) in (1..6u64).chain(7..12).enumerate() {
        write(&mut d, 10 + i as u64, blk * BS, pattern(50 + i as u8, BS));
    }
    // A page of block 0 goes bad on its member before the cleaner gets to it.
    corrupt(&mut d, &a[0], 2 * 4096 + 3);
    let before = d.engine.stats().clone();
    d.run_until(Some(d.now + 500_000_000));
    let st = d.engine.stats().clone();
    assert!(
        st.relocations >= before.relocations + 2,
        "the cleaner did not move blocks 0 and 6"
    );
    assert_eq!(st.checksum_errors, 1, "the bad page is found once");
    assert_eq!(st.unrecoverable_pages, 0);
    d.engine.scheme().check_invariants();
    assert_eq!(
        read(&mut d, 100, 0, BS).unwrap(),
        pattern(5, 6 * BS)[..BS as usize]
    );
    assert_eq!(
        read(&mut d, 101, 6 * BS, BS).unwrap(),
        pattern(6, 6 * BS)[..BS as usize]
    );
    assert_eq!(
        d.engine.stats().checksum_errors,
        1,
        "the moved copy is good: no read meets a bad page again"
    );
}
