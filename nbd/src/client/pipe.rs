//! The two halves of a client connection in the transmission phase.
//!
//! [`ClientSender`] validates and sends requests and returns their handles;
//! [`ClientReceiver`] reads replies in whatever order the server sends them.
//! They can live on different threads, which is how a caller keeps many
//! requests in flight. They share only the table of pending handles, which
//! the receiver needs because a simple reply does not say whether data
//! follows: only the request (a READ of `len` bytes) does.

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::net::Shutdown;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::backend::CommandKind;
use crate::error::{ErrorCode, NbdError};
use crate::export::ExportInfo;
use crate::proto::consts::*;
use crate::proto::transmission::{RequestHeader, SIMPLE_REPLY_LEN, SimpleReply};
use crate::stream::{NbdStream, read_header};

/// Payloads up to this size are sent in one write together with the header.
const COALESCE_LIMIT: usize = 16 * 1024;

/// The outcome of one command: `Some(data)` for a successful read, `None`
/// for other successes, [`NbdError::Server`] when the server said no.
pub type CommandResult = Result<Option<Vec<u8>>, NbdError>;

pub(crate) struct Shared {
    pub info: ExportInfo,
    /// Largest READ/WRITE we send: the advertised maximum, capped at 32 MiB
    /// so a server advertising "no limit" cannot make us allocate gigabytes.
    pub max_payload: u32,
    pending: Mutex<HashMap<u64, Expect>>,
}

#[derive(Debug, Clone, Copy)]
enum Expect {
    Data(u32),
    NoData,
}

impl Shared {
    pub fn new(info: ExportInfo) -> Self {
        let max_payload = info.block_size.maximum.min(DEFAULT_MAX_PAYLOAD);
        Shared {
            info,
            max_payload,
            pending: Mutex::new(HashMap::new()),
        }
    }

    fn pending(&self) -> MutexGuard<'_, HashMap<u64, Expect>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Sending half.
pub struct ClientSender {
    out: NbdStream,
    shared: Arc<Shared>,
    next_handle: u64,
    disconnected: bool,
}

/// Receiving half.
pub struct ClientReceiver {
    input: BufReader<NbdStream>,
    shared: Arc<Shared>,
}

pub(crate) fn halves(
    stream: NbdStream,
    shared: Shared,
) -> std::io::Result<(ClientSender, ClientReceiver)> {
    let shared = Arc::new(shared);
    // Buffered: a reply header and a small read's data in one syscall.
    let input = BufReader::with_capacity(64 * 1024, stream.try_clone()?);
    Ok((
        ClientSender {
            out: stream,
            shared: shared.clone(),
            next_handle: 1,
            disconnected: false,
        },
        ClientReceiver { input, shared },
    ))
}

impl ClientSender {
    pub fn info(&self) -> &ExportInfo {
        &self.shared.info
    }

    /// Largest READ/WRITE length this client will send.
    pub fn max_payload(&self) -> u32 {
        self.shared.max_payload
    }

    /// Bound how long a send may block on a server that stopped reading its socket (None:
    /// forever); a send that times out fails with an I/O error.
    pub fn set_write_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        self.out.set_write_timeout(t)
    }

    /// Shut the connection down in both directions at once, without NBD_CMD_DISC (for a
    /// server given up on): the receiving half's blocked read returns.
    pub fn abort(&mut self) {
        self.disconnected = true;
        let _ = self.out.shutdown(std::net::Shutdown::Both);
    }

    /// Sends one command and returns its handle. The command is checked
    /// against what the server advertised first; a command the server must
    /// not receive is refused with [`NbdError::InvalidRequest`].
    pub fn send(&mut self, cmd: &CommandKind) -> Result<u64, NbdError> {
        match cmd {
            CommandKind::Read { offset, len } => {
                self.check_range(*offset, u64::from(*len), true)?;
                self.issue(NBD_CMD_READ, 0, *offset, *len, Expect::Data(*len), &[])
            }
            CommandKind::Write { offset, data, fua } => self.send_write(*offset, data, *fua),
            CommandKind::Flush => {
                self.require(self.shared.info.flush, "flush")?;
                self.issue(NBD_CMD_FLUSH, 0, 0, 0, Expect::NoData, &[])
            }
            CommandKind::Trim { offset, len, fua } => {
                self.require(self.shared.info.trim, "trim")?;
                let flags = self.write_flags(*fua)?;
                self.check_range(*offset, u64::from(*len), false)?;
                self.issue(NBD_CMD_TRIM, flags, *offset, *len, Expect::NoData, &[])
            }
            CommandKind::WriteZeroes {
                offset,
                len,
                no_hole,
                fua,
            } => {
                self.require(self.shared.info.write_zeroes, "write zeroes")?;
                let mut flags = self.write_flags(*fua)?;
                if *no_hole {
                    flags |= NBD_CMD_FLAG_NO_HOLE;
                }
                self.check_range(*offset, u64::from(*len), false)?;
                self.issue(
                    NBD_CMD_WRITE_ZEROES,
                    flags,
                    *offset,
                    *len,
                    Expect::NoData,
                    &[],
                )
            }
        }
    }

