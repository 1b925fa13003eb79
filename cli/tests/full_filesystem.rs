//! Full file systems and unread output. A pool of `file:` members on one file system used
//! to take that file system's space only as it wrote: once other files filled it, every
//! member's next write failed with ENOSPC, every member was failed at once and the pool
//! stopped serving the data it had acknowledged. Member files now own their space from
//! `create` on (and keep it through trims), `create` refuses a file system that can not
//! hold them, thin members' refused writes wait for room (`no_space_wait_s`) instead of
//! failing them, and `serve` keeps serving when nobody can read what it prints.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(300);

/// A tmpfs of its own, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// None where this process may not mount (not root, no mount namespace rights).
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let opt = format!("size={size}");
        let out = run(
            "mount",
            &["-t", "tmpfs", "-o", &opt, "tmpfs", dir.to_str().unwrap()],
            Duration::from_secs(30),
        );
        out.status.success().then(|| Tmpfs(dir.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let opt = format!("remount,size={size}");
        run(
            "mount",
            &["-o", &opt, self.0.to_str().unwrap()],
            Duration::from_secs(30),
        )
        .ok("remount");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = run(
            "umount",
            &["-l", self.0.to_str().unwrap()],
            Duration::from_secs(30),
        );
    }
}

fn fio(uri: &str, name: &str, extra: &[&str]) -> Output {
    fio_nbd(uri, name, extra, T)
}

/// Fills the file system holding `dir` with one file until it refuses more.
fn fill(dir: &Path) {
    let mut f = std::fs::File::create(dir.join("filler")).unwrap();
    let chunk = vec![0x5au8; 1 << 20];
    loop {
        match f.write_all(&chunk).and_then(|()| f.sync_data()) {
            Ok(()) => continue,
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling {}: {e}", dir.display()),
        }
    }
}

/// A 200 MiB tmpfs under `dir` (`fs/`) and, next to it, the pool file of five `file:`
/// members of 64 MiB on it (320 MiB in all), `top` lines, and one RAID5 volume of 128 MiB.
/// None (the test skipped) where this process can not mount.
fn pool_on_tmpfs(dir: &Path, test: &str, top: &str) -> Option<(Tmpfs, PathBuf, PathBuf)> {
    let fs_dir = dir.join("fs");
    let Some(fs) = Tmpfs::mount(&fs_dir, "200M") else {
        skip(test, "this process can not mount a tmpfs (not root?)");
        return None;
    };
    let members: Vec<String> = (0..5)
        .map(|i| format!("\"file:{}/m{i}.img\"", fs_dir.display()))
        .collect();
    let pool = pool_file(
        dir,
        &format!(
            "name = \"full\"\nmembers = [{}]\nmember_size = \"64M\"\n{top}{}",
            members.join(", "),
            volume("v", "raid5", 4, "128M", false)
        ),
    );
    Some((fs, fs_dir, pool))
}

