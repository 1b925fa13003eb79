//! Reads rebuilt from the rest of their stripe read only the columns they need: a RAID6
//! block whose member is failed or stalled is rebuilt from as many columns as the stripe
//! has data columns, leaving out a second troubled member (or Q) rather than waiting for
//! it (core/src/scheme/fusion/read.rs, `skip_unneeded`).

mod common;

use common::Driver;
use common::fusion_pool::small_pool;
use fusionraid_core::scheme::fusion::{Level, VolumeConfig};
use fusionraid_core::{DiskId, Nanos, Op, Request};

const BS: u64 = 65536;
const MS: Nanos = 1_000_000;
/// RAID6 4+2: 24 blocks are six full stripes.
const DATA_COLUMNS: usize = 4;
const BLOCKS: u64 = 24;

fn pattern(len: u64) -> Vec<u8> {
    (0..len).map(|i| (i / 4096 * 13 + i % 241) as u8).collect()
}

fn raid6(raid_hedge_ns: Option<Nanos>) -> (Driver, Vec<u8>) {
    let v = VolumeConfig::new("v", Level::Raid6, 6, 96 * BS);
    let mut d = small_pool(v, |c| c.raid_hedge_ns = raid_hedge_ns);
    let data = pattern(BLOCKS * BS);
    d.write_ok(1, 0, data.clone());
    assert_eq!(
        d.engine.stats().full_stripe_writes,
        BLOCKS / DATA_COLUMNS as u64,
        "the blocks must be RAID blocks"
    );
    d.settle();
    (d, data)
}

#[test]
fn a_block_on_a_failed_member_is_rebuilt_from_as_many_columns_as_there_are_data_columns() {
    let (mut d, data) = raid6(None);
    d.disks[0].failed = true;
    d.engine.fail_disk(DiskId(0), d.now);
    let mut rebuilt = 0;
    for b in 0..BLOCKS {
        d.log.clear();
        let got = d.read_now(100 + b, b * BS, BS).expect("degraded read");
        assert!(
            got == data[(b * BS) as usize..((b + 1) * BS) as usize],
            "block {b}"
        );
        let reads: Vec<usize> = d
            .log
            .iter()
            .filter(|o| o.read && !o.background)
            .map(|o| o.disk)
            .collect();
        assert!(!reads.contains(&0), "block {b} read the failed member");
        match reads.len() {
            1 => {}
            DATA_COLUMNS => rebuilt += 1,
            n => panic!("block {b}: {n} device reads ({reads:?})"),
        }
    }
    assert!(rebuilt > 0, "no block was on the failed member");
    assert_eq!(d.engine.stats().reconstructed_reads, rebuilt);
}

#[test]
fn a_hedged_read_is_rebuilt_around_two_stalled_members() {
    let (mut d, data) = raid6(Some(500_000));
    for m in [3, 5] {
        d.disks[m].spike_until = u64::MAX;
        d.disks[m].spike_factor = 200;
    }
    let start = d.now;
    for b in 0..BLOCKS {
        assert!(d.submit(Request {
            id: 100 + b,
            volume: 0,
            op: Op::Read {
                offset: b * BS,
                len: BS,
            },
        }));
    }
    let mut answered = 0;
    while d.now < start + 10 * MS {
        d.run_until(Some(d.now + 100_000));
        for r in d.take_replies() {
            let b = r.id - 100;
            let got = r.result.expect("read").expect("data").into_bytes().unwrap();
            assert!(
                got == data[(b * BS) as usize..((b + 1) * BS) as usize],
                "block {b}"
            );
            answered += 1;
        }
    }
    let st = d.engine.stats().clone();
    assert_eq!(
        answered, BLOCKS,
        "reads on the stalled members waited for them: {st:?}"
    );
    assert!(st.hedged_raid_reads > 0, "{st:?}");
    for m in [3, 5] {
        d.disks[m].spike_until = 0;
    }
    d.drain();
    assert_eq!(d.engine.inflight_ios(), 0);
    d.engine.scheme().check_invariants();
}
