//! Helpers for tests that run the real `fusionraid` binary and real client tools.
//!
//! * Tools: a test that needs a missing tool prints `SKIP` and passes, unless
//!   `FUSIONRAID_REQUIRE_TOOLS=1`, where it fails (scripts/test.sh installs the tools).
//! * Every child process has a deadline and is killed when its guard drops, so a hung tool
//!   fails the test instead of hanging the suite.
//! * Only loopback TCP and Unix sockets are used.

#![allow(dead_code)]

pub mod nbdkit;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_fusionraid");

pub fn require_tools() -> bool {
    std::env::var("FUSIONRAID_REQUIRE_TOOLS").is_ok_and(|v| v == "1")
}

pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// True when every tool is present. Otherwise prints SKIP (or panics when tools are
/// required) and the caller returns.
pub fn need(test: &str, tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !have(t)).collect();
    if missing.is_empty() {
        return true;
    }
    skip(test, &format!("missing tools: {}", missing.join(", ")))
}

/// Skips (or fails, when tools are required) with `why`.
pub fn skip(test: &str, why: &str) -> bool {
    if require_tools() {
        panic!("{test}: {why} (FUSIONRAID_REQUIRE_TOOLS=1; run scripts/test.sh to install them)");
    }
    eprintln!("SKIP {test}: {why}");
    false
}

/// The output of a finished child.
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn ok(self, what: &str) -> Output {
        assert!(
            self.status.success(),
            "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }
}

fn drain(r: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = BufReader::new(r).read_to_string(&mut s);
        let _ = tx.send(s);
    });
    rx
}

/// Runs `program args` to completion within `timeout` (killed and panics beyond).
pub fn run(program: &str, args: &[&str], timeout: Duration) -> Output {
    run_in(program, args, timeout, None)
}

pub fn run_in(program: &str, args: &[&str], timeout: Duration, dir: Option<&Path>) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let mut child = Guard::spawn(cmd, program);
    let out = drain(child.child.stdout.take().expect("piped"));
    let err = drain(child.child.stderr.take().expect("piped"));
    let status = child.wait_timeout(timeout).unwrap_or_else(|| {
        let so = out.recv_timeout(Duration::from_secs(2)).unwrap_or_default();
        let se = err.recv_timeout(Duration::from_secs(2)).unwrap_or_default();
        panic!("{program} {args:?} did not finish in {timeout:?}\nstdout:\n{so}\nstderr:\n{se}")
    });
    Output {
        status,
        stdout: out.recv().unwrap_or_default(),
        stderr: err.recv().unwrap_or_default(),
    }
}

/// A child process killed on drop (SIGTERM, then SIGKILL after a grace period).
pub struct Guard {
    pub child: Child,
    name: String,
}

impl Guard {
    pub fn spawn(mut cmd: Command, name: &str) -> Guard {
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        Guard {
            child,
            name: name.to_string(),
        }
    }

    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + timeout;
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGTERM, then SIGKILL if it has not exited within `grace`.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        if let Ok(Some(s)) = self.child.try_wait() {
            return Some(s);
        }
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        if let Some(s) = self.wait_timeout(grace) {
            return Some(s);
        }
        eprintln!("{} ignored SIGTERM; killing it", self.name);
        let _ = self.child.kill();
        self.child.wait().ok()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(10));
    }
}

