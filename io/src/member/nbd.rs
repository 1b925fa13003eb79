//! `nbd://HOST:PORT/EXPORT`, `nbd+unix:///EXPORT?socket=PATH`: a remote NBD export (qemu-nbd,
//! nbdkit, another fusionraid) as a pool member, through our own client.
//!
//! The connection is split: the loop thread sends requests on the sender half, and a
//! receiver thread reads replies and passes them back through a channel, waking the loop.
//! The channel can not fill: it holds at most one reply per request in flight, which is
//! capped at `MAX_INFLIGHT` (further operations wait in `waiting`, bounded by the engine),
//! plus the final connection error. Sends may block briefly when the server is slow to read
//! its socket. A server that hangs (stopped, a network partition, its storage stuck) must not
//! hang the pool: sends time out after `REPLY_TIMEOUT`, and a request unanswered for that
//! long gives the connection up (every operation fails; the engine fails the member and
//! serves degraded). A write the server refuses with NBD_ENOSPC (an export on thin
//! storage that filled up) is held and sent again until there is room (`no_space.rs`).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::time::Duration;

use fusionraid_core::{Data, DevError, DevOp, Nanos};
use fusionraid_nbd::{
    Client, ClientSender, CommandKind, CommandResult, ErrorCode, ExportInfo, NbdError,
};

use super::no_space::{DEFAULT_NO_SPACE_WAIT_NS, NoSpace, Queued};
use super::{Completion, Member, MemberError};
use crate::waker::Waker;

/// Requests outstanding on one connection. qemu-nbd serves 16 at a time and stops reading
/// beyond that; a little more keeps its queue full without making us block.
const MAX_INFLIGHT: usize = 32;

/// How long a request may go unanswered (or a send stay blocked) before the server is
/// given up on. Far beyond any healthy device's latency, even under GC stalls.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

type Reply = Result<(u64, CommandResult), NbdError>;

/// A request on the wire, by its NBD handle.
struct Sent {
    /// The engine's tag of the device operation it serves.
    tag: u64,
    what: &'static str,
    offset: u64,
    at: Nanos,
    /// A write asked for FUA on an export that offers FLUSH but not FUA: it completes only
    /// after a FLUSH that follows it, so "durable" means what the engine asked.
    flush_after: bool,
    /// A write's bytes and the FUA the engine asked for, kept until its reply so a write
    /// refused for space can go again as it came.
    write: Option<(Vec<u8>, bool)>,
    /// When the server first refused this write for space.
    refused: Option<Nanos>,
}

pub struct NbdMember {
    name: String,
    info: ExportInfo,
    sender: Option<ClientSender>,
    replies: Receiver<Reply>,
    /// What is on the wire, by NBD handle.
    pending: HashMap<u64, Sent>,
    waiting: VecDeque<Queued>,
    /// Writes the server refused for space, waiting to be sent again.
    no_space: NoSpace,
    ready: Vec<Completion>,
    /// Set once the connection is gone: everything fails from then on.
    broken: Option<String>,
    /// See `REPLY_TIMEOUT` (shorter in tests).
    reply_timeout: Nanos,
    /// Send times and the timeout are read from this clock (the loop's), never from the
    /// `now` of the loop's turn: a send that blocked makes that stale, and requests sent
    /// after it (to any member) would look old at once.
    clock: crate::Clock,
}

