//! What `fusionraid status` reports about the last stop and about refused requests: Ctrl-C
//! (SIGINT) or SIGTERM of `serve` leaves a last checkpoint flagged clean, kill -9 does not;
//! requests the NBD server refuses count as failed.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use common::*;
use fusionraid_nbd::proto::consts::*;
use fusionraid_nbd::proto::handshake::*;
use fusionraid_nbd::proto::transmission::*;

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
    s.signal(libc::SIGINT);
    let err = s.stderr.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(err.contains("shutting down"), "{err}");

    // Ctrl-C: the last run's final checkpoint is the newest and nothing follows it.
    let s = Serve::start(&p, &[]);
    let (line, clean) = recovery(&s);
    assert!(line.starts_with("clean shutdown (checkpoint seq"), "{line}");
    assert!(line.contains(" KiB") && !line.contains("bytes"), "{line}");
    assert!(clean, "{line}");
    // The pool file finds the server as a positional or as --pool, the way `fail`,
    // `replace` and `scrub` take it.
    let pool = p.to_str().unwrap();
    let by_arg = run(BIN, &["status", pool], T).ok("status POOL").stdout;
    let by_flag = run(BIN, &["status", "--pool", pool], T)
        .ok("status --pool")
        .stdout;
    for out in [&by_arg, &by_flag] {
        assert!(out.contains(&format!("recovery: {line}")), "{out}");
    }
    qemu_io(&s.uri("v"), &["read -P 0x5a 0 1M", "read -P 0x6b 5M 12k"]);
    qemu_io(&s.uri("v"), &["write -P 0x7c 2M 256k"]);
    let err = s.stop(); // SIGTERM
    assert!(err.contains("recovery: clean shutdown ("), "{err}");

    let mut s = Serve::start(&p, &[]);
    let (line, clean) = recovery(&s);
    assert!(line.starts_with("clean shutdown ("), "{line}");
    assert!(clean, "{line}");
    qemu_io(&s.uri("v"), &["write -P 0x8d 3M 64k", "flush"]);
    s.signal(libc::SIGKILL);
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

/// Issue 19: a read beyond the end of an export is refused by the NBD server before the
/// engine sees it; `status` counts it as failed rather than saying "0 failed" / "No known
/// data errors".
#[test]
fn requests_refused_as_out_of_range_count_as_failed() {
    let dir = tempfile::tempdir().unwrap();
    let p = mem_pool(
        dir.path(),
        4,
        "64M",
        &format!(
            "{}{}",
            volume("v", "raid5", 3, "16M", false),
            volume("u", "raid5", 3, "16M", true)
        ),
    );
    let s = Serve::start(&p, &[]);
    let failed = |s: &Serve| {
        let json: serde_json::Value = serde_json::from_str(&s.status_text(true)).unwrap();
        (
            json["snapshot"]["requests"].as_u64().unwrap(),
            json["snapshot"]["failed_requests"].as_u64().unwrap(),
        )
    };
    let (requests, before) = failed(&s);
    assert_eq!(before, 0);
    // Raw requests (our client, like qemu-io and libnbd, refuses them itself). Volume u is
    // byte-granular (served through the read-modify-write layer).
    for export in ["v", "u"] {
        let mut c = RawNbd::go(&s.sock, export);
        assert_eq!(c.request(NBD_CMD_READ, 16 << 20, 4096), NBD_EINVAL);
        assert_eq!(
            c.request(NBD_CMD_WRITE, (16 << 20) - 4096, 8192),
            NBD_ENOSPC
        );
        assert_eq!(c.request(NBD_CMD_READ, 0, 4096), 0);
    }
    let (after_requests, after) = failed(&s);
    assert_eq!(after, 4, "refused requests count as failed");
    assert!(
        after_requests >= requests + 6,
        "{requests} -> {after_requests}"
    );
    let text = s.status_text(false);
    assert!(text.contains(" (4 failed, "), "{text}");
    assert!(text.contains("4 failed requests"), "{text}");
    s.stop();
}

/// An NBD client that sends whatever it is told (no range checks).
struct RawNbd(UnixStream, u64);

impl RawNbd {
    fn read(&mut self, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        self.0.read_exact(&mut b).expect("read from serve");
        b
    }

    fn go(sock: &Path, export: &str) -> RawNbd {
        let s = UnixStream::connect(sock).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut c = RawNbd(s, 0);
        let g: [u8; GREETING_LEN] = c.read(GREETING_LEN).try_into().unwrap();
        decode_greeting(&g).expect("greeting");
        let flags = NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES;
        c.0.write_all(&flags.to_be_bytes()).unwrap();
        let req = InfoRequest {
            name: export.into(),
            requests: vec![],
        }
        .encode();
        let h = OptionHeader {
            option: NBD_OPT_GO,
            len: req.len() as u32,
        };
        c.0.write_all(&h.encode()).unwrap();
        c.0.write_all(&req).unwrap();
        loop {
            let h: [u8; OPTION_REPLY_HEADER_LEN] =
                c.read(OPTION_REPLY_HEADER_LEN).try_into().unwrap();
            let h = OptionReplyHeader::decode(&h).expect("option reply");
            c.read(h.len as usize);
            match h.reply {
                NBD_REP_INFO => {}
                NBD_REP_ACK => return c,
                other => panic!("reply {other:#x} to NBD_OPT_GO"),
            }
        }
    }

    /// Sends one read or write (of zeroes) and returns the reply's error code.
    fn request(&mut self, typ: u16, offset: u64, len: u32) -> u32 {
        self.1 += 1;
        let h = RequestHeader {
            flags: 0,
            typ,
            handle: self.1,
            offset,
            len,
        };
        self.0.write_all(&h.encode()).unwrap();
        if typ == NBD_CMD_WRITE {
            self.0.write_all(&vec![0; len as usize]).unwrap();
        }
        let b: [u8; SIMPLE_REPLY_LEN] = self.read(SIMPLE_REPLY_LEN).try_into().unwrap();
        let r = SimpleReply::decode(&b).expect("simple reply");
        assert_eq!(r.handle, self.1);
        if r.error == 0 && typ == NBD_CMD_READ {
            self.read(len as usize);
        }
        r.error
    }
}
