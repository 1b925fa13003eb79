//! A file system on a fusionraid volume: nbdfuse exposes the volume as a file, mkfs.ext4
//! formats it, a loop mount writes files, fsck checks it after unmount, and a second mount
//! reads the files back; and the same file system after a kill -9 of `serve` in the middle
//! of writes. Needs root (mount), /dev/loop* and /dev/fuse.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(180);

/// Unmounts on drop, so a failing test does not leave mounts behind.
struct Mount(PathBuf, &'static str);

impl Drop for Mount {
    fn drop(&mut self) {
        let p = self.0.to_str().unwrap_or_default();
        let _ = Command::new(self.1)
            .args(if self.1 == "umount" {
                vec![p]
            } else {
                vec!["-u", p]
            })
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn can_mount() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("loop mounting needs root".into());
    }
    if !Path::new("/dev/loop-control").exists() && !Path::new("/dev/loop0").exists() {
        return Err("no /dev/loop* devices".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Err("no /dev/fuse".into());
    }
    Ok(())
}

fn files() -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    for i in 0..40u64 {
        // Sizes from a few bytes to a few MiB, none aligned.
        let len = [17usize, 4095, 4097, 65_537, 1_000_003, 3_000_001][i as usize % 6];
        v.push((format!("dir{}/file{i}.bin", i % 4), pattern(i + 1000, len)));
    }
    v
}

const EXT4_TOOLS: [&str; 6] = [
    "nbdfuse",
    "mkfs.ext4",
    "fsck.ext4",
    "mount",
    "umount",
    "fusermount3",
];

/// nbdfuse serving `uri` as the file `dir/disk` of `size` bytes, once it is there.
fn nbdfuse(dir: &Path, uri: &str, size: u64) -> (Guard, Mount, PathBuf) {
    let disk = dir.join("disk");
    let mut cmd = Command::new("nbdfuse");
    cmd.arg(&disk)
        .arg(uri)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let fuse = Guard::spawn(cmd, "nbdfuse");
    let m = Mount(dir.to_path_buf(), "fusermount3");
    wait_for("the nbdfuse file", Duration::from_secs(30), || {
        std::fs::metadata(&disk).is_ok_and(|m| m.len() == size)
    });
    (fuse, m, disk)
}

fn fsck_clean(disk: &str, when: &str) {
    let fsck = run("fsck.ext4", &["-f", "-n", disk], T);
    assert!(
        fsck.status.success(),
        "fsck {when} found problems:\n{}\n{}",
        fsck.stdout,
        fsck.stderr
    );
}

/// Detach nbdfuse, check the server saw no data errors, stop it.
fn finish(s: Serve, mut fuse: Guard, fuse_dir: &Path) {
    run("fusermount3", &["-u", fuse_dir.to_str().unwrap()], T).ok("fusermount3 -u");
    assert!(
        fuse.wait_timeout(Duration::from_secs(30)).is_some(),
        "nbdfuse did not exit"
    );
    let text = s.status_text(false);
    assert!(text.contains("No known data errors"), "{text}");
    s.stop();
}

/// Writes up to 400 files of random bytes into `mnt` in the background, never syncing.
fn write_unsynced_files(mnt: &str) -> Guard {
    let mut churn = Command::new("sh");
    churn
        .arg("-c")
        .arg(format!(
            "i=0; while [ $i -lt 400 ]; do head -c 200000 /dev/urandom > {mnt}/junk$i || exit 0; \
             i=$((i+1)); done"
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    Guard::spawn(churn, "writer")
}

#[test]
fn ext4_survives_kill_9_of_serve_mid_write() {
    ext4_kill_9("ext4 after kill -9", false);
}

/// Issue 21: the same on a hybrid pool whose busy SSDs send copies to HDD logs (taken
/// whenever an SSD has a queue; no conversion on idleness, so copies stay in the logs).
#[test]
fn ext4_on_a_hybrid_pool_survives_kill_9_with_copies_in_hdd_logs() {
    ext4_kill_9("ext4 on a hybrid pool after kill -9", true);
}

fn ext4_kill_9(name: &str, hybrid: bool) {
    if !need(name, &EXT4_TOOLS) {
        return;
    }
    if let Err(why) = can_mount() {
        skip(name, &why);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // File members (they outlive the process) and a short commit interval.
    let mut members: Vec<String> = (0..5).map(|i| format!("\"file:m{i}.img\"")).collect();
    let mut hybrid_keys = String::new();
    if hybrid {
        members.extend((0..2).map(|i| format!("\"emu:hdd7200:file:h{i}.img\"")));
        hybrid_keys = "hdd_members = [5, 6]\n[offload]\nenabled = true\nqueue_threshold = 0\nmin_outstanding = 0.0\n\
                       [conversion]\nidle_ms = 0\n"
            .into();
    }
    let p = pool_file(
        d,
        &format!(
            "name = \"fscrash\"\nmembers = [{}]\nmember_size = \"128M\"\nblock_size = \"64K\"\n\
             layout = \"permutation\"\n{hybrid_keys}[metadata]\ncommit_interval_ms = 5\n{}",
            members.join(", "),
            volume("fs", "raid5", 4, "96M", true)
        ),
    );
    run(BIN, &["create", p.to_str().unwrap()], T).ok("fusionraid create");
    let fuse_dir = d.join("fuse");
    let mnt = d.join("mnt");
    std::fs::create_dir_all(&fuse_dir).unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    let mnt_s = mnt.to_str().unwrap().to_string();
    let synced: Vec<(String, Vec<u8>)> = files().into_iter().take(24).collect();

    let mut s = Serve::start(&p, &[]);
    let (mut fuse, fuse_mount, disk) = nbdfuse(&fuse_dir, &s.uri("fs"), 96 << 20);
    let disk_s = disk.to_str().unwrap().to_string();
    run("mkfs.ext4", &["-q", "-F", "-E", "nodiscard", &disk_s], T).ok("mkfs.ext4");
    run("mount", &["-o", "loop", &disk_s, &mnt_s], T).ok("mount");
    let mount = Mount(mnt.clone(), "umount");
    for (name, data) in &synced {
        let path = mnt.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, data).unwrap();
    }
    run("sync", &[], T).ok("sync");
    if hybrid {
        let text = s.status_text(false);
        assert!(
            text.lines()
                .any(|l| l.starts_with("offload: ") && !l.starts_with("offload: 0 ")),
            "nothing was offloaded to the HDD logs:\n{text}"
        );
    }
    // Keep the file system busy with unsynced files, then kill the server under it.
    let mut churn = write_unsynced_files(&mnt_s);
    std::thread::sleep(Duration::from_millis(800));
    s.signal(libc::SIGKILL);
    // Tear the dead stack down: nbdfuse, then the mounts (lazily: the file system may
    // still hold dirty pages it can no longer write).
    // SAFETY: kill(2) on our own children.
    unsafe {
        libc::kill(fuse.child.id() as i32, libc::SIGKILL);
    }
    let _ = fuse.wait_timeout(Duration::from_secs(10));
    let _ = run("umount", &["-l", &mnt_s], T);
    std::mem::forget(mount);
    let _ = run("fusermount3", &["-u", "-z", fuse_dir.to_str().unwrap()], T);
    std::mem::forget(fuse_mount);
    let _ = churn.wait_timeout(Duration::from_secs(30));
    drop(churn);
    drop(fuse);
    drop(s);

    // Restart: serve recovers the volume; the kernel replays ext4's journal at mount.
    let s = Serve::start(&p, &[]);
    let status = s.status_text(false);
    assert!(
        status.contains("recovery: recovered after crash: replayed"),
        "{status}"
    );
    let (fuse, _fuse_mount, disk) = nbdfuse(&fuse_dir, &s.uri("fs"), 96 << 20);
    let disk_s = disk.to_str().unwrap().to_string();
    {
        run("mount", &["-o", "loop", &disk_s, &mnt_s], T).ok("mount after the crash");
        let _m = Mount(mnt.clone(), "umount");
        for (name, data) in &synced {
            let got = std::fs::read(mnt.join(name)).unwrap();
            assert!(got == *data, "{name} (synced before the crash) differs");
        }
        run("umount", &[&mnt_s], T).ok("umount");
    }
    fsck_clean(&disk_s, "after the crash");
    finish(s, fuse, &fuse_dir);
}

#[test]
fn ext4_over_nbdfuse_survives_fsck_and_remount() {
    if !need("ext4 over nbdfuse", &EXT4_TOOLS) {
        return;
    }
    if let Err(why) = can_mount() {
        skip("ext4 over nbdfuse", &why);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = mem_pool(
        dir.path(),
        7,
        "512M",
        &volume("fs", "raid5", 5, "512M", true),
    );
    let s = Serve::start(&p, &[]);
    let fuse_dir = dir.path().join("fuse");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir_all(&fuse_dir).unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    let (fuse, _fuse_mount, disk) = nbdfuse(&fuse_dir, &s.uri("fs"), 512 << 20);
    let disk_s = disk.to_str().unwrap();
    let mnt_s = mnt.to_str().unwrap();
    run("mkfs.ext4", &["-q", "-F", "-E", "nodiscard", disk_s], T).ok("mkfs.ext4");

    let expected = files();
    {
        run("mount", &["-o", "loop", disk_s, mnt_s], T).ok("mount");
        let _m = Mount(mnt.clone(), "umount");
        for (name, data) in &expected {
            let path = mnt.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, data).unwrap();
        }
        run("sync", &[], T).ok("sync");
        // A trim pass through the file system, for the volume's discard path.
        if have("fstrim") {
            let _ = run("fstrim", &[mnt_s], T);
        }
        run("umount", &[mnt_s], T).ok("umount");
    }
    fsck_clean(disk_s, "after unmount");
    {
        run("mount", &["-o", "loop,ro", disk_s, mnt_s], T).ok("remount");
        let _m = Mount(mnt.clone(), "umount");
        for (name, data) in &expected {
            let got = std::fs::read(mnt.join(name)).unwrap();
            assert!(got == *data, "{name} differs after remount");
        }
        run("umount", &[mnt_s], T).ok("umount");
    }
    finish(s, fuse, &fuse_dir);
}
