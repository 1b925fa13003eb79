//! One client connection: handshake, then the transmission phase with a
//! reader (this thread) and a writer thread joined by a bounded queue.
//!
//! The reader parses and validates requests and submits them to the backend.
//! Completions reach the socket through [`Completer`]s: directly when the
//! socket takes them at once, else through the writer (see `sink.rs`). On NBD_CMD_DISC,
//! EOF, a protocol error or server shutdown the reader stops; the writer
//! keeps going until every admitted request has been answered, and only then
//! is the socket closed, as the spec asks for NBD_CMD_DISC.

use std::io::Read;
use std::net::Shutdown;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{SyncSender, sync_channel};

use super::sink::{ReplySink, WriterMsg};
use crate::backend::{Backend, Command, CommandKind, Completer, ReplyMsg};
use crate::error::{ErrorCode, NbdError};
use crate::proto::transmission::{REQUEST_HEADER_LEN, RequestHeader};
use crate::stream::{NbdStream, discard, read_header};

use super::ServerConfig;
use super::budget::ByteBudget;
use super::handshake::{Negotiated, negotiate};
use super::inflight::Inflight;
use super::sock_reader::SockReader;
use super::validate::{Action, Verdict, check};
use super::writer;

/// Socket read buffer: many 28-byte headers per syscall under load, while
/// large payloads bypass it.
const READ_BUFFER: usize = 64 * 1024;
/// The longest burst of already-sent bytes read before the backend runs its turns
/// (`Reader::idle_unless_buffered`), in reads (a request's header, then its payload) and
/// bytes: 8 requests of 4 KiB, 4 of 64 KiB, one of 256 KiB.
const BURST_READS: usize = 16;
const BURST_BYTES: usize = 256 * 1024;

/// Serves one connection to completion; its payload bytes in flight count against
/// `budget`, shared with the server's other connections.
pub(crate) fn serve(
    mut stream: NbdStream,
    backend: Arc<dyn Backend>,
    config: &ServerConfig,
    budget: &Arc<ByteBudget>,
    shutting_down: &AtomicBool,
) -> Result<(), NbdError> {
    stream.set_nodelay()?;
    // A client that stalls mid-handshake must not pin a thread forever.
    stream.set_read_timeout(Some(config.handshake_timeout))?;
    stream.set_write_timeout(Some(config.handshake_timeout))?;
    let negotiated = negotiate(&mut stream, &*backend, config, shutting_down);
    let negotiated = match negotiated {
        Ok(Some(n)) => n,
        Ok(None) => {
            let _ = stream.shutdown(Shutdown::Both);
            return Ok(());
        }
        Err(e) => {
            let _ = stream.shutdown(Shutdown::Both);
            return Err(e);
        }
    };
    stream.set_read_timeout(None)?;
    stream.set_write_timeout(None)?;
    tracing::debug!(export = %negotiated.export.name, "entering transmission");
    let result = transmission(&stream, negotiated, backend, config, budget);
    let _ = stream.shutdown(Shutdown::Both);
    result
}

fn transmission(
    stream: &NbdStream,
    negotiated: Negotiated,
    backend: Arc<dyn Backend>,
    config: &ServerConfig,
    budget: &Arc<ByteBudget>,
) -> Result<(), NbdError> {
    let inflight = Arc::new(Inflight::new(
        config.max_in_flight,
        config.max_in_flight_bytes,
        budget.clone(),
    ));
    // Capacity = the in-flight bound: every queued message holds a slot (a
    // reply, or the notice of a partly sent one), so a completer's send can
    // never block a backend thread.
    let (tx, rx) = sync_channel::<WriterMsg>(config.max_in_flight.max(1));
    let sink = Arc::new(ReplySink::new(stream.try_clone()?, inflight.clone()));
    let writer_sink = sink.clone();
    let writer = std::thread::Builder::new()
        .name("nbd-writer".into())
        .spawn(move || writer::run(&writer_sink, rx))?;

    let mut reader = Reader {
        input: SockReader::new(stream.try_clone()?, READ_BUFFER),
        tx,
        sink,
        inflight: &inflight,
        backend: &*backend,
        negotiated: &negotiated,
        max_payload: config.max_payload,
        burst: (0, 0),
    };
    let result = reader.run();
    // Dropping the reader drops its queue sender; the writer exits once the
    // last outstanding completer has replied.
    drop(reader);
    if writer.join().is_err() {
        tracing::error!("nbd writer thread panicked");
    }
    result
}

struct Reader<'a> {
    input: SockReader,
    tx: SyncSender<WriterMsg>,
    sink: Arc<ReplySink>,
    inflight: &'a Inflight,
    backend: &'a dyn Backend,
    negotiated: &'a Negotiated,
    max_payload: u32,
    /// Reads since the backend last ran its turns without waiting for the client:
    /// (reads, bytes).
    burst: (usize, usize),
}

