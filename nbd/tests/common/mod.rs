//! Helpers shared by the integration tests: temp dirs, deterministic random
//! data, external tools with time limits, test backends, raw protocol helpers,
//! and our server on a Unix socket (the loopback tests' fixture).

#![allow(dead_code)] // each test binary uses a different subset

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A directory removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "fusionraid-nbd-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// xorshift64*: reproducible "random" data without a dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            v.extend_from_slice(&self.next().to_le_bytes());
        }
        v.truncate(n);
        v
    }
}

/// Is `tool` on PATH? If not: with FUSIONRAID_REQUIRE_TOOLS=1 the test
/// fails naming the package; otherwise it prints SKIP and the caller
/// returns.
pub fn have_tool(tool: &str, package: &str) -> bool {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|d| d.join(tool).is_file()))
        .unwrap_or(false);
    if found {
        return true;
    }
    if std::env::var("FUSIONRAID_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("{tool} not installed (apt-get install {package}) and FUSIONRAID_REQUIRE_TOOLS=1");
    }
    println!("SKIP: {tool} not installed");
    false
}

/// A child process killed (and reaped) on drop, so a failing assertion
/// never leaves a server running.
pub struct ChildGuard(pub Option<Child>);

impl ChildGuard {
    /// Spawns a long-running child (a server) that is killed when the
    /// guard drops, and also if the test thread dies without dropping it.
    pub fn spawn(cmd: &mut Command) -> ChildGuard {
        die_with_parent(cmd, libc::SIGKILL);
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
        ChildGuard(Some(child))
    }
}

