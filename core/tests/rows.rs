//! Parity-row writes (`FusionConfig::row_ns`, core/src/scheme/fusion/rows.rs): one-page
//! writes kept several deep go as parity rows, a page of each data column of a stripe plus
//! its parity, with every page read back as written, degraded too; a writer at queue depth
//! 1 is never held; a row that does not fill goes down the replicated path when its time
//! is up; a stripe closed early leaves nothing for a scrub to rewrite.

mod common;

use common::Driver;
use common::fusion_pool::small_pool;
use fusionraid_core::Nanos;
use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::fusion::{Level, VolumeConfig};

const BS: u64 = 65536;
const PAGE: u64 = 4096;
const HOLD: Nanos = 1_000_000;
/// Large enough that two of 16 random writes in flight rarely share a block (a write to a
/// block with a write in flight goes down the replicated path after it).
const BLOCKS: u64 = 512;

fn driver(level: Level, width: usize, hold: Option<Nanos>) -> Driver {
    let v = VolumeConfig::new("v", level, width, BLOCKS * BS);
    small_pool(v, |c| c.row_ns = hold)
}

/// The bytes of page `p` after write number `n` (its first page or any other).
fn page(p: u64, n: u64) -> Vec<u8> {
    let mut b = vec![0u8; PAGE as usize];
    for (i, c) in b.chunks_mut(8).enumerate() {
        c.copy_from_slice(&(p << 32 ^ n << 16 ^ i as u64).to_le_bytes());
    }
    b
}

/// Write `pages` in order, one page per request, `depth` in flight; returns every reply's
/// latency. `latest` records what each page should read back as.
fn write_pages(
    d: &mut Driver,
    pages: &[u64],
    depth: usize,
    latest: &mut [Option<u64>],
) -> Vec<Nanos> {
    let runs: Vec<(u64, u64)> = pages.iter().map(|&p| (p, 1)).collect();
    write_runs(d, &runs, depth, latest)
}

/// Write each run `(first page, pages)` as one request, `depth` in flight.
fn write_runs(
    d: &mut Driver,
    runs: &[(u64, u64)],
    depth: usize,
    latest: &mut [Option<u64>],
) -> Vec<Nanos> {
    let mut in_flight = 0;
    let mut slowest = Vec::new();
    let settle = |d: &mut Driver, in_flight: &mut usize, slowest: &mut Vec<Nanos>| {
        for r in d.take_replies() {
            assert!(r.result.is_ok(), "{r:?}");
            slowest.push(d.now - r.submitted_at);
            *in_flight -= 1;
        }
    };
    for (n, &(first, count)) in runs.iter().enumerate() {
        while in_flight >= depth {
            d.run_until(Some(d.now + 10_000));
            settle(d, &mut in_flight, &mut slowest);
        }
        let n = n as u64 + 1;
        let bytes: Vec<u8> = (first..first + count).flat_map(|p| page(p, n)).collect();
        assert!(d.submit_write(1_000_000 + n, first * PAGE, bytes));
        for p in first..first + count {
            latest[p as usize] = Some(n);
        }
        in_flight += 1;
    }
    d.drain();
    settle(d, &mut in_flight, &mut slowest);
    assert_eq!(in_flight, 0, "a write was never answered");
    slowest
}

/// Every page reads back as last written (zeros where never written).
fn check(d: &mut Driver, latest: &[Option<u64>]) {
    for b in 0..BLOCKS {
        let got = d.read_now(7, b * BS, BS).expect("read");
        for (i, c) in got.chunks(PAGE as usize).enumerate() {
            let p = b * (BS / PAGE) + i as u64;
            let want = latest[p as usize].map_or(vec![0u8; PAGE as usize], |n| page(p, n));
            assert!(c == want.as_slice(), "page {p} reads back wrong");
        }
    }
}

fn random_pages(n: usize, seed: u64) -> Vec<u64> {
    let mut r = Rng::new(seed);
    (0..n).map(|_| r.below(BLOCKS * BS / PAGE)).collect()
}

