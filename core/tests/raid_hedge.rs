//! Hedged RAID reads (`FusionConfig::raid_hedge_ns`, core/src/scheme/fusion/raid_hedge.rs):
//! a read of a RAID block whose member stalls is rebuilt from the rest of its stripe and
//! answered long before the stall ends; the direct read's late completion is dropped; every
//! block reads back as written.

mod common;

use common::Driver;
use common::fusion_pool::small_pool;
use fusionraid_core::scheme::fusion::{Level, VolumeConfig};
use fusionraid_core::{DiskId, Nanos, Reply};

const BS: u64 = 65536;
const MS: Nanos = 1_000_000;
/// Blocks written as full stripes (RAID5 6+1: four stripes).
const BLOCKS: u64 = 24;

fn driver(raid_hedge_ns: Option<Nanos>) -> Driver {
    let v = VolumeConfig::new("v", Level::Raid5, 7, 96 * BS);
    small_pool(v, |c| c.raid_hedge_ns = raid_hedge_ns)
}

fn pattern(len: u64) -> Vec<u8> {
    (0..len).map(|i| (i / 4096 * 7 + i % 251) as u8).collect()
}

/// Reads blocks 0..`n`, one request each (ids 100 + block), without waiting.
fn submit_reads(d: &mut Driver, n: u64) {
    for b in 0..n {
        assert!(d.submit(fusionraid_core::Request {
            id: 100 + b,
            volume: 0,
            op: fusionraid_core::Op::Read {
                offset: b * BS,
                len: BS,
            },
        }));
    }
}

/// The reply to `submit_reads`' read of a block holds that block of `data`.
fn assert_block(r: Reply, data: &[u8]) {
    let b = r.id - 100;
    let got = r
        .result
        .expect("read")
        .expect("data")
        .into_bytes()
        .expect("bytes");
    let at = (b * BS) as usize;
    assert!(
        got == data[at..at + BS as usize],
        "block {b} read wrong data"
    );
}

/// Writes the blocks as full stripes, stalls member 3 (each of its I/Os then takes about
/// 200 x 100 us), reads every block at once and runs 10 ms. Returns the slowest read, or
/// None when some read was still unanswered then; every answer must be the data written.
fn stalled_reads(d: &mut Driver) -> Option<Nanos> {
    let data = pattern(BLOCKS * BS);
    d.write_ok(1, 0, data.clone());
    assert_eq!(
        d.engine.stats().full_stripe_writes,
        BLOCKS / 6,
        "the blocks must be RAID blocks"
    );
    d.disks[3].spike_until = u64::MAX;
    d.disks[3].spike_factor = 200;
    let start = d.now;
    submit_reads(d, BLOCKS);
    let (mut slowest, mut answered) = (0, 0);
    while d.now < start + 10 * MS {
        d.run_until(Some(d.now + 100_000));
        for r in d.take_replies() {
            assert_block(r, &data);
            slowest = slowest.max(d.now - start);
            answered += 1;
        }
    }
    (answered == BLOCKS).then_some(slowest)
}

#[test]
fn a_raid_read_stuck_on_a_stalled_member_is_rebuilt_and_answered() {
    let mut plain = driver(None);
    assert_eq!(
        stalled_reads(&mut plain),
        None,
        "without hedging every read was answered within 10 ms: the test stalls nothing"
    );
    assert_eq!(plain.engine.stats().hedged_raid_reads, 0);

    let mut d = driver(Some(500_000));
    let slowest = stalled_reads(&mut d).expect("every read answered within 10 ms");
    assert!(slowest < 10 * MS, "{slowest}");
    let st = d.engine.stats().clone();
    assert!(st.hedged_raid_reads > 0, "{st:?}");
    assert_eq!(
        st.hedged_raid_reads_won, st.hedged_raid_reads,
        "every rebuild should beat a direct read stalled for 20 ms: {st:?}"
    );
    assert!(
        d.engine.disks().get(DiskId(3)).detector.is_unresponsive(),
        "the stalled member should be flagged"
    );
    // The stall ends: the direct reads come back late and are dropped; nothing is left in
    // flight, and the volume still reads back as written.
    d.disks[3].spike_until = 0;
    d.drain();
    assert!(
        d.take_replies().is_empty(),
        "a late direct read answered twice"
    );
    assert_eq!(d.engine.inflight_ios(), 0);
    d.engine.scheme().check_invariants();
    let data = pattern(BLOCKS * BS);
    assert_eq!(d.read_now(999, 0, BLOCKS * BS).expect("read"), data);
}

#[test]
fn a_slow_direct_read_that_answers_first_serves_the_part() {
    // Member 3 is slow (15 x 100 us), not stalled: the detector sees its reads linger
    // past its 1 ms window and the hedges go out, but the other members are slow too
    // (12x), so the rebuild's reads land after the direct read. Two stripes only, so
    // the other members hold too few reads at once to be flagged themselves.
    let mut d = driver(Some(200_000));
    let data = pattern(BLOCKS * BS);
    d.write_ok(1, 0, data.clone());
    for disk in 0..d.disks.len() {
        d.disks[disk].spike_until = u64::MAX;
        d.disks[disk].spike_factor = if disk == 3 { 15 } else { 12 };
    }
    const READ: u64 = 12;
    submit_reads(&mut d, READ);
    d.drain();
    let replies = d.take_replies();
    assert_eq!(replies.len() as u64, READ);
    for r in replies {
        assert_block(r, &data);
    }
    let st = d.engine.stats().clone();
    assert!(st.hedged_raid_reads > 0, "no read was hedged: {st:?}");
    assert!(
        st.hedged_raid_reads_won < st.hedged_raid_reads,
        "no direct read answered before its rebuild: {st:?}"
    );
    assert_eq!(d.engine.inflight_ios(), 0);
    d.engine.scheme().check_invariants();
}
