//! Member failures and what survives them: beyond what the volumes' parity covers every
//! request must still get an answer (an error where the data can not be stored or found),
//! never wait forever; and a failed member stays failed across a restart until replaced.

mod common;

use common::Driver;
use fusionraid_core::engine::scheme::RebuildPhase;
use fusionraid_core::meta::recover::region;
use fusionraid_core::meta::{JournalConfig, RecoveryReport};
use fusionraid_core::scheme::fusion::durable::meta_layout;
use fusionraid_core::scheme::fusion::{
    FusionConfig, FusionScheme, LayoutKind, Level, PoolGeometry, VolumeConfig,
};
use fusionraid_core::{Data, DiskId, Engine, EngineConfig, Op, Request};

const BS: u64 = 16384;
const DISKS: usize = 5;
const BLOCKS: u64 = 120;

fn config(seed: u64) -> FusionConfig {
    let pool = PoolGeometry {
        disks: DISKS,
        disk_bytes: u64::MAX / 4,
        block_size: BS,
        data_offset: 0,
        layout: LayoutKind::Permutation { seed },
        hdds: Vec::new(),
    };
    let v = VolumeConfig::new("v", Level::Raid5, 4, BLOCKS * BS);
    let mut cfg = FusionConfig::new(pool, vec![v]);
    cfg.max_request_bytes = 8 * BS;
    cfg.journal = Some(JournalConfig {
        pool_id: 7,
        journal_bytes: 64 << 10,
        commit_interval_ns: 1_000_000,
        ..Default::default()
    });
    let end = meta_layout(&cfg).expect("journaled").end();
    cfg.pool.data_offset = end.div_ceil(4096) * 4096;
    cfg
}

fn driver(seed: u64) -> Driver {
    driver_with(&config(seed), seed)
}

fn driver_with(cfg: &FusionConfig, seed: u64) -> Driver {
    let scheme = FusionScheme::new(cfg.clone()).unwrap();
    let disk_bytes = cfg.pool.data_offset + scheme.blocks_per_disk() * BS;
    Driver::new(
        Engine::new(EngineConfig::new(DISKS), Box::new(scheme), 0),
        DISKS,
        disk_bytes,
        seed,
    )
}

/// What `serve` would find in the members' metadata after a restart now.
fn recovered(d: &Driver, cfg: &FusionConfig) -> RecoveryReport {
    let (off, len) = region(&meta_layout(cfg).expect("journaled"));
    let regions: Vec<Option<&[u8]>> = d
        .disks
        .iter()
        .map(|m| Some(&m.bytes[off as usize..(off + len) as usize]))
        .collect();
    FusionScheme::recover(cfg.clone(), &regions, d.now)
        .expect("recovery")
        .1
}

fn flush(d: &mut Driver, id: u64) {
    assert!(d.submit(Request {
        id,
        volume: 0,
        op: Op::Flush
    }));
    d.drain();
    let r = d.take_replies();
    assert!(r.iter().all(|r| r.result.is_ok()), "{r:?}");
}

fn write(id: u64, offset: u64, len: u64) -> Request {
    Request {
        id,
        volume: 0,
        op: Op::Write {
            offset,
            data: Data::Bytes(vec![id as u8; len as usize]),
            fua: false,
        },
    }
}

