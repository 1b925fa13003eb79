//! The engine's inputs and outputs: user requests and replies, device I/O commands and their
//! completions. These are plain data; drivers (sim, io) translate them to and from the world.

use crate::types::{DiskId, Nanos};

/// A payload: real bytes, or only a length in size-only mode (large performance simulations,
/// where no data is kept and parity is not computed, but every device I/O is still issued).
#[derive(Clone, PartialEq, Eq)]
pub enum Data {
    Bytes(Vec<u8>),
    /// Bytes several device writes share: the copies of a replicated write each refer to
    /// the user's payload instead of carrying a copy of their own.
    Shared(SharedBytes),
    Size(u64),
}

impl Data {
    pub fn len(&self) -> u64 {
        match self {
            Data::Bytes(b) => b.len() as u64,
            Data::Shared(s) => s.len as u64,
            Data::Size(n) => *n,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Data::Bytes(b) => Some(b),
            Data::Shared(s) => Some(s.as_slice()),
            Data::Size(_) => None,
        }
    }
    /// The bytes, shareable (no copy: a vector becomes the shared buffer).
    pub fn into_shared(self) -> Option<SharedBytes> {
        match self {
            Data::Bytes(b) => Some(SharedBytes::new(b)),
            Data::Shared(s) => Some(s),
            Data::Size(_) => None,
        }
    }
    /// The bytes as a vector of their own (a copy when they are shared with others).
    pub fn into_bytes(self) -> Option<Vec<u8>> {
        match self {
            Data::Bytes(b) => Some(b),
            Data::Shared(s) => Some(s.into_vec()),
            Data::Size(_) => None,
        }
    }
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Data::Bytes(b) => write!(f, "Bytes({})", b.len()),
            Data::Shared(s) => write!(f, "Shared({}+{})", s.start, s.len),
            Data::Size(n) => write!(f, "Size({n})"),
        }
    }
}

/// A range of a buffer that is shared, read-only, by whoever holds a clone.
#[derive(Clone)]
pub struct SharedBytes {
    buf: std::sync::Arc<Vec<u8>>,
    start: usize,
    len: usize,
}

impl SharedBytes {
    /// All of `buf`.
    pub fn new(buf: Vec<u8>) -> Self {
        let len = buf.len();
        SharedBytes {
            buf: std::sync::Arc::new(buf),
            start: 0,
            len,
        }
    }
    /// Bytes `[start, start + len)` of the same buffer.
    #[inline]
    pub fn range(&self, start: usize, len: usize) -> Self {
        assert!(
            start + len <= self.len,
            "range {start}+{len} of {}",
            self.len
        );
        SharedBytes {
            buf: self.buf.clone(),
            start: self.start + start,
            len,
        }
    }
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// True when both refer to one buffer (whatever their ranges).
    pub fn shares_buffer_with(&self, other: &SharedBytes) -> bool {
        std::sync::Arc::ptr_eq(&self.buf, &other.buf)
    }
    /// The bytes as a vector: the buffer itself when this is its only holder and covers
    /// all of it, else a copy.
    pub fn into_vec(self) -> Vec<u8> {
        if self.start == 0 && self.len == self.buf.len() {
            match std::sync::Arc::try_unwrap(self.buf) {
                Ok(v) => v,
                Err(buf) => buf.to_vec(),
            }
        } else {
            self.as_slice().to_vec()
        }
    }
}

impl PartialEq for SharedBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for SharedBytes {}

/// Index of a volume in the pool.
pub type VolumeId = u32;

/// What a user asks of a volume. Offsets and lengths are in bytes and must be multiples of
/// [`crate::PAGE_SIZE`]; the NBD layer advertises that as the minimum block size.
#[derive(Clone, Debug)]
pub enum Op {
    Read {
        offset: u64,
        len: u64,
    },
    Write {
        offset: u64,
        data: Data,
        fua: bool,
    },
    /// Everything acknowledged before this request is durable when it is acknowledged.
    Flush,
    /// The range's content becomes unspecified; whole blocks give their space back.
    Trim {
        offset: u64,
        len: u64,
    },
    /// The range reads as zeros afterwards.
    WriteZeroes {
        offset: u64,
        len: u64,
        fua: bool,
    },
}

impl Op {
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Op::Write { .. } | Op::WriteZeroes { .. } | Op::Trim { .. }
        )
    }
}

/// A user request. `id` is the caller's tag and comes back in the [`Reply`].
#[derive(Clone, Debug)]
pub struct Request {
    pub id: u64,
    pub volume: VolumeId,
    pub op: Op,
}