fn no_latest() -> Vec<Option<u64>> {
    vec![None; (BLOCKS * BS / PAGE) as usize]
}

#[test]
fn random_pages_kept_deep_go_as_parity_rows() {
    for (level, width, copies) in [(Level::Raid5, 5, 2), (Level::Raid6, 6, 3)] {
        let pages = random_pages(600, 1);
        let mut plain = driver(level, width, None);
        write_pages(&mut plain, &pages, 16, &mut no_latest());
        let p = plain.engine.stats().clone();
        let mut d = driver(level, width, Some(HOLD));
        let mut latest = no_latest();
        write_pages(&mut d, &pages, 16, &mut latest);
        check(&mut d, &latest);
        d.engine.scheme().check_invariants();
        let r = d.engine.stats().clone();
        assert_eq!(p.row_writes, 0);
        assert_eq!(p.replicated_block_writes, 600, "{p:?}");
        // Four data columns: 150 rows carry all 600 writes, but for the first few dozen
        // (the pace of arrivals is not known yet) and the last rows' worth that may not
        // fill.
        assert!(r.row_writes >= 130, "{level:?}: {r:?}");
        assert!(r.replicated_block_writes <= 600 - 4 * r.row_writes, "{r:?}");
        // A page costs (4 + parity) / 4 pages in a row against `copies` on the replicated
        // path (before any conversion, which is off here).
        let (pw, rw) = (p.device_bytes_written_fg, r.device_bytes_written_fg);
        let bound = (4 + width as u64 - 4) * 100 / (4 * copies) + 5;
        assert!(
            rw * 100 < pw * bound,
            "{level:?}: device bytes written {rw} in rows against {pw} replicated"
        );
    }
}

#[test]
fn writes_of_several_pages_go_as_taller_rows() {
    let mut r = Rng::new(7);
    let ppb = BS / PAGE;
    // Writes of 1, 2 or 4 pages inside a block, sizes mixed at random: each size fills
    // rows of its own height.
    let runs: Vec<(u64, u64)> = (0..450)
        .map(|_| {
            let n = [2, 4, 1][r.below(3) as usize];
            let b = r.below(BLOCKS);
            (b * ppb + r.below(ppb - n + 1), n)
        })
        .collect();
    let mut d = driver(Level::Raid6, 6, Some(HOLD));
    let mut latest = no_latest();
    write_runs(&mut d, &runs, 16, &mut latest);
    check(&mut d, &latest);
    d.engine.scheme().check_invariants();
    let st = d.engine.stats();
    // 450 writes, four a row: most go as rows (each size's first few dozen go alone
    // while its pace is not known).
    assert!(st.row_writes >= 75, "{st:?}");
    assert!(st.replicated_block_writes < 150, "{st:?}");
    d.engine.start_scrub(d.now).expect("scrub");
    d.settle();
    assert_eq!(d.engine.stats().parity_rewrites, 0);
    assert_eq!(d.engine.stats().checksum_errors, 0);
}

#[test]
fn a_writer_at_queue_depth_one_is_never_held() {
    let pages = random_pages(100, 2);
    let mut d = driver(Level::Raid5, 5, Some(HOLD));
    let mut latest = no_latest();
    let lat = write_pages(&mut d, &pages, 1, &mut latest);
    check(&mut d, &latest);
    assert_eq!(d.engine.stats().row_writes, 0);
    let mut plain = driver(Level::Raid5, 5, None);
    let plain_lat = write_pages(&mut plain, &pages, 1, &mut no_latest());
    assert_eq!(lat, plain_lat, "a write at queue depth 1 waited");
}