/// Makes the kernel send `signal` to the child when the spawning thread
/// exits, so no server outlives its test even on a hard failure.
pub fn die_with_parent(cmd: &mut Command, signal: libc::c_int) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe and touches no memory of ours; it
    // runs in the forked child before exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Panics with everything the tool said unless it exited 0.
    pub fn assert_ok(self, what: &str) -> Output {
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

/// Runs a command to completion, killing it after `timeout`.
pub fn run(cmd: &mut Command, timeout: Duration) -> Output {
    let desc = format!("{cmd:?}");
    die_with_parent(cmd, libc::SIGKILL);
    let mut guard = ChildGuard(Some(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {desc}: {e}")),
    ));
    let child = guard.0.as_mut().expect("just spawned");
    // Drain pipes on threads so a chatty tool cannot block on a full pipe.
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let mut b = Vec::new();
                let _ = r.read_to_end(&mut b);
                s = String::from_utf8_lossy(&b).into_owned();
            }
            s
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        if Instant::now() > deadline {
            drop(guard);
            panic!("{desc} did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    guard.0 = None;
    Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// Waits until a server child serves `export` on a Unix socket. Probes with
/// a full handshake and a clean NBD_CMD_DISC, so servers do not log
/// aborted connections.
pub fn wait_for_export(path: &Path, export: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        match fusionraid_nbd::Client::connect_unix(path, export) {
            Ok(c) => {
                let _ = c.disconnect();
                return;
            }
            Err(e) if Instant::now() > deadline => {
                panic!(
                    "no export {export:?} on {} after {timeout:?}: {e}",
                    path.display()
                )
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

// ---- Test backends ---------------------------------------------------------

use fusionraid_nbd::{Backend, Command as NbdCommand, Completer, ExportInfo, MemBackend};
use std::sync::{Arc, Condvar, Mutex};

/// Queues every command until the test releases it; executes it on an inner
/// `MemBackend` at release time. Lets tests choose completion order and
/// observe how many commands the server let through.
pub struct HoldBackend {
    pub inner: MemBackend,
    queue: Mutex<Vec<(usize, NbdCommand, Completer)>>,
    cv: Condvar,
    /// Highest queue length ever seen.
    pub peak: AtomicU64,
}

impl HoldBackend {
    pub fn new(info: ExportInfo) -> Arc<HoldBackend> {
        Arc::new(HoldBackend {
            inner: MemBackend::new(info),
            queue: Mutex::new(Vec::new()),
            cv: Condvar::new(),
            peak: AtomicU64::new(0),
        })
    }

    pub fn queued(&self) -> usize {
        self.queue.lock().unwrap().len()
    }

    /// Waits until at least `n` commands are queued.
    pub fn wait_queued(&self, n: usize, timeout: Duration) -> usize {
        let q = self.queue.lock().unwrap();
        let (q, _) = self
            .cv
            .wait_timeout_while(q, timeout, |q| q.len() < n)
            .unwrap();
        q.len()
    }

    /// Takes every queued command (in submission order).
    pub fn take_all(&self) -> Vec<(usize, NbdCommand, Completer)> {
        std::mem::take(&mut *self.queue.lock().unwrap())
    }

    /// Executes on the inner backend and completes.
    pub fn finish(&self, export: usize, cmd: NbdCommand, done: Completer) {
        self.inner.submit(export, cmd, done);
    }
}

impl Backend for HoldBackend {
    fn exports(&self) -> Vec<ExportInfo> {
        self.inner.exports()
    }

    fn submit(&self, export: usize, cmd: NbdCommand, done: Completer) {
        let mut q = self.queue.lock().unwrap();
        q.push((export, cmd, done));
        self.peak.fetch_max(q.len() as u64, Ordering::SeqCst);
        self.cv.notify_all();
    }
}

// ---- Raw protocol helpers (to send what our own client refuses to) ------------

use fusionraid_nbd::proto::consts::*;
use fusionraid_nbd::proto::handshake::*;
use fusionraid_nbd::proto::transmission::*;
use std::io::Write;

pub fn read_exact_vec(s: &mut impl Read, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    s.read_exact(&mut b).expect("read from server");
    b
}

/// Reads the greeting and sends fixed-newstyle + no-zeroes client flags.
pub fn raw_greet(s: &mut (impl Read + Write)) -> u16 {
    let g: [u8; GREETING_LEN] = read_exact_vec(s, GREETING_LEN).try_into().unwrap();
    let flags = decode_greeting(&g).expect("greeting");
    s.write_all(&(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES).to_be_bytes())
        .unwrap();
    flags
}

pub fn raw_option(s: &mut impl Write, option: u32, data: &[u8]) {
    s.write_all(
        &OptionHeader {
            option,
            len: data.len() as u32,
        }
        .encode(),
    )
    .unwrap();
    s.write_all(data).unwrap();
}

pub fn raw_option_reply(s: &mut impl Read) -> (OptionReplyHeader, Vec<u8>) {
    let h: [u8; OPTION_REPLY_HEADER_LEN] = read_exact_vec(s, OPTION_REPLY_HEADER_LEN)
        .try_into()
        .unwrap();
    let h = OptionReplyHeader::decode(&h).expect("option reply");
    let data = read_exact_vec(s, h.len as usize);
    (h, data)
}

/// NBD_OPT_GO for `name`; returns (size, transmission flags).
pub fn raw_go(s: &mut (impl Read + Write), name: &str) -> (u64, u16) {
    let req = InfoRequest {
        name: name.into(),
        requests: vec![NBD_INFO_BLOCK_SIZE],
    };
    raw_option(s, NBD_OPT_GO, &req.encode());
    let mut export = None;
    loop {
        let (h, data) = raw_option_reply(s);
        match h.reply {
            NBD_REP_INFO => {
                if let Info::Export { size, flags } = Info::decode(&data).unwrap() {
                    export = Some((size, flags));
                }
            }
            NBD_REP_ACK => return export.expect("NBD_INFO_EXPORT before ACK"),
            other => panic!("unexpected reply {other:#x} to GO"),
        }
    }
}

pub fn raw_request(s: &mut impl Write, typ: u16, flags: u16, handle: u64, offset: u64, len: u32) {
    s.write_all(
        &RequestHeader {
            flags,
            typ,
            handle,
            offset,
            len,
        }
        .encode(),
    )
    .unwrap();
}

/// Reads one simple reply; `data_len` bytes follow if it is a successful read.
pub fn raw_reply(s: &mut impl Read, data_len: usize) -> (SimpleReply, Vec<u8>) {
    let b: [u8; SIMPLE_REPLY_LEN] = read_exact_vec(s, SIMPLE_REPLY_LEN).try_into().unwrap();
    let r = SimpleReply::decode(&b).expect("simple reply");
    let data = if r.error == 0 {
        read_exact_vec(s, data_len)
    } else {
        Vec::new()
    };
    (r, data)
}

/// True once the peer has closed (EOF or reset), false if it sends anything
/// else. Panics on a read timeout: a server that neither answers nor closes
/// is a failure, not a close.
pub fn at_eof(s: &mut impl Read) -> bool {
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => true,
        Err(e) => panic!("waiting for the server to close: {e}"),
    }
}

// ---- Our server on a Unix socket in a temp dir (the loopback tests) ---------

use fusionraid_nbd::{Client, Server, ServerConfig, ServerHandle};
use std::os::unix::net::UnixStream;

pub const TIMEOUT: Duration = Duration::from_secs(20);

pub struct Fixture {
    pub handle: Option<ServerHandle>,
    pub sock: PathBuf,
    _dir: TempDir,
}

impl Fixture {
    pub fn new(backend: Arc<dyn Backend>, config: ServerConfig) -> Fixture {
        let dir = TempDir::new("loop");
        let sock = dir.join("nbd.sock");
        let handle = Server::new(backend)
            .with_config(config)
            .bind_unix(&sock)
            .unwrap()
            .start()
            .unwrap();
        Fixture {
            handle: Some(handle),
            sock,
            _dir: dir,
        }
    }

    pub fn client(&self, export: &str) -> Client {
        Client::connect_unix(&self.sock, export).expect("connect")
    }

    pub fn raw(&self) -> UnixStream {
        let s = UnixStream::connect(&self.sock).unwrap();
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        s
    }

    pub fn shutdown(&mut self) {
        if let Some(h) = self.handle.take() {
            h.shutdown();
        }
    }
}

pub fn mem(size: u64) -> Arc<MemBackend> {
    Arc::new(MemBackend::new(ExportInfo::new("disk", size)))
}
