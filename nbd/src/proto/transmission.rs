//! Transmission-phase wire messages: the request header and the simple reply
//! header. Payloads (write data, read data) follow these headers on the wire
//! and are handled by the server and client loops, which know the lengths.

use super::consts::*;
use super::cursor::Cursor;
use crate::error::NbdError;

/// Size in bytes of a request header on the wire.
pub const REQUEST_HEADER_LEN: usize = 28;
/// Size in bytes of a simple reply header on the wire.
pub const SIMPLE_REPLY_LEN: usize = 16;

/// A request header exactly as on the wire, before any validation of the
/// command type or flags (that is the server's job, because the right
/// reaction depends on negotiated state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    pub flags: u16,
    pub typ: u16,
    pub handle: u64,
    pub offset: u64,
    pub len: u32,
}

impl RequestHeader {
    pub fn encode(&self) -> [u8; REQUEST_HEADER_LEN] {
        let mut b = [0u8; REQUEST_HEADER_LEN];
        b[0..4].copy_from_slice(&NBD_REQUEST_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&self.flags.to_be_bytes());
        b[6..8].copy_from_slice(&self.typ.to_be_bytes());
        b[8..16].copy_from_slice(&self.handle.to_be_bytes());
        b[16..24].copy_from_slice(&self.offset.to_be_bytes());
        b[24..28].copy_from_slice(&self.len.to_be_bytes());
        b
    }

    /// Fails only on a bad magic: after that the stream cannot be
    /// resynchronised, so the caller must drop the connection.
    pub fn decode(b: &[u8; REQUEST_HEADER_LEN]) -> Result<Self, NbdError> {
        let mut c = Cursor::new(b);
        let magic = c.u32()?;
        if magic != NBD_REQUEST_MAGIC {
            return Err(NbdError::Protocol(format!(
                "bad request magic {magic:#010x}"
            )));
        }
        Ok(RequestHeader {
            flags: c.u16()?,
            typ: c.u16()?,
            handle: c.u64()?,
            offset: c.u64()?,
            len: c.u32()?,
        })
    }
}

/// A simple reply header. For a successful `NBD_CMD_READ` it is followed by
/// exactly the requested number of bytes; otherwise by nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimpleReply {
    pub error: u32,
    pub handle: u64,
}

impl SimpleReply {
    pub fn encode(&self) -> [u8; SIMPLE_REPLY_LEN] {
        let mut b = [0u8; SIMPLE_REPLY_LEN];
        b[0..4].copy_from_slice(&NBD_SIMPLE_REPLY_MAGIC.to_be_bytes());
        b[4..8].copy_from_slice(&self.error.to_be_bytes());
        b[8..16].copy_from_slice(&self.handle.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8; SIMPLE_REPLY_LEN]) -> Result<Self, NbdError> {
        let mut c = Cursor::new(b);
        let magic = c.u32()?;
        match magic {
            NBD_SIMPLE_REPLY_MAGIC => Ok(SimpleReply {
                error: c.u32()?,
                handle: c.u64()?,
            }),
            NBD_STRUCTURED_REPLY_MAGIC => Err(NbdError::Protocol(
                "structured reply received but never negotiated".into(),
            )),
            other => Err(NbdError::Protocol(format!("bad reply magic {other:#010x}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn request_round_trip(flags: u16, typ: u16, handle: u64, offset: u64, len: u32) {
            let h = RequestHeader { flags, typ, handle, offset, len };
            prop_assert_eq!(RequestHeader::decode(&h.encode()).unwrap(), h);
        }

        #[test]
        fn reply_round_trip(error: u32, handle: u64) {
            let r = SimpleReply { error, handle };
            prop_assert_eq!(SimpleReply::decode(&r.encode()).unwrap(), r);
        }

        #[test]
        fn request_decode_never_panics(bytes in proptest::array::uniform28(any::<u8>())) {
            let magic_ok = bytes[0..4] == NBD_REQUEST_MAGIC.to_be_bytes();
            prop_assert_eq!(RequestHeader::decode(&bytes).is_ok(), magic_ok);
        }

        #[test]
        fn reply_decode_never_panics(bytes in proptest::array::uniform16(any::<u8>())) {
            let magic_ok = bytes[0..4] == NBD_SIMPLE_REPLY_MAGIC.to_be_bytes();
            prop_assert_eq!(SimpleReply::decode(&bytes).is_ok(), magic_ok);
        }
    }

    #[test]
    fn request_layout_matches_spec() {
        let h = RequestHeader {
            flags: NBD_CMD_FLAG_FUA,
            typ: NBD_CMD_WRITE,
            handle: 0x0102_0304_0506_0708,
            offset: 0x1000,
            len: 0x200,
        };
        let b = h.encode();
        assert_eq!(
            b,
            [
                0x25, 0x60, 0x95, 0x13, // magic
                0x00, 0x01, // flags
                0x00, 0x01, // type
                1, 2, 3, 4, 5, 6, 7, 8, // handle
                0, 0, 0, 0, 0, 0, 0x10, 0, // offset
                0, 0, 2, 0, // length
            ]
        );
    }

    #[test]
    fn structured_reply_is_rejected() {
        let mut b = SimpleReply {
            error: 0,
            handle: 1,
        }
        .encode();
        b[0..4].copy_from_slice(&NBD_STRUCTURED_REPLY_MAGIC.to_be_bytes());
        assert!(matches!(
            SimpleReply::decode(&b),
            Err(NbdError::Protocol(m)) if m.contains("structured")
        ));
    }
}