/// Why a request failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReqError {
    #[error("no such volume {0}")]
    NoVolume(VolumeId),
    #[error("offset {offset} length {len} is outside the volume ({size} bytes)")]
    OutOfRange { offset: u64, len: u64, size: u64 },
    #[error("offset {offset} length {len} is not aligned to {align} bytes")]
    Misaligned { offset: u64, len: u64, align: u64 },
    #[error("payload is {got} bytes but the request says {want}")]
    BadPayload { got: u64, want: u64 },
    #[error("request of {len} bytes is larger than the limit of {max}")]
    TooLarge { len: u64, max: u64 },
    #[error("the engine is full ({0} requests in flight); retry after a reply")]
    Busy(usize),
    #[error("data lost beyond the volume's fault tolerance: {0}")]
    Io(String),
    #[error("no space left in the pool for this write")]
    NoSpace,
}

/// The result of a read that gathered `buf` (None in size-only mode) of `len` bytes, or that
/// failed with `error`: every scheme answers reads this way.
pub fn read_result(
    error: Option<String>,
    buf: Option<Vec<u8>>,
    len: u64,
) -> Result<Option<Data>, ReqError> {
    match error {
        Some(e) => Err(ReqError::Io(e)),
        None => Ok(Some(match buf {
            Some(b) => Data::Bytes(b),
            None => Data::Size(len),
        })),
    }
}

/// The answer to a [`Request`]: read data for reads, nothing otherwise.
#[derive(Clone, Debug)]
pub struct Reply {
    pub id: u64,
    pub result: Result<Option<Data>, ReqError>,
    /// When the request was submitted, so drivers can measure latency without bookkeeping.
    pub submitted_at: Nanos,
}

/// Handle of one device I/O the engine issued; it comes back with the completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IoId(pub u64);

/// A device command. Offsets are in bytes on the member device.
#[derive(Clone, Debug)]
pub enum DevOp {
    Read { offset: u64, len: u64 },
    Write { offset: u64, data: Data, fua: bool },
    Flush,
    Trim { offset: u64, len: u64 },
}

impl DevOp {
    pub fn len(&self) -> u64 {
        match self {
            DevOp::Read { len, .. } | DevOp::Trim { len, .. } => *len,
            DevOp::Write { data, .. } => data.len(),
            DevOp::Flush => 0,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn is_write(&self) -> bool {
        matches!(self, DevOp::Write { .. })
    }
}

/// One device I/O for the driver to perform.
#[derive(Clone, Debug)]
pub struct DeviceIo {
    pub id: IoId,
    pub disk: DiskId,
    pub op: DevOp,
    /// Foreground (on a user request's path) or background (conversion, compaction, rebuild).
    pub background: bool,
}

/// A device-level failure. Any error marks the member failed: SSDs retry internally, so an
/// error that reaches us means the device can no longer be trusted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("device error: {0}")]
pub struct DevError(pub String);

/// The result of a device I/O: read data for reads.
pub type IoResult = Result<Option<Data>, DevError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_bytes_ranges_and_ownership() {
        let all = SharedBytes::new((0..=255u8).collect());
        let mid = all.range(16, 32);
        assert_eq!(mid.as_slice(), &(16..48u8).collect::<Vec<_>>()[..]);
        let inner = mid.range(8, 4);
        assert_eq!(inner.as_slice(), &[24, 25, 26, 27]);
        assert!(inner.shares_buffer_with(&all));
        assert!(!inner.shares_buffer_with(&SharedBytes::new(vec![24, 25, 26, 27])));
        // Equality is by content, like the Vec it stands in for.
        assert_eq!(
            Data::Shared(inner.clone()),
            Data::Shared(SharedBytes::new(vec![24, 25, 26, 27]))
        );
        assert_eq!(Data::Shared(mid.clone()).len(), 32);
        // A part is copied out; the whole buffer of its only holder is handed over.
        assert_eq!(inner.into_vec(), vec![24, 25, 26, 27]);
        let ptr = all.as_slice().as_ptr();
        drop(mid);
        let v = all.into_vec();
        assert_eq!(v.as_ptr(), ptr, "sole holder: no copy");
        assert_eq!(v.len(), 256);
    }

    #[test]
    #[should_panic(expected = "range")]
    fn a_range_past_the_end_panics() {
        SharedBytes::new(vec![0; 8]).range(4, 5);
    }
}