/// Every member (or more than the parity covers) fails under a stream of writes: the
/// journal can no longer be committed, so stripes freed by overwrites stay held (only a
/// commit releases them) and writes that wait for room must fail instead of waiting for a
/// commit that never succeeds. (Waiting forever, `fusionraid serve` with file members on a
/// full filesystem would hang every writing client.)
#[test]
fn writes_answer_when_members_fail_beyond_parity() {
    for failed in [DISKS, 2] {
        let mut d = driver(failed as u64);
        let mut id = 0;
        for b in 0..BLOCKS / 2 {
            id += 1;
            d.write_ok(id, b * BS, vec![1; BS as usize]);
        }
        for m in d.disks.iter_mut().take(failed) {
            m.failed = true;
        }
        let mut n = 0;
        for b in 0..BLOCKS {
            id += 1;
            n += 1;
            let len = if b % 3 == 0 { 4096 } else { BS };
            assert!(d.submit(write(id, b * BS, len)));
        }
        id += 1;
        n += 1;
        assert!(d.submit(Request {
            id,
            volume: 0,
            op: Op::Flush
        }));
        d.drain();
        let replies = d.take_replies();
        assert_eq!(
            replies.len(),
            n,
            "{failed} members failed: every request answered"
        );
        let errors: Vec<String> = replies
            .iter()
            .filter_map(|r| r.result.as_ref().err().map(|e| e.to_string()))
            .collect();
        assert!(
            errors
                .iter()
                .any(|e| e.contains("too few members left to hold the journal")),
            "{failed} members failed: {errors:?}"
        );
        assert!(
            !errors.iter().any(|e| e.contains("no space")),
            "{failed} members failed: a lost pool is not a full one: {errors:?}"
        );
        // Reads get an answer too.
        id += 1;
        assert!(d.submit(Request {
            id,
            volume: 0,
            op: Op::Read {
                offset: 0,
                len: 4 * BS
            }
        }));
        d.drain();
        assert_eq!(d.take_replies().len(), 1);
    }
}

/// A member fails, writes go on without it, the pool restarts: the failed member's device
/// may read back fine (a transient error, `fusionraid fail`, a member that was missing at
/// the last start), but it missed those writes, so the metadata must say it failed until a
/// device takes its slot. (Back as healthy, it would hold thousands of stale copies and
/// wrong parities, as a scrub after the restart finds.)
#[test]
fn a_failed_member_stays_failed_across_a_restart_until_replaced() {
    let cfg = config(3);
    let mut d = driver(3);
    let mut id = 0;
    for b in 0..BLOCKS / 2 {
        id += 1;
        d.write_ok(id, b * BS, vec![1; BS as usize]);
    }
    id += 1;
    flush(&mut d, id);
    assert!(recovered(&d, &cfg).members_failed.is_empty());
    d.engine.fail_disk(DiskId(1), d.now);
    d.disks[1].failed = true;
    d.pump();
    for b in 0..BLOCKS / 2 {
        id += 1;
        d.write_ok(id, b * BS, vec![2; BS as usize]);
    }
    id += 1;
    flush(&mut d, id);
    let report = recovered(&d, &cfg);
    assert_eq!(report.members_failed, vec![1], "{report}");
    assert!(report.slot_generations.is_empty(), "{report}");
    assert!(
        report.to_string().contains("members failed earlier [1]"),
        "{report}"
    );
    // A blank device takes the slot (what the rebuild has not moved off yet is rebuilt in
    // place): no longer failed.
    let mut replaced = false;
    for _ in 0..4000 {
        let t = d.now + 5_000_000;
        d.run_until(Some(t));
        if d.engine.replace_disk_as(DiskId(1), d.now, 0x5eed).is_ok() {
            replaced = true;
            break;
        }
    }
    assert!(replaced, "the rebuild never finished");
    d.disks[1].failed = false;
    d.blank_disk(1, 0);
    d.pump();
    id += 1;
    d.write_ok(id, 0, vec![3; BS as usize]);
    id += 1;
    flush(&mut d, id);
    d.settle();
    let report = recovered(&d, &cfg);
    assert!(report.members_failed.is_empty(), "{report}");
    // A device of an earlier generation in slot 1 is now known to be stale.
    assert_eq!(
        report.slot_generations.into_iter().collect::<Vec<_>>(),
        [(1, 0x5eed)]
    );
}

fn remaps(d: &Driver) -> usize {
    let s = d.engine.scheme().debug_state();
    let at = s.find(" remaps ").expect("remaps in the debug state") + 8;
    s[at..].split(' ').next().unwrap().parse().unwrap()
}

