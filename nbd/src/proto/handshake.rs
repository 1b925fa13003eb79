//! Handshake-phase wire messages (fixed newstyle): the server greeting, option
//! requests, option replies and the payloads of the options we implement.

use super::consts::*;
use super::cursor::Cursor;
use crate::error::NbdError;
use crate::export::BlockSize;

/// NBDMAGIC + IHAVEOPT + 16-bit handshake flags.
pub const GREETING_LEN: usize = 18;
/// IHAVEOPT + option + length.
pub const OPTION_HEADER_LEN: usize = 16;
/// Reply magic + option + reply type + length.
pub const OPTION_REPLY_HEADER_LEN: usize = 20;

pub fn encode_greeting(handshake_flags: u16) -> [u8; GREETING_LEN] {
    let mut b = [0u8; GREETING_LEN];
    b[0..8].copy_from_slice(&NBDMAGIC.to_be_bytes());
    b[8..16].copy_from_slice(&IHAVEOPT.to_be_bytes());
    b[16..18].copy_from_slice(&handshake_flags.to_be_bytes());
    b
}

/// Decodes the server greeting and returns the handshake flags. Oldstyle
/// servers are recognised so the error says why we cannot talk to them.
pub fn decode_greeting(b: &[u8; GREETING_LEN]) -> Result<u16, NbdError> {
    let mut c = Cursor::new(b);
    let magic = c.u64()?;
    if magic != NBDMAGIC {
        return Err(NbdError::Protocol(format!(
            "not an NBD server (magic {magic:#018x})"
        )));
    }
    match c.u64()? {
        IHAVEOPT => c.u16(),
        CLISERV_MAGIC => Err(NbdError::Unsupported(
            "server uses the oldstyle handshake".into(),
        )),
        other => Err(NbdError::Protocol(format!(
            "unknown handshake magic {other:#018x}"
        ))),
    }
}

/// Header of one option sent by the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionHeader {
    pub option: u32,
    pub len: u32,
}

impl OptionHeader {
    pub fn encode(&self) -> [u8; OPTION_HEADER_LEN] {
        let mut b = [0u8; OPTION_HEADER_LEN];
        b[0..8].copy_from_slice(&IHAVEOPT.to_be_bytes());
        b[8..12].copy_from_slice(&self.option.to_be_bytes());
        b[12..16].copy_from_slice(&self.len.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8; OPTION_HEADER_LEN]) -> Result<Self, NbdError> {
        let mut c = Cursor::new(b);
        let magic = c.u64()?;
        if magic != IHAVEOPT {
            return Err(NbdError::Protocol(format!(
                "bad option magic {magic:#018x}"
            )));
        }
        Ok(OptionHeader {
            option: c.u32()?,
            len: c.u32()?,
        })
    }
}

/// Header of one option reply sent by the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionReplyHeader {
    pub option: u32,
    pub reply: u32,
    pub len: u32,
}

impl OptionReplyHeader {
    pub fn encode(&self) -> [u8; OPTION_REPLY_HEADER_LEN] {
        let mut b = [0u8; OPTION_REPLY_HEADER_LEN];
        b[0..8].copy_from_slice(&NBD_REP_MAGIC.to_be_bytes());
        b[8..12].copy_from_slice(&self.option.to_be_bytes());
        b[12..16].copy_from_slice(&self.reply.to_be_bytes());
        b[16..20].copy_from_slice(&self.len.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8; OPTION_REPLY_HEADER_LEN]) -> Result<Self, NbdError> {
        let mut c = Cursor::new(b);
        let magic = c.u64()?;
        if magic != NBD_REP_MAGIC {
            return Err(NbdError::Protocol(format!(
                "bad option reply magic {magic:#018x}"
            )));
        }
        Ok(OptionReplyHeader {
            option: c.u32()?,
            reply: c.u32()?,
            len: c.u32()?,
        })
    }

    pub fn is_error(&self) -> bool {
        self.reply & NBD_REP_FLAG_ERROR != 0
    }
}

/// Payload of `NBD_OPT_INFO` / `NBD_OPT_GO`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfoRequest {
    pub name: String,
    pub requests: Vec<u16>,
}

