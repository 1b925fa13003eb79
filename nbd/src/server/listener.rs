//! Listening sockets, the accept thread, the connection registry and the
//! shutdown sequence.
//!
//! One accept thread polls every listener plus a wake-up socket, so
//! [`ServerHandle::shutdown`] can interrupt it without timeouts or signals.
//! Each accepted client gets a connection thread (which spawns its writer);
//! the registry keeps a clone of every live socket so shutdown can stop the
//! readers.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::backend::Backend;
use crate::stream::NbdStream;

use super::ServerConfig;
use super::budget::ByteBudget;
use super::connection;

/// How often the accept thread wakes up on its own to reap finished
/// connection threads.
/// After cutting the sockets, how long connections get to notice before
/// shutdown stops waiting for them.
const CUT_GRACE: Duration = Duration::from_secs(1);
const REAP_INTERVAL_MS: i32 = 1000;

/// A server being configured: bind listeners, then [`Server::start`].
pub struct Server {
    backend: Arc<dyn Backend>,
    config: ServerConfig,
    listeners: Vec<Listener>,
    unix_paths: Vec<UnixPath>,
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// A socket file we created, identified by inode so shutdown never removes a
/// file someone else put at the same path later.
struct UnixPath {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl Server {
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        Server {
            backend,
            config: ServerConfig::default(),
            listeners: Vec::new(),
            unix_paths: Vec::new(),
        }
    }

    pub fn with_config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// Listens on a Unix socket. A stale socket file (nobody accepting on
    /// it) is replaced; a live one is an `AddrInUse` error.
    pub fn bind_unix(mut self, path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        let listener = match UnixListener::bind(path) {
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                let meta = fs::symlink_metadata(path)?;
                if !meta.file_type().is_socket() || UnixStream::connect(path).is_ok() {
                    return Err(e);
                }
                fs::remove_file(path)?;
                UnixListener::bind(path)?
            }
            r => r?,
        };
        let meta = fs::symlink_metadata(path)?;
        self.unix_paths.push(UnixPath {
            path: path.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
        });
        self.listeners.push(Listener::Unix(listener));
        Ok(self)
    }

    /// Listens on TCP. Use [`super::DEFAULT_TCP_ADDR`] (loopback) unless the
    /// export must be reachable from other hosts; port 0 picks a free port
    /// (see [`ServerHandle::tcp_addrs`]).
    pub fn bind_tcp(mut self, addr: impl ToSocketAddrs) -> io::Result<Self> {
        self.listeners.push(Listener::Tcp(TcpListener::bind(addr)?));
        Ok(self)
    }

    /// Checks the configuration and the backend's exports, then starts
    /// accepting on every bound listener.
    pub fn start(self) -> io::Result<ServerHandle> {
        let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
        if self.listeners.is_empty() {
            return Err(invalid("no listener bound".into()));
        }
        if self.config.max_in_flight == 0 || self.config.max_connections == 0 {
            return Err(invalid(
                "max_in_flight and max_connections must be > 0".into(),
            ));
        }
        for mut e in self.backend.exports() {
            if e.size % u64::from(e.block_size.minimum.max(1)) != 0 {
                tracing::warn!(
                    export = %e.name,
                    "export size is not a multiple of its minimum block size; the tail is unreachable"
                );
            }
            e.block_size.maximum = e.block_size.maximum.min(self.config.max_payload);
            e.validate().map_err(invalid)?;
        }
        let mut tcp_addrs = Vec::new();
        for l in &self.listeners {
            match l {
                Listener::Tcp(t) => {
                    tcp_addrs.push(t.local_addr()?);
                    t.set_nonblocking(true)?;
                }
                Listener::Unix(u) => u.set_nonblocking(true)?,
            }
        }
        let (wake_rx, wake_tx) = UnixStream::pair()?;
        let shared = Arc::new(Shared {
            backend: self.backend,
            budget: Arc::new(ByteBudget::new(self.config.max_total_in_flight_bytes)),
            config: self.config,
            shutting_down: AtomicBool::new(false),
            conns: Mutex::new(HashMap::new()),
        });
        let accept_shared = shared.clone();
        let listeners = self.listeners;
        let accept = std::thread::Builder::new()
            .name("nbd-accept".into())
            .spawn(move || accept_loop(&accept_shared, listeners, wake_rx))?;
        Ok(ServerHandle {
            shared,
            accept: Some(accept),
            waker: wake_tx,
            tcp_addrs,
            unix_paths: self.unix_paths,
        })
    }
}

struct Shared {
    backend: Arc<dyn Backend>,
    /// Payload bytes in flight over every connection (`max_total_in_flight_bytes`).
    budget: Arc<ByteBudget>,
    config: ServerConfig,
    shutting_down: AtomicBool,
    /// A clone of each live connection's socket, for shutdown.
    conns: Mutex<HashMap<u64, NbdStream>>,
}

impl Shared {
    fn conns(&self) -> MutexGuard<'_, HashMap<u64, NbdStream>> {
        self.conns.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running server. Dropping it shuts the server down.
pub struct ServerHandle {
    shared: Arc<Shared>,
    accept: Option<JoinHandle<Vec<JoinHandle<()>>>>,
    waker: UnixStream,
    tcp_addrs: Vec<SocketAddr>,
    unix_paths: Vec<UnixPath>,
}

impl ServerHandle {
    /// The bound TCP addresses (with the real port when bound to port 0).
    pub fn tcp_addrs(&self) -> &[SocketAddr] {
        &self.tcp_addrs
    }

    pub fn unix_paths(&self) -> Vec<&Path> {
        self.unix_paths.iter().map(|u| u.path.as_path()).collect()
    }

