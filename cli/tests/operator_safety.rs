//! What an operator is told is what the pool keeps: `fail N` answers once the failure is
//! durable (a kill -9 right after the answer keeps the member failed), a `create` that
//! fails part way leaves no half-formatted pool behind, and `serve` refuses listen
//! addresses in use before it touches the members.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::nbdkit::{Export, need_filters};
use common::*;

const T: Duration = Duration::from_secs(120);

/// A pool file of `n` file members (`m0.img`...) with one RAID5 volume and `metadata`
/// lines in its `[metadata]` table.
fn file_pool(dir: &Path, n: usize, metadata: &str) -> PathBuf {
    let members: Vec<String> = (0..n).map(|i| format!("\"file:m{i}.img\"")).collect();
    pool_file(
        dir,
        &format!(
            "name = \"ops\"\nmembers = [{}]\nmember_size = \"64M\"\nblock_size = \"64K\"\n\
             layout = \"permutation\"\n[metadata]\n{metadata}\n{}",
            members.join(", "),
            volume("v", "raid5", 4, "16M", false)
        ),
    )
}

/// The state `status --json` gives member `i`.
fn member_state(s: &Serve, i: usize) -> String {
    let doc: serde_json::Value = serde_json::from_str(&s.status_text(true)).unwrap();
    doc["snapshot"]["members"][i]["state"]
        .as_str()
        .unwrap_or_else(|| panic!("no state for member {i} in {doc}"))
        .to_string()
}

#[test]
fn fail_is_durable_when_answered() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Commits every 5 s unless something waits for one: without waiting for the
    // failure's commit, the answer comes long before the failure is on the members.
    let p = file_pool(d, 5, "commit_interval_ms = 5000");
    run(BIN, &["create", p.to_str().unwrap()], T).ok("create");
    let mut s = Serve::start(&p, &[]);
    assert!(in_service(&member_state(&s, 2)));
    let out = run(
        BIN,
        &["fail", "2", "--socket", s.status.to_str().unwrap()],
        T,
    );
    assert!(out.status.success(), "fail 2: {}{}", out.stdout, out.stderr);
    s.signal(libc::SIGKILL);

    let s = Serve::start(&p, &[]);
    let state = member_state(&s, 2);
    let status = s.status_text(false);
    assert_eq!(
        state, "failed",
        "member 2 came back after a crash that followed `fail 2`'s answer:\n{status}"
    );
    assert!(
        status.contains("member 2 failed before this start"),
        "{status}"
    );
    s.stop();
}

#[test]
fn failed_create_leaves_no_half_formatted_pool() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // members[4] names m0.img again: found only once every superblock is written (two
    // names for one device can only be told apart by what the device returns).
    let bad = file_pool(d, 5, "").to_str().unwrap().to_string();
    let text = std::fs::read_to_string(&bad).unwrap();
    std::fs::write(&bad, text.replace("\"file:m4.img\"", "\"file:m0.img\"")).unwrap();
    let out = run(BIN, &["create", &bad], T);
    assert!(!out.status.success(), "{}", out.stdout);
    assert!(
        out.stderr.contains("`members[0]` (") && out.stderr.contains("m0.img"),
        "the error names the bad member: {}",
        out.stderr
    );
    assert!(out.stderr.contains("same device"), "{}", out.stderr);

    // Fixed, the same create succeeds without --force: nothing of the failed one is left.
    std::fs::write(&bad, text).unwrap();
    run(BIN, &["create", &bad], T).ok("create after fixing the pool file");
    let s = Serve::start(Path::new(&bad), &[]);
    for i in 0..5 {
        assert!(in_service(&member_state(&s, i)));
    }
    s.stop();
}

#[test]
fn create_failing_on_an_unwritable_member_puts_the_others_back() {
    if !need_filters("unwritable member", &["error"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // members[4] reads fine but refuses every write: found when its superblock is written,
    // after members 0 to 3 got theirs.
    let export = Export::start(d, "bad", "128M", &["error"], &["error-pwrite-rate=100%"]);
    let p = file_pool(d, 5, "").to_str().unwrap().to_string();
    let text = std::fs::read_to_string(&p).unwrap();
    let bad = format!("\"{}\"", export.uri());
    std::fs::write(&p, text.replace("\"file:m4.img\"", &bad)).unwrap();
    let out = run(BIN, &["create", &p], T);
    assert!(!out.status.success(), "{}", out.stdout);
    assert!(
        out.stderr.contains("`members[4]`") && out.stderr.contains("writing the superblock"),
        "the error names the bad member: {}",
        out.stderr
    );
    assert!(out.stderr.contains("as they were before"), "{}", out.stderr);
    // The bad member swapped for a good one, create succeeds without --force.
    std::fs::write(&p, text).unwrap();
    run(BIN, &["create", &p], T).ok("create after replacing the bad member");
}

/// A digest of every member file's bytes.
fn members_digest(d: &Path, n: usize) -> Vec<u64> {
    use std::hash::{Hash, Hasher};
    (0..n)
        .map(|i| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::fs::read(d.join(format!("m{i}.img")))
                .unwrap()
                .hash(&mut h);
            h.finish()
        })
        .collect()
}

/// `serve POOL` on the usual sockets of `d` plus `extra`, expected to fail; its stderr.
fn serve_fails(p: &Path, extra: &[&str]) -> String {
    let d = p.parent().unwrap();
    let (sock, status) = (d.join("nbd.sock"), d.join("status.sock"));
    let mut args = vec!["serve", p.to_str().unwrap()];
    args.extend(["--unix", sock.to_str().unwrap()]);
    args.extend(["--status", status.to_str().unwrap()]);
    args.extend(extra);
    let out = run(BIN, &args, T);
    assert!(!out.status.success(), "serve started: {}", out.stdout);
    out.stderr
}

#[test]
fn serve_refuses_busy_addresses_before_touching_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = file_pool(d, 5, "");
    run(BIN, &["create", p.to_str().unwrap()], T).ok("create");
    // A first serve and a clean stop: the pool as a restart finds it.
    Serve::start(&p, &[]).stop();
    let before = members_digest(d, 5);

    // The NBD TCP port is taken.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let err = serve_fails(&p, &["--tcp", &addr]);
    assert!(err.contains(&format!("binding NBD TCP {addr}")), "{err}");
    assert_eq!(members_digest(d, 5), before, "the members were written");
    assert!(
        !err.contains("recovery:"),
        "recovered before the check: {err}"
    );
    assert!(
        !d.join("nbd.sock").exists() && !d.join("status.sock").exists(),
        "sockets left behind"
    );
    drop(busy);

    // The status socket is live (another server on it).
    let other = std::os::unix::net::UnixListener::bind(d.join("status.sock")).unwrap();
    let err = serve_fails(&p, &[]);
    assert!(err.contains("binding the status socket"), "{err}");
    assert!(err.contains("listening there already"), "{err}");
    assert_eq!(members_digest(d, 5), before, "the members were written");
    assert!(
        !err.contains("recovery:"),
        "recovered before the check: {err}"
    );
    assert!(
        !d.join("nbd.sock").exists(),
        "the NBD socket was left behind"
    );
    drop(other);
    std::fs::remove_file(d.join("status.sock")).unwrap();

    // Both free again, it serves.
    let s = Serve::start(&p, &[]);
    assert!(in_service(&member_state(&s, 0)));
    s.stop();
}