impl InfoRequest {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(8 + self.name.len() + 2 * self.requests.len());
        b.extend_from_slice(&(self.name.len() as u32).to_be_bytes());
        b.extend_from_slice(self.name.as_bytes());
        b.extend_from_slice(&(self.requests.len() as u16).to_be_bytes());
        for r in &self.requests {
            b.extend_from_slice(&r.to_be_bytes());
        }
        b
    }

    /// Strict: the declared lengths must account for every byte, since a
    /// mismatch means client and server disagree on the layout.
    pub fn decode(data: &[u8]) -> Result<Self, NbdError> {
        let mut c = Cursor::new(data);
        let name_len = c.u32()? as usize;
        if name_len > MAX_STRING_LEN {
            return Err(NbdError::Protocol(format!(
                "export name of {name_len} bytes is too long"
            )));
        }
        let name = decode_string(c.bytes(name_len)?)?;
        let n = c.u16()? as usize;
        if c.remaining() != 2 * n {
            return Err(NbdError::Protocol(format!(
                "{n} information requests need {} bytes, option has {}",
                2 * n,
                c.remaining()
            )));
        }
        let mut requests = Vec::with_capacity(n);
        for _ in 0..n {
            requests.push(c.u16()?);
        }
        Ok(InfoRequest { name, requests })
    }
}

/// One `NBD_REP_INFO` payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Info {
    Export {
        size: u64,
        flags: u16,
    },
    Name(String),
    Description(String),
    BlockSize(BlockSize),
    /// An information type we do not know; clients MUST ignore these.
    Unknown(u16),
}

impl Info {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match self {
            Info::Export { size, flags } => {
                b.extend_from_slice(&NBD_INFO_EXPORT.to_be_bytes());
                b.extend_from_slice(&size.to_be_bytes());
                b.extend_from_slice(&flags.to_be_bytes());
            }
            Info::Name(s) => {
                b.extend_from_slice(&NBD_INFO_NAME.to_be_bytes());
                b.extend_from_slice(s.as_bytes());
            }
            Info::Description(s) => {
                b.extend_from_slice(&NBD_INFO_DESCRIPTION.to_be_bytes());
                b.extend_from_slice(s.as_bytes());
            }
            Info::BlockSize(bs) => {
                b.extend_from_slice(&NBD_INFO_BLOCK_SIZE.to_be_bytes());
                b.extend_from_slice(&bs.minimum.to_be_bytes());
                b.extend_from_slice(&bs.preferred.to_be_bytes());
                b.extend_from_slice(&bs.maximum.to_be_bytes());
            }
            Info::Unknown(t) => b.extend_from_slice(&t.to_be_bytes()),
        }
        b
    }

    pub fn decode(data: &[u8]) -> Result<Self, NbdError> {
        let mut c = Cursor::new(data);
        let typ = c.u16()?;
        let fixed_len = |want: usize, c: &Cursor| {
            if c.remaining() == want {
                Ok(())
            } else {
                Err(NbdError::Protocol(format!(
                    "info type {typ} has {} payload bytes, expected {want}",
                    c.remaining()
                )))
            }
        };
        Ok(match typ {
            NBD_INFO_EXPORT => {
                fixed_len(10, &c)?;
                Info::Export {
                    size: c.u64()?,
                    flags: c.u16()?,
                }
            }
            NBD_INFO_NAME => Info::Name(decode_string(c.rest())?),
            NBD_INFO_DESCRIPTION => Info::Description(decode_string(c.rest())?),
            NBD_INFO_BLOCK_SIZE => {
                fixed_len(12, &c)?;
                Info::BlockSize(BlockSize {
                    minimum: c.u32()?,
                    preferred: c.u32()?,
                    maximum: c.u32()?,
                })
            }
            other => Info::Unknown(other),
        })
    }
}

/// Payload of one `NBD_REP_SERVER` reply to `NBD_OPT_LIST`: the export name
/// and, after it, a free-form human-readable description.
pub fn encode_server_entry(name: &str, description: &str) -> Vec<u8> {
    let mut b = Vec::with_capacity(4 + name.len() + description.len());
    b.extend_from_slice(&(name.len() as u32).to_be_bytes());
    b.extend_from_slice(name.as_bytes());
    b.extend_from_slice(description.as_bytes());
    b
}

pub fn decode_server_entry(data: &[u8]) -> Result<(String, String), NbdError> {
    let mut c = Cursor::new(data);
    let n = c.u32()? as usize;
    let name = decode_string(c.bytes(n)?)?;
    let description = String::from_utf8_lossy(c.rest()).into_owned();
    Ok((name, description))
}

