//! A clean shutdown (`Engine::begin_shutdown`): background work stops, the jobs in flight
//! finish, and a last checkpoint flagged clean makes everything durable, unflushed writes
//! included. Recovery reports a clean shutdown only when that checkpoint is the newest valid
//! one and nothing follows it; a power cut while it is written is recovered as a crash.

mod common;

use common::{Driver, convert_when_idle};
use fusionraid_core::meta::recover::region;
use fusionraid_core::meta::{JournalConfig, RecoveryReport};
use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::fusion::durable::meta_layout;
use fusionraid_core::scheme::fusion::{
    FusionConfig, FusionScheme, LayoutKind, Level, PoolGeometry, VolumeConfig,
};
use fusionraid_core::{Engine, EngineConfig, Nanos, Op, Request};

const BS: u64 = 16384;
const DISKS: usize = 5;
const BLOCKS: u64 = 96;

fn config() -> FusionConfig {
    let pool = PoolGeometry {
        disks: DISKS,
        disk_bytes: u64::MAX / 4,
        block_size: BS,
        data_offset: 0,
        layout: LayoutKind::Permutation { seed: 3 },
        hdds: Vec::new(),
    };
    let v = VolumeConfig::new("v", Level::Raid5, 4, BLOCKS * BS);
    let mut cfg = FusionConfig::new(pool, vec![v]);
    cfg.max_request_bytes = 8 * BS;
    cfg.journal = Some(JournalConfig {
        pool_id: 11,
        journal_bytes: 64 << 10,
        commit_interval_ns: 1_000_000,
        ..Default::default()
    });
    convert_when_idle(&mut cfg);
    let end = meta_layout(&cfg).expect("journaled").end();
    cfg.pool.data_offset = end.div_ceil(4096) * 4096;
    cfg
}

fn disk_bytes(cfg: &FusionConfig) -> u64 {
    let s = FusionScheme::new(cfg.clone()).unwrap();
    cfg.pool.data_offset + s.blocks_per_disk() * BS
}

fn fresh(cfg: &FusionConfig) -> Driver {
    let scheme = FusionScheme::new(cfg.clone()).unwrap();
    let mut d = Driver::new(
        Engine::new(EngineConfig::new(DISKS), Box::new(scheme), 0),
        DISKS,
        disk_bytes(cfg),
        1,
    );
    d.enable_volatile_caches();
    d
}

/// The pool `serve` would bring up from `images` (the members after a power cut).
fn recover(cfg: &FusionConfig, images: Vec<Vec<u8>>, now: Nanos) -> (Driver, RecoveryReport) {
    let (off, len) = region(&meta_layout(cfg).expect("journaled"));
    let regions: Vec<Option<&[u8]>> = images
        .iter()
        .map(|m| Some(&m[off as usize..(off + len) as usize]))
        .collect();
    let (scheme, report) = FusionScheme::recover(cfg.clone(), &regions, now).expect("recovery");
    let mut d = Driver::new(
        Engine::new(EngineConfig::new(DISKS), Box::new(scheme), now),
        DISKS,
        disk_bytes(cfg),
        2,
    );
    for (m, img) in d.disks.iter_mut().zip(images) {
        m.bytes = img;
    }
    d.now = now;
    d.enable_volatile_caches();
    (d, report)
}

/// What each block may hold after a crash (any of these) and after a clean shutdown (the
/// last). Blocks 0..48 are written and flushed; then some are overwritten and 48..80
/// written, partly with 4 KiB writes (patches, replicated slots), never flushed. Conversion
/// runs in between, so background jobs are in flight when the shutdown begins.
fn workload(d: &mut Driver) -> Vec<Vec<Vec<u8>>> {
    let mut allowed: Vec<Vec<Vec<u8>>> = (0..BLOCKS).map(|_| vec![vec![0; BS as usize]]).collect();
    let mut id = 0;
    let mut write = |d: &mut Driver, allowed: &mut Vec<Vec<Vec<u8>>>, b: u64, page: Option<u64>| {
        id += 1;
        let fill = (id % 250 + 1) as u8;
        let mut now = allowed[b as usize].last().unwrap().clone();
        match page {
            None => {
                d.write_ok(id, b * BS, vec![fill; BS as usize]);
                now.fill(fill);
            }
            Some(p) => {
                d.write_ok(id, b * BS + p * 4096, vec![fill; 4096]);
                now[(p * 4096) as usize..((p + 1) * 4096) as usize].fill(fill);
            }
        }
        allowed[b as usize].push(now);
    };
    for b in 0..48 {
        write(d, &mut allowed, b, (b % 3 == 0).then_some(b % 4));
    }
    assert!(d.submit(Request {
        id: 10_000,
        volume: 0,
        op: Op::Flush
    }));
    d.drain();
    assert!(d.take_replies().iter().all(|r| r.result.is_ok()));
    // Flushed: only the newest value is allowed now.
    for a in allowed.iter_mut().take(48) {
        let last = a.pop().unwrap();
        *a = vec![last];
    }
    for b in (0..48).step_by(5) {
        write(d, &mut allowed, b, Some(1));
    }
    // Idle long enough for the conversion trigger, then more writes.
    let t = d.now + 40_000_000;
    d.run_until(Some(t));
    for b in 48..80 {
        write(d, &mut allowed, b, (b % 2 == 0).then_some(b % 4));
    }
    // Up to the moment the idle trigger starts conversions.
    let limit = d.now + 100_000_000;
    while d.engine.inflight_ios() == 0 {
        let t = d.next_event_at().expect("the conversion timer");
        assert!(t < limit, "no conversion started");
        d.run_until(Some(t));
    }
    allowed
}

