//! Silent corruption on a real pool: every data page one member holds is damaged behind the
//! server's back; reads still return the right data, `fusionraid scrub` finds and repairs
//! every bad copy, and afterwards the pool survives losing a *different* member (which
//! needs the repaired copies).

mod common;

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Duration;

use common::*;
use fusionraid_nbd::Client;

const T: Duration = Duration::from_secs(60);
const PAGE: usize = 4096;

fn read_all(uri: &str, len: usize) -> Result<Vec<u8>, String> {
    let mut c = Client::connect(uri).map_err(|e| e.to_string())?;
    let mut back = vec![0u8; len];
    c.read_at(&mut back, 0).map_err(|e| e.to_string())?;
    c.disconnect().map_err(|e| e.to_string())?;
    Ok(back)
}

/// Flip a byte in every page of `file` that holds a page of `data`; returns how many.
fn corrupt_data_pages(file: &Path, data: &[u8]) -> usize {
    let pages: HashSet<&[u8]> = data.chunks(PAGE).collect();
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(file)
        .unwrap();
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).unwrap();
    let mut n = 0;
    for (i, p) in buf.chunks(PAGE).enumerate() {
        if pages.contains(p) {
            f.seek(SeekFrom::Start((i * PAGE + 123) as u64)).unwrap();
            f.write_all(&[p[123] ^ 0x81]).unwrap();
            n += 1;
        }
    }
    f.sync_all().unwrap();
    n
}

fn counter(status: &str, what: &str) -> u64 {
    let line = status
        .lines()
        .find(|l| l.starts_with("integrity:"))
        .unwrap_or_else(|| panic!("no integrity line in\n{status}"));
    line.split(',')
        .find(|p| p.contains(what))
        .and_then(|p| p.split_whitespace().find_map(|w| w.parse().ok()))
        .unwrap_or_else(|| panic!("no {what:?} in {line}"))
}

#[test]
fn scrub_repairs_silent_corruption_of_a_member() {
    let dir = tempfile::tempdir().unwrap();
    let d: &Path = dir.path();
    let members: Vec<String> = (0..8).map(|i| format!("\"file:d{i}.img\"")).collect();
    let p = pool_file(
        d,
        &format!(
            "name = \"scrub\"\nmembers = [{}]\nmember_size = \"64M\"\nblock_size = \"16K\"\n\
             layout = \"permutation\"\n{}",
            members.join(", "),
            volume("v", "raid5", 4, "8M", false)
        ),
    );
    run(BIN, &["create", p.to_str().unwrap()], T).ok("create");
    let s = Serve::start(&p, &[]);
    let data = pattern(9, 8 << 20);
    {
        let mut c = Client::connect(&s.uri("v")).unwrap();
        // Big writes (full stripes) and small ones (replicated, packed) both.
        c.write_at(&data[..4 << 20], 0).unwrap();
        for (i, chunk) in data[4 << 20..].chunks(3 * PAGE).enumerate() {
            c.write_at(chunk, (4 << 20) + (i * 3 * PAGE) as u64)
                .unwrap();
        }
        c.flush().unwrap();
        c.disconnect().unwrap();
    }

    let bad = corrupt_data_pages(&d.join("d3.img"), &data);
    assert!(bad > 50, "member 3 holds only {bad} data pages");
    assert_eq!(read_all(&s.uri("v"), data.len()).unwrap(), data, "reads");

    // The pool file as a positional, as `status` takes it (`--socket`: top.rs).
    run(BIN, &["scrub", p.to_str().unwrap()], T).ok("fusionraid scrub POOL");
    wait_for("the scrub", Duration::from_secs(120), || {
        s.status_text(false).contains("scrub: done")
    });
    wait_for("the repairs", Duration::from_secs(60), || {
        let st = s.status_text(false);
        counter(&st, "blocks repaired") > 0 && counter(&st, "checksum errors") > 0
    });
    // The scrub queues repairs faster than they run on a loaded machine: wait until the
    // count of blocks repaired holds still for 3 s before failing another member.
    let repaired = || counter(&s.status_text(false), "blocks repaired");
    let (mut last, mut still) = (repaired(), 0);
    wait_for("the repairs to finish", Duration::from_secs(120), || {
        std::thread::sleep(Duration::from_secs(1));
        let now = repaired();
        still = if now == last { still + 1 } else { 0 };
        last = now;
        still >= 3
    });
    let st = s.status_text(false);
    assert_eq!(counter(&st, "pages unrecoverable"), 0, "{st}");

    // Every copy on member 3 that mattered was moved: losing member 5 now loses nothing.
    let sock = s.status.to_str().unwrap().to_string();
    run(BIN, &["fail", "5", "--socket", &sock], T).ok("fusionraid fail");
    assert_eq!(
        read_all(&s.uri("v"), data.len()).unwrap(),
        data,
        "after losing member 5"
    );
    let st = s.status_text(false);
    assert_eq!(counter(&st, "pages unrecoverable"), 0, "{st}");
    s.stop();
}
