//! Rebuild onto distributed spare space: after a member fails, every block with a location
//! on it is moved to survivors, so the pool tolerates another failure afterwards. Without the
//! rebuild, RAID5 stripes touching both failed members would be lost. Once nothing lives on
//! the failed member any more, a blank device can take its slot.

mod common;

use common::Driver;
use common::fusion_pool::{fusion_driver, pool_geometry, with_journal};
use fusionraid_core::meta::JournalConfig;
use fusionraid_core::scheme::fusion::{
    FusionConfig, FusionScheme, LayoutKind, Level, VolumeConfig,
};
use fusionraid_core::{Data, DiskId, EngineConfig, Op, Request};

const BS: u64 = 16384;
const DISKS: usize = 10;
const BLOCKS: u64 = 240;

fn driver(seed: u64) -> Driver {
    driver_with(seed, DISKS, 0.6)
}

fn driver_with(seed: u64, disks: usize, spare_fraction: f64) -> Driver {
    driver_of(seed, disks, Level::Raid5, 4, spare_fraction)
}

fn driver_of(seed: u64, disks: usize, level: Level, width: usize, spare: f64) -> Driver {
    let cfg = config_of(seed, disks, level, width, spare);
    fusion_driver(cfg, EngineConfig::new(disks), seed)
}

/// One volume of `BLOCKS` blocks at `level`, `width` wide, with `spare` of its stripes spare,
/// on `disks` members laid out by a permutation of `seed`; conversion soon after writes stop.
fn config_of(seed: u64, disks: usize, level: Level, width: usize, spare: f64) -> FusionConfig {
    let pool = pool_geometry(disks, BS, LayoutKind::Permutation { seed }, Vec::new());
    let mut v = VolumeConfig::new("v", level, width, BLOCKS * BS);
    v.spare_fraction = spare;
    let mut cfg = FusionConfig::new(pool, vec![v]);
    cfg.max_request_bytes = 12 * BS;
    cfg.conversion.idle_ns = Some(1_000_000);
    cfg.conversion.pause_fg_bytes_per_sec = 1e12;
    cfg
}

fn submit(d: &mut Driver, id: u64, op: Op) -> Option<Vec<u8>> {
    assert!(d.submit(Request { id, volume: 0, op }));
    d.drain();
    let r = d.take_replies().pop().expect("reply");
    r.result
        .unwrap_or_else(|e| panic!("request {id} failed: {e}"))
        .and_then(|d| d.into_bytes())
}

fn expected(len: u64) -> Vec<u8> {
    (0..len)
        .map(|i| ((i / 4096) as u8).wrapping_mul(31) ^ (i as u8))
        .collect()
}

/// The whole volume written with `expected` data, then 50 ms for conversion to run: the data,
/// and the next request id.
fn filled(d: &mut Driver) -> (Vec<u8>, u64) {
    let want = expected(BLOCKS * BS);
    let mut id = 1;
    fill(d, &mut id, &want);
    let t = d.now + 50_000_000;
    d.run_until(Some(t));
    (want, id)
}

fn fill(d: &mut Driver, id: &mut u64, want: &[u8]) {
    fill_range(d, id, want, 0);
}

/// Write `want[from..]` at its offsets (`from` a multiple of the block size).
fn fill_range(d: &mut Driver, id: &mut u64, want: &[u8], from: u64) {
    let size = want.len() as u64;
    let mut off = from;
    while off < size {
        let len = if (off / BS).is_multiple_of(5) {
            BS / 2
        } else {
            3 * BS
        };
        let len = len.min(size - off);
        let data = want[off as usize..(off + len) as usize].to_vec();
        submit(
            d,
            *id,
            Op::Write {
                offset: off,
                data: Data::Bytes(data),
                fua: false,
            },
        );
        *id += 1;
        off += len;
    }
}

fn check(d: &mut Driver, id: &mut u64, want: &[u8], what: &str) {
    let size = want.len() as u64;
    let mut off = 0;
    while off < size {
        let len = (12 * BS).min(size - off);
        let got = submit(d, *id, Op::Read { offset: off, len }).expect("data");
        *id += 1;
        assert!(
            got == want[off as usize..(off + len) as usize],
            "{what}: data at {off} differs"
        );
        off += len;
    }
}

