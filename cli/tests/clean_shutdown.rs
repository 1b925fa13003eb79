//! `fusionraid status` tells a clean shutdown from a crash: Ctrl-C (SIGINT) or SIGTERM of
//! `serve` leaves a last checkpoint flagged clean, kill -9 does not.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(120);

fn pool(dir: &Path) -> std::path::PathBuf {
    let members: Vec<String> = (0..4).map(|i| format!("\"file:m{i}.img\"")).collect();
    pool_file(
        dir,
        &format!(
            "name = \"clean\"\nmembers = [{}]\nmember_size = \"64M\"\nblock_size = \"64K\"\n\
             layout = \"permutation\"\n{}",
            members.join(", "),
            volume("v", "raid5", 4, "32M", false)
        ),
    )
}

fn qemu_io(uri: &str, cmds: &[&str]) {
    let mut args = vec!["-f", "raw", uri];
    for c in cmds {
        args.extend(["-c", c]);
    }
    let out = run("qemu-io", &args, T).ok("qemu-io");
    assert!(
        !out.stdout.contains("Pattern verification failed"),
        "{}",
        out.stdout
    );
}

fn signal(s: &mut Serve, sig: i32) {
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(s.guard.child.id() as i32, sig);
    }
    let st = s.guard.wait_timeout(Duration::from_secs(30));
    assert!(st.is_some(), "serve did not exit on signal {sig}");
}

/// The `recovery:` line and the JSON's `clean_shutdown`.
fn recovery(s: &Serve) -> (String, bool) {
    let text = s.status_text(false);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("recovery: "))
        .unwrap_or_else(|| panic!("no recovery line in\n{text}"))
        .to_string();
    let json: serde_json::Value = serde_json::from_str(&s.status_text(true)).unwrap();
    let clean = json["snapshot"]["metadata"]["clean_shutdown"]
        .as_bool()
        .expect("clean_shutdown in the JSON");
    (line, clean)
}

#[test]
fn status_tells_a_clean_shutdown_from_a_crash() {
    if !need("status_tells_a_clean_shutdown_from_a_crash", &["qemu-io"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = pool(dir.path());
    run(BIN, &["create", p.to_str().unwrap()], T).ok("fusionraid create");

    let mut s = Serve::start(&p, &[]);
    let (line, clean) = recovery(&s);
    assert!(
        line.starts_with("new pool, first start since create"),
        "{line}"
    );
    assert!(clean, "{line}");
    qemu_io(&s.uri("v"), &["write -P 0x5a 0 1M", "write -P 0x6b 5M 12k"]);
    signal(&mut s, libc::SIGINT);
    let err = s.stderr.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(err.contains("shutting down"), "{err}");

    // Ctrl-C: the last run's final checkpoint is the newest and nothing follows it.
    let s = Serve::start(&p, &[]);
    let (line, clean) = recovery(&s);
    assert!(line.starts_with("clean shutdown (checkpoint seq"), "{line}");
    assert!(line.contains(" KiB") && !line.contains("bytes"), "{line}");
    assert!(clean, "{line}");
    qemu_io(&s.uri("v"), &["read -P 0x5a 0 1M", "read -P 0x6b 5M 12k"]);
    qemu_io(&s.uri("v"), &["write -P 0x7c 2M 256k"]);
    let err = s.stop(); // SIGTERM
    assert!(err.contains("recovery: clean shutdown ("), "{err}");

    let mut s = Serve::start(&p, &[]);
    let (line, clean) = recovery(&s);
    assert!(line.starts_with("clean shutdown ("), "{line}");
    assert!(clean, "{line}");
    qemu_io(&s.uri("v"), &["write -P 0x8d 3M 64k", "flush"]);
    signal(&mut s, libc::SIGKILL);
    drop(s);

    // kill -9: recovered from the journal, and said so.
    let s = Serve::start(&p, &[]);
    let (line, clean) = recovery(&s);
    assert!(
        line.starts_with("recovered after crash: replayed "),
        "{line}"
    );
    assert!(line.contains(" KiB") && !line.contains("bytes"), "{line}");
    assert!(!clean, "{line}");
    qemu_io(
        &s.uri("v"),
        &[
            "read -P 0x5a 0 1M",
            "read -P 0x7c 2M 256k",
            "read -P 0x8d 3M 64k",
        ],
    );
    s.stop();
}
