//! Write offload to HDD logs (issue 21): busy SSDs' replica copies go to HDD logs, conversion
//! retires them, freed log space is reused (only once the journal says the copies' sets are
//! gone, when there is one), and the copies in logs carry the data through member failures.

mod common;

use common::fusion_pool::{fusion_driver, pool_geometry, with_journal};
use common::{Driver, convert_when_idle};
use fusionraid_core::meta::JournalConfig;
use fusionraid_core::scheme::fusion::{
    FusionConfig, LayoutKind, Level, OffloadConfig, VolumeConfig,
};
use fusionraid_core::{DiskId, EngineConfig, Op, Request};

const BS: u64 = 65536;
const BLOCKS: u64 = 96;
const HDDS: [usize; 2] = [3, 9];

/// Ten members, two of them HDDs with logs of 4 pages each, one RAID5 6+1 volume.
fn driver(journal: bool, replicated_fraction: Option<f64>) -> Driver {
    driver_committing_every(journal, replicated_fraction, 1_000_000)
}

fn driver_committing_every(
    journal: bool,
    replicated_fraction: Option<f64>,
    commit_interval_ns: u64,
) -> Driver {
    let hdds = HDDS.iter().map(|&d| d as u32).collect();
    let pool = pool_geometry(10, BS, LayoutKind::Mols, hdds);
    let mut vol = VolumeConfig::new("v", Level::Raid5, 7, BLOCKS * BS);
    if let Some(f) = replicated_fraction {
        vol.replicated_fraction = f;
    }
    let mut cfg = FusionConfig::new(pool, vec![vol]);
    cfg.max_request_bytes = 24 * BS;
    convert_when_idle(&mut cfg);
    cfg.offload = Some(OffloadConfig {
        queue_threshold: 1,
        min_outstanding: 0.0,
        // More offloaded pages than the logs hold need dead extents reused.
        log_bytes: Some(4 * 4096),
    });
    if journal {
        let journal = JournalConfig {
            pool_id: 21,
            journal_bytes: 64 << 10,
            commit_interval_ns,
            ..Default::default()
        };
        with_journal(&mut cfg, journal);
    }
    fusion_driver(cfg, EngineConfig::new(10), 7)
}

fn pattern(tag: u8) -> Vec<u8> {
    vec![tag; 4096]
}

fn is_hdd(disk: usize) -> bool {
    HDDS.contains(&disk)
}

/// Bursts of 4 KiB writes of varied size (some SSD windows busier than the median, so the
/// rule redirects), mirrored into `want`.
fn round(d: &mut Driver, want: &mut [u8], id: &mut u64, tag: u8) {
    bursts(d, want, id, tag, 30);
}

fn bursts(d: &mut Driver, want: &mut [u8], id: &mut u64, tag: u8, count: u64) {
    for burst in 0..count {
        let n = if burst % 3 == 0 { 40 } else { 3 };
        for k in 0..n {
            *id += 1;
            let off = ((burst * 37 + k * 11) % BLOCKS) * BS + (k % 16) * 4096;
            let data = pattern(tag.wrapping_add(*id as u8));
            want[off as usize..off as usize + 4096].copy_from_slice(&data);
            assert!(d.submit_write(*id, off, data));
        }
        d.drain();
        assert!(d.take_replies().iter().all(|r| r.result.is_ok()));
        d.run_until(Some(d.now + 2_000_000));
    }
}

/// Every block reads back as written.
fn check(d: &mut Driver, want: &[u8], id: &mut u64) {
    for b in (0..BLOCKS).step_by(16) {
        *id += 1;
        let got = d.read_now(*id, b * BS, 16 * BS).expect("read ok");
        assert!(
            got == want[(b * BS) as usize..((b + 16) * BS) as usize],
            "blocks {b}.."
        );
    }
}

/// Reads users asked for that went to an HDD.
fn user_reads_from_hdds(d: &Driver) -> usize {
    d.log
        .iter()
        .filter(|o| o.read && !o.background && is_hdd(o.disk))
        .count()
}

