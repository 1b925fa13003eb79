//! Pools written by earlier builds keep working: `fixtures/pool-v1.tar.xz` holds a pool with
//! version 1 superblocks (fixtures/README.md says how it was made), left by a kill -9 with
//! its newest checkpoint in the slot whose position depends on how the metadata area was
//! sized. This build must recover it, serve every acknowledged write, take new ones and keep
//! them across a restart.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(120);
const KIB: u64 = 1024;

/// qemu-io `read -P` checks of the first 4 MiB of volume `a`, page by page: what the
/// fixture left there, with the page-aligned writes of `overlay` on top.
fn checks_a(overlay: &[(u64, u64, u8)]) -> Vec<String> {
    let mut pages = vec![0u8; 1024];
    for (i, group) in pages.chunks_mut(4).enumerate() {
        // 0x11 over the first 2 MiB, then 0x22 at every 16 KiB and 0x55 at 8 KiB into the
        // first 80 of those.
        let fill = if i < 128 { 0x11 } else { 0 };
        let mid = if i < 80 { 0x55 } else { fill };
        group.copy_from_slice(&[0x22, fill, mid, fill]);
    }
    for &(off, len, p) in overlay {
        pages[(off / (4 * KIB)) as usize..((off + len) / (4 * KIB)) as usize].fill(p);
    }
    pages
        .iter()
        .enumerate()
        .map(|(i, p)| format!("read -P {p:#x} {} 4k", i as u64 * 4 * KIB))
        .collect()
}

fn qemu_io(uri: &str, cmds: &[String]) {
    let mut args = vec!["-f".to_string(), "raw".into(), uri.into()];
    for c in cmds {
        args.push("-c".into());
        args.push(c.clone());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run("qemu-io", &args, T).ok("qemu-io");
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(
        !text.contains("fail") && !text.contains("error"),
        "qemu-io on {uri}:\n{text}"
    );
    let reads = cmds.iter().filter(|c| c.starts_with("read")).count();
    assert_eq!(out.stdout.matches("read ").count(), reads, "{text}");
}

fn unpack(dir: &Path) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pool-v1.tar.xz");
    run(
        "tar",
        &[
            "-xJf",
            fixture.to_str().unwrap(),
            "-C",
            dir.to_str().unwrap(),
        ],
        T,
    )
    .ok("tar");
}

#[test]
fn a_version_1_pool_recovers_and_serves() {
    if !need(
        "a_version_1_pool_recovers_and_serves",
        &["qemu-io", "tar", "xz"],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    unpack(dir.path());
    let pool = dir.path().join("pool.toml");
    let b_checks: Vec<String> = [
        "read -P 0x33 0 2M",
        "read -P 0x44 2M 64k",
        "read -P 0x33 2112k 1984k",
    ]
    .map(String::from)
    .to_vec();

    let s = Serve::start(&pool, &[]);
    qemu_io(&s.uri("a"), &checks_a(&[]));
    qemu_io(&s.uri("b"), &b_checks);
    // New writes on the old pool, kept across a clean restart.
    let mut new = vec!["write -P 0x66 3M 12k".to_string()];
    new.push("write -P 0x77 100M 1M".into());
    new.push("flush".into());
    qemu_io(&s.uri("a"), &new);
    let err = s.stop();
    assert!(err.contains("fusionraid: recovery: "), "{err}");

    let s = Serve::start(&pool, &[]);
    assert!(
        s.status_text(false)
            .contains("recovery: clean shutdown (checkpoint seq"),
        "an old pool's clean stop is recorded too"
    );
    let mut checks = checks_a(&[(3 * 1024 * KIB, 12 * KIB, 0x66)]);
    checks.push("read -P 0x77 100M 1M".into());
    qemu_io(&s.uri("a"), &checks);
    qemu_io(&s.uri("b"), &b_checks);
    s.stop();
}
