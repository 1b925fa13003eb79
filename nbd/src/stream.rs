//! One socket type for both transports, so the server and client code does not
//! care whether it runs over TCP or a Unix socket.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::error::NbdError;

/// A connected TCP or Unix stream socket.
#[derive(Debug)]
pub enum NbdStream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl NbdStream {
    /// A second handle on the same socket, so one thread can read while
    /// another writes.
    pub fn try_clone(&self) -> io::Result<NbdStream> {
        Ok(match self {
            NbdStream::Tcp(s) => NbdStream::Tcp(s.try_clone()?),
            NbdStream::Unix(s) => NbdStream::Unix(s.try_clone()?),
        })
    }

    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            NbdStream::Tcp(s) => s.shutdown(how),
            NbdStream::Unix(s) => s.shutdown(how),
        }
    }

    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            NbdStream::Tcp(s) => s.set_read_timeout(t),
            NbdStream::Unix(s) => s.set_read_timeout(t),
        }
    }

    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            NbdStream::Tcp(s) => s.set_write_timeout(t),
            NbdStream::Unix(s) => s.set_write_timeout(t),
        }
    }

    /// Bytes the kernel holds for reading now (what the client sent and nobody read yet):
    /// 0 when it can not tell.
    pub fn ready_bytes(&self) -> usize {
        use std::os::fd::AsRawFd;
        let fd = match self {
            NbdStream::Tcp(s) => s.as_raw_fd(),
            NbdStream::Unix(s) => s.as_raw_fd(),
        };
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one c_int through the pointer, which is valid for it.
        let r = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
        if r < 0 { 0 } else { n.max(0) as usize }
    }

    /// Reads what the kernel holds now into `buf`, without waiting: `Ok(0)` at EOF,
    /// `WouldBlock` when nothing has arrived.
    pub fn recv_now(&self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = match self {
            NbdStream::Tcp(s) => s.as_raw_fd(),
            NbdStream::Unix(s) => s.as_raw_fd(),
        };
        loop {
            // SAFETY: `fd` is an open socket owned by `self`; recv writes at most
            // `buf.len()` bytes into `buf`, which is valid for them.
            let n =
                unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// The spec asks both ends to disable Nagle: a reply header waiting for
    /// an ACK would add a round trip to every small request.
    pub fn set_nodelay(&self) -> io::Result<()> {
        match self {
            NbdStream::Tcp(s) => s.set_nodelay(true),
            NbdStream::Unix(_) => Ok(()),
        }
    }
}

impl NbdStream {
    /// Sends what fits in the socket buffer now, without blocking: the bytes sent (possibly
    /// fewer than given), or `WouldBlock` when nothing fits. Never raises SIGPIPE.
    pub(crate) fn send_now(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let fd = match self {
            NbdStream::Tcp(s) => s.as_raw_fd(),
            NbdStream::Unix(s) => s.as_raw_fd(),
        };
        // SAFETY: an all-zero msghdr is valid (no name, no control data).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        // IoSlice is ABI-compatible with iovec (std guarantees it on Unix); sendmsg only
        // reads through the pointer.
        msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = bufs.len() as _;
        loop {
            // SAFETY: `fd` is an open socket owned by `self`, and `msg` points at `bufs`,
            // which outlive the call.
            let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl From<TcpStream> for NbdStream {
    fn from(s: TcpStream) -> Self {
        NbdStream::Tcp(s)
    }
}

impl From<UnixStream> for NbdStream {
    fn from(s: UnixStream) -> Self {
        NbdStream::Unix(s)
    }
}

impl Read for NbdStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            NbdStream::Tcp(s) => s.read(buf),
            NbdStream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for NbdStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            NbdStream::Tcp(s) => s.write(buf),
            NbdStream::Unix(s) => s.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            NbdStream::Tcp(s) => s.write_vectored(bufs),
            NbdStream::Unix(s) => s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            NbdStream::Tcp(s) => s.flush(),
            NbdStream::Unix(s) => s.flush(),
        }
    }
}

/// Blocking writes through a shared reference, so the writer thread and the completers'
/// non-blocking sends use one socket handle.
impl Write for &NbdStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            NbdStream::Tcp(s) => (&*s).write(buf),
            NbdStream::Unix(s) => (&*s).write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            NbdStream::Tcp(s) => (&*s).write_vectored(bufs),
            NbdStream::Unix(s) => (&*s).write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads exactly `buf.len()` bytes; EOF anywhere is [`NbdError::Disconnected`].
pub(crate) fn read_exact<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> Result<(), NbdError> {
    r.read_exact(buf).map_err(eof_is_disconnect)
}

/// Reads a fixed-size message header. `Ok(None)` means the peer closed the
/// connection cleanly *between* messages; EOF in the middle of the header is
/// [`NbdError::Disconnected`].
pub(crate) fn read_header<R: Read + ?Sized, const N: usize>(
    r: &mut R,
) -> Result<Option<[u8; N]>, NbdError> {
    let mut buf = [0u8; N];
    let mut got = 0;
    while got < N {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(NbdError::Disconnected),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(eof_is_disconnect(e)),
        }
    }
    Ok(Some(buf))
}

/// Reads and throws away `n` bytes (a payload we refuse but must skip to
/// stay in sync with the peer), in small pieces so memory stays bounded.
pub(crate) fn discard<R: Read + ?Sized>(r: &mut R, n: u64) -> Result<(), NbdError> {
    let copied = io::copy(&mut r.take(n), &mut io::sink())?;
    if copied < n {
        return Err(NbdError::Disconnected);
    }
    Ok(())
}

fn eof_is_disconnect(e: io::Error) -> NbdError {
    match e.kind() {
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::BrokenPipe => NbdError::Disconnected,
        _ => NbdError::Io(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_eof_cases() {
        let mut empty: &[u8] = &[];
        assert!(matches!(read_header::<_, 4>(&mut empty), Ok(None)));
        let mut short: &[u8] = &[1, 2];
        assert!(matches!(
            read_header::<_, 4>(&mut short),
            Err(NbdError::Disconnected)
        ));
        let mut full: &[u8] = &[1, 2, 3, 4, 5];
        assert_eq!(read_header::<_, 4>(&mut full).unwrap(), Some([1, 2, 3, 4]));
    }

    #[test]
    fn discard_detects_short_input() {
        let mut r: &[u8] = &[0; 10];
        assert!(discard(&mut r, 10).is_ok());
        let mut r: &[u8] = &[0; 10];
        assert!(matches!(discard(&mut r, 11), Err(NbdError::Disconnected)));
    }
}