/// `serve` stops (or crashes) while the rebalance after a replacement is copying rebuilt
/// columns home: the next start must carry on with it. (Otherwise the remaining columns
/// stay on spare space for good, their donor stripes lent and unusable, and `status` shows
/// no rebalance at all.)
#[test]
fn a_rebalance_cut_short_by_a_restart_carries_on() {
    let mut cfg = config(5);
    // Slow enough that the restart comes before the rebalance is done.
    cfg.conversion.rebuild_bytes_per_sec = 100e3;
    let mut d = driver_with(&cfg, 5);
    let mut id = 0;
    for b in 0..BLOCKS / 2 {
        id += 1;
        d.write_ok(id, b * BS, vec![b as u8; BS as usize]);
    }
    d.settle();
    d.engine.fail_disk(DiskId(2), d.now);
    d.disks[2].failed = true;
    d.pump();
    // The rebuild onto spare space finishes (and is durable) before the replacement, so
    // there are remapped columns to bring home.
    let mut replaced = false;
    for _ in 0..4000 {
        let t = d.now + 5_000_000;
        d.run_until(Some(t));
        let done = d
            .engine
            .volume_status(0)
            .is_some_and(|s| s.rebuild_phase == Some(RebuildPhase::Done));
        if done && d.engine.replace_disk_as(DiskId(2), d.now, 41).is_ok() {
            replaced = true;
            break;
        }
    }
    assert!(replaced, "the rebuild never finished");
    d.disks[2].failed = false;
    d.blank_disk(2, 0);
    d.pump();
    // The replacement's checkpoint is durable, the rebalance has barely begun.
    id += 1;
    flush(&mut d, id);
    let before = remaps(&d);
    assert!(
        before > 0,
        "the rebuild remapped columns and they are not home yet"
    );
    // Restart from the members' bytes.
    let (off, len) = region(&meta_layout(&cfg).expect("journaled"));
    let regions: Vec<Option<&[u8]>> = d
        .disks
        .iter()
        .map(|m| Some(&m.bytes[off as usize..(off + len) as usize]))
        .collect();
    let (scheme, report) = FusionScheme::recover(cfg.clone(), &regions, d.now).expect("recovery");
    assert!(report.members_failed.is_empty(), "{report}");
    assert_eq!(
        report.slot_generations.iter().collect::<Vec<_>>(),
        [(&2, &41)],
        "{report}"
    );
    let now = d.now;
    let disk_bytes = d.disks[0].bytes.len() as u64;
    let mut e = Driver::new(
        Engine::new(EngineConfig::new(DISKS), Box::new(scheme), now),
        DISKS,
        disk_bytes,
        5,
    );
    e.now = now;
    for (m, old) in e.disks.iter_mut().zip(&d.disks) {
        m.bytes = old.bytes.clone();
    }
    assert!(remaps(&e) >= before, "the remaps are durable");
    // Any input wakes the engine; then the background work runs to its end.
    id += 1;
    let got = {
        assert!(e.submit(Request {
            id,
            volume: 0,
            op: Op::Read { offset: 0, len: BS }
        }));
        e.drain();
        e.take_replies().pop().expect("reply")
    };
    assert!(got.result.is_ok());
    let rebuild_status = |e: &Driver| {
        e.engine
            .volume_status(0)
            .and_then(|s| s.rebuild)
            .unwrap_or_default()
    };
    for _ in 0..4000 {
        if rebuild_status(&e).contains("rebalance done") {
            break;
        }
        let t = e.now + 5_000_000;
        e.run_until(Some(t));
    }
    e.settle();
    assert_eq!(
        remaps(&e),
        0,
        "every column back home: {}",
        e.engine.scheme().debug_state()
    );
    let status = rebuild_status(&e);
    assert!(status.contains("rebalance done"), "{status}");
    for b in 0..BLOCKS / 2 {
        id += 1;
        assert_eq!(
            e.read_now(id, b * BS, BS).unwrap(),
            vec![b as u8; BS as usize]
        );
    }
}
