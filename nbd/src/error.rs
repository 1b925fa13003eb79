//! Error types: [`ErrorCode`] is what travels in a reply's error field;
//! [`NbdError`] is what our client and server functions return.

use std::fmt;
use std::io;

use crate::proto::consts::*;

/// A transmission-phase error value, restricted by the spec to this set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `NBD_EPERM`: e.g. a write to a read-only export.
    Perm,
    /// `NBD_EIO`: the backend failed.
    Io,
    /// `NBD_ENOMEM`: the spec asks servers to avoid this one.
    NoMem,
    /// `NBD_EINVAL`: out of range, misaligned, unknown command or flag.
    Inval,
    /// `NBD_ENOSPC`: a write beyond the end of the export, or out of space.
    NoSpc,
    /// `NBD_EOVERFLOW`: a payload-less request too large to serve.
    Overflow,
    /// `NBD_ENOTSUP`: only for fast-zero requests.
    NotSup,
    /// `NBD_ESHUTDOWN`: the server is shutting down.
    Shutdown,
}

impl ErrorCode {
    pub fn to_wire(self) -> u32 {
        match self {
            ErrorCode::Perm => NBD_EPERM,
            ErrorCode::Io => NBD_EIO,
            ErrorCode::NoMem => NBD_ENOMEM,
            ErrorCode::Inval => NBD_EINVAL,
            ErrorCode::NoSpc => NBD_ENOSPC,
            ErrorCode::Overflow => NBD_EOVERFLOW,
            ErrorCode::NotSup => NBD_ENOTSUP,
            ErrorCode::Shutdown => NBD_ESHUTDOWN,
        }
    }

    /// `None` for 0 (success). The spec tells clients to read an unexpected
    /// value as `NBD_EINVAL` rather than disconnecting.
    pub fn from_wire(v: u32) -> Option<Self> {
        Some(match v {
            0 => return None,
            NBD_EPERM => ErrorCode::Perm,
            NBD_EIO => ErrorCode::Io,
            NBD_ENOMEM => ErrorCode::NoMem,
            NBD_EINVAL => ErrorCode::Inval,
            NBD_ENOSPC => ErrorCode::NoSpc,
            NBD_EOVERFLOW => ErrorCode::Overflow,
            NBD_ENOTSUP => ErrorCode::NotSup,
            NBD_ESHUTDOWN => ErrorCode::Shutdown,
            _ => ErrorCode::Inval,
        })
    }

    /// Maps an OS error from a backend to the closest spec value (the spec
    /// asks for EDQUOT and EFBIG to become ENOSPC).
    pub fn from_io(e: &io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) | Some(libc::EROFS) => ErrorCode::Perm,
            Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG) => ErrorCode::NoSpc,
            Some(libc::EINVAL) => ErrorCode::Inval,
            Some(libc::ENOMEM) => ErrorCode::NoMem,
            Some(libc::EOVERFLOW) => ErrorCode::Overflow,
            Some(libc::EOPNOTSUPP) => ErrorCode::NotSup,
            Some(libc::ESHUTDOWN) => ErrorCode::Shutdown,
            _ => ErrorCode::Io,
        }
    }
}

impl From<io::Error> for ErrorCode {
    fn from(e: io::Error) -> Self {
        ErrorCode::from_io(&e)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            ErrorCode::Perm => "NBD_EPERM (operation not permitted)",
            ErrorCode::Io => "NBD_EIO (input/output error)",
            ErrorCode::NoMem => "NBD_ENOMEM (cannot allocate memory)",
            ErrorCode::Inval => "NBD_EINVAL (invalid argument)",
            ErrorCode::NoSpc => "NBD_ENOSPC (no space left on device)",
            ErrorCode::Overflow => "NBD_EOVERFLOW (value too large)",
            ErrorCode::NotSup => "NBD_ENOTSUP (operation not supported)",
            ErrorCode::Shutdown => "NBD_ESHUTDOWN (server shutting down)",
        };
        f.write_str(s)
    }
}

impl std::error::Error for ErrorCode {}

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum NbdError {
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    /// The peer closed the connection (EOF where a message was expected).
    #[error("connection closed by peer")]
    Disconnected,
    /// The peer broke a MUST of the spec; the connection is unusable.
    #[error("NBD protocol violation: {0}")]
    Protocol(String),
    /// The peer needs something we deliberately do not implement.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// The server answered an option with an error reply.
    #[error("server refused {option} with {reply}: {message}")]
    OptionRefused {
        option: String,
        reply: String,
        message: String,
    },
    /// The server completed a command with an error.
    #[error("server replied {0}")]
    Server(ErrorCode),
    /// A request the client refused to send (it would break the export's
    /// advertised size, alignment or capabilities).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error("invalid NBD URI {uri:?}: {reason}")]
    InvalidUri { uri: String, reason: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_values_round_trip_and_unknown_maps_to_einval() {
        for c in [
            ErrorCode::Perm,
            ErrorCode::Io,
            ErrorCode::NoMem,
            ErrorCode::Inval,
            ErrorCode::NoSpc,
            ErrorCode::Overflow,
            ErrorCode::NotSup,
            ErrorCode::Shutdown,
        ] {
            assert_eq!(ErrorCode::from_wire(c.to_wire()), Some(c));
        }
        assert_eq!(ErrorCode::from_wire(0), None);
        assert_eq!(ErrorCode::from_wire(9999), Some(ErrorCode::Inval));
    }

    #[test]
    fn os_errors_map_per_spec() {
        let e = |n| io::Error::from_raw_os_error(n);
        assert_eq!(ErrorCode::from_io(&e(libc::EDQUOT)), ErrorCode::NoSpc);
        assert_eq!(ErrorCode::from_io(&e(libc::EFBIG)), ErrorCode::NoSpc);
        assert_eq!(ErrorCode::from_io(&e(libc::EROFS)), ErrorCode::Perm);
        assert_eq!(ErrorCode::from_io(&e(libc::EBADF)), ErrorCode::Io);
        assert_eq!(ErrorCode::from(io::Error::other("x")), ErrorCode::Io);
    }
}
