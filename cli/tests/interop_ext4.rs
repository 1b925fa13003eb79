//! A file system on a fusionraid volume: nbdfuse exposes the volume as a file, mkfs.ext4
//! formats it, a loop mount writes files, fsck checks it after unmount, and a second mount
//! reads the files back. Needs root (mount), /dev/loop* and /dev/fuse.

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

#[test]
fn ext4_over_nbdfuse_survives_fsck_and_remount() {
    if !need(
        "ext4 over nbdfuse",
        &[
            "nbdfuse",
            "mkfs.ext4",
            "fsck.ext4",
            "mount",
            "umount",
            "fusermount3",
        ],
    ) {
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
    let disk = fuse_dir.join("disk");

    let mut cmd = Command::new("nbdfuse");
    cmd.arg(&disk)
        .arg(s.uri("fs"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let mut fuse = Guard::spawn(cmd, "nbdfuse");
    let _fuse_mount = Mount(fuse_dir.clone(), "fusermount3");
    wait_for("the nbdfuse file", Duration::from_secs(30), || {
        std::fs::metadata(&disk).is_ok_and(|m| m.len() == 512 << 20)
    });
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
    let fsck = run("fsck.ext4", &["-f", "-n", disk_s], T);
    assert!(
        fsck.status.success(),
        "fsck found problems:\n{}\n{}",
        fsck.stdout,
        fsck.stderr
    );
    {
        run("mount", &["-o", "loop,ro", disk_s, mnt_s], T).ok("remount");
        let _m = Mount(mnt.clone(), "umount");
        for (name, data) in &expected {
            let got = std::fs::read(mnt.join(name)).unwrap();
            assert!(got == *data, "{name} differs after remount");
        }
        run("umount", &[mnt_s], T).ok("umount");
    }
    run("fusermount3", &["-u", fuse_dir.to_str().unwrap()], T).ok("fusermount3 -u");
    assert!(
        fuse.wait_timeout(Duration::from_secs(30)).is_some(),
        "nbdfuse did not exit"
    );
    let text = s.status_text(false);
    assert!(text.contains("No known data errors"), "{text}");
    s.stop();
}
