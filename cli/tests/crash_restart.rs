//! kill -9 of `fusionraid serve` with writes in flight: everything flushed before survives a
//! restart (recovered from the metadata journal), checked by fio's own verification and by
//! reading a second volume end to end.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(180);

/// Five file members on disk (persistent, unlike mem:), two RAID5 volumes; `hybrid` adds
/// two emulated 7200 rpm HDDs with write offload to their logs, taken whenever an SSD has
/// a queue, and no conversion on idleness, so offloaded copies are still in the logs when
/// `serve` is killed.
fn pool(dir: &Path, hybrid: bool) -> std::path::PathBuf {
    let mut members: Vec<String> = (0..5).map(|i| format!("\"file:m{i}.img\"")).collect();
    let mut extra = String::new();
    if hybrid {
        members.extend((0..2).map(|i| format!("\"emu:hdd7200:file:h{i}.img\"")));
        extra = "hdd_members = [5, 6]\n".into();
    }
    let policies = if hybrid {
        "[offload]\nenabled = true\nqueue_threshold = 0\nmin_outstanding = 0.0\n[conversion]\nidle_ms = 0\n"
    } else {
        ""
    };
    pool_file(
        dir,
        &format!(
            "name = \"crash\"\nmembers = [{}]\n{extra}member_size = \"96M\"\nblock_size = \"64K\"\n\
             layout = \"permutation\"\n{policies}[metadata]\ncommit_interval_ms = 5\n{}{}",
            members.join(", "),
            volume("a", "raid5", 4, "48M", false),
            volume("b", "raid5", 4, "48M", false)
        ),
    )
}

fn fio_args(uri: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "--name=crash",
        "--ioengine=nbd",
        &format!("--uri={uri}"),
        "--size=40M",
        "--bsrange=4k-64k",
        "--verify=crc32c",
        "--verify_fatal=1",
        "--iodepth=8",
        "--randseed=7",
        "--output-format=json",
        "--verify_state_save=0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

/// Keeps volume `vol` busy with unflushed 4 KiB random writes (fio, outside the range the
/// test verifies) and kills `serve` with SIGKILL 1.5 s into them.
fn kill_9_under_writes(s: Serve, vol: &str) {
    let uri_arg = format!("--uri={}", s.uri(vol));
    let mut churn = Command::new("fio");
    churn
        .args([
            "--name=churn",
            "--ioengine=nbd",
            &uri_arg,
            "--size=8M",
            "--rw=randwrite",
            "--bs=4k",
            "--iodepth=16",
            "--time_based",
            "--runtime=30",
            "--offset=40M",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut churn = Guard::spawn(churn, "fio churn");
    std::thread::sleep(Duration::from_millis(1500));
    let mut s = s;
    s.signal(libc::SIGKILL);
    churn.wait_timeout(Duration::from_secs(30));
    drop(churn);
    drop(s);
}

/// Replica writes `serve` has sent to HDD logs so far (status JSON).
fn offloaded_writes(s: &Serve) -> u64 {
    let doc: serde_json::Value = serde_json::from_str(&s.status_text(true)).expect("status JSON");
    doc["snapshot"]["counters"]["offloaded_writes"]
        .as_u64()
        .expect("offloaded_writes")
}

#[test]
fn kill_9_during_writes_loses_nothing_flushed() {
    kill_9_case("kill_9_during_writes_loses_nothing_flushed", false);
}

/// Issue 21: the same with copies in HDD logs, not yet retired by conversion, at the kill.
#[test]
fn kill_9_with_copies_in_hdd_logs_loses_nothing_flushed() {
    kill_9_case("kill_9_with_copies_in_hdd_logs_loses_nothing_flushed", true);
}

fn kill_9_case(name: &str, hybrid: bool) {
    if !need(name, &["fio", "qemu-img"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = pool(dir.path(), hybrid);
    run(BIN, &["create", p.to_str().unwrap()], T).ok("fusionraid create");
    let s = Serve::start(&p, &[]);
    // Volume a: random writes of mixed sizes, flushed at the end (fio's end_fsync is an NBD
    // FLUSH), not verified yet.
    let args = fio_args(
        &s.uri("a"),
        &["--rw=randwrite", "--do_verify=0", "--end_fsync=1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run("fio", &args, T).ok("fio write phase");
    assert_eq!(fio_error(&out), 0, "{}", out.stdout);
    // A known image on volume b, flushed.
    let img = dir.path().join("b.img");
    std::fs::write(&img, pattern(11, 8 << 20)).unwrap();
    run(
        "qemu-img",
        &[
            "convert",
            "-n",
            "-f",
            "raw",
            "-O",
            "raw",
            img.to_str().unwrap(),
            &s.uri("b"),
        ],
        T,
    )
    .ok("qemu-img convert into b");
    if hybrid {
        assert!(
            offloaded_writes(&s) > 0,
            "nothing was offloaded to the HDD logs"
        );
    }
    // Now keep volume a busy with unflushed writes next to the verified range, and kill -9
    // mid-way: the crash must not disturb what was flushed.
    kill_9_under_writes(s, "a");

    let s = Serve::start(&p, &[]);
    let status = s.status_text(false);
    assert!(
        status.contains("recovery: recovered after crash: replayed"),
        "{status}"
    );
    let args = fio_args(&s.uri("a"), &["--rw=randwrite", "--verify_only"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run("fio", &args, T).ok("fio verify_only after kill -9");
    assert_eq!(fio_error(&out), 0, "{}", out.stdout);
    let back = dir.path().join("b.back");
    run(
        "qemu-img",
        &[
            "convert",
            "-f",
            "raw",
            "-O",
            "raw",
            &s.uri("b"),
            back.to_str().unwrap(),
        ],
        T,
    )
    .ok("qemu-img convert out of b");
    let got = std::fs::read(&back).unwrap();
    assert_eq!(
        &got[..8 << 20],
        pattern(11, 8 << 20).as_slice(),
        "volume b changed"
    );
    assert!(
        got[8 << 20..].iter().all(|&b| b == 0),
        "volume b's unwritten tail"
    );
    s.stop();
}
