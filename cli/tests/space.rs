//! A served volume takes overwrites forever (ARCHITECTURE.md, "The space invariant"): several
//! full passes of fio random 4 KiB writes on `mem:` members, a trim whose space shows as free
//! again, and a degraded `file:` pool whose member comes back with stale data and is put
//! back with `replace N SAME-SPEC`.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(600);

/// One fio job over the whole export; returns fio's error code (0: every I/O succeeded).
fn fio(uri: &str, rw: &str, bs: &str, seed: u64, size: &str) -> u64 {
    let out = run(
        "fio",
        &[
            "--name=space",
            "--ioengine=nbd",
            &format!("--uri={uri}"),
            &format!("--rw={rw}"),
            &format!("--bs={bs}"),
            "--iodepth=16",
            &format!("--size={size}"),
            &format!("--randseed={seed}"),
            "--output-format=json",
        ],
        T,
    );
    fio_error(&out)
}

fn volume_json(s: &Serve, name: &str) -> serde_json::Value {
    let j: serde_json::Value = serde_json::from_str(&s.status_text(true)).expect("status JSON");
    j["snapshot"]["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == name)
        .cloned()
        .expect("the volume")
}

const CASE1_VOLUME: &str =
    "\n[[volume]]\nname = \"db\"\nlevel = \"raid6\"\nwidth = 6\nsize = \"320M\"\n";
/// Case 2 at half case 1's scale (the rebuild and four passes over `file:` members).
const CASE2_VOLUME: &str =
    "\n[[volume]]\nname = \"db\"\nlevel = \"raid6\"\nwidth = 6\nsize = \"160M\"\n";

#[test]
fn random_overwrites_never_run_out_of_space() {
    if !need("random_overwrites_never_run_out_of_space", &["fio"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Issue 19's first case, scaled down: 9 members, a RAID6 4+2 volume with the `auto`
    // spare share the members leave (about 1/6 here, as there).
    let p = mem_pool(dir.path(), 9, "94M", CASE1_VOLUME);
    let s = Serve::start(&p, &[]);
    let uri = s.uri("db");
    for seed in 1..=3 {
        assert_eq!(
            fio(&uri, "randwrite", "4k", seed, "320M"),
            0,
            "pass {seed} of random 4 KiB overwrites failed\n{}",
            s.status_text(false)
        );
    }
    // A discard takes effect at once (MAPPED drops) and writes go on after it.
    let mapped = |s: &Serve| volume_json(s, "db")["mapped_bytes"].as_u64().unwrap();
    let before = mapped(&s);
    assert_eq!(fio(&uri, "trim", "1M", 1, "80M"), 0, "trim failed");
    assert!(mapped(&s) <= before - (40 << 20), "the trim did not unmap");
    assert_eq!(
        fio(&uri, "randwrite", "4k", 4, "320M"),
        0,
        "writes after the trim failed"
    );
    s.stop();
}

/// A discard gives its space back: once the idle volume compacted what the passes left,
/// a trim of a quarter of the volume shows as free space.
#[test]
fn trimmed_space_shows_as_free() {
    if !need("trimmed_space_shows_as_free", &["fio"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = mem_pool(dir.path(), 9, "94M", CASE1_VOLUME);
    let s = Serve::start(&p, &[]);
    let uri = s.uri("db");
    assert_eq!(fio(&uri, "randwrite", "4k", 1, "320M"), 0, "random writes");
    // Let the idle volume finish compacting what the pass left, so the growth measured is
    // the trim's.
    let free = || volume_json(&s, "db")["free_bytes"].as_u64().unwrap();
    let (mut before, mut same) = (free(), 0);
    let settle = std::time::Instant::now() + Duration::from_secs(120);
    while same < 3 && std::time::Instant::now() < settle {
        std::thread::sleep(Duration::from_secs(1));
        let now = free();
        same = if now == before { same + 1 } else { 0 };
        before = now;
    }
    assert_eq!(fio(&uri, "trim", "1M", 1, "80M"), 0, "trim failed");
    wait_for(
        "the trimmed space to show as free",
        Duration::from_secs(180),
        || free() >= before + (40 << 20),
    );
    s.stop();
}

/// Space on disk, in bytes, that files `m*.img` in `d` occupy (sparse files count only
/// what is allocated).
fn allocated(d: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".img"))
        .map(|e| e.metadata().unwrap().blocks() * 512)
        .sum()
}

/// Proactive discard reaches real members: a volume written in full and then trimmed
/// gives its blocks back to the file system under thin `file:` members (punched holes),
/// and `status` counts them per member. (Reserved members, the default, keep their space:
/// full_filesystem.rs.)
#[test]
fn freed_stripes_are_punched_out_of_file_members() {
    if !need("freed_stripes_are_punched_out_of_file_members", &["fio"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d: &Path = dir.path();
    let members: Vec<String> = (0..7).map(|i| format!("\"file:m{i}.img\"")).collect();
    let p = pool_file(
        d,
        &format!(
            "name = \"tank\"\nmembers = [{}]\nmember_size = \"64M\"\nfile_space = \"thin\"\n\
             [[volume]]\nname = \"db\"\nlevel = \"raid5\"\nwidth = 5\nsize = \"96M\"\n",
            members.join(", ")
        ),
    );
    run(BIN, &["create", p.to_str().unwrap()], T).ok("create");
    let s = Serve::start(&p, &[]);
    let uri = s.uri("db");
    assert_eq!(fio(&uri, "write", "1M", 1, "96M"), 0, "fill");
    let full = allocated(d);
    assert!(full >= 96 << 20, "the fill allocated only {full} bytes");
    assert_eq!(fio(&uri, "trim", "1M", 1, "96M"), 0, "trim");
    // Trimmed blocks leave their stripes empty; once the commit that frees them is durable
    // the stripes are discarded, which punches holes in the member files.
    wait_for(
        "the trimmed stripes to be punched out of the member files",
        Duration::from_secs(120),
        || allocated(d) + (64 << 20) <= full,
    );
    let j: serde_json::Value = serde_json::from_str(&s.status_text(true)).expect("status JSON");
    let trimmed: u64 = j["snapshot"]["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| m["bytes_trimmed"].as_u64().unwrap())
        .sum();
    assert!(trimmed >= 64 << 20, "status counts {trimmed} bytes trimmed");
    assert!(s.status_text(false).contains("TRIMMED"));
    s.stop();
}

#[test]
fn a_member_back_with_stale_data_is_put_back_by_replace() {
    if !need(
        "a_member_back_with_stale_data_is_put_back_by_replace",
        &["fio"],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d: &Path = dir.path();
    let members: Vec<String> = (0..9).map(|i| format!("\"file:m{i}.img\"")).collect();
    let p = pool_file(
        d,
        &format!(
            "name = \"tank\"\nmembers = [{}]\nmember_size = \"48M\"\n{CASE2_VOLUME}",
            members.join(", ")
        ),
    );
    run(BIN, &["create", p.to_str().unwrap()], T).ok("create");
    let s = Serve::start(&p, &[]);
    for seed in 1..=2 {
        assert_eq!(
            fio(&s.uri("db"), "randwrite", "4k", seed, "160M"),
            0,
            "pass {seed}"
        );
    }
    s.stop();
    // Member 8 goes missing: the pool runs degraded, the rebuild moves its data away and
    // overwrites keep succeeding.
    let m8 = d.join("m8.img");
    let away = d.join("m8.away");
    std::fs::rename(&m8, &away).unwrap();
    let s = Serve::start(&p, &[]);
    assert_eq!(
        fio(&s.uri("db"), "randwrite", "4k", 3, "160M"),
        0,
        "degraded overwrites"
    );
    wait_for("the rebuild to finish", Duration::from_secs(300), || {
        let st = s.status_text(false);
        st.contains("rebuild: done")
    });
    s.stop();
    // It comes back with stale data: still failed, and `replace 8` with the same device
    // puts it back; the rebalance copies the data home and writes go on.
    std::fs::rename(&away, &m8).unwrap();
    let s = Serve::start(&p, &[]);
    let st = s.status_text(false);
    assert!(st.contains("failed"), "member 8 must stay failed:\n{st}");
    let spec = format!("file:{}", m8.display());
    let sock = s.status.to_str().unwrap().to_string();
    wait_for(
        "replace 8 with the same device",
        Duration::from_secs(120),
        || {
            run(BIN, &["replace", "8", &spec, "--socket", &sock], T)
                .status
                .success()
        },
    );
    assert_eq!(
        fio(&s.uri("db"), "randwrite", "4k", 4, "160M"),
        0,
        "writes after replace"
    );
    let st = s.status_text(false);
    assert!(!st.contains("DEGRADED"), "the pool is whole again:\n{st}");
    s.stop();
}