/// Waits until `cond` holds, polling, or panics with `what` after `timeout`.
pub fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Whether a member state (a `status --json` state, or a member's line of `status`) is a
/// member serving as its slot's device. "spiking" counts: the spike detector saw a working
/// member slow (file members on a busy machine are, now and then) and steers around it; it
/// is not failed, stale or rebuilding.
pub fn in_service(state: &str) -> bool {
    state.contains("healthy") || state.contains("spiking")
}

/// A running `fusionraid serve`, stopped (cleanly, by SIGTERM) on drop.
pub struct Serve {
    pub guard: Guard,
    pub sock: PathBuf,
    pub status: PathBuf,
    pub stdout: mpsc::Receiver<String>,
    pub stderr: mpsc::Receiver<String>,
}

impl Serve {
    /// Starts `fusionraid serve POOL [extra...]` and waits until it prints "ready".
    /// The `serve` command for `pool` (sockets next to the pool file, stdin closed, stdout
    /// piped) and its NBD and status sockets.
    pub fn command(pool: &Path, extra: &[&str]) -> (Command, PathBuf, PathBuf) {
        let dir = pool.parent().expect("pool file in a directory");
        let sock = dir.join("nbd.sock");
        let status = dir.join("status.sock");
        let mut cmd = Command::new(BIN);
        cmd.arg("serve")
            .arg(pool)
            .args(["--unix", sock.to_str().unwrap()])
            .args(["--status", status.to_str().unwrap()])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        (cmd, sock, status)
    }

    pub fn start(pool: &Path, extra: &[&str]) -> Serve {
        let (mut cmd, sock, status) = Serve::command(pool, extra);
        cmd.stderr(Stdio::piped());
        let mut guard = Guard::spawn(cmd, "fusionraid serve");
        let (ready_tx, ready_rx) = mpsc::channel();
        let out = guard.child.stdout.take().expect("piped");
        let (out_tx, stdout) = mpsc::channel();
        std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if line == "ready" {
                    let _ = ready_tx.send(());
                }
                all.push_str(&line);
                all.push('\n');
            }
            let _ = out_tx.send(all);
        });
        let stderr = drain(guard.child.stderr.take().expect("piped"));
        let mut s = Serve {
            guard,
            sock,
            status,
            stdout,
            stderr,
        };
        if ready_rx.recv_timeout(Duration::from_secs(60)).is_err() {
            s.guard.stop(Duration::from_secs(5));
            panic!(
                "fusionraid serve did not become ready\nstdout:\n{}\nstderr:\n{}",
                s.stdout
                    .recv_timeout(Duration::from_secs(2))
                    .unwrap_or_default(),
                s.stderr
                    .recv_timeout(Duration::from_secs(2))
                    .unwrap_or_default()
            );
        }
        s
    }

    pub fn uri(&self, export: &str) -> String {
        format!("nbd+unix:///{export}?socket={}", self.sock.display())
    }

    /// `fusionraid status` output against this server.
    pub fn status_text(&self, json: bool) -> String {
        let mut args = vec!["status", "--socket", self.status.to_str().unwrap()];
        if json {
            args.push("--json");
        }
        run(BIN, &args, Duration::from_secs(30))
            .ok("fusionraid status")
            .stdout
    }

    /// Sends the server signal `sig` (SIGKILL: a crash) and waits until it has exited.
    pub fn signal(&mut self, sig: i32) {
        // SAFETY: kill(2) on our own child.
        unsafe {
            libc::kill(self.guard.child.id() as i32, sig);
        }
        let st = self.guard.wait_timeout(Duration::from_secs(30));
        assert!(st.is_some(), "serve did not exit on signal {sig}");
    }

    /// Stops the server with SIGTERM and checks it exited cleanly; returns its stderr.
    pub fn stop(mut self) -> String {
        let st = self.guard.stop(Duration::from_secs(30));
        let err = self
            .stderr
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_default();
        assert!(
            st.is_some_and(|s| s.success()),
            "serve did not exit cleanly: {st:?}\n{err}"
        );
        err
    }
}

/// Writes a pool file into `dir` and returns its path.
pub fn pool_file(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("pool.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// A pool of `n` in-memory members with the given volumes (TOML `[[volume]]` tables).
pub fn mem_pool(dir: &Path, n: usize, member: &str, volumes: &str) -> PathBuf {
    let members: Vec<String> = (0..n).map(|_| format!("\"mem:{member}\"")).collect();
    pool_file(
        dir,
        &format!(
            "name = \"t\"\nmembers = [{}]\n{volumes}",
            members.join(", ")
        ),
    )
}

pub fn volume(name: &str, level: &str, width: usize, size: &str, unaligned: bool) -> String {
    format!(
        "\n[[volume]]\nname = \"{name}\"\nlevel = \"{level}\"\nwidth = {width}\nsize = \"{size}\"\nallow_unaligned = {unaligned}\n"
    )
}

/// Deterministic pseudo-random bytes.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// A free loopback TCP port (bound and released; good enough for tests).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// fio on an NBD export at queue depth 16, JSON output, no verify state files left in the
/// working directory; `extra` says the rest of the job.
pub fn fio_nbd(uri: &str, name: &str, extra: &[&str], timeout: Duration) -> Output {
    let uri_arg = format!("--uri={uri}");
    let mut args = vec![
        "--name",
        name,
        "--ioengine=nbd",
        &uri_arg,
        "--iodepth=16",
        "--output-format=json",
        "--verify_state_save=0",
    ];
    args.extend(extra);
    run("fio", &args, timeout)
}

/// The error code of fio's first job in its JSON output (0: every I/O succeeded; u64::MAX
/// when it has none). The nbd engine prints a line of its own before the JSON document.
pub fn fio_error(out: &Output) -> u64 {
    let doc = out.stdout.find('{').map_or("", |i| &out.stdout[i..]);
    let j: serde_json::Value = serde_json::from_str(doc).unwrap_or_else(|e| {
        panic!(
            "fio output is not JSON ({e}):\n{}\n{}",
            out.stdout, out.stderr
        )
    });
    j["jobs"][0]["error"].as_u64().unwrap_or(u64::MAX)
}
