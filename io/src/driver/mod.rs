//! The driver: the engine and the members behind one lock, the loop thread that runs their
//! turns, and the NBD backend that feeds them. See [`event_loop`] for the turns and for when
//! an NBD connection thread runs them itself.
//!
//! ```text
//!  NBD connection threads --(bounded cmd channel, blocks when full)--> turns (loop thread,
//!        ^                   (and, when idle, the turns themselves)      or a connection
//!        |                                                               thread): Engine,
//!        +-------------- Completer (reply to the client) <-------------- members
//!  status / operator ------(bounded control channel)------------------>  (io_uring, nbd rx
//!                                                                         threads wake it)
//! ```

mod backend;
mod commands;
mod ctl_flush;
mod devtime;
mod event_loop;
pub mod latency;
pub mod status;
mod usage;
mod watch;
mod wear_feed;

use std::collections::VecDeque;
use std::io;
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use fusionraid_core::{Engine, VolumeId};
use fusionraid_nbd::{CommandKind, Completer};

pub use backend::{EngineBackend, ExportMux, ExportOptions};
pub use commands::error_code;
pub use latency::LatencyHistogram;
pub use status::{MemberState, MemberStatus, StatusSnapshot, VolumeView};
pub use usage::VolumeIo;

use crate::Clock;
use crate::member::Member;
use crate::waker::Waker;

#[derive(Clone, Debug)]
pub struct DriverConfig {
    /// Commands queued between the NBD threads and the loop; senders block beyond it.
    pub queue_depth: usize,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig { queue_depth: 256 }
    }
}

pub(crate) struct CmdMsg {
    pub volume: VolumeId,
    pub kind: CommandKind,
    pub done: Completer,
}

/// Where commands for the loop go.
///
/// Commands normally come from NBD connection threads through the bounded channel, whose
/// blocking `send` is the backpressure. But a backend layered above ours (the
/// read-modify-write wrapper) submits follow-up commands from inside a completion, and
/// completions run inside a turn: blocking there on a full channel would wait for the
/// turn itself. Those go to `reentrant` instead. It is bounded by the commands in flight:
/// each admitted NBD command has at most one follow-up queued at a time, and the NBD server
/// bounds commands in flight per connection and connections per server.
#[derive(Clone)]
pub(crate) struct Inbox {
    pub tx: SyncSender<CmdMsg>,
    pub reentrant: Arc<Mutex<VecDeque<CmdMsg>>>,
}

pub(crate) enum Ctl {
    Status(SyncSender<StatusSnapshot>),
    /// Fail a member; answered once its failure is durable (`ctl_flush`).
    FailMember(usize, SyncSender<Result<(), String>>),
    /// Start a scrub of every volume.
    Scrub(SyncSender<Result<(), String>>),
    /// An empty device, its superblock carrying slot `generation`, takes the slot of a
    /// failed member (the engine decides if it may); answered once that is durable.
    ReplaceMember {
        index: usize,
        member: Box<dyn Member>,
        generation: u32,
        reply: SyncSender<Result<(), String>>,
    },
    Shutdown(Duration),
}

/// A volume as the NBD layer sees it.
#[derive(Clone, Debug)]
pub struct VolumeInfo {
    pub name: String,
    pub size_bytes: u64,
    pub level: String,
}

/// A running loop thread. Dropping it shuts it down (with a short grace period).
pub struct Driver {
    inbox: Inbox,
    shared: Arc<event_loop::Shared>,
    ctl_tx: SyncSender<Ctl>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<()>>,
    volumes: Vec<VolumeInfo>,
    max_request_bytes: u64,
    scheme: String,
}

impl Driver {
    /// Starts the loop. `members[i]` is disk i of the engine; `None` is a missing member,
    /// which the caller should already have failed in the engine (degraded start).
    /// `clock` must be the clock the members were opened with.
    pub fn start(
        engine: Engine,
        members: Vec<Option<Box<dyn Member>>>,
        clock: Clock,
        waker: Arc<Waker>,
        cfg: DriverConfig,
    ) -> io::Result<Driver> {
        assert_eq!(
            members.len(),
            engine.config().disks,
            "one slot per engine disk"
        );
        assert!(cfg.queue_depth > 0);
        let names = members
            .iter()
            .enumerate()
            .map(|(i, m)| {
                m.as_ref()
                    .map_or(format!("(missing member {i})"), |m| m.name().to_string())
            })
            .collect();
        let volumes = (0..engine.volume_count() as u32)
            .map(|v| {
                let s = engine.volume_status(v).unwrap_or_default();
                VolumeInfo {
                    name: s.name,
                    size_bytes: engine.volume_size(v).unwrap_or(0),
                    level: s.level,
                }
            })
            .collect();
        let max_request_bytes = engine.scheme().max_request_bytes();
        let scheme = engine.scheme_name().to_string();
        let (cmd_tx, cmd_rx) = sync_channel(cfg.queue_depth);
        let (ctl_tx, ctl_rx) = sync_channel(16);
        let inbox = Inbox {
            tx: cmd_tx,
            reentrant: Arc::new(Mutex::new(VecDeque::new())),
        };
        let lp = event_loop::EventLoop::new(
            engine,
            members,
            names,
            clock,
            waker.clone(),
            cmd_rx,
            inbox.reentrant.clone(),
            ctl_rx,
            max_request_bytes,
        );
        let shared = event_loop::Shared::new(lp);
        let on_thread = shared.clone();
        let thread = std::thread::Builder::new()
            .name("fusionraid-loop".into())
            .spawn(move || on_thread.run())?;
        Ok(Driver {
            inbox,
            shared,
            ctl_tx,
            waker,
            thread: Some(thread),
            volumes,
            max_request_bytes,
            scheme,
        })
    }