#[test]
fn members_on_a_file_system_that_fills_up_keep_their_space() {
    if !need(
        "members_on_a_file_system_that_fills_up_keep_their_space",
        &["fio", "mount", "umount"],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some((fs, fs_dir, pool)) = pool_on_tmpfs(
        dir.path(),
        "members_on_a_file_system_that_fills_up_keep_their_space",
        "",
    ) else {
        return;
    };
    let create = || {
        run(
            BIN,
            &["create", pool.to_str().unwrap()],
            Duration::from_secs(60),
        )
    };
    // Five members of 64 MiB do not fit in 200 MiB: refused, and no member file is left.
    let out = create();
    assert!(!out.status.success(), "{}", out.stdout);
    assert!(out.stderr.contains("does not fit"), "{}", out.stderr);
    let left: Vec<_> = std::fs::read_dir(&fs_dir).unwrap().collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
    // Room for them: each member file is allocated in full.
    fs.resize("400M");
    create().ok("create");
    for i in 0..5 {
        let m = std::fs::metadata(fs_dir.join(format!("m{i}.img"))).unwrap();
        assert!(m.blocks() * 512 >= 64 << 20, "member {i}: {m:?}");
    }
    let s = Serve::start(&pool, &[]);
    // Someone else takes every byte left.
    fill(&fs_dir);
    let trimmed = |s: &Serve| -> u64 {
        let j: serde_json::Value = serde_json::from_str(&s.status_text(true)).unwrap();
        j["snapshot"]["members"]
            .as_array()
            .expect("members")
            .iter()
            .map(|m| m["bytes_trimmed"].as_u64().expect("bytes_trimmed"))
            .sum()
    };
    let trimmed_before = trimmed(&s);
    let uri = s.uri("v");
    // The whole volume written and checked, half of it discarded (the members punch those
    // ranges out and allocate them again), then written and checked again.
    for (name, extra) in [
        (
            "write",
            &["--rw=randwrite", "--bs=16k", "--verify=crc32c"][..],
        ),
        ("trim", &["--rw=trim", "--bs=1M", "--size=64M"][..]),
        (
            "rewrite",
            &["--rw=randwrite", "--bs=4k", "--verify=crc32c"][..],
        ),
    ] {
        let out = fio(&uri, name, extra).ok(name);
        assert_eq!(fio_error(&out), 0, "{name}: {}", out.stdout);
    }
    let text = s.status_text(false);
    assert!(text.contains("state: ONLINE"), "{text}");
    let j: serde_json::Value = serde_json::from_str(&s.status_text(true)).unwrap();
    let c = &j["snapshot"]["counters"];
    assert_eq!(c["disk_failures"].as_u64(), Some(0), "{c}");
    assert!(
        trimmed(&s) > trimmed_before,
        "no trim reached the members while their file system was full"
    );
    for i in 0..5 {
        let m = std::fs::metadata(fs_dir.join(format!("m{i}.img"))).unwrap();
        assert!(
            m.blocks() * 512 >= 64 << 20,
            "member {i} lost its space to trims: {m:?}"
        );
    }
    s.stop();
}

/// The trade-off `file_space = "thin"` makes: sparse members on a file system that stays
/// full are failed once their refused writes have waited out `no_space_wait_s` (all of
/// them at once, here), and the log says why.
#[test]
fn thin_members_on_a_file_system_that_stays_full_fail_and_say_why() {
    let name = "thin_members_on_a_file_system_that_stays_full_fail_and_say_why";
    if !need(name, &["fio", "mount", "umount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let top = "file_space = \"thin\"\nno_space_wait_s = 1\n";
    let Some((_fs, fs_dir, pool)) = pool_on_tmpfs(dir.path(), name, top) else {
        return;
    };
    // Thin members fit anywhere at first: 320 MiB of files on 200 MiB.
    run(BIN, &["create", pool.to_str().unwrap()], T).ok("create");
    let s = Serve::start(&pool, &[]);
    fill(&fs_dir);
    let out = fio(
        &s.uri("v"),
        "write",
        &["--rw=write", "--bs=1M", "--size=128M"],
    );
    assert_ne!(fio_error(&out), 0, "every write was taken: {}", out.stdout);
    let text = s.status_text(false);
    assert!(text.contains("failed"), "{text}");
    let err = s.stop();
    assert!(
        err.contains("its file system stayed full for 1 s") && err.contains("file_space"),
        "{err}"
    );
}

/// Thin members on a file system that fills up: the writes it refuses are held, status
/// says so, and once room is made they go through. Nothing fails, nothing is lost.
#[test]
fn thin_members_wait_for_room_on_a_full_file_system() {
    let name = "thin_members_wait_for_room_on_a_full_file_system";
    if !need(name, &["fio", "mount", "umount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some((_fs, fs_dir, pool)) = pool_on_tmpfs(dir.path(), name, "file_space = \"thin\"\n")
    else {
        return;
    };
    run(BIN, &["create", pool.to_str().unwrap()], T).ok("create");
    let s = Serve::start(&pool, &[]);
    // Acknowledged before the file system fills: must read back at the end.
    let before = ["--rw=write", "--bs=1M", "--size=32M", "--verify=crc32c"];
    let out = fio(&s.uri("v"), "before", &before).ok("before");
    assert_eq!(fio_error(&out), 0, "{}", out.stdout);
    fill(&fs_dir);
    let uri = s.uri("v");
    let writer = std::thread::spawn(move || {
        let w = [
            "--rw=write",
            "--bs=1M",
            "--offset=32M",
            "--size=96M",
            "--verify=crc32c",
        ];
        fio(&uri, "write", &w)
    });
    // The writes wait: status says why, and no member has failed.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let held = loop {
        let text = s.status_text(false);
        if text.contains("out of space") {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline && !writer.is_finished(),
            "no write was held: {text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(held.contains("state: ONLINE"), "{held}");
    // Room is made: the held writes go through.
    std::fs::remove_file(fs_dir.join("filler")).unwrap();
    let out = writer.join().unwrap().ok("write");
    assert_eq!(fio_error(&out), 0, "{}", out.stdout);
    let out = fio(
        &s.uri("v"),
        "before",
        &[&before[..], &["--verify_only"]].concat(),
    )
    .ok("verify");
    assert_eq!(fio_error(&out), 0, "{}", out.stdout);
    let text = s.status_text(false);
    assert!(text.contains("state: ONLINE"), "{text}");
    assert!(!text.contains("out of space"), "{text}");
    let j: serde_json::Value = serde_json::from_str(&s.status_text(true)).unwrap();
    let c = &j["snapshot"]["counters"];
    assert_eq!(c["disk_failures"].as_u64(), Some(0), "{c}");
    let err = s.stop();
    assert!(err.contains("room again"), "{err}");
}

/// `serve` whose stdout reader went away and whose stderr is a full device still serves,
/// logs state changes (to nowhere) and stops cleanly: printing used to panic, and a panic
/// stops `serve`.
#[test]
fn serve_keeps_serving_when_nobody_reads_its_output() {
    if !need("serve_keeps_serving_when_nobody_reads_its_output", &["fio"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pool = mem_pool(
        dir.path(),
        5,
        "128M",
        &volume("v", "raid5", 4, "128M", false),
    );
    let (mut cmd, sock, status) = Serve::command(&pool, &[]);
    cmd.stderr(
        std::fs::File::options()
            .write(true)
            .open("/dev/full")
            .unwrap(),
    );
    let mut guard = Guard::spawn(cmd, "fusionraid serve");
    let out = guard.child.stdout.take().expect("piped");
    let mut lines = BufReader::new(out).lines();
    assert!(
        lines.any(|l| l.is_ok_and(|l| l == "ready")),
        "serve ended before it was ready"
    );
    // The reader leaves.
    drop(lines);
    let uri = format!("nbd+unix:///v?socket={}", sock.display());
    let sock_arg = status.to_str().unwrap();
    // A member failure is logged and announced; the writes go on degraded.
    run(
        BIN,
        &["fail", "--socket", sock_arg, "2"],
        Duration::from_secs(30),
    )
    .ok("fail");
    let out = fio(
        &uri,
        "write",
        &["--rw=randwrite", "--bs=4k", "--size=32M", "--verify=crc32c"],
    )
    .ok("fio");
    assert_eq!(fio_error(&out), 0, "{}", out.stdout);
    assert!(guard.is_running(), "serve stopped");
    let text = run(
        BIN,
        &["status", "--socket", sock_arg],
        Duration::from_secs(30),
    )
    .ok("status")
    .stdout;
    assert!(text.contains("DEGRADED"), "{text}");
    let st = guard.stop(Duration::from_secs(30)).expect("serve stops");
    assert!(st.success(), "{st:?}");
}

/// In-memory members take memory as they are written: a pool larger than the machine's
/// memory starts (as `nbdkit memory` does) but says that filling it would get the process
/// killed.
#[test]
fn in_memory_members_larger_than_memory_are_warned_about() {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let kb = m.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
            kb.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()
        })
        .expect("MemTotal in /proc/meminfo")
        * 1024;
    let member = (total / 4 / (1 << 30) + 1) << 30;
    let dir = tempfile::tempdir().unwrap();
    let big = mem_pool(
        dir.path(),
        5,
        &member.to_string(),
        &volume("v", "raid5", 4, "256M", false),
    );
    let err = Serve::start(&big, &[]).stop();
    assert!(err.contains("more than this machine's"), "{err}");
    // Members that fit say nothing.
    let dir = tempfile::tempdir().unwrap();
    let small = mem_pool(
        dir.path(),
        5,
        "128M",
        &volume("v", "raid5", 4, "256M", false),
    );
    let err = Serve::start(&small, &[]).stop();
    assert!(!err.contains("more than this machine's"), "{err}");
}