impl NbdMember {
    pub fn connect(
        name: &str,
        uri: &str,
        waker: Arc<Waker>,
        clock: crate::Clock,
    ) -> Result<NbdMember, MemberError> {
        let client = Client::connect(uri)
            .map_err(|e| MemberError::new(name, format!("connecting to {uri}: {e}")))?;
        let info = client.info().clone();
        if info.read_only {
            return Err(MemberError::new(name, "the export is read-only"));
        }
        if info.block_size.minimum > 4096 {
            return Err(MemberError::new(
                name,
                format!(
                    "the export needs {}-byte alignment; members must accept 4 KiB I/O",
                    info.block_size.minimum
                ),
            ));
        }
        let (sender, mut receiver) = client.split();
        sender
            .set_write_timeout(Some(REPLY_TIMEOUT))
            .map_err(|e| MemberError::new(name, format!("setting a send timeout: {e}")))?;
        let (tx, replies) = sync_channel(MAX_INFLIGHT + 1);
        let thread_name = format!("nbd-member-rx {name}");
        std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || receive(&mut receiver, &tx, &waker))
            .map_err(|e| MemberError::new(name, format!("spawning receiver: {e}")))?;
        Ok(NbdMember {
            name: name.to_string(),
            info,
            sender: Some(sender),
            replies,
            pending: HashMap::new(),
            waiting: VecDeque::new(),
            no_space: NoSpace::new(DEFAULT_NO_SPACE_WAIT_NS),
            ready: Vec::new(),
            broken: None,
            reply_timeout: REPLY_TIMEOUT.as_nanos() as Nanos,
            clock,
        })
    }

    /// How long a write the server refuses for space is sent again before the member
    /// fails (0: fail at once).
    pub fn set_no_space_wait(&mut self, patience: Nanos) {
        self.no_space = NoSpace::new(patience);
    }

    fn fail(&mut self, tag: u64, msg: String) {
        self.ready.push(Completion {
            tag,
            result: Err(DevError(format!("{}: {msg}", self.name))),
        });
    }

    fn start(&mut self, q: Queued) {
        let Queued { tag, op, refused } = q;
        if let Some(b) = &self.broken {
            let m = b.clone();
            return self.fail(tag, m);
        }
        let info = &self.info;
        let mut flush_after = false;
        let mut fua_asked = false;
        let (cmd, what, offset) = match op {
            DevOp::Read { offset, len } => {
                let Ok(len) = u32::try_from(len) else {
                    return self.fail(tag, format!("read of {len} bytes is too large for NBD"));
                };
                (CommandKind::Read { offset, len }, "read", offset)
            }
            DevOp::Write { offset, data, fua } => {
                let Some(bytes) = data.into_bytes() else {
                    return self.fail(tag, "size-only write to a real member".into());
                };
                flush_after = fua && !info.fua && info.flush;
                fua_asked = fua;
                (
                    CommandKind::Write {
                        offset,
                        data: bytes,
                        fua: fua && info.fua,
                    },
                    "write",
                    offset,
                )
            }
            // Without flush the server promises nothing more than what a write gives, and
            // without trim there is nothing to discard: both succeed at once.
            DevOp::Flush if !info.flush => {
                return self.ready.push(Completion {
                    tag,
                    result: Ok(None),
                });
            }
            DevOp::Trim { .. } if !info.trim => {
                return self.ready.push(Completion {
                    tag,
                    result: Ok(None),
                });
            }
            DevOp::Flush => (CommandKind::Flush, "flush", 0),
            DevOp::Trim { offset, len } => {
                let Ok(len) = u32::try_from(len) else {
                    // Trims are advisory: one too long for a single NBD request is skipped.
                    return self.ready.push(Completion {
                        tag,
                        result: Ok(None),
                    });
                };
                (
                    CommandKind::Trim {
                        offset,
                        len,
                        fua: false,
                    },
                    "trim",
                    offset,
                )
            }
        };
        let sent = Sent {
            tag,
            what,
            offset,
            at: self.clock.now(),
            flush_after,
            write: None,
            refused,
        };
        self.send(cmd, sent, fua_asked);
    }

    fn send(&mut self, cmd: CommandKind, mut sent: Sent, fua_asked: bool) {
        let sender = self
            .sender
            .as_mut()
            .expect("sender present while not broken");
        let (tag, what, offset) = (sent.tag, sent.what, sent.offset);
        match sender.send(&cmd) {
            Ok(handle) => {
                if let CommandKind::Write { data, .. } = cmd {
                    sent.write = Some((data, fua_asked));
                }
                self.pending.insert(handle, sent);
            }
            Err(NbdError::InvalidRequest(m)) => self.fail(tag, format!("{what} at {offset}: {m}")),
            Err(e) => {
                self.fail(tag, format!("{what} at {offset}: {e}"));
                self.give_up(format!("connection lost: {e}"));
            }
        }
    }

    /// The connection is unusable: fail everything sent and queued, now and from now on,
    /// and shut the socket so the receiver thread ends.
    fn give_up(&mut self, why: String) {
        if let Some(mut s) = self.sender.take() {
            s.abort();
        }
        for (_, p) in std::mem::take(&mut self.pending) {
            self.fail(p.tag, format!("{} at {}: {why}", p.what, p.offset));
        }
        for q in std::mem::take(&mut self.waiting) {
            self.fail(q.tag, why.clone());
        }
        self.broken = Some(why);
    }

    fn oldest_sent(&self) -> Option<Nanos> {
        self.pending.values().map(|p| p.at).min()
    }

    fn on_reply(&mut self, reply: Reply) {
        match reply {
            Ok((handle, result)) => {
                let Some(p) = self.pending.remove(&handle) else {
                    tracing::error!(member = %self.name, handle, "reply for an unknown handle");
                    return;
                };
                let (tag, what, offset) = (p.tag, p.what, p.offset);
                let now = self.clock.now();
                if matches!(result, Err(NbdError::Server(ErrorCode::NoSpc)))
                    && let Some((data, fua)) = p.write
                {
                    let since = p.refused.unwrap_or(now);
                    if self.no_space.may_hold(since, now) {
                        let write = DevOp::Write {
                            offset,
                            data: Data::Bytes(data),
                            fua,
                        };
                        return self.no_space.hold(&self.name, tag, write, since, now);
                    }
                }
                if p.refused.is_some() && result.is_ok() {
                    self.no_space.written(&self.name, now);
                }
                if p.flush_after && result.is_ok() && self.broken.is_none() {
                    let flush = Sent {
                        what: "flush after a write asking for FUA",
                        at: now,
                        flush_after: false,
                        write: None,
                        ..p
                    };
                    return self.send(CommandKind::Flush, flush, false);
                }
                let result = result
                    .map(|d| d.map(Data::Bytes))
                    .map_err(|e| DevError(format!("{}: {what} at {offset}: {e}", self.name)));
                self.ready.push(Completion { tag, result });
            }
            Err(e) => {
                self.sender = None;
                self.give_up(format!("connection lost: {e}"));
            }
        }
    }
}

