//! Where one connection's replies go: straight into the socket from the thread that
//! finished the command when that can be done without waiting, else through the writer
//! thread.
//!
//! A reply handed to the writer thread costs a thread wake-up and a context switch (and, on
//! a small machine, often preempts the thread that completed it: the engine's event loop).
//! So a completer first tries to send a small reply itself, with a non-blocking send, under
//! a lock that the writer thread also holds while it writes; replies never interleave. If
//! the socket buffer is full (a client slow to read) or the writer is busy, the reply goes
//! to the writer thread, so a slow client can stall only its own writer, never the
//! completing thread. A reply the socket took only in part is left here (with the count of
//! bytes sent), and the writer thread is told to send the rest before anything else.
//! Replies completed in a batch (`batch.rs`) take the same path together, in one vectored
//! send.

use std::io::IoSlice;
use std::net::Shutdown;
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use crate::backend::ReplyMsg;
use crate::error::ErrorCode;
use crate::proto::transmission::{SIMPLE_REPLY_LEN, SimpleReply};
use crate::stream::NbdStream;

use super::inflight::Inflight;

/// Largest read payload sent from the completing thread. For larger ones the copy into
/// the socket dominates and is better done beside the completing thread (the engine loop,
/// the serial part of the server) than on it; with 64 KiB inline, 64 KiB sequential reads
/// ran about 15% slower (docs/BENCHMARKS-HISTORY.md, "the read path after the reply
/// changes").
const INLINE_MAX: usize = 16 * 1024;
/// Replies per send: two pieces each, within IOV_MAX (1024).
const MAX_REPLIES_PER_SEND: usize = 256;

/// What the writer thread receives.
pub(crate) enum WriterMsg {
    /// A reply to write.
    Reply(ReplyMsg),
    /// A completer left the unsent part of a reply in the sink.
    Resume,
}

pub(crate) struct ReplySink {
    pub stream: NbdStream,
    pub inflight: Arc<Inflight>,
    state: Mutex<SinkState>,
}

#[derive(Default)]
pub(crate) struct SinkState {
    /// Replies the socket took only in part (their first `partial_sent` bytes): the rest
    /// must go out before any other byte. They hold their slots until then.
    pub partial: Vec<ReplyMsg>,
    pub partial_sent: usize,
    /// The socket failed: replies are dropped (their budget released).
    pub broken: bool,
}

impl ReplySink {
    pub fn new(stream: NbdStream, inflight: Arc<Inflight>) -> Self {
        ReplySink {
            stream,
            inflight,
            state: Mutex::new(SinkState::default()),
        }
    }

    /// The writer thread's hold on the socket.
    pub fn lock(&self) -> MutexGuard<'_, SinkState> {
        // Every update of the state is a single assignment: a panic elsewhere can not
        // leave it torn, so poisoning is ignored.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The client can no longer receive replies: shut the socket so the reader stops too,
    /// and stop admitting requests.
    pub fn fail(&self, st: &mut SinkState, e: &std::io::Error) {
        if !st.broken {
            tracing::debug!("writing reply failed, closing connection: {e}");
            st.broken = true;
            let _ = self.stream.shutdown(Shutdown::Both);
            self.inflight.close();
        }
    }

    /// Delivers `msg`: with this thread's batch if one is open (see `batch.rs`); else now,
    /// from this thread, if the socket takes it without waiting; else through the writer
    /// thread. Never blocks on the client (the channel has room for every command the
    /// connection admits, and this one holds a slot).
    pub fn deliver(self: &Arc<Self>, tx: &SyncSender<WriterMsg>, msg: ReplyMsg) {
        if msg.read_len.is_some_and(|l| l as usize > INLINE_MAX) {
            // An error means the writer is gone (the connection is over): nobody to tell.
            let _ = tx.send(WriterMsg::Reply(msg));
            return;
        }
        let Some(msg) = super::batch::cork(self, tx, msg) else {
            return;
        };
        self.deliver_all(tx, vec![msg]);
    }

    /// Delivers small replies together: in one send from this thread if the socket takes
    /// them now, else through the writer thread.
    pub fn deliver_all(&self, tx: &SyncSender<WriterMsg>, mut msgs: Vec<ReplyMsg>) {
        while !msgs.is_empty() {
            // sendmsg takes at most IOV_MAX (1024) pieces, two per reply.
            let rest = msgs.split_off(msgs.len().min(MAX_REPLIES_PER_SEND));
            let chunk = std::mem::replace(&mut msgs, rest);
            for m in self.send(tx, chunk) {
                // Each reply holds a slot, so the channel has room for it. An error means
                // the writer is gone (the connection is over): nobody left to tell.
                let _ = tx.send(WriterMsg::Reply(m));
            }
        }
    }

    /// Sends `msgs` if the socket takes at least part of them now: what it does not take
    /// is left for the writer thread, ahead of everything else. Gives them back when
    /// nothing could be sent now (a busy writer, earlier bytes still waiting, or a full
    /// socket): the caller queues them.
    fn send(&self, tx: &SyncSender<WriterMsg>, msgs: Vec<ReplyMsg>) -> Vec<ReplyMsg> {
        // A busy writer (or a contended lock) takes the slow path: never wait here.
        let mut st = match self.state.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return msgs,
        };
        let budget: u64 = msgs.iter().map(|m| m.budget).sum();
        if st.broken {
            drop(st);
            self.inflight.release_n(msgs.len(), budget);
            return Vec::new();
        }
        if !st.partial.is_empty() {
            return msgs;
        }
        let (sent, total) = {
            let frames: Vec<_> = msgs.iter().map(frame).collect();
            let bufs: Vec<IoSlice<'_>> = frames
                .iter()
                .flat_map(|(h, p)| [IoSlice::new(h), IoSlice::new(p)])
                .collect();
            let total: usize = bufs.iter().map(|b| b.len()).sum();
            (self.stream.send_now(&bufs), total)
        };
        match sent {
            Ok(n) if n == total => {
                drop(st);
                self.inflight.release_n(msgs.len(), budget);
            }
            Ok(n) => {
                // The replies move to the sink as they are, with the count of bytes sent:
                // the writer sends the rest from their own buffers.
                st.partial = msgs;
                st.partial_sent = n;
                drop(st);
                let _ = tx.send(WriterMsg::Resume);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return msgs,
            Err(e) => {
                self.fail(&mut st, &e);
                drop(st);
                self.inflight.release_n(msgs.len(), budget);
            }
        }
        Vec::new()
    }
}

/// The wire form of a reply: its header, and the read data that follows it (empty for
/// other commands and errors).
pub(crate) fn frame(msg: &ReplyMsg) -> ([u8; SIMPLE_REPLY_LEN], &[u8]) {
    let result = match (&msg.result, msg.read_len) {
        (Ok(data), Some(len)) if data.len() != len as usize => {
            tracing::error!(
                handle = msg.handle,
                got = data.len(),
                want = len,
                "backend returned a read of the wrong length; replying EIO"
            );
            Err(ErrorCode::Io)
        }
        (Ok(data), Some(_)) => Ok(data.as_slice()),
        (Ok(_), None) => Ok(&[][..]),
        (Err(e), _) => Err(*e),
    };
    let (error, payload) = match result {
        Ok(d) => (0, d),
        Err(e) => (e.to_wire(), &[][..]),
    };
    let header = SimpleReply {
        error,
        handle: msg.handle,
    }
    .encode();
    (header, payload)
}

#[cfg(test)]
#[path = "sink_tests.rs"]
mod tests;