/// The reply to `NBD_OPT_EXPORT_NAME`: size, transmission flags and, unless
/// both sides agreed on NO_ZEROES, 124 bytes of padding.
pub fn encode_export_name_reply(size: u64, flags: u16, no_zeroes: bool) -> Vec<u8> {
    let mut b = Vec::with_capacity(10 + EXPORT_NAME_ZERO_PAD);
    b.extend_from_slice(&size.to_be_bytes());
    b.extend_from_slice(&flags.to_be_bytes());
    if !no_zeroes {
        b.resize(b.len() + EXPORT_NAME_ZERO_PAD, 0);
    }
    b
}

/// Spec strings are UTF-8 without NUL.
pub fn decode_string(b: &[u8]) -> Result<String, NbdError> {
    if b.contains(&0) {
        return Err(NbdError::Protocol("string contains NUL".into()));
    }
    String::from_utf8(b.to_vec())
        .map_err(|_| NbdError::Protocol("string is not valid UTF-8".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_name() -> impl Strategy<Value = String> {
        "[^\u{0}]{0,64}"
    }

    proptest! {
        #[test]
        fn option_header_round_trip(option: u32, len: u32) {
            let h = OptionHeader { option, len };
            prop_assert_eq!(OptionHeader::decode(&h.encode()).unwrap(), h);
        }

        #[test]
        fn option_reply_header_round_trip(option: u32, reply: u32, len: u32) {
            let h = OptionReplyHeader { option, reply, len };
            prop_assert_eq!(OptionReplyHeader::decode(&h.encode()).unwrap(), h);
        }

        #[test]
        fn greeting_round_trip(flags: u16) {
            prop_assert_eq!(decode_greeting(&encode_greeting(flags)).unwrap(), flags);
        }

        #[test]
        fn info_request_round_trip(name in arb_name(), requests in proptest::collection::vec(any::<u16>(), 0..8)) {
            let r = InfoRequest { name, requests };
            prop_assert_eq!(InfoRequest::decode(&r.encode()).unwrap(), r);
        }

        #[test]
        fn info_request_decode_arbitrary_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = InfoRequest::decode(&data);
        }

        #[test]
        fn info_round_trip(size: u64, flags: u16, name in arb_name(), min_log in 0u32..17, max: u32) {
            let minimum = 1u32 << min_log;
            for info in [
                Info::Export { size, flags },
                Info::Name(name.clone()),
                Info::Description(name.clone()),
                Info::BlockSize(BlockSize { minimum, preferred: minimum.max(512), maximum: max }),
            ] {
                prop_assert_eq!(Info::decode(&info.encode()).unwrap(), info);
            }
        }

        #[test]
        fn info_decode_arbitrary_never_panics(data in proptest::collection::vec(any::<u8>(), 0..32)) {
            let _ = Info::decode(&data);
        }

        #[test]
        fn server_entry_round_trip(name in arb_name(), desc in arb_name()) {
            let (n, d) = decode_server_entry(&encode_server_entry(&name, &desc)).unwrap();
            prop_assert_eq!(n, name);
            prop_assert_eq!(d, desc);
        }
    }

    #[test]
    fn info_request_rejects_trailing_garbage_and_overlong_names() {
        let mut b = InfoRequest {
            name: "x".into(),
            requests: vec![NBD_INFO_BLOCK_SIZE],
        }
        .encode();
        b.push(0);
        assert!(InfoRequest::decode(&b).is_err());
        let mut b = Vec::new();
        b.extend_from_slice(&(MAX_STRING_LEN as u32 + 1).to_be_bytes());
        b.resize(4 + MAX_STRING_LEN + 1 + 2, b'a');
        assert!(InfoRequest::decode(&b).is_err());
    }

    #[test]
    fn export_name_reply_padding() {
        assert_eq!(encode_export_name_reply(1, 2, true).len(), 10);
        let padded = encode_export_name_reply(1, 2, false);
        assert_eq!(padded.len(), 134);
        assert!(padded[10..].iter().all(|&b| b == 0));
    }

    #[test]
    fn oldstyle_greeting_is_named() {
        let mut b = encode_greeting(0);
        b[8..16].copy_from_slice(&CLISERV_MAGIC.to_be_bytes());
        assert!(matches!(
            decode_greeting(&b),
            Err(NbdError::Unsupported(m)) if m.contains("oldstyle")
        ));
    }

    #[test]
    fn info_export_wrong_length_rejected() {
        let mut b = Info::Export { size: 1, flags: 1 }.encode();
        b.push(0);
        assert!(Info::decode(&b).is_err());
    }
}