fn begin_shutdown(d: &mut Driver) {
    d.engine.begin_shutdown(d.now);
    d.pump();
}

/// Begin the clean shutdown and run it to its end (within 10 s of virtual time).
fn shut_down(d: &mut Driver) {
    begin_shutdown(d);
    let limit = d.now + 10_000_000_000;
    while !d.engine.shutdown_done() {
        let t = d.next_event_at().expect("the shutdown waits for an event");
        assert!(t < limit, "the clean shutdown never finished");
        d.run_until(Some(t));
    }
}

/// Every block holds a value `allowed` lists (`newest`: the newest only).
fn check(d: &mut Driver, allowed: &[Vec<Vec<u8>>], newest: bool, what: &str) {
    for (b, a) in allowed.iter().enumerate() {
        let got = d
            .read_now(50_000 + b as u64, b as u64 * BS, BS)
            .unwrap_or_else(|e| panic!("{what}: block {b}: {e}"));
        let ok = if newest {
            &got == a.last().unwrap()
        } else {
            a.contains(&got)
        };
        assert!(ok, "{what}: block {b} holds {:?}...", &got[..8]);
    }
}

#[test]
fn a_clean_shutdown_keeps_unflushed_writes_and_is_reported_clean() {
    let cfg = config();
    let mut d = fresh(&cfg);
    let allowed = workload(&mut d);
    assert!(d.engine.inflight_ios() > 0, "background work is running");
    shut_down(&mut d);
    assert_eq!(d.engine.inflight_ios(), 0);
    let meta = d.engine.scheme().metadata_status().unwrap();
    let images = d.power_cut(&mut Rng::new(5));
    let (mut r, report) = recover(&cfg, images, d.now);
    assert!(report.clean_shutdown(), "{report:?}");
    let text = report.to_string();
    assert!(text.starts_with("clean shutdown (checkpoint seq"), "{text}");
    assert!(text.contains(" KiB") && !text.contains("bytes"), "{text}");
    // Nothing was lost, though the last writes were never flushed by the user.
    check(&mut r, &allowed, true, "after a clean shutdown");
    assert!(meta.checkpoints >= 1, "{meta:?}");

    // The next run writes its own (unflagged) checkpoint first: a crash after it is a crash.
    r.settle();
    let images = r.power_cut(&mut Rng::new(6));
    let (_, report) = recover(&cfg, images, r.now);
    assert!(!report.clean_shutdown(), "{report:?}");
    assert!(
        report
            .to_string()
            .starts_with("recovered after crash: replayed 0 records"),
        "{report}"
    );
}

#[test]
fn a_crash_during_the_clean_checkpoint_is_recovered_as_a_crash() {
    let cfg = config();
    let (mut crashes, mut cleans) = (0, 0);
    for cut in 0.. {
        let mut d = fresh(&cfg);
        let allowed = workload(&mut d);
        begin_shutdown(&mut d);
        let mut finished = false;
        for _ in 0..cut {
            if d.engine.shutdown_done() {
                finished = true;
                break;
            }
            let t = d.next_event_at().expect("an event");
            d.run_until(Some(t));
        }
        let images = d.power_cut(&mut Rng::new(cut));
        let (mut r, report) = recover(&cfg, images, d.now);
        let what = format!("power cut {cut} events into the shutdown: {report}");
        if report.clean_shutdown() {
            // Only a complete clean checkpoint says so, and it holds every write.
            cleans += 1;
            check(&mut r, &allowed, true, &what);
        } else {
            assert!(!finished, "{what}");
            assert!(
                report.to_string().starts_with("recovered after crash"),
                "{what}"
            );
            crashes += 1;
            check(&mut r, &allowed, false, &what);
        }
        if finished {
            break;
        }
    }
    assert!(
        crashes > 3 && cleans >= 1,
        "{crashes} crashes, {cleans} clean"
    );
}

/// A member fails while the clean checkpoint is written (its flush fails): the failure is
/// recorded after that checkpoint, so the shutdown journals it and takes another; the next
/// start finds a clean shutdown that remembers the failure, and every write. Which members
/// the shutdown writes depends on where the journal stands, so each member is failed in
/// turn and those the shutdown found failed are checked.
#[test]
fn a_member_failing_during_the_clean_shutdown_is_recorded_before_it_ends() {
    let cfg = config();
    let mut checked = 0;
    for m in 0..DISKS {
        let mut d = fresh(&cfg);
        let allowed = workload(&mut d);
        d.disks[m].failed = true;
        shut_down(&mut d);
        let disk = fusionraid_core::DiskId(m as u32);
        if !d.engine.disks().get(disk).failed {
            continue; // the shutdown wrote nothing to it
        }
        checked += 1;
        let meta = d.engine.scheme().metadata_status().unwrap();
        assert!(meta.checkpoints >= 2, "{meta:?}");
        let images = d.power_cut(&mut Rng::new(7));
        let (mut r, report) = recover(&cfg, images, d.now);
        assert!(report.clean_shutdown(), "{report}");
        assert_eq!(report.members_failed, vec![m as u16], "{report}");
        assert!(
            report
                .to_string()
                .contains(&format!("members failed earlier [{m}]")),
            "{report}"
        );
        r.engine.fail_disk(disk, r.now);
        check(
            &mut r,
            &allowed,
            true,
            "after a clean shutdown with a failed member",
        );
    }
    assert!(checked > 0, "the shutdown wrote to no member");
}