    /// Connections currently open (handshaking or transmitting).
    pub fn connections(&self) -> usize {
        self.shared.conns().len()
    }

    /// Stops accepting, lets every connection finish its in-flight requests
    /// (up to `shutdown_grace`, then cuts them), joins all threads and
    /// removes the Unix socket files.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        self.shared.shutting_down.store(true, Ordering::SeqCst);
        let _ = self.waker.write_all(&[1]);
        let threads = match accept.join() {
            Ok(t) => t,
            Err(_) => {
                tracing::error!("nbd accept thread panicked");
                Vec::new()
            }
        };
        // No new connections can register now. Stop reading from clients:
        // readers see EOF, writers drain what was admitted.
        for s in self.shared.conns().values() {
            let _ = s.shutdown(Shutdown::Read);
        }
        let deadline = Instant::now() + self.shared.config.shutdown_grace;
        while Instant::now() < deadline && threads.iter().any(|t| !t.is_finished()) {
            std::thread::sleep(Duration::from_millis(10));
        }
        // Past the grace period a writer may be stuck on a client that does
        // not read; cutting both directions makes its writes fail.
        for s in self.shared.conns().values() {
            let _ = s.shutdown(Shutdown::Both);
        }
        // A connection also waits for the backend to complete what it admitted
        // (its writer ends with the last completer). A backend that never does
        // must not hold shutdown hostage: such connections are left to end when
        // their completers are dropped (by the backend's own shutdown).
        let deadline = Instant::now() + CUT_GRACE;
        while Instant::now() < deadline && threads.iter().any(|t| !t.is_finished()) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let stuck = threads.iter().filter(|t| !t.is_finished()).count();
        if stuck > 0 {
            tracing::warn!(
                stuck,
                "nbd connections still wait for backend completions; not waiting for them"
            );
        }
        for t in threads.into_iter().filter(|t| t.is_finished()) {
            if t.join().is_err() {
                tracing::error!("nbd connection thread panicked");
            }
        }
        for u in &self.unix_paths {
            if let Ok(m) = fs::symlink_metadata(&u.path)
                && m.dev() == u.dev
                && m.ino() == u.ino
            {
                let _ = fs::remove_file(&u.path);
            }
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop(
    shared: &Arc<Shared>,
    listeners: Vec<Listener>,
    wake: UnixStream,
) -> Vec<JoinHandle<()>> {
    let mut fds: Vec<RawFd> = listeners.iter().map(Listener::raw_fd).collect();
    fds.push(wake.as_raw_fd());
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id = 0u64;
    loop {
        threads.retain(|t| !t.is_finished());
        let ready = match poll_readable(&fds, REAP_INTERVAL_MS) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::error!("poll on nbd listeners failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        if shared.shutting_down.load(Ordering::SeqCst) {
            return threads;
        }
        for (l, _) in listeners.iter().zip(&ready).filter(|(_, r)| **r) {
            // Drain the backlog: the listener is non-blocking.
            loop {
                match l.accept() {
                    Ok(stream) => {
                        next_id += 1;
                        if let Some(t) = spawn_connection(shared, stream, next_id) {
                            threads.push(t);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                        ) => {}
                    Err(e) => {
                        // E.g. out of file descriptors: back off rather than
                        // spin on a listener that stays readable.
                        tracing::warn!("accept failed: {e}");
                        std::thread::sleep(Duration::from_millis(100));
                        break;
                    }
                }
            }
        }
    }
}

fn spawn_connection(shared: &Arc<Shared>, stream: NbdStream, id: u64) -> Option<JoinHandle<()>> {
    let clone = match stream.try_clone() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("cannot clone accepted socket: {e}");
            return None;
        }
    };
    {
        let mut conns = shared.conns();
        if conns.len() >= shared.config.max_connections {
            tracing::warn!(
                "refusing connection: {} connections already open",
                conns.len()
            );
            return None;
        }
        conns.insert(id, clone);
    }
    let sh = shared.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("nbd-conn-{id}"))
        .spawn(move || {
            let _registration = Registration { shared: &sh, id };
            match connection::serve(
                stream,
                sh.backend.clone(),
                &sh.config,
                &sh.budget,
                &sh.shutting_down,
            ) {
                Ok(()) => tracing::debug!(id, "connection closed"),
                Err(e) => tracing::debug!(id, "connection ended: {e}"),
            }
        });
    match spawned {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::warn!("cannot spawn connection thread: {e}");
            shared.conns().remove(&id);
            None
        }
    }
}

/// Removes a connection from the registry when its thread ends, however it
/// ends.
struct Registration<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.shared.conns().remove(&self.id);
    }
}

impl Listener {
    fn raw_fd(&self) -> RawFd {
        match self {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Unix(l) => l.as_raw_fd(),
        }
    }

    fn accept(&self) -> io::Result<NbdStream> {
        // Accepted sockets do not inherit O_NONBLOCK on Linux, but being
        // explicit costs nothing and keeps the connection code blocking.
        match self {
            Listener::Tcp(l) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok(NbdStream::Tcp(s))
            }
            Listener::Unix(l) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok(NbdStream::Unix(s))
            }
        }
    }
}

/// Which of `fds` are readable, waiting up to `timeout_ms`.
fn poll_readable(fds: &[RawFd], timeout_ms: i32) -> io::Result<Vec<bool>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `pfds` is a valid, exclusively borrowed array of
    // `pfds.len()` pollfd structs for the duration of the call.
    let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pfds.iter().map(|p| p.revents != 0).collect())
}
