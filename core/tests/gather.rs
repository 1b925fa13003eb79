//! Stripe gathering (`FusionConfig::gather_ns`, core/src/scheme/fusion/gather.rs): a
//! sequential stream of block-sized writes kept several deep goes as full-stripe writes,
//! each request answered and every block read back as written; a stream written one
//! request at a time, and random writes, are never held; a stripe that does not fill is
//! started when its time is up.

mod common;

use common::Driver;
use common::fusion_pool::small_pool;
use fusionraid_core::scheme::fusion::{Level, VolumeConfig};
use fusionraid_core::{Nanos, Op, Request};

const BS: u64 = 65536;
const HOLD: Nanos = 150_000;

fn driver(gather: bool) -> Driver {
    driver_holding(gather.then_some(HOLD))
}

/// RAID5 5 wide: 4 data blocks a stripe, the replicated path up to 2 blocks.
fn driver_holding(hold: Option<Nanos>) -> Driver {
    let v = VolumeConfig::new("v", Level::Raid5, 5, 64 * BS);
    small_pool(v, |c| c.gather_ns = hold)
}

fn pattern(b: u64) -> Vec<u8> {
    (0..BS)
        .map(|i| (b as u8).wrapping_mul(31).wrapping_add((i / 4096) as u8))
        .collect()
}

/// Write blocks `blocks` in order, one block per request, keeping `depth` requests in
/// flight; returns the slowest reply's latency.
fn stream(d: &mut Driver, blocks: impl Iterator<Item = u64>, depth: usize) -> Nanos {
    let mut in_flight = 0;
    let mut slowest = 0;
    let mut next_id = 1000;
    let settle = |d: &mut Driver, in_flight: &mut usize, slowest: &mut Nanos| {
        for r in d.take_replies() {
            assert!(r.result.is_ok(), "{r:?}");
            *slowest = (*slowest).max(d.now - r.submitted_at);
            *in_flight -= 1;
        }
    };
    for b in blocks {
        while in_flight >= depth {
            d.run_until(Some(d.now + 10_000));
            settle(d, &mut in_flight, &mut slowest);
        }
        assert!(d.submit_write(next_id, b * BS, pattern(b)));
        next_id += 1;
        in_flight += 1;
    }
    d.drain();
    settle(d, &mut in_flight, &mut slowest);
    assert_eq!(in_flight, 0, "a write was never answered");
    slowest
}

fn check(d: &mut Driver, blocks: impl Iterator<Item = u64>) {
    for b in blocks {
        let got = d.read_now(1, b * BS, BS).expect("read");
        assert!(got == pattern(b), "block {b} reads back wrong");
    }
}

#[test]
fn a_deep_sequential_stream_goes_as_full_stripes() {
    let mut plain = driver(false);
    stream(&mut plain, 0..48, 16);
    let p = plain.engine.stats().clone();
    let mut d = driver(true);
    stream(&mut d, 0..48, 16);
    check(&mut d, 0..48);
    let g = d.engine.stats().clone();
    // Without gathering every block takes a replica slot (two copies).
    assert_eq!(p.gathered_writes, 0);
    assert_eq!(p.replicated_block_writes, 48, "{p:?}");
    // With it, most of the stream's stripes are written whole: data once plus parity.
    assert!(g.gathered_writes >= 40, "{g:?}");
    assert!(g.full_stripe_writes >= 10, "{g:?}");
    let (pw, gw) = (p.device_bytes_written_fg, g.device_bytes_written_fg);
    assert!(
        gw * 10 < pw * 7,
        "device bytes written: {gw} gathered against {pw} plain"
    );
}

#[test]
fn a_stream_written_one_request_at_a_time_is_never_held() {
    let mut d = driver(true);
    let slowest = stream(&mut d, 0..24, 1);
    check(&mut d, 0..24);
    assert_eq!(d.engine.stats().gathered_writes, 0);
    let mut plain = driver(false);
    let plain_slowest = stream(&mut plain, 0..24, 1);
    assert_eq!(slowest, plain_slowest, "a write at queue depth 1 waited");
}

#[test]
fn random_block_writes_are_never_held() {
    let mut d = driver(true);
    // A permutation of the blocks, no two consecutive in a row.
    let order: Vec<u64> = (0..64u64).map(|i| i * 29 % 64).collect();
    assert!(order.windows(2).all(|w| w[1] != w[0] + 1));
    stream(&mut d, order.iter().copied(), 16);
    check(&mut d, 0..64);
    assert_eq!(d.engine.stats().gathered_writes, 0);
}