#[test]
fn a_row_that_does_not_fill_goes_when_its_time_is_up_and_holding_pauses() {
    let mut d = driver(Level::Raid5, 5, Some(HOLD));
    let mut latest = no_latest();
    // Two in flight can never fill a row of four: each hold runs out its time, and holding
    // then pauses for 1 ms, 2 ms, 4 ms... so ever fewer writes wait.
    let pages = random_pages(400, 3);
    let lat = write_pages(&mut d, &pages, 2, &mut latest);
    check(&mut d, &latest);
    assert_eq!(d.engine.stats().row_writes, 0);
    let held = lat.iter().filter(|&&l| l >= HOLD).count();
    assert!(held > 0, "no write was held");
    assert!(
        lat.iter().all(|&l| l < 2 * HOLD),
        "a write waited past its hold"
    );
    let mut plain = driver(Level::Raid5, 5, None);
    let plain_lat = write_pages(&mut plain, &pages, 2, &mut no_latest());
    assert!(plain_lat.iter().all(|&l| l < HOLD));
    // Without the pause every write would wait; with it, a hold costs at most one write
    // per pause, and the pauses double.
    assert!(
        held * 10 < pages.len(),
        "{held} of {} writes held",
        pages.len()
    );
}

#[test]
fn writes_too_sparse_to_fill_a_row_are_never_held() {
    let mut d = driver(Level::Raid5, 5, Some(HOLD));
    let mut latest = no_latest();
    // Two writes in flight at a time, a pair every 2 ms: three more of a row's four would
    // take 3 ms to come, longer than half the hold, so no row is begun and nothing waits
    // (without the pace check each pair's first write is held until its time is up).
    let pages = random_pages(60, 8);
    let mut worst = 0;
    for pair in pages.chunks(2) {
        let lat = write_pages(&mut d, pair, 2, &mut latest);
        worst = worst.max(*lat.iter().max().unwrap());
        d.run_until(Some(d.now + 2_000_000));
    }
    check(&mut d, &latest);
    assert_eq!(d.engine.stats().row_writes, 0);
    assert!(worst < HOLD / 2, "a write waited {worst} ns");
}

#[test]
fn rows_survive_a_failed_member_and_a_scrub_finds_nothing_to_rewrite() {
    let mut d = driver(Level::Raid5, 5, Some(HOLD));
    let mut latest = no_latest();
    write_pages(&mut d, &random_pages(300, 4), 16, &mut latest);
    let before = d.engine.stats().row_writes;
    assert!(before > 50, "{before} rows");
    // A member of the open row stripe fails: the stripe is closed (its unwritten rows
    // written as zeros on the others), and every page reads back through parity.
    d.fail_member(2);
    d.drain();
    check(&mut d, &latest);
    // More rows, now on stripes clear of the failed member.
    write_pages(&mut d, &random_pages(300, 5), 16, &mut latest);
    assert!(d.engine.stats().row_writes > before + 50);
    check(&mut d, &latest);
    d.settle();
    check(&mut d, &latest);
    d.engine.scheme().check_invariants();
    d.engine.start_scrub(d.now).expect("scrub");
    d.settle();
    let st = d.engine.stats();
    assert_eq!(st.checksum_errors, 0, "{st:?}");
    assert_eq!(
        st.parity_rewrites, 0,
        "a row left a parity to rewrite: {st:?}"
    );
}

#[test]
fn a_clean_stop_closes_the_row_stripe_and_a_scrub_finds_nothing_to_rewrite() {
    let mut d = driver(Level::Raid6, 6, Some(HOLD));
    // Garbage where the row stripes will go: unwritten rows of a stripe closed early
    // must not be left to disagree with their parity.
    for i in 0..8 {
        d.blank_disk(i, 0xA5);
    }
    let mut latest = no_latest();
    // 4 data columns: 41 pages leave the last row stripe open with rows unwritten.
    write_pages(&mut d, &random_pages(4 * 41 + 3, 6), 16, &mut latest);
    assert!(d.engine.stats().row_writes >= 30);
    d.engine.begin_shutdown(d.now);
    d.drain();
    assert!(d.engine.shutdown_done());
    check(&mut d, &latest);
    d.engine.start_scrub(d.now).expect("scrub");
    d.settle();
    let st = d.engine.stats();
    assert_eq!(st.checksum_errors, 0, "{st:?}");
    assert_eq!(st.parity_rewrites, 0, "{st:?}");
}