    pub fn volumes(&self) -> &[VolumeInfo] {
        &self.volumes
    }

    pub fn scheme_name(&self) -> &str {
        &self.scheme
    }

    /// The largest request the engine takes, which exports advertise as their maximum.
    pub fn max_request_bytes(&self) -> u64 {
        self.max_request_bytes
    }

    /// An NBD backend with one export per volume.
    pub fn backend(&self, opts: &ExportOptions) -> EngineBackend {
        EngineBackend::new(
            self.inbox.clone(),
            self.shared.clone(),
            &self.volumes,
            self.max_request_bytes,
            &self.scheme,
            opts,
        )
    }

    fn ctl(&self, c: Ctl) -> bool {
        let ok = match self.ctl_tx.try_send(c) {
            Ok(()) => true,
            Err(TrySendError::Full(c)) => self.ctl_tx.send(c).is_ok(),
            Err(TrySendError::Disconnected(_)) => false,
        };
        self.waker.wake();
        ok
    }

    /// A snapshot of the loop's state, or `None` if it does not answer within `timeout`.
    pub fn status(&self, timeout: Duration) -> Option<StatusSnapshot> {
        let (tx, rx) = sync_channel(1);
        if !self.ctl(Ctl::Status(tx)) {
            return None;
        }
        let mut s = rx.recv_timeout(timeout).ok()?;
        // Requests the NBD server refused never reached the engine's counters.
        let rejected = self
            .shared
            .rejected
            .load(std::sync::atomic::Ordering::Relaxed);
        s.requests += rejected;
        s.failed_requests += rejected;
        Some(s)
    }

    /// Declares member `index` failed (operator action, or a test), and returns once the
    /// engine has made that durable (a journal commit holding it; at once for schemes that
    /// journal nothing), so a crash right after cannot bring the member back as healthy.
    /// Also for a member that had already failed: its record may not have been committed.
    /// An error when the metadata could not be written or the loop did not answer; the
    /// member is failed in the running engine all the same.
    pub fn fail_member(&self, index: usize) -> Result<(), String> {
        let (tx, rx) = sync_channel(1);
        if !self.ctl(Ctl::FailMember(index, tx)) {
            return Err("the engine loop is gone".into());
        }
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(r) => r,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(format!(
                "member {index} failed, but the engine did not make it durable within 30 s"
            )),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(format!(
                "member {index} failed, but the engine loop stopped before it was durable"
            )),
        }
    }

    /// Start a scrub (refused by schemes without checksums, or while one runs).
    pub fn start_scrub(&self) -> Result<(), String> {
        let (tx, rx) = sync_channel(1);
        if !self.ctl(Ctl::Scrub(tx)) {
            return Err("the engine loop is gone".into());
        }
        rx.recv_timeout(Duration::from_secs(30))
            .map_err(|_| "the engine loop did not answer".to_string())?
    }

    /// Put `member` (empty, its superblock written with slot `generation`) in the slot of
    /// failed member `index`. Refused while the scheme still has data there (rebuild not
    /// finished); answered once the replacement is durable.
    pub fn replace_member(
        &self,
        index: usize,
        member: Box<dyn Member>,
        generation: u32,
    ) -> Result<(), String> {
        let (tx, rx) = sync_channel(1);
        self.ctl(Ctl::ReplaceMember {
            index,
            member,
            generation,
            reply: tx,
        });
        rx.recv_timeout(Duration::from_secs(30))
            .map_err(|_| "the engine loop did not answer".to_string())?
    }

    /// Stops taking commands, lets those admitted finish, has the engine stop cleanly
    /// (`Engine::begin_shutdown`: FusionRAID commits a checkpoint flagged clean), all
    /// within `grace`, and joins the loop. Shut the NBD server down first so no new
    /// commands arrive.
    pub fn shutdown(mut self, grace: Duration) {
        self.stop(grace);
    }

    fn stop(&mut self, grace: Duration) {
        if let Some(t) = self.thread.take() {
            self.ctl(Ctl::Shutdown(grace));
            if t.join().is_err() {
                tracing::error!("the loop thread panicked");
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(5));
    }
}