impl Reader<'_> {
    fn run(&mut self) -> Result<(), NbdError> {
        loop {
            // Backpressure: at the bound we stop reading the socket.
            if !self.inflight.acquire_slot(|| self.backend.idle()) {
                return Ok(());
            }
            match self.one_request() {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// Handles one request while holding one slot (which is passed on to
    /// its reply or released here). Returns false at the end of the stream.
    fn one_request(&mut self) -> Result<bool, NbdError> {
        self.idle_unless_buffered(REQUEST_HEADER_LEN);
        let header = read_header::<_, REQUEST_HEADER_LEN>(&mut self.input)
            .and_then(|b| b.map(|b| RequestHeader::decode(&b)).transpose());
        let h = match header {
            Ok(Some(h)) => h,
            Ok(None) => {
                // EOF between requests: a hard disconnect by the client.
                self.inflight.release(0);
                return Ok(false);
            }
            Err(e) => {
                self.inflight.release(0);
                return Err(e);
            }
        };
        match check(&h, &self.negotiated.export, self.max_payload) {
            Verdict::Accept(action) => self.submit(h.handle, action),
            Verdict::Noop => {
                self.reply_now(h.handle, Ok(()));
                Ok(true)
            }
            Verdict::Reject { error, skip } => {
                self.backend.rejected(self.negotiated.export_index, error);
                self.idle_unless_buffered(skip as usize);
                if let Err(e) = discard(&mut self.input, u64::from(skip)) {
                    self.inflight.release(0);
                    return Err(e);
                }
                self.reply_now(h.handle, Err(error));
                Ok(true)
            }
            Verdict::Fatal { error, reason } => {
                self.backend.rejected(self.negotiated.export_index, error);
                self.reply_now(h.handle, Err(error));
                Err(NbdError::Protocol(reason))
            }
        }
    }

    fn submit(&mut self, handle: u64, action: Action) -> Result<bool, NbdError> {
        let (kind, read_len, budget) = match action {
            Action::Read { offset, len } => {
                if !self
                    .inflight
                    .acquire_bytes(u64::from(len), || self.backend.idle())
                {
                    self.inflight.release(0);
                    return Ok(false);
                }
                (CommandKind::Read { offset, len }, Some(len), u64::from(len))
            }
            Action::Write { offset, len, fua } => {
                if !self
                    .inflight
                    .acquire_bytes(u64::from(len), || self.backend.idle())
                {
                    self.inflight.release(0);
                    return Ok(false);
                }
                // The whole payload is read before the backend hears of the
                // command, so a truncated write never reaches storage.
                let data = match self.read_payload(len) {
                    Ok(d) => d,
                    Err(e) => {
                        self.inflight.release(u64::from(len));
                        return Err(e);
                    }
                };
                (
                    CommandKind::Write { offset, data, fua },
                    None,
                    u64::from(len),
                )
            }
            Action::Flush => (CommandKind::Flush, None, 0),
            Action::Trim { offset, len, fua } => (CommandKind::Trim { offset, len, fua }, None, 0),
            Action::WriteZeroes {
                offset,
                len,
                no_hole,
                fua,
            } => (
                CommandKind::WriteZeroes {
                    offset,
                    len,
                    no_hole,
                    fua,
                },
                None,
                0,
            ),
            Action::Disconnect => {
                // No reply; in-flight requests still finish (see module doc).
                self.inflight.release(0);
                return Ok(false);
            }
        };
        let done =
            Completer::connection(self.tx.clone(), self.sink.clone(), handle, read_len, budget);
        self.backend
            .submit(self.negotiated.export_index, Command { handle, kind }, done);
        Ok(true)
    }

    /// Tells the backend when the next `need` bytes are not buffered yet: reading them may
    /// wait for the client, which may itself be waiting for replies to what it sent. Bytes
    /// the client already sent count as buffered for up to [`BURST_READS`] reads and
    /// [`BURST_BYTES`] in a row, so the requests of one burst reach the engine together
    /// (stripe gathering then sees a sequential burst whole, and their replies leave in one
    /// send) while the first of them is not held back for long.
    fn idle_unless_buffered(&mut self, need: usize) {
        if self.input.buffered() >= need {
            return;
        }
        let (reads, bytes) = self.burst;
        if reads < BURST_READS && bytes + need <= BURST_BYTES && self.ready(need) {
            self.burst = (reads + 1, bytes + need);
            return;
        }
        self.burst = (0, 0);
        self.backend.idle();
    }

    /// Has the client sent the next `need` bytes already? Up to a buffer's worth, the
    /// buffer is topped up to find out (the read that would fetch them anyway); beyond, the
    /// kernel is asked how much it holds.
    fn ready(&mut self, need: usize) -> bool {
        if need <= self.input.capacity() {
            self.input.fill_ready() >= need
        } else {
            self.input.buffered() + self.input.stream().ready_bytes() >= need
        }
    }

    fn read_payload(&mut self, len: u32) -> Result<Vec<u8>, NbdError> {
        self.idle_unless_buffered(len as usize);
        let mut data = Vec::with_capacity(len as usize);
        (&mut self.input)
            .take(u64::from(len))
            .read_to_end(&mut data)?;
        if data.len() != len as usize {
            return Err(NbdError::Disconnected);
        }
        Ok(data)
    }

    /// A reply decided by the server itself; it goes through the sink so it
    /// cannot interleave with backend replies.
    fn reply_now(&self, handle: u64, result: Result<(), ErrorCode>) {
        // The slot held for this request guarantees queue space; if the
        // writer is gone, the next acquire_slot will notice.
        let msg = ReplyMsg {
            handle,
            result: result.map(|()| Vec::new()),
            read_len: None,
            budget: 0,
        };
        self.sink.deliver(&self.tx, msg);
    }
}
