//! Faults injected into real remote members with nbdkit filters, under a served volume:
//!
//! * `error`: a member starts returning EIO (switched on by creating its error file). It
//!   must be marked failed, and the RAID5 volume must keep returning exactly what was
//!   written, for old and new data. A second failing member is beyond RAID5's tolerance:
//!   reads may then fail, but never return wrong data.
//! * `error` with ENOSPC on writes: the storage under every member fills up. The refused
//!   writes wait for room instead of failing the members.
//! * `delay`: one member answers reads (or writes) 150 ms late. FusionRAID's detector must
//!   mark it unresponsive and steer reads (writes) around it, so far fewer requests wait
//!   for it than with the same pool served by Fusion-ND (no redirection), the control.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::nbdkit::{Export, need_filters};
use common::*;
use fusionraid_nbd::Client;

const T: Duration = Duration::from_secs(180);
const MEMBERS: usize = 5;
/// Data written and checked: 16 MiB in 1 MiB pieces (full stripes of the 3+1 volume).
const DATA: usize = 16 << 20;
const CHUNK: usize = 1 << 20;

fn pool(dir: &Path, exports: &[Export], extra: &str) -> std::path::PathBuf {
    let list: Vec<String> = exports.iter().map(|e| format!("\"{}\"", e.uri())).collect();
    let p = pool_file(
        dir,
        &format!(
            "name = \"faults\"\nmembers = [{}]\n{extra}{}",
            list.join(", "),
            volume("v", "raid5", 4, "64M", false)
        ),
    );
    run(BIN, &["create", p.to_str().unwrap()], T).ok("create on nbdkit members");
    p
}

fn status(s: &Serve) -> serde_json::Value {
    serde_json::from_str(&s.status_text(true)).expect("status JSON")
}