/// Reads never use an offloaded copy's SSD place (a hole: the test members hold zeroes
/// there), and with the SSD copies healthy never go to a log; a scrub checks the log copies
/// too; conversion keeps the SSD copy and retires the log extents, whose space takes new
/// copies again. With a journal, that space waits for the commit that retires them.
fn offload_round_trip(journal: bool) {
    let mut d = driver(journal, None);
    let mut want = vec![0u8; (BLOCKS * BS) as usize];
    let mut id = 0;
    round(&mut d, &mut want, &mut id, 1);
    let first = d.engine.stats().offloaded_writes;
    assert!(
        first > 8,
        "offloaded {first}: the 8 pages of log were not reused"
    );
    assert!(d.log.iter().any(|o| o.write && is_hdd(o.disk)));
    check(&mut d, &want, &mut id);
    assert_eq!(user_reads_from_hdds(&d), 0);
    d.engine.start_scrub(d.now).unwrap();
    d.settle();
    assert_eq!(d.engine.stats().checksum_errors, 0);
    assert_eq!(d.engine.stats().repaired_blocks, 0);
    // (With the journal, freed log space waits for commits, so fewer copies are offloaded
    // and by now the sets holding them have converted.)
    assert!(
        journal
            || d.log
                .iter()
                .any(|o| o.read && o.background && is_hdd(o.disk)),
        "the scrub did not read the log copies"
    );
    // Conversion retires the pair sets, and with them the log extents.
    d.run_until(Some(d.now + 200_000_000));
    d.settle();
    assert!(d.engine.stats().conversions > 0);
    check(&mut d, &want, &mut id);
    round(&mut d, &mut want, &mut id, 100);
    assert!(
        d.engine.stats().offloaded_writes > first + 8,
        "the logs were not reused after conversion ({first} then {})",
        d.engine.stats().offloaded_writes
    );
    d.run_until(Some(d.now + 200_000_000));
    d.settle();
    check(&mut d, &want, &mut id);
    assert_eq!(user_reads_from_hdds(&d), 0);
}

#[test]
fn busy_ssds_offload_replicas_to_hdd_logs_and_conversion_frees_them() {
    offload_round_trip(false);
}

#[test]
fn journaled_offload_reuses_log_space_once_the_retiring_commit_is_durable() {
    offload_round_trip(true);
}

/// Fail member `disk` right after some offloaded writes, read everything back, let the rebuild finish and replace the member.
fn fail_after_offload(disk: usize) -> Driver {
    // A replicated area large enough that no set converts before the failure.
    let mut d = driver(true, Some(0.5));
    let mut want = vec![0u8; (BLOCKS * BS) as usize];
    let mut id = 0;
    // Few enough writes that no set has converted yet: every offloaded copy is live.
    bursts(&mut d, &mut want, &mut id, 7, 7);
    assert_eq!(
        d.engine.stats().conversions,
        0,
        "converted before the failure"
    );
    assert!(d.engine.stats().offloaded_writes > 0);
    d.fail_member(disk);
    check(&mut d, &want, &mut id);
    let limit = d.now + 60_000_000_000;
    while !d.rebuild_state().starts_with("done") {
        assert!(d.now < limit, "rebuild never finished");
        d.run_until(Some(d.now + 5_000_000));
    }
    d.settle();
    check(&mut d, &want, &mut id);
    d.blank_disk(disk, 0x5A);
    let now = d.now;
    d.engine
        .replace_disk(DiskId(disk as u32), now)
        .expect("nothing left on the failed member");
    d.settle();
    check(&mut d, &want, &mut id);
    assert_eq!(d.engine.stats().unrecoverable_pages, 0);
    d
}

/// An SSD failure can leave a page's only readable copy in a log: reads and the rebuild
/// (which moves those blocks) get it from there.
#[test]
fn an_ssd_failure_reads_the_copies_in_the_logs() {
    let reads: u64 = (0..10)
        .filter(|&m| !is_hdd(m))
        .map(|m| fail_after_offload(m).engine.stats().log_reads)
        .sum();
    assert!(reads > 0, "no SSD failure needed a copy in a log");
}

/// An HDD failure loses the copies in its log: their blocks are moved (two fresh copies),
/// after which the HDD can be replaced.
#[test]
fn an_hdd_failure_moves_the_blocks_whose_copies_it_held() {
    let d = fail_after_offload(HDDS[0]);
    assert!(d.engine.stats().relocations > 0, "nothing was moved");
}

/// Log space freed by conversion is not appended to before the commit that retired its
/// copies is durable: a crash in between would bring the sets back with their log copies
/// overwritten. Commits here come only from a FLUSH (the interval is 100 s).
#[test]
fn freed_log_space_waits_for_the_retiring_commit() {
    let mut d = driver_committing_every(true, Some(0.5), 100_000_000_000);
    let mut want = vec![0u8; (BLOCKS * BS) as usize];
    let mut id = 0;
    bursts(&mut d, &mut want, &mut id, 3, 30);
    let full = d.engine.stats().offloaded_writes;
    assert_eq!(d.engine.stats().conversions, 0);
    assert_eq!(full, 8, "two logs of 4 pages, filled");
    // Idle: the sets convert, retiring their copies in the logs (records not durable).
    d.run_until(Some(d.now + 300_000_000));
    d.settle();
    assert!(d.engine.stats().conversions > 0);
    bursts(&mut d, &mut want, &mut id, 50, 30);
    assert_eq!(
        d.engine.stats().offloaded_writes,
        full,
        "log space reused before the retiring commit was durable"
    );
    id += 1;
    assert!(d.submit(Request {
        id,
        volume: 0,
        op: Op::Flush,
    }));
    d.drain();
    assert!(d.take_replies().iter().all(|r| r.result.is_ok()));
    bursts(&mut d, &mut want, &mut id, 90, 30);
    assert!(
        d.engine.stats().offloaded_writes > full,
        "the logs were not reused after the commit"
    );
    check(&mut d, &want, &mut id);
}
