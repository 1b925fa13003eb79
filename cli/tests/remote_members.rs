//! A pool whose members are remote NBD exports: qemu-nbd (Unix socket and loopback TCP)
//! and nbdkit, as a pool spanning storage servers would be. Then one server dies and the
//! volume keeps answering from the others.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use fusionraid_nbd::Client;

const T: Duration = Duration::from_secs(120);

fn qemu_nbd(export: &str, file: &Path, listen: &[&str]) -> Guard {
    let mut cmd = Command::new("qemu-nbd");
    cmd.args([
        "-f",
        "raw",
        "-x",
        export,
        "--persistent",
        "--shared=8",
        "--discard=unmap",
    ])
    .args(listen)
    .arg(file)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::inherit());
    Guard::spawn(cmd, "qemu-nbd")
}

fn nbdkit_memory(sock: &Path) -> Guard {
    let mut cmd = Command::new("nbdkit");
    cmd.args(["-f", "-U"])
        .arg(sock)
        .args(["memory", "256M"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    Guard::spawn(cmd, "nbdkit")
}

fn connectable(uri: &str) -> bool {
    Client::connect(uri).is_ok_and(|c| c.disconnect().is_ok())
}

#[test]
fn pool_of_qemu_nbd_and_nbdkit_exports() {
    if !need("remote members", &["qemu-nbd", "nbdkit"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut servers = Vec::new();
    let mut members = Vec::new();
    for i in 0..2 {
        let img = d.join(format!("q{i}.img"));
        std::fs::File::create(&img)
            .unwrap()
            .set_len(256 << 20)
            .unwrap();
        let sock = d.join(format!("q{i}.sock"));
        servers.push(qemu_nbd(
            &format!("m{i}"),
            &img,
            &["-k", sock.to_str().unwrap()],
        ));
        members.push(format!("nbd+unix:///m{i}?socket={}", sock.display()));
    }
    let img = d.join("q2.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(256 << 20)
        .unwrap();
    let port = free_port();
    servers.push(qemu_nbd(
        "m2",
        &img,
        &["-b", "127.0.0.1", "-p", &port.to_string()],
    ));
    members.push(format!("nbd://127.0.0.1:{port}/m2"));
    for i in 0..2 {
        let sock = d.join(format!("k{i}.sock"));
        servers.push(nbdkit_memory(&sock));
        members.push(format!("nbd+unix:///?socket={}", sock.display()));
    }
    for m in &members {
        wait_for(&format!("export {m}"), Duration::from_secs(30), || {
            connectable(m)
        });
    }

    let list: Vec<String> = members.iter().map(|m| format!("\"{m}\"")).collect();
    let pool = pool_file(
        d,
        &format!(
            "name = \"remote\"\nmembers = [{}]\n{}",
            list.join(", "),
            volume("v", "raid5", 4, "64M", false)
        ),
    );
    run(BIN, &["create", pool.to_str().unwrap()], T).ok("create on remote members");
    let s = Serve::start(&pool, &[]);
    let mut c = Client::connect(&s.uri("v")).unwrap();
    let data = pattern(5, 16 << 20);
    c.write_at(&data, 0).unwrap();
    c.flush().unwrap();
    let mut back = vec![0u8; data.len()];
    c.read_at(&mut back, 0).unwrap();
    assert!(back == data, "read back differs");

    // One storage server dies: its member fails and reads rebuild from the others.
    let mut k1 = servers.pop().unwrap();
    k1.child.kill().unwrap();
    k1.child.wait().unwrap();
    let mut again = vec![0u8; data.len()];
    c.read_at(&mut again, 0).unwrap();
    assert!(again == data, "read after losing a member differs");
    let text = s.status_text(false);
    assert!(
        text.contains("failed") && text.contains("DEGRADED"),
        "{text}"
    );
    c.disconnect().unwrap();
    s.stop();
}