/// The receiver thread: replies to the loop until the connection ends.
fn receive(rx: &mut fusionraid_nbd::ClientReceiver, tx: &SyncSender<Reply>, waker: &Waker) {
    loop {
        let r = rx.recv();
        let end = r.is_err();
        if tx.send(r).is_err() {
            return; // the member is gone
        }
        waker.wake();
        if end {
            return;
        }
    }
}

impl Member for NbdMember {
    fn name(&self) -> &str {
        &self.name
    }
    fn size_bytes(&self) -> u64 {
        self.info.size
    }

    fn submit(&mut self, tag: u64, op: DevOp, _now: Nanos) {
        if self.pending.len() < MAX_INFLIGHT && self.waiting.is_empty() {
            self.start(Queued::new(tag, op));
        } else {
            self.waiting.push_back(Queued::new(tag, op));
        }
    }

    fn reap(&mut self, now: Nanos, out: &mut Vec<Completion>) {
        loop {
            match self.replies.try_recv() {
                Ok(r) => self.on_reply(r),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    if self.broken.is_none() {
                        self.on_reply(Err(NbdError::Disconnected));
                    }
                    break;
                }
            }
        }
        if self.broken.is_none()
            && self
                .oldest_sent()
                .is_some_and(|t| self.clock.now() >= t.saturating_add(self.reply_timeout))
        {
            let secs = self.reply_timeout as f64 / 1e9;
            self.give_up(format!("the server has not answered for {secs} s"));
        }
        self.no_space.requeue_due(now, &mut self.waiting);
        while self.pending.len() < MAX_INFLIGHT {
            let Some(q) = self.waiting.pop_front() else {
                break;
            };
            self.start(q);
        }
        out.append(&mut self.ready);
    }

    fn next_deadline(&self) -> Option<Nanos> {
        // Wake to give the server up even if nothing else happens meanwhile.
        let timeout = self
            .oldest_sent()
            .map(|t| t.saturating_add(self.reply_timeout));
        timeout.into_iter().chain(self.no_space.next_retry()).min()
    }

    fn inflight(&self) -> usize {
        self.pending.len() + self.waiting.len() + self.ready.len() + self.no_space.len()
    }

    fn notes(&self) -> Vec<String> {
        self.no_space.note().into_iter().collect()
    }

    fn failed(&mut self) {
        if self.broken.is_none() {
            self.give_up("the pool failed this member".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusionraid_nbd::{Backend, Command, Completer, MemBackend, Server};
    use std::sync::Mutex;

    /// Serves `backend` on a socket in `dir`; the server, a waker for a member, and the
    /// member's URI.
    fn serve(
        dir: &std::path::Path,
        backend: Arc<dyn Backend>,
    ) -> (fusionraid_nbd::ServerHandle, Arc<Waker>, String) {
        let sock = dir.join("m.sock");
        let server = Server::new(backend)
            .bind_unix(&sock)
            .unwrap()
            .start()
            .unwrap();
        let waker = Arc::new(Waker::new().unwrap());
        let uri = format!("nbd+unix:///m?socket={}", sock.display());
        (server, waker, uri)
    }

    /// A server whose storage hangs: it takes requests and never answers them.
    struct Hung {
        info: ExportInfo,
        held: Mutex<Vec<Completer>>,
    }

    impl Backend for Hung {
        fn exports(&self) -> Vec<ExportInfo> {
            vec![self.info.clone()]
        }
        fn submit(&self, _export: usize, _cmd: Command, done: Completer) {
            self.held.lock().unwrap().push(done);
        }
    }

    /// A member whose server stops answering must not keep its requests pending for good
    /// (every write with a copy on it would wait forever, and a server that also stops
    /// reading would block the loop thread in a send, freezing the whole pool, status
    /// included): the member gives the connection up after the reply timeout, everything
    /// it holds fails, and the engine fails the member and serves degraded.
    #[test]
    fn a_server_that_stops_answering_is_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let backend = Arc::new(Hung {
            info: ExportInfo::new("m", 8 << 20),
            held: Mutex::new(Vec::new()),
        });
        let (server, waker, uri) = serve(dir.path(), backend.clone());
        let clock = crate::Clock::new();
        let mut m = NbdMember::connect("hung", &uri, waker.clone(), clock).unwrap();
        m.reply_timeout = 200_000_000;
        let n = MAX_INFLIGHT + 8;
        for i in 0..n as u64 {
            m.submit(
                i,
                DevOp::Write {
                    offset: i * 4096,
                    data: Data::Bytes(vec![1; 4096]),
                    fua: false,
                },
                0,
            );
        }
        let deadline = m
            .next_deadline()
            .expect("a deadline while requests are pending");
        let mut out = Vec::new();
        // Reap as the loop does: at its deadline (or any earlier wake-up), until it gives up.
        for _ in 0..1000 {
            m.reap(clock.now(), &mut out);
            if !out.is_empty() {
                break;
            }
            waker.prepare_sleep();
            waker.wait(Some(clock.until(deadline).max(Duration::from_millis(1))));
        }
        assert_eq!(out.len(), n, "every operation fails at once");
        assert!(clock.now() >= deadline);
        assert!(
            out.iter().all(|c| c
                .result
                .as_ref()
                .is_err_and(|e| e.0.contains("has not answered"))),
            "{out:?}"
        );
        assert_eq!(m.inflight(), 0);
        assert_eq!(m.next_deadline(), None);
        // And so does everything after.
        m.submit(99, DevOp::Flush, 0);
        m.reap(0, &mut out);
        assert!(out.last().is_some_and(|c| c.tag == 99 && c.result.is_err()));
        drop(m);
        backend.held.lock().unwrap().clear();
        server.shutdown();
    }

    /// A member the pool failed closes its connection (a server waits for its clients
    /// before it exits), and everything sent to it later fails at once.
    #[test]
    fn a_failed_member_closes_its_connection() {
        let dir = tempfile::tempdir().unwrap();
        let backend = Arc::new(MemBackend::new(ExportInfo::new("m", 8 << 20)));
        let (server, waker, uri) = serve(dir.path(), backend);
        let mut m = NbdMember::connect("m", &uri, waker, crate::Clock::new()).unwrap();
        assert_eq!(server.connections(), 1);
        m.failed();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while server.connections() > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the connection stays open"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        m.submit(7, DevOp::Flush, 0);
        let mut out = Vec::new();
        m.reap(0, &mut out);
        assert!(
            out.iter().any(|c| c.tag == 7 && c.result.is_err()),
            "{out:?}"
        );
        server.shutdown();
    }

    /// Logs the kind of every command, in order, and serves them from memory.
    struct Logged {
        mem: MemBackend,
        log: Mutex<Vec<String>>,
    }

    impl Backend for Logged {
        fn exports(&self) -> Vec<ExportInfo> {
            self.mem.exports()
        }
        fn submit(&self, export: usize, cmd: Command, done: Completer) {
            let what = match &cmd.kind {
                fusionraid_nbd::CommandKind::Write { fua, .. } => format!("write fua={fua}"),
                fusionraid_nbd::CommandKind::Flush => "flush".to_string(),
                other => format!("{other:?}"),
            };
            self.log.lock().unwrap().push(what);
            self.mem.submit(export, cmd, done);
        }
    }

    /// An export with FLUSH but no FUA (a volatile cache the server can only flush): a write
    /// the engine asks to be durable completes only after a FLUSH that follows it, or the
    /// journal would call a commit durable while it sits in that cache.
    #[test]
    fn a_fua_write_to_an_export_without_fua_is_followed_by_a_flush() {
        let dir = tempfile::tempdir().unwrap();
        let mut info = ExportInfo::new("m", 8 << 20);
        info.fua = false;
        assert!(info.flush, "the test needs an export that offers FLUSH");
        let backend = Arc::new(Logged {
            mem: MemBackend::new(info),
            log: Mutex::new(Vec::new()),
        });
        let (server, waker, uri) = serve(dir.path(), backend.clone());
        let mut m = NbdMember::connect("nofua", &uri, waker.clone(), crate::Clock::new()).unwrap();
        for (tag, fua) in [(1, true), (2, false)] {
            let data = Data::Bytes(vec![tag as u8; 4096]);
            let op = DevOp::Write {
                offset: tag * 4096,
                data,
                fua,
            };
            m.submit(tag, op, 0);
            let mut out = Vec::new();
            for _ in 0..1000 {
                m.reap(0, &mut out);
                if !out.is_empty() {
                    break;
                }
                waker.prepare_sleep();
                waker.wait(Some(Duration::from_millis(10)));
            }
            assert_eq!(out.len(), 1);
            assert!(out[0].tag == tag && out[0].result.is_ok(), "{out:?}");
        }
        let log = backend.log.lock().unwrap().clone();
        assert_eq!(log, ["write fua=false", "flush", "write fua=false"]);
        drop(m);
        server.shutdown();
    }

    #[test]
    fn pipelined_round_trip_against_our_server() {
        let dir = tempfile::tempdir().unwrap();
        let info = ExportInfo::new("m", 8 << 20).with_trim(true);
        let (server, waker, uri) = serve(dir.path(), Arc::new(MemBackend::new(info)));
        let mut m = NbdMember::connect("remote", &uri, waker.clone(), crate::Clock::new()).unwrap();
        assert_eq!(m.size_bytes(), 8 << 20);
        let n = 100u64;
        for i in 0..n {
            m.submit(
                i,
                DevOp::Write {
                    offset: i * 65536,
                    data: Data::Bytes(vec![i as u8; 65536]),
                    fua: i % 2 == 0,
                },
                0,
            );
        }
        m.submit(n, DevOp::Flush, 0);
        m.submit(
            n + 1,
            DevOp::Trim {
                offset: 0,
                len: 65536,
            },
            0,
        );
        let mut out = Vec::new();
        while out.len() < n as usize + 2 {
            m.reap(0, &mut out);
            waker.prepare_sleep();
            waker.wait(Some(Duration::from_millis(20)));
        }
        assert!(out.iter().all(|c| c.result.is_ok()), "{out:?}");
        let clock = crate::Clock::new();
        let got = crate::member::run_sync(
            &mut m,
            DevOp::Read {
                offset: 5 * 65536,
                len: 65536,
            },
            &clock,
            &waker,
            Duration::from_secs(5),
        )
        .unwrap()
        .unwrap();
        assert_eq!(got, vec![5u8; 65536]);
        server.shutdown();
        // The connection is gone: operations fail instead of hanging.
        let r = crate::member::run_sync(
            &mut m,
            DevOp::Read {
                offset: 0,
                len: 4096,
            },
            &clock,
            &waker,
            Duration::from_secs(20),
        );
        assert!(
            matches!(r, Err(crate::member::SyncIoError::Device(_))),
            "{r:?}"
        );
    }
}