    /// Sends a WRITE from a borrowed buffer (no copy into a `CommandKind`).
    pub fn send_write(&mut self, offset: u64, data: &[u8], fua: bool) -> Result<u64, NbdError> {
        let flags = self.write_flags(fua)?;
        self.check_range(offset, data.len() as u64, true)?;
        self.issue(
            NBD_CMD_WRITE,
            flags,
            offset,
            data.len() as u32,
            Expect::NoData,
            data,
        )
    }

    /// Sends NBD_CMD_DISC and closes the sending direction. The server
    /// still answers requests already sent; the receiver gets those replies
    /// and then [`NbdError::Disconnected`].
    pub fn disconnect(mut self) -> Result<(), NbdError> {
        self.send_disc()
    }

    fn send_disc(&mut self) -> Result<(), NbdError> {
        if self.disconnected {
            return Ok(());
        }
        self.disconnected = true;
        let h = RequestHeader {
            flags: 0,
            typ: NBD_CMD_DISC,
            handle: self.next_handle,
            offset: 0,
            len: 0,
        };
        self.out.write_all(&h.encode())?;
        let _ = self.out.shutdown(Shutdown::Write);
        Ok(())
    }

    fn require(&self, advertised: bool, what: &str) -> Result<(), NbdError> {
        if advertised {
            Ok(())
        } else {
            Err(NbdError::InvalidRequest(format!(
                "the server does not offer {what}"
            )))
        }
    }

    /// Flags for a command that modifies the export.
    fn write_flags(&self, fua: bool) -> Result<u16, NbdError> {
        if self.shared.info.read_only {
            return Err(NbdError::InvalidRequest("the export is read-only".into()));
        }
        if fua {
            self.require(self.shared.info.fua, "FUA")?;
            return Ok(NBD_CMD_FLAG_FUA);
        }
        Ok(0)
    }

    /// Alignment, bounds and (for payload commands) the size limit.
    fn check_range(&self, offset: u64, len: u64, payload: bool) -> Result<(), NbdError> {
        let info = &self.shared.info;
        let min = u64::from(info.block_size.minimum.max(1));
        if payload && len > u64::from(self.shared.max_payload) {
            return Err(NbdError::InvalidRequest(format!(
                "length {len} exceeds the maximum payload {}",
                self.shared.max_payload
            )));
        }
        if !offset.is_multiple_of(min) || !len.is_multiple_of(min) {
            return Err(NbdError::InvalidRequest(format!(
                "offset {offset} / length {len} not aligned to the {min}-byte minimum block size"
            )));
        }
        match offset.checked_add(len) {
            Some(end) if end <= info.size => Ok(()),
            _ => Err(NbdError::InvalidRequest(format!(
                "range {offset}+{len} beyond the export size {}",
                info.size
            ))),
        }
    }

    fn issue(
        &mut self,
        typ: u16,
        flags: u16,
        offset: u64,
        len: u32,
        expect: Expect,
        payload: &[u8],
    ) -> Result<u64, NbdError> {
        if self.disconnected {
            return Err(NbdError::InvalidRequest("already disconnected".into()));
        }
        let handle = self.next_handle;
        self.next_handle = self.next_handle.wrapping_add(1);
        let header = RequestHeader {
            flags,
            typ,
            handle,
            offset,
            len,
        }
        .encode();
        // Registered before sending so the reply can never beat the entry.
        self.shared.pending().insert(handle, expect);
        let sent = if payload.len() <= COALESCE_LIMIT {
            let mut msg = Vec::with_capacity(header.len() + payload.len());
            msg.extend_from_slice(&header);
            msg.extend_from_slice(payload);
            self.out.write_all(&msg)
        } else {
            self.out
                .write_all(&header)
                .and_then(|()| self.out.write_all(payload))
        };
        if let Err(e) = sent {
            self.shared.pending().remove(&handle);
            return Err(e.into());
        }
        Ok(handle)
    }
}

impl Drop for ClientSender {
    /// A client must end with NBD_CMD_DISC rather than just hanging up;
    /// best effort, bounded by a short write timeout.
    fn drop(&mut self) {
        if !self.disconnected {
            let _ = self.out.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = self.send_disc();
        }
    }
}

impl ClientReceiver {
    pub fn info(&self) -> &ExportInfo {
        &self.shared.info
    }

    /// Requests sent and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.shared.pending().len()
    }

    /// Waits for the next reply, whichever request it answers. The outer
    /// error means the connection is unusable; the inner one is that
    /// command's result.
    pub fn recv(&mut self) -> Result<(u64, CommandResult), NbdError> {
        let Some(b) = read_header::<_, SIMPLE_REPLY_LEN>(&mut self.input)? else {
            return Err(NbdError::Disconnected);
        };
        let reply = SimpleReply::decode(&b)?;
        let expect = self.shared.pending().remove(&reply.handle).ok_or_else(|| {
            NbdError::Protocol(format!("reply for unknown handle {:#x}", reply.handle))
        })?;
        if let Some(code) = ErrorCode::from_wire(reply.error) {
            return Ok((reply.handle, Err(NbdError::Server(code))));
        }
        match expect {
            Expect::NoData => Ok((reply.handle, Ok(None))),
            Expect::Data(len) => {
                let mut data = Vec::with_capacity(len as usize);
                (&mut self.input)
                    .take(u64::from(len))
                    .read_to_end(&mut data)?;
                if data.len() != len as usize {
                    return Err(NbdError::Disconnected);
                }
                Ok((reply.handle, Ok(Some(data))))
            }
        }
    }
}