#[test]
fn a_stripe_that_does_not_fill_goes_when_its_time_is_up() {
    // A hold well above the members' write latency (100-200 us here).
    const HOLD: Nanos = 2_000_000;
    let mut d = driver_holding(Some(HOLD));
    // Block 3 alone, then blocks 4 and 5 (the next stripe) while block 3 is in flight: they
    // are held for blocks 6 and 7, which never come.
    assert!(d.submit_write(1, 3 * BS, pattern(3)));
    assert!(d.submit_write(2, 4 * BS, pattern(4)));
    assert!(d.submit_write(3, 5 * BS, pattern(5)));
    let start = d.now;
    let mut answered = Vec::new();
    while answered.len() < 3 {
        d.run_until(Some(d.now + 10_000));
        for r in d.take_replies() {
            assert!(r.result.is_ok(), "{r:?}");
            answered.push((r.id, d.now - start));
        }
        assert!(
            d.now - start < 10 * HOLD,
            "held writes never started: {answered:?}"
        );
    }
    let late = |id| answered.iter().find(|a| a.0 == id).expect("answered").1;
    assert!(late(1) < HOLD, "block 3 was held: {answered:?}");
    assert!(late(2) >= HOLD && late(3) >= HOLD, "{answered:?}");
    // Two blocks are not more than the replicated path takes: one by one, not gathered.
    assert_eq!(d.engine.stats().gathered_writes, 0);
    check(&mut d, [3, 4, 5].into_iter());
}

/// Block 1 written, then blocks 0 and 1 again and a read of block 1 at the same instant;
/// returns the read's latency and what it read.
fn read_behind_a_held_write(gather: bool) -> (Nanos, Vec<u8>) {
    let mut d = driver(gather);
    d.write_ok(1, BS, vec![0xAA; BS as usize]);
    // Block 0 goes at once (nothing before it); block 1 continues it while it is in flight,
    // so with gathering on it is held for the rest of the stripe.
    assert!(d.submit_write(2, 0, pattern(0)));
    assert!(d.submit_write(3, BS, pattern(1)));
    let read = Request {
        id: 4,
        volume: 0,
        op: Op::Read {
            offset: BS,
            len: BS,
        },
    };
    assert!(d.engine.submit(read, d.now).is_ok());
    let start = d.now;
    let mut got = None;
    while got.is_none() {
        d.run_until(Some(d.now + 10_000));
        got = d.take_replies().into_iter().find(|r| r.id == 4);
        assert!(d.now - start < 10 * HOLD, "the read never came back");
    }
    let data = got.expect("reply").result.expect("read").expect("bytes");
    let data = data.bytes().expect("bytes").to_vec();
    d.drain();
    check(&mut d, 0..2);
    (d.now.min(start + 10 * HOLD) - start, data)
}

#[test]
fn a_read_of_a_held_block_starts_it_and_does_not_wait_for_the_hold() {
    let (plain_latency, plain_data) = read_behind_a_held_write(false);
    let (latency, data) = read_behind_a_held_write(true);
    assert_eq!(latency, plain_latency, "the read waited for the hold");
    assert!(
        data == plain_data,
        "the read saw another content than without gathering"
    );
}

/// Write the volume's 64 blocks in order `passes` times, keeping `depth` requests in
/// flight; returns how long that took.
fn stream_time(d: &mut Driver, passes: u64, depth: usize) -> Nanos {
    let start = d.now;
    stream(d, (0..64 * passes).map(|i| i % 64), depth);
    d.now - start
}

#[test]
fn a_stream_too_shallow_to_fill_a_stripe_backs_off() {
    // Two writes in flight never cover more than the replicated path takes (two blocks):
    // every hold runs out its time. A hold longer than the members' latency, so each costs.
    const HOLD: Nanos = 2_000_000;
    let mut plain = driver(false);
    let plain_time = stream_time(&mut plain, 3, 2);
    let mut d = driver_holding(Some(HOLD));
    let time = stream_time(&mut d, 3, 2);
    check(&mut d, 0..64);
    assert_eq!(d.engine.stats().gathered_writes, 0);
    // Without the back-off every stripe (48 of them) would wait out a hold; with it, the
    // pauses after each hold (1, 2, 4, 8 ms...) leave room for a handful.
    assert!(
        time < plain_time + 8 * HOLD,
        "{time} ns with gathering against {plain_time} ns without"
    );
}
