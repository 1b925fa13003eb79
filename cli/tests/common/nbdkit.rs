//! nbdkit exports as pool members, with filters that inject faults: `error` (I/O errors,
//! switched on at run time by creating a file) and `delay` (slow reads or writes).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{Guard, have, skip, wait_for};

/// True when nbdkit and the filters are usable; otherwise prints SKIP (or fails when tools
/// are required) and the caller returns.
pub fn need_filters(test: &str, filters: &[&str]) -> bool {
    if !have("nbdkit") {
        return skip(test, "missing tools: nbdkit");
    }
    let mut cmd = Command::new("nbdkit");
    // A private Unix socket: `--run` would otherwise listen on TCP port 10809, which
    // concurrent checks (and anything else) contend for.
    cmd.args(["-U", "-"]);
    for f in filters {
        cmd.arg(format!("--filter={f}"));
    }
    let ok = cmd
        .args(["memory", "1M", "--run", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok || skip(test, &format!("nbdkit lacks a filter of {filters:?}"))
}

/// One nbdkit memory export on a Unix socket.
pub struct Export {
    pub guard: Guard,
    pub sock: PathBuf,
}

impl Export {
    /// `nbdkit -f -U DIR/NAME.sock [--filter=F...] memory SIZE [PARAMS...]`, ready to use.
    pub fn start(dir: &Path, name: &str, size: &str, filters: &[&str], params: &[&str]) -> Export {
        let sock = dir.join(format!("{name}.sock"));
        let mut cmd = Command::new("nbdkit");
        cmd.args(["-f", "-U"]).arg(&sock);
        for f in filters {
            cmd.arg(format!("--filter={f}"));
        }
        // The error filter logs every error it injects: keep that out of the test output.
        let log = dir.join(format!("{name}.log"));
        cmd.args(["memory", size])
            .args(params)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("nbdkit log file"));
        let mut guard = Guard::spawn(cmd, "nbdkit");
        let uri = format!("nbd+unix:///?socket={}", sock.display());
        wait_for(
            &format!("nbdkit export {uri}"),
            Duration::from_secs(30),
            || {
                assert!(
                    guard.is_running(),
                    "nbdkit exited: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
                fusionraid_nbd::Client::connect(&uri).is_ok_and(|c| c.disconnect().is_ok())
            },
        );
        Export { guard, sock }
    }

    pub fn uri(&self) -> String {
        format!("nbd+unix:///?socket={}", self.sock.display())
    }
}
