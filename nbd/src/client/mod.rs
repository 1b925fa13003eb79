//! The NBD client: connect, negotiate, then either use the blocking helpers
//! on [`Client`] or [`Client::split`] it into a pipelined sender/receiver.
//!
//! ```no_run
//! use fusionraid_nbd::Client;
//!
//! let mut c = Client::connect("nbd+unix:///disk?socket=/tmp/disk.sock")?;
//! c.write_at(&[0xab; 4096], 0)?;
//! let mut buf = [0u8; 4096];
//! c.read_at(&mut buf, 0)?;
//! c.flush()?;
//! c.disconnect()?;
//! # Ok::<(), fusionraid_nbd::NbdError>(())
//! ```

mod handshake;
mod pipe;
mod uri;

use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::path::Path;
use std::time::Duration;

use crate::backend::CommandKind;
use crate::error::NbdError;
use crate::export::ExportInfo;
use crate::stream::NbdStream;

pub use pipe::{ClientReceiver, ClientSender, CommandResult};
pub use uri::NbdUri;

/// Bound on each read/write during the handshake, so connecting to
/// something that is not an NBD server cannot hang forever.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// A connected client in the transmission phase.
pub struct Client {
    tx: ClientSender,
    rx: ClientReceiver,
    flags: u16,
}

impl Client {
    /// Connects to `nbd://host[:port]/export` or
    /// `nbd+unix:///export?socket=PATH`.
    pub fn connect(uri: &str) -> Result<Client, NbdError> {
        Client::connect_uri(&NbdUri::parse(uri)?)
    }

    pub fn connect_uri(uri: &NbdUri) -> Result<Client, NbdError> {
        match uri {
            NbdUri::Tcp { host, port, export } => {
                Client::connect_tcp((host.as_str(), *port), export)
            }
            NbdUri::Unix { socket, export } => Client::connect_unix(socket, export),
        }
    }

    /// A path starting with a NUL byte names a Linux abstract socket.
    pub fn connect_unix(path: impl AsRef<Path>, export: &str) -> Result<Client, NbdError> {
        let bytes = path.as_ref().as_os_str().as_bytes();
        let stream = match bytes.strip_prefix(b"\0") {
            Some(name) => {
                use std::os::linux::net::SocketAddrExt;
                UnixStream::connect_addr(&SocketAddr::from_abstract_name(name)?)?
            }
            None => UnixStream::connect(path)?,
        };
        Client::from_stream(stream, export)
    }

    pub fn connect_tcp(addr: impl ToSocketAddrs, export: &str) -> Result<Client, NbdError> {
        Client::from_stream(TcpStream::connect(addr)?, export)
    }

    /// Negotiates `export` over an already-connected socket.
    pub fn from_stream(stream: impl Into<NbdStream>, export: &str) -> Result<Client, NbdError> {
        let mut stream = stream.into();
        stream.set_nodelay()?;
        stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
        stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT))?;
        let (info, flags) = handshake::handshake(&mut stream, export)?;
        stream.set_read_timeout(None)?;
        stream.set_write_timeout(None)?;
        let (tx, rx) = pipe::halves(stream, pipe::Shared::new(info))?;
        Ok(Client { tx, rx, flags })
    }

    /// What the server told us about the export.
    pub fn info(&self) -> &ExportInfo {
        self.tx.info()
    }

    pub fn size(&self) -> u64 {
        self.info().size
    }

    /// The raw transmission flags, for anything `ExportInfo` does not model.
    pub fn transmission_flags(&self) -> u16 {
        self.flags
    }

    /// Separates the halves for pipelining from two threads.
    pub fn split(self) -> (ClientSender, ClientReceiver) {
        (self.tx, self.rx)
    }

    /// Reads `buf.len()` bytes at `offset`, in as many requests as the
    /// server's maximum payload requires.
    pub fn read_at(&mut self, buf: &mut [u8], offset: u64) -> Result<(), NbdError> {
        let step = self.chunk();
        for (i, piece) in buf.chunks_mut(step).enumerate() {
            let off = offset + (i * step) as u64;
            let data = self.call(&CommandKind::Read {
                offset: off,
                len: piece.len() as u32,
            })?;
            match data {
                Some(d) if d.len() == piece.len() => piece.copy_from_slice(&d),
                _ => return Err(NbdError::Protocol("read reply without data".into())),
            }
        }
        Ok(())
    }

    pub fn write_at(&mut self, buf: &[u8], offset: u64) -> Result<(), NbdError> {
        self.write_at_inner(buf, offset, false)
    }

    /// Like [`Client::write_at`], with NBD_CMD_FLAG_FUA on every request.
    pub fn write_fua_at(&mut self, buf: &[u8], offset: u64) -> Result<(), NbdError> {
        self.write_at_inner(buf, offset, true)
    }

    fn write_at_inner(&mut self, buf: &[u8], offset: u64, fua: bool) -> Result<(), NbdError> {
        let step = self.chunk();
        for (i, piece) in buf.chunks(step).enumerate() {
            let h = self.tx.send_write(offset + (i * step) as u64, piece, fua)?;
            self.wait(h)?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> Result<(), NbdError> {
        self.call(&CommandKind::Flush).map(drop)
    }

    pub fn trim(&mut self, offset: u64, len: u64) -> Result<(), NbdError> {
        self.ranged(offset, len, |offset, len| CommandKind::Trim {
            offset,
            len,
            fua: false,
        })
    }

    pub fn write_zeroes(&mut self, offset: u64, len: u64, no_hole: bool) -> Result<(), NbdError> {
        self.ranged(offset, len, |offset, len| CommandKind::WriteZeroes {
            offset,
            len,
            no_hole,
            fua: false,
        })
    }

    /// Soft disconnect (NBD_CMD_DISC), as the spec asks clients to end.
    pub fn disconnect(self) -> Result<(), NbdError> {
        self.tx.disconnect()
    }

    /// Largest aligned READ/WRITE piece.
    fn chunk(&self) -> usize {
        let min = self.info().block_size.minimum.max(1);
        let max = self.tx.max_payload();
        (max - max % min).max(min) as usize
    }

    /// Splits a payload-less range command at the 32-bit length limit.
    fn ranged(
        &mut self,
        mut offset: u64,
        mut len: u64,
        make: impl Fn(u64, u32) -> CommandKind,
    ) -> Result<(), NbdError> {
        let min = u64::from(self.info().block_size.minimum.max(1));
        let step = u64::from(u32::MAX) - u64::from(u32::MAX) % min;
        while len > 0 {
            let n = len.min(step);
            self.call(&make(offset, n as u32))?;
            offset += n;
            len -= n;
        }
        Ok(())
    }

    fn call(&mut self, cmd: &CommandKind) -> Result<Option<Vec<u8>>, NbdError> {
        let h = self.tx.send(cmd)?;
        self.wait(h)
    }

    /// The blocking helpers keep one request in flight, so the next reply
    /// must be for `handle`.
    fn wait(&mut self, handle: u64) -> Result<Option<Vec<u8>>, NbdError> {
        let (h, result) = self.rx.recv()?;
        if h != handle {
            return Err(NbdError::Protocol(format!(
                "reply for handle {h:#x} while waiting for {handle:#x}"
            )));
        }
        result
    }
}