/// Run in 5 ms steps while `busy` says so (at most 100 s of virtual time).
fn run_while(d: &mut Driver, what: &str, mut busy: impl FnMut(&mut Driver) -> bool) {
    let mut waited = 0;
    while busy(d) {
        let t = d.now + 5_000_000;
        d.run_until(Some(t));
        waited += 1;
        assert!(waited < 20_000, "{what}: {}", d.rebuild_state());
    }
}

/// Run until every volume's rebuild reports done; returns the blocks it moved plus the
/// columns it rebuilt into spare space.
fn wait_rebuild(d: &mut Driver, what: &str) -> u64 {
    run_while(d, &format!("{what}: rebuild never finished"), |d| {
        !d.rebuild_state().starts_with("done")
    });
    // "done: M blocks moved, C columns rebuilt into spare space in T s"
    let state = d.rebuild_state();
    let words: Vec<&str> = state.split_whitespace().collect();
    let num = |i: usize| {
        words
            .get(i)
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    num(1) + num(4)
}

#[test]
fn after_a_rebuild_a_second_failure_loses_nothing_and_a_replaced_member_rejoins() {
    for seed in 0..4u64 {
        let mut d = driver(seed);
        // A mix of full stripes (large writes) and replicated small writes; conversion runs
        // for a while so RAID stripes and pair sets both exist.
        let (want, mut id) = filled(&mut d);
        assert!(
            d.engine.replace_disk(DiskId(3), d.now).is_err(),
            "a healthy member was replaced"
        );
        d.fail_member(3);
        let ops_before = d.log.len();
        let moved = wait_rebuild(&mut d, &format!("seed {seed}"));
        assert!(moved > 0, "seed {seed}: nothing was rebuilt");
        assert!(
            d.log[ops_before..].iter().all(|o| o.disk != 3),
            "seed {seed}: I/O issued to the failed member"
        );
        d.engine.scheme().check_invariants();
        // A second member fails: every block must still read back.
        d.fail_member(7);
        check(
            &mut d,
            &mut id,
            &want,
            &format!("seed {seed}, after the second failure"),
        );

        // A blank device replaces member 3 (member 7 stays failed) and takes new data.
        d.blank_disk(3, 0x5A);
        d.engine
            .replace_disk(DiskId(3), d.now)
            .unwrap_or_else(|e| panic!("seed {seed}: replace refused: {e}"));
        let ops_before = d.log.len();
        let want2: Vec<u8> = want.iter().map(|b| b ^ 0x77).collect();
        fill(&mut d, &mut id, &want2);
        let t = d.now + 50_000_000;
        d.run_until(Some(t));
        assert!(
            d.log[ops_before..].iter().any(|o| o.disk == 3 && o.write),
            "seed {seed}: the replaced member is never written"
        );
        check(
            &mut d,
            &mut id,
            &want2,
            &format!("seed {seed}, after replace"),
        );
        d.engine.scheme().check_invariants();
    }
}

/// A mirror volume rebuilds by copying from a surviving copy: after the rebuild of one
/// failed member it survives as many more failures as it has copies left (a three-copy
/// mirror two at once, like RAID6), and no I/O goes to a failed member meanwhile.
#[test]
fn a_mirror_rebuilds_from_a_surviving_copy_and_tolerates_its_copies_in_failures() {
    for (seed, copies) in [(0u64, 2u8), (1, 3), (2, 3)] {
        let what = format!("seed {seed}, {copies} copies");
        // Spare for the survivors to hold everything: 7/5 of the data with two failed.
        let mut d = driver_of(seed, 7, Level::Mirror { copies }, copies as usize, 0.6);
        // Whole blocks and packs of half blocks, converted while the pool runs.
        let (want, mut id) = filled(&mut d);
        let (reads, writes) = d.log.iter().fold((0, 0), |(r, w), o| {
            (r + u64::from(!o.write), w + u64::from(o.write))
        });
        assert!(
            writes > 0 && reads == 0,
            "{what}: a mirror's writes read ({reads} reads)"
        );
        let failed: &[usize] = if copies == 3 { &[3, 5] } else { &[3] };
        for &m in failed {
            d.fail_member(m);
        }
        // With two failed at once, every block of a three-copy mirror still has one.
        check(
            &mut d,
            &mut id,
            &want,
            &format!("{what}, {failed:?} failed"),
        );
        let ops_before = d.log.len();
        let moved = wait_rebuild(&mut d, &what);
        assert!(moved > 0, "{what}: nothing was rebuilt");
        assert!(
            d.log[ops_before..]
                .iter()
                .all(|o| !failed.contains(&o.disk)),
            "{what}: I/O issued to a failed member"
        );
        d.engine.scheme().check_invariants();
        // One more failure after the rebuild: the data is whole again.
        d.fail_member(1);
        check(
            &mut d,
            &mut id,
            &want,
            &format!("{what}, after one more failure"),
        );
        d.engine.scheme().check_invariants();
    }
}

/// A small, full pool: 4+1 stripes on 6 members with 15% spare stripes. Moving whole blocks
/// into stripes that avoid the failed member would need free stripes clear of it for 5/6 of
/// the data, five times what the pool has; rebuilding just the lost columns into donor
/// blocks needs one free block per lost block. After the rebuild a second member fails
/// without loss; then a blank device takes the first slot, the rebalance brings every
/// column home, and the data reads back with the pool whole again.
#[test]
fn a_full_small_pool_rebuilds_into_spare_columns_and_rebalances_onto_the_new_member() {
    for seed in 0..4u64 {
        let mut d = driver_with(seed, 6, 0.15);
        let (want, mut id) = filled(&mut d);
        d.fail_member(2);
        let n = wait_rebuild(&mut d, &format!("seed {seed}"));
        assert!(n > 0, "seed {seed}: nothing rebuilt");
        assert!(
            d.engine.stats().rebuilt_columns > 0,
            "seed {seed}: no column rebuilt into spare space: {}",
            d.rebuild_state()
        );
        d.engine.scheme().check_invariants();
        check(
            &mut d,
            &mut id,
            &want,
            &format!("seed {seed}, after the rebuild"),
        );

        // The pool is whole again on five members: one more failure loses nothing.
        d.fail_member(4);
        check(
            &mut d,
            &mut id,
            &want,
            &format!("seed {seed}, second failure"),
        );
        d.disks[4].failed = false;

        // Member 2's slot gets a blank device; member 4 comes back too once its rebuild
        // is done (what is still on it would otherwise be rebuilt in place).
        d.blank_disk(2, 0x5A);
        run_while(
            &mut d,
            &format!("seed {seed}: member 2 never replaceable"),
            |d| d.engine.replace_disk(DiskId(2), d.now).is_err(),
        );
        d.pump();
        wait_rebuild(&mut d, &format!("seed {seed}, member 4"));
        d.disks[4].bytes.fill(0x5A);
        d.engine
            .replace_disk(DiskId(4), d.now)
            .unwrap_or_else(|e| panic!("seed {seed}: member 4: {e}"));
        d.pump();
        run_while(
            &mut d,
            &format!("seed {seed}: rebalance never finished"),
            |d| d.rebuild_state().contains("rebalancing"),
        );
        assert!(
            d.rebuild_state().contains("rebalance done"),
            "seed {seed}: {}",
            d.rebuild_state()
        );
        d.engine.scheme().check_invariants();
        check(
            &mut d,
            &mut id,
            &want,
            &format!("seed {seed}, after the rebalance"),
        );
        // Every member is healthy and nothing is left on spare space: any one may fail.
        d.fail_member(0);
        check(
            &mut d,
            &mut id,
            &want,
            &format!("seed {seed}, third failure"),
        );
    }
}

/// A stripe as wide as the pool: with a member failed no stripe can be whole on the
/// survivors, so the rebuild has nowhere to go (issue 19, case 2). A blank device in the
/// failed slot is accepted at once, the stale columns are rebuilt in place onto it under
/// overwrites, reads are right all along, and afterwards the pool again survives as many
/// failures of other members as its parity covers.
#[test]
fn a_volume_as_wide_as_the_pool_is_rebuilt_in_place_onto_its_replacement() {
    for (seed, level) in [(0u64, Level::Raid6), (1, Level::Raid5), (2, Level::Raid6)] {
        let what = format!("seed {seed}, {level:?} 6 wide on 6");
        let mut d = driver_of(seed, 6, level, 6, 0.3);
        let (want, mut id) = filled(&mut d);
        d.fail_member(2);
        run_while(&mut d, &format!("{what}: rebuild never stalled"), |d| {
            !d.rebuild_state().contains("stalled")
        });
        assert!(
            d.rebuild_state()
                .contains("rebuilt in place onto the new device"),
            "{what}: {}",
            d.rebuild_state()
        );
        // Degraded overwrites of half the volume.
        let mut want2 = want.clone();
        let half = want.len() / 2;
        for b in &mut want2[..half] {
            *b ^= 0x3C;
        }
        fill(&mut d, &mut id, &want2[..half]);
        check(&mut d, &mut id, &want2, &format!("{what}, degraded"));

        d.blank_disk(2, 0x5A);
        d.engine
            .replace_disk(DiskId(2), d.now)
            .unwrap_or_else(|e| panic!("{what}: replace refused: {e}"));
        d.pump();
        assert!(
            d.rebuild_state().contains("stale columns left"),
            "{what}: {}",
            d.rebuild_state()
        );
        // Reads while the rebuild runs, and more overwrites (an eighth of the volume: most
        // data stays where the rebuild restores it).
        check(&mut d, &mut id, &want2, &format!("{what}, just replaced"));
        let eighth = half / 4 / BS as usize * BS as usize;
        for b in &mut want2[half..half + eighth] {
            *b ^= 0xA5;
        }
        let ops_before = d.log.len();
        fill_range(&mut d, &mut id, &want2[..half + eighth], half as u64);
        wait_rebuild(&mut d, &what);
        assert!(
            d.engine.stats().rebuilt_in_place > 0,
            "{what}: nothing rebuilt in place: {}",
            d.rebuild_state()
        );
        assert!(
            d.log[ops_before..].iter().any(|o| o.disk == 2 && o.write),
            "{what}: the new member is never written"
        );
        d.engine.scheme().check_invariants();
        check(&mut d, &mut id, &want2, &format!("{what}, rebuilt"));
        // Whole again: as many failures as the parity covers, of other members, so that
        // every read needs what the rebuild wrote onto the new one.
        let next: &[usize] = if level == Level::Raid6 { &[0, 4] } else { &[4] };
        for &m in next {
            d.fail_member(m);
        }
        check(
            &mut d,
            &mut id,
            &want2,
            &format!("{what}, then {next:?} failed"),
        );
    }
}

/// Issue 19, case 3: `status` must not say "rebuild: done" while the failed member can not
/// be replaced yet ("try again later": `stored_on` waiting for the records of its first
/// call, written after the rebuild finished, to be durable), and `fail` of another member is
/// refused exactly while a volume's rebuild does not read "done". "done" must mean what the
/// operator acts on: nothing of the pool left on the failed member and the records that
/// moved it off durable; until then the rebuild reads "rebuilding" or "committing".
#[test]
fn a_rebuild_reads_done_exactly_when_the_failed_member_may_be_replaced() {
    for seed in 0..3u64 {
        let mut cfg = config_of(seed, DISKS, Level::Raid5, 4, 0.6);
        let journal = JournalConfig {
            pool_id: 19,
            journal_bytes: 256 << 10,
            commit_interval_ns: 50_000_000,
            ..Default::default()
        };
        with_journal(&mut cfg, journal);
        let mut d = fusion_driver(cfg, EngineConfig::new(DISKS), seed);
        let (want, id) = filled(&mut d);
        d.fail_member(3);
        let in_use = |d: &Driver| d.engine.scheme().disk_in_use(DiskId(3));
        // Through the rebuild, in 1 ms steps, to the first "done".
        let mut steps = 0;
        while !d.rebuild_state().starts_with("done") {
            let t = d.now + 1_000_000;
            d.run_until(Some(t));
            steps += 1;
            assert!(steps < 100_000, "seed {seed}: {}", d.rebuild_state());
        }
        // New records after the rebuild (a write not flushed yet, as on a pool in use) do
        // not make a finished, durable rebuild wait again: status says "done", so the
        // member may be replaced (and another one failed).
        let data = want[..BS as usize].iter().map(|b| b ^ 0x3C).collect();
        submit(
            &mut d,
            id,
            Op::Write {
                offset: 0,
                data: Data::Bytes(data),
                fua: false,
            },
        );
        let st = d.rebuild_state();
        assert!(st.starts_with("done"), "seed {seed}: {st}");
        assert!(
            !in_use(&d),
            "seed {seed}: status says \"{st}\" but replacing the member is refused"
        );
        d.engine
            .replace_disk(DiskId(3), d.now)
            .unwrap_or_else(|e| panic!("seed {seed}: status says \"{st}\" but: {e}"));
    }
}

/// Found by the trial of 2026-11-27: a RAID6 volume one member narrower than the pool,
/// written again after a finished rebuild, then two more members failed one after the other
/// (the second of the three failures leaves 6 members for stripes of 7, so its rebuild
/// stalls and the pool serves degraded). With no stripe clear of the failed members left,
/// the cleaner moved blocks that still had one parity to spare into free stripes with
/// columns on both failed members, where they had none, and the third failure lost them
/// although every stripe had lost at most two columns before the moves. Degraded targets
/// are now the least degraded spare stripes, and the cleaner takes only those that keep a
/// parity column to spare unless writes wait for room (`degraded.rs`, `move_target`).
#[test]
fn writes_after_a_finished_rebuild_keep_raid6_tolerance_on_a_volume_one_narrower_than_the_pool() {
    for seed in 0..4u64 {
        let mut d = driver_of(seed, 8, Level::Raid6, 7, 0.6);
        let (want, mut id) = filled(&mut d);
        d.fail_member(3);
        wait_rebuild(&mut d, &format!("seed {seed}"));
        let want: Vec<u8> = want.iter().map(|b| b ^ 0x77).collect();
        fill(&mut d, &mut id, &want);
        let t = d.now + 50_000_000;
        d.run_until(Some(t));
        for m in [0, 1] {
            d.fail_member(m);
            let t = d.now + 50_000_000;
            d.run_until(Some(t));
        }
        check(
            &mut d,
            &mut id,
            &want,
            &format!("seed {seed}, two failures after the rebuild"),
        );
    }
}

/// A stalled rebuild leaves an idle pool idle: with no stripe that can be whole again on
/// the survivors, the pool must not keep reserving donor stripes, giving them back and
/// discarding them, every millisecond (an idle `serve` was seen burning a core and
/// discarding each member's size over and over).
#[test]
fn a_stalled_rebuild_leaves_an_idle_pool_idle() {
    for (seed, journal) in [(0u64, false), (1, true), (2, true)] {
        let what = format!("seed {seed}, journal {journal}");
        let mut cfg = config_of(seed, 7, Level::Raid6, 6, 0.3);
        cfg.trim = fusionraid_core::scheme::fusion::TrimPolicy::on();
        if journal {
            let j = JournalConfig {
                pool_id: 7,
                journal_bytes: 256 << 10,
                commit_interval_ns: 1_000_000,
                ..Default::default()
            };
            with_journal(&mut cfg, j);
        }
        // Members exactly as large as the zones, so the first sweep of unused space is empty.
        let blocks = FusionScheme::new(cfg.clone()).unwrap().blocks_per_disk();
        cfg.pool.disk_bytes = cfg.pool.data_offset + blocks * BS;
        let mut d = fusion_driver(cfg, EngineConfig::new(7), seed);
        let (want, mut id) = filled(&mut d);
        d.fail_member(2);
        d.fail_member(5);
        run_while(&mut d, &format!("{what}: rebuild never stalled"), |d| {
            !d.rebuild_state().contains("stalled")
        });
        // Let whatever the failures started settle, then watch an idle second.
        d.run_until(Some(d.now + 2_000_000_000));
        let (ops, trimmed, wakeups) = (d.log.len(), d.bytes_trimmed, d.timeouts);
        d.run_until(Some(d.now + 1_000_000_000));
        let writes = d.log[ops..].iter().filter(|o| o.write).count();
        let wakeups = d.timeouts - wakeups;
        eprintln!(
            "{what}: {}; idle second: {} device ops, {writes} writes, {} bytes discarded, \
             {wakeups} wake-ups",
            d.rebuild_state(),
            d.log.len() - ops,
            d.bytes_trimmed - trimmed
        );
        assert_eq!(d.bytes_trimmed, trimmed, "{what}: discards on an idle pool");
        assert_eq!(writes, 0, "{what}: writes on an idle pool");
        // The rebuild looks again now and then (it backs off to 100 ms), not every
        // millisecond.
        assert!(
            wakeups <= 30,
            "{what}: {wakeups} wake-ups in an idle second"
        );
        check(&mut d, &mut id, &want, &what);
    }
}