fn member_state(j: &serde_json::Value, i: usize) -> String {
    j["snapshot"]["members"][i]["state"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Reads everything back in 1 MiB pieces; returns how many reads failed. Panics on any read
/// that succeeds with data other than `want`.
fn verify(c: &mut Client, want: &[u8]) -> usize {
    let mut failed = 0;
    let mut buf = vec![0u8; CHUNK];
    for off in (0..want.len()).step_by(CHUNK) {
        match c.read_at(&mut buf, off as u64) {
            Ok(()) => assert!(
                buf[..] == want[off..off + CHUNK],
                "wrong data at offset {off}"
            ),
            Err(_) => failed += 1,
        }
    }
    failed
}

fn write_all(c: &mut Client, data: &[u8], at: usize) {
    for off in (0..data.len()).step_by(CHUNK) {
        c.write_at(&data[off..off + CHUNK], (at + off) as u64)
            .unwrap_or_else(|e| panic!("write at {}: {e}", at + off));
    }
    c.flush().unwrap();
}

/// `MEMBERS` nbdkit exports behind the error filter, member i's errors switched on while
/// the file `trigger(i)` exists (`file_key`: the filter's file parameter) and shaped by
/// `params`.
fn error_exports(
    d: &Path,
    file_key: &str,
    trigger: &dyn Fn(usize) -> std::path::PathBuf,
    params: &[&str],
) -> Vec<Export> {
    (0..MEMBERS)
        .map(|i| {
            let file = format!("{file_key}={}", trigger(i).display());
            let params: Vec<&str> = params.iter().copied().chain([file.as_str()]).collect();
            Export::start(d, &format!("m{i}"), "128M", &["error"], &params)
        })
        .collect()
}

/// Writes `data` at `at` over a connection of its own, in the background.
fn write_behind(s: &Serve, data: &[u8], at: usize) -> std::thread::JoinHandle<()> {
    let (uri, data) = (s.uri("v"), data.to_vec());
    std::thread::spawn(move || {
        let mut w = Client::connect(&uri).unwrap();
        write_all(&mut w, &data, at);
        w.disconnect().unwrap();
    })
}

/// Taken by every test of this file, so the latency measurements run alone.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn member_returning_errors_is_failed_and_data_stays_correct() {
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    if !need_filters("error member", &["error"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let inject = |i: usize| d.join(format!("inject{i}"));
    // Every member can be made to fail: EIO on every request once its file exists.
    let exports = error_exports(d, "error-file", &inject, &["error-rate=100%"]);
    let p = pool(d, &exports, "");
    let s = Serve::start(&p, &[]);
    let mut c = Client::connect(&s.uri("v")).unwrap();
    let mut data = pattern(11, DATA);
    write_all(&mut c, &data, 0);
    assert_eq!(verify(&mut c, &data), 0);
    assert!(in_service(&member_state(&status(&s), 2)));

    // Member 2 starts failing while new data is being written over half the volume: the
    // writes in flight to it fail, the member is failed, and every write still succeeds
    // (RAID5 tolerates one member).
    let fresh = pattern(12, DATA / 2);
    let writer = write_behind(&s, &fresh, DATA / 4);
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(inject(2), b"").unwrap();
    writer.join().expect("writes within tolerance must succeed");
    data[DATA / 4..DATA / 4 + DATA / 2].copy_from_slice(&fresh);
    assert_eq!(
        verify(&mut c, &data),
        0,
        "reads within tolerance must succeed"
    );
    let j = status(&s);
    assert_eq!(member_state(&j, 2), "failed", "{j:#}");
    assert!(
        j["snapshot"]["members"][2]["errors"].as_u64() >= Some(1),
        "{j:#}"
    );
    for i in [0, 1, 3, 4] {
        assert!(in_service(&member_state(&j, i)), "member {i}: {j:#}");
    }
    assert!(s.status_text(false).contains("DEGRADED"));

    // Degraded writes, read back with the older data around them.
    let again = pattern(13, DATA / 4);
    write_all(&mut c, &again, 0);
    data[..DATA / 4].copy_from_slice(&again);
    assert_eq!(
        verify(&mut c, &data),
        0,
        "degraded reads after degraded writes"
    );

    // A second failure: blocks the rebuild already moved off member 2 survive it; anything
    // else may fail to read, but never returns wrong data (verify checks every byte it gets).
    let rebuilt = s.status_text(false).contains("rebuild: done");
    std::fs::write(inject(4), b"").unwrap();
    let failed = verify(&mut c, &data);
    if rebuilt {
        assert_eq!(
            failed, 0,
            "after a finished rebuild a second failure loses nothing"
        );
    }
    let j = status(&s);
    assert_eq!(member_state(&j, 4), "failed", "{j:#}");
    assert!(j["snapshot"]["failed_requests"].as_u64() >= Some(failed as u64));
    c.disconnect().unwrap();
    // The log says why each member failed (the device's answer), not only that it did.
    let log = s.stop();
    for i in [2, 4] {
        let line = log
            .lines()
            .find(|l| l.contains("member failed") && l.contains(&format!("member={i}")))
            .unwrap_or_else(|| panic!("no failure line for member {i}:\n{log}"));
        assert!(line.contains("NBD_EIO"), "{line}");
    }
}

/// Remote members on thin storage that fills up: every export refuses writes with
/// NBD_ENOSPC while its trigger file exists. The refused writes are held and sent again,
/// status says so, no member fails, and once there is room everything written reads back.
#[test]
fn remote_members_out_of_space_wait_for_room() {
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    if !need_filters("remote members out of space", &["error"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let full = |i: usize| d.join(format!("full{i}"));
    let refuse = ["error-pwrite=ENOSPC", "error-pwrite-rate=100%"];
    let exports = error_exports(d, "error-pwrite-file", &full, &refuse);
    let p = pool(d, &exports, "");
    let s = Serve::start(&p, &[]);
    let mut c = Client::connect(&s.uri("v")).unwrap();
    let mut data = pattern(21, DATA);
    write_all(&mut c, &data, 0);
    // The storage under every member fills up while new data is written.
    for i in 0..MEMBERS {
        std::fs::write(full(i), b"").unwrap();
    }
    let fresh = pattern(22, DATA / 2);
    let writer = write_behind(&s, &fresh, DATA / 4);
    let deadline = Instant::now() + Duration::from_secs(30);
    let held = loop {
        let text = s.status_text(false);
        if text.contains("out of space") {
            break text;
        }
        assert!(
            Instant::now() < deadline && !writer.is_finished(),
            "no write was held: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(held.contains("state: ONLINE"), "{held}");
    // Room is made: the held writes go through and nothing was lost.
    for i in 0..MEMBERS {
        std::fs::remove_file(full(i)).unwrap();
    }
    writer.join().expect("the held writes must go through");
    data[DATA / 4..DATA / 4 + DATA / 2].copy_from_slice(&fresh);
    assert_eq!(verify(&mut c, &data), 0);
    let j = status(&s);
    for i in 0..MEMBERS {
        assert!(in_service(&member_state(&j, i)), "member {i}: {j:#}");
    }
    assert_eq!(j["snapshot"]["failed_requests"].as_u64(), Some(0), "{j:#}");
    c.disconnect().unwrap();
    let log = s.stop();
    assert!(log.contains("room again"), "{log}");
}

/// Random 4 KiB reads (or writes of `data`'s own bytes, so the contents stay the same) by
/// `threads` clients at once; returns each request's latency. Panics on wrong data.
fn random_io(uri: &str, data: &Arc<Vec<u8>>, write: bool, threads: u64, n: u64) -> Vec<Duration> {
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let uri = uri.to_string();
            let data = data.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(&uri).unwrap();
                let mut x = t.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                let mut buf = vec![0u8; 4096];
                let mut lat = Vec::new();
                for _ in 0..n {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let off = (x % (data.len() as u64 / 4096)) as usize * 4096;
                    let page = &data[off..off + 4096];
                    let t0 = Instant::now();
                    if write {
                        c.write_at(page, off as u64).unwrap();
                    } else {
                        c.read_at(&mut buf, off as u64).unwrap();
                    }
                    lat.push(t0.elapsed());
                    assert!(write || buf[..] == *page, "wrong data at {off}");
                }
                c.disconnect().unwrap();
                lat
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect()
}

/// Serves the pool with `scheme`, writes it, runs random reads or writes; returns the share
/// of them that waited for the slow member (100 ms or more), and the status after them.
fn slow_share(p: &Path, scheme: &str, write: bool) -> (f64, serde_json::Value) {
    let s = Serve::start(p, &["--scheme", scheme]);
    let data = Arc::new(pattern(21, DATA));
    let mut c = Client::connect(&s.uri("v")).unwrap();
    write_all(&mut c, &data, 0);
    let lat = random_io(&s.uri("v"), &data, write, 8, 60);
    assert_eq!(verify(&mut c, &data), 0);
    c.disconnect().unwrap();
    let slow = lat
        .iter()
        .filter(|l| **l >= Duration::from_millis(100))
        .count();
    let j = status(&s);
    s.stop();
    (slow as f64 / lat.len() as f64, j)
}

/// Five members, member 1 behind the delay filter with `param`; checks that FusionRAID
/// marks it and steers around it, against Fusion-ND as the control: FusionRAID's share of
/// requests that wait for the slow member must be below `factor` times Fusion-ND's.
/// `settings` go at the top of the pool file. Returns FusionRAID's status after its run
/// (None when the delay filter is missing).
fn steered_around(
    test: &str,
    param: &str,
    write: bool,
    factor: f64,
    settings: &str,
) -> Option<serde_json::Value> {
    if !need_filters(test, &["delay"]) {
        return None;
    }
    // The detector judges members by their latency: with the other tests of this file
    // running beside it on a 2-core machine, every member stalls now and then and looks
    // as slow as the delayed one (seen in CI). One at a time.
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let exports: Vec<Export> = (0..MEMBERS)
        .map(|i| {
            if i == 1 {
                Export::start(d, "m1", "128M", &["delay"], &[param])
            } else {
                Export::start(d, &format!("m{i}"), "128M", &[], &[])
            }
        })
        .collect();
    // The mapping lives in memory here, as in the paper (battery-backed DRAM): with the
    // journal on, every commit flushes and journals onto the slow member too, and in a pool
    // this small the writes then wait for space its commits hold (an open problem, see the
    // durability issue), which this test is not about.
    let p = pool(
        d,
        &exports,
        &format!("{settings}[metadata]\njournal = false\n"),
    );

    // Control: without redirection a good share of requests waits for the slow member.
    let (nd_share, _) = slow_share(&p, "fusion-nd", write);
    assert!(
        nd_share >= 0.08,
        "the delay filter did not slow requests: {nd_share}"
    );

    let (fr_share, j) = slow_share(&p, "fusionraid", write);
    let snap = &j["snapshot"];
    let spikes = |i: usize| snap["members"][i]["spikes"].as_u64().unwrap_or(0);
    assert!(spikes(1) >= 1, "the slow member was never marked: {j:#}");
    // The slow member is the one held unresponsive longest. Counting spikes instead would
    // let a busy machine decide: every member that stalls for a millisecond under load
    // counts one spike, as many as the slow member's long ones.
    let held = |i: usize| {
        snap["members"][i]["unresponsive_seconds"]
            .as_f64()
            .unwrap_or(0.0)
    };
    assert!(
        (0..MEMBERS).all(|i| held(1) >= held(i)),
        "another member was held unresponsive longer than the slow one: {j:#}"
    );
    let steered = if write {
        // Placement redirects a write whose first choice touches the slow member; a pair
        // set opened while it is marked keeps the writes it takes off it altogether; a
        // hedged write already waiting there is placed again.
        snap["redirected_writes"].as_u64().unwrap_or(0)
            + snap["steered_pair_sets"].as_u64().unwrap_or(0)
            + snap["counters"]["hedged_writes"].as_u64().unwrap_or(0)
    } else {
        snap["redirected_reads"].as_u64().unwrap_or(0)
            + snap["reconstructed_reads"].as_u64().unwrap_or(0)
    };
    assert!(
        steered > 0,
        "nothing was steered around the slow member: {j:#}"
    );
    assert!(
        fr_share < nd_share * factor,
        "fusionraid waited for the slow member in {:.1}% of requests, fusion-nd in {:.1}%",
        fr_share * 100.0,
        nd_share * 100.0
    );
    eprintln!(
        "{test}: requests waiting >= 100 ms: fusionraid {:.1}%, fusion-nd {:.1}%; {steered} steered",
        fr_share * 100.0,
        nd_share * 100.0
    );
    Some(j)
}

#[test]
fn delayed_member_reads_are_steered_around() {
    steered_around("slow reads", "delay-read=150ms", false, 0.5, "");
}

/// Writes gain less than reads (measured: about 23% against 42% of writes wait): a write
/// already issued to the member when the detector marks it still waits for its copy there,
/// and the member is trusted again as soon as its stragglers return (the paper's x_low = 0),
/// so every 150 ms the next writes to reach it are caught again.
#[test]
fn delayed_member_writes_are_steered_around() {
    steered_around("slow writes", "delay-write=150ms", true, 0.8, "");
}

/// With hedged writes (`write_hedge_us`), a write caught on the member when the detector
/// marks it is placed again elsewhere instead of waiting out the delay, so the share of
/// writes that wait must stay under 30% of Fusion-ND's (redirection alone is allowed 80%,
/// above). The pool file's setting reaches the engine of `serve`, and is counted in its
/// status (`counters.hedged_writes`, among the steered writes).
#[test]
fn delayed_member_writes_are_hedged() {
    steered_around(
        "hedged writes",
        "delay-write=150ms",
        true,
        0.3,
        "write_hedge_us = 1000\n",
    );
}

/// With hedged RAID reads (`raid_hedge_us`), a read caught on the member before the detector
/// marks it is rebuilt from the rest of its stripe once the member shows a straggler,
/// instead of waiting out the delay, so the share of reads that wait must stay under 20% of
/// Fusion-ND's (redirection alone is allowed 50%, above).
#[test]
fn delayed_member_reads_are_hedged() {
    let Some(j) = steered_around(
        "hedged reads",
        "delay-read=150ms",
        false,
        0.2,
        "raid_hedge_us = 1000\n",
    ) else {
        return;
    };
    // Redirection alone also keeps most reads off the member once it is marked: the reads
    // already waiting there are what the hedge is for, and it must have sent some.
    let hedged = j["snapshot"]["counters"]["hedged_reads"]
        .as_u64()
        .unwrap_or(0);
    assert!(hedged > 0, "no read was hedged: {j:#}");
}
