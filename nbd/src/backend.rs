//! The interface between the NBD server and whatever stores the bytes.
//!
//! The server parses and validates requests and hands each one to
//! [`Backend::submit`] together with a [`Completer`]. The backend may finish
//! the command inline, on another thread, or from an event loop, in any
//! order; the reply goes out when [`Completer::complete`] is called. This is
//! what lets one connection keep a deep queue in flight.

use std::sync::Arc;
use std::sync::mpsc::SyncSender;

use crate::error::ErrorCode;
use crate::export::ExportInfo;
use crate::server::sink::{ReplySink, WriterMsg};

/// Storage behind an NBD server.
pub trait Backend: Send + Sync + 'static {
    /// The exports on offer. Called during each handshake; the index of an
    /// export in this list is the `export` argument of [`Backend::submit`],
    /// so the list should be stable while clients are connected.
    fn exports(&self) -> Vec<ExportInfo>;

    /// Starts one command. The server has already checked it against the
    /// export (range, alignment, read-only, advertised features), so the
    /// backend only sees requests a correct client may send.
    ///
    /// `done` must eventually be completed, from any thread. Dropping it
    /// uncompleted replies `NBD_EIO` (so a lost completion cannot hang a
    /// client), but is treated as a backend bug and logged.
    ///
    /// `submit` runs on the connection's reader thread. It may block to
    /// push back on a client (the reader then stops reading the socket), but
    /// must not wait for another command of the same connection to finish.
    fn submit(&self, export: usize, cmd: Command, done: Completer);

    /// The connection has submitted every request it holds and is about to wait for the
    /// client. A backend that defers work while requests keep coming (to handle them in
    /// batches) must not defer it past this call. Runs on the connection's reader thread.
    fn idle(&self) {}

    /// The server refused a request for `export` before the backend saw it (out of range,
    /// misaligned, an unknown flag, a write to a read-only export, an unknown command) and
    /// answered `error`. A backend that counts requests counts these as failed ones. Runs on
    /// the connection's reader thread; must not block.
    fn rejected(&self, _export: usize, _error: ErrorCode) {}
}

/// One validated request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The client's cookie; the reply carries it back. Informational for
    /// the backend (the [`Completer`] already knows where to reply).
    pub handle: u64,
    pub kind: CommandKind,
}

/// What a command does. Offsets and lengths are in bytes and lie within the
/// export, aligned to its advertised minimum block size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandKind {
    /// Complete with exactly `len` bytes of data.
    Read { offset: u64, len: u32 },
    /// With `fua`, reply only once the data is on stable storage.
    Write {
        offset: u64,
        data: Vec<u8>,
        fua: bool,
    },
    /// Reply once every write already replied to is on stable storage.
    Flush,
    /// The range may be discarded; its contents are undefined afterwards.
    Trim { offset: u64, len: u32, fua: bool },
    /// The range must read back as zeroes. With `no_hole` it must also stay
    /// allocated (no deallocation as a shortcut).
    WriteZeroes {
        offset: u64,
        len: u32,
        no_hole: bool,
        fua: bool,
    },
}

impl CommandKind {
    /// True for commands that change the export's contents.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            CommandKind::Write { .. } | CommandKind::Trim { .. } | CommandKind::WriteZeroes { .. }
        )
    }
}

/// A finished command on its way to the client.
pub(crate) struct ReplyMsg {
    pub handle: u64,
    pub result: Result<Vec<u8>, ErrorCode>,
    /// `Some(len)` for reads: a successful result must carry exactly `len`
    /// bytes, or the simple-reply stream would lose sync.
    pub read_len: Option<u32>,
    /// Bytes of the in-flight budget this command holds until its reply is
    /// written.
    pub budget: u64,
}

enum Target {
    /// A server connection: sent at once when possible, else by its writer thread.
    Connection {
        tx: SyncSender<WriterMsg>,
        sink: Arc<ReplySink>,
        read_len: Option<u32>,
        budget: u64,
    },
    Callback(Box<dyn FnOnce(Result<Vec<u8>, ErrorCode>) + Send>),
}

/// The one-shot reply path for a submitted command. Cheap to move between
/// threads; completing it never blocks on the client (a reply the socket can not take at
/// once goes to the connection's writer thread, whose queue has room for every command
/// the connection allows in flight).
pub struct Completer {
    handle: u64,
    target: Option<Target>,
}

impl Completer {
    pub(crate) fn connection(
        tx: SyncSender<WriterMsg>,
        sink: Arc<ReplySink>,
        handle: u64,
        read_len: Option<u32>,
        budget: u64,
    ) -> Self {
        Completer {
            handle,
            target: Some(Target::Connection {
                tx,
                sink,
                read_len,
                budget,
            }),
        }
    }

    /// A completer that calls `f` instead of replying to a connection; for
    /// driving a [`Backend`] directly (tests, local callers).
    pub fn from_fn(
        handle: u64,
        f: impl FnOnce(Result<Vec<u8>, ErrorCode>) + Send + 'static,
    ) -> Self {
        Completer {
            handle,
            target: Some(Target::Callback(Box::new(f))),
        }
    }

    /// The cookie of the command this completes.
    pub fn handle(&self) -> u64 {
        self.handle
    }

    /// Finishes the command. For a read, `Ok` must hold exactly the
    /// requested number of bytes (anything else is turned into `NBD_EIO`);
    /// for other commands `Ok` data is ignored.
    pub fn complete(mut self, result: Result<Vec<u8>, ErrorCode>) {
        self.send(result);
    }

    /// Success without data (writes, flush, trim, write-zeroes).
    pub fn ok(self) {
        self.complete(Ok(Vec::new()));
    }

    /// Failure with the given error value.
    pub fn fail(self, e: ErrorCode) {
        self.complete(Err(e));
    }

    fn send(&mut self, result: Result<Vec<u8>, ErrorCode>) {
        match self.target.take() {
            Some(Target::Connection {
                tx,
                sink,
                read_len,
                budget,
            }) => {
                let msg = ReplyMsg {
                    handle: self.handle,
                    result,
                    read_len,
                    budget,
                };
                sink.deliver(&tx, msg);
            }
            Some(Target::Callback(f)) => f(result),
            None => {}
        }
    }
}

impl Drop for Completer {
    fn drop(&mut self) {
        if self.target.is_some() {
            tracing::error!(
                handle = self.handle,
                "backend dropped a command without completing it; replying EIO"
            );
            self.send(Err(ErrorCode::Io));
        }
    }
}

impl std::fmt::Debug for Completer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completer")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn dropped_completer_reports_eio() {
        let got = Arc::new(Mutex::new(None));
        let g = got.clone();
        drop(Completer::from_fn(7, move |r| *g.lock().unwrap() = Some(r)));
        assert_eq!(*got.lock().unwrap(), Some(Err(ErrorCode::Io)));
    }

    #[test]
    fn completes_exactly_once() {
        let count = Arc::new(Mutex::new(0));
        let c = count.clone();
        Completer::from_fn(1, move |r| {
            assert_eq!(r, Ok(vec![1, 2]));
            *c.lock().unwrap() += 1;
        })
        .complete(Ok(vec![1, 2]));
        assert_eq!(*count.lock().unwrap(), 1);
    }
}
