//! Hedged writes (`FusionConfig::write_hedge_ns`, core/src/scheme/fusion/write_hedge.rs): a
//! write whose device write sits on a member that stalls is placed again elsewhere and
//! answered long before the stall ends; the first placement's late writes land afterwards
//! and are released, never mapped; every block reads back as last written.

mod common;

use common::Driver;
use common::fusion_pool::small_pool;
use fusionraid_core::scheme::fusion::{Level, VolumeConfig};
use fusionraid_core::{DiskId, Nanos};

const BS: u64 = 65536;
const MS: Nanos = 1_000_000;
/// How long the stalled member holds every I/O (its latency while stalled is about 200x
/// the driver's 100 us).
const STALL_FACTOR: u64 = 200;

fn driver(write_hedge_ns: Option<Nanos>) -> Driver {
    let mut v = VolumeConfig::new("v", Level::Raid5, 7, 96 * BS);
    v.replicated_fraction = 0.8;
    small_pool(v, |c| c.write_hedge_ns = write_hedge_ns)
}

fn pattern(tag: u8, len: u64) -> Vec<u8> {
    (0..len)
        .map(|i| tag.wrapping_add((i / 4096) as u8))
        .collect()
}

/// Stall member 3, then write one block to each of blocks 20..44 (one every 100 us, so some
/// land on member 3 before the detector flags it). Returns the slowest write's latency
/// within the first 10 ms, or None if some write was still unanswered then.
fn stalled_writes(d: &mut Driver) -> Option<Nanos> {
    for b in 0..6u64 {
        d.write_ok(1 + b, b * BS, pattern(b as u8, BS));
    }
    d.disks[3].spike_until = u64::MAX;
    d.disks[3].spike_factor = STALL_FACTOR;
    let start = d.now;
    let mut slowest = 0;
    let mut answered = 0;
    let mut b = 20u64;
    // In steps of 100 us: a new write while any is left, and the replies so far timed.
    while d.now < start + 10 * MS {
        if b < 44 {
            assert!(d.submit_write(100 + b, b * BS, pattern(b as u8, BS)));
            b += 1;
        }
        d.run_until(Some(d.now + 100_000));
        for r in d.take_replies() {
            assert!(r.result.is_ok(), "{r:?}");
            slowest = slowest.max(d.now - r.submitted_at);
            answered += 1;
        }
    }
    (answered == 24).then_some(slowest)
}

#[test]
fn a_write_stuck_on_a_stalled_member_is_placed_again_and_answered() {
    // Without hedging some writes wait out the stall (each I/O on member 3 takes ~20 ms).
    let mut plain = driver(None);
    assert_eq!(
        stalled_writes(&mut plain),
        None,
        "without hedging every write was answered within 10 ms: the test stalls nothing"
    );
    let mut d = driver(Some(200_000));
    let slowest = stalled_writes(&mut d).expect("every write answered within 10 ms");
    assert!(slowest < 10 * MS, "{slowest}");
    let st = d.engine.stats().clone();
    assert!(st.hedged_writes > 0, "{st:?}");
    assert!(st.hedged_writes_won > 0, "{st:?}");
    assert!(
        d.engine.disks().get(DiskId(3)).detector.is_unresponsive(),
        "the stalled member should be flagged"
    );
    // The stall ends; the abandoned placements' writes land and are released.
    d.disks[3].spike_until = 0;
    d.drain();
    let _ = d.take_replies();
    d.engine.scheme().check_invariants();
    for b in (0..6u64).chain(20..44) {
        assert_eq!(
            d.read_now(1000 + b, b * BS, BS).expect("read"),
            pattern(b as u8, BS),
            "block {b}"
        );
    }
    // Only the winners' blocks are mapped.
    let status = d.engine.scheme().volume_status(0).expect("volume");
    assert_eq!(status.mapped_bytes, 30 * BS, "{status:?}");
}
