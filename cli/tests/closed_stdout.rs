//! `fusionraid sim ... | head`: the reader goes away before the report is written. The
//! process panicked ("failed printing to stdout: Broken pipe") with a backtrace; it now
//! ends as `cat` does, by SIGPIPE, and says nothing.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

#[test]
fn a_closed_stdout_ends_sim_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fusionraid"))
        .args([
            "sim",
            "--disks",
            "4",
            "--width",
            "3",
            "--clean",
            "--capacity",
            "8GiB",
            "--synthetic",
            "read=0.5,iops=2k,footprint=16M",
            "--duration",
            "20ms",
            "--json",
        ])
        .env("RUST_BACKTRACE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Close our end of stdout before the report is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
}
