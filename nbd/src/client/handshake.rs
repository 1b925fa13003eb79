//! Client side of the handshake: fixed newstyle with NBD_OPT_GO (asking for
//! the block size constraints, which we then obey), falling back to
//! NBD_OPT_EXPORT_NAME for servers that do not know NBD_OPT_GO.

use std::io::Write;

use crate::error::NbdError;
use crate::export::{BlockSize, ExportInfo};
use crate::proto::consts::*;
use crate::proto::handshake::*;
use crate::stream::{NbdStream, read_exact};

/// Option replies longer than this are not something we asked for.
const MAX_OPTION_REPLY: u32 = 64 * 1024;

/// Runs the handshake for `export`; on success the stream is in the
/// transmission phase. Returns the export and its raw transmission flags.
pub(crate) fn handshake(
    stream: &mut NbdStream,
    export: &str,
) -> Result<(ExportInfo, u16), NbdError> {
    if export.len() > MAX_STRING_LEN || export.contains('\0') {
        return Err(NbdError::InvalidRequest(format!(
            "export name must be <= {MAX_STRING_LEN} bytes without NUL"
        )));
    }
    let mut g = [0u8; GREETING_LEN];
    read_exact(stream, &mut g)?;
    let server_flags = decode_greeting(&g)?;
    let fixed = server_flags & NBD_FLAG_FIXED_NEWSTYLE != 0;
    let no_zeroes = server_flags & NBD_FLAG_NO_ZEROES != 0;
    let mut client_flags = 0;
    if fixed {
        client_flags |= NBD_FLAG_C_FIXED_NEWSTYLE;
    }
    if no_zeroes {
        client_flags |= NBD_FLAG_C_NO_ZEROES;
    }
    stream.write_all(&client_flags.to_be_bytes())?;

    if fixed {
        match go(stream, export)? {
            Some(r) => return Ok(r),
            None => tracing::debug!("server lacks NBD_OPT_GO, falling back to EXPORT_NAME"),
        }
    }
    export_name(stream, export, no_zeroes)
}

/// `Ok(None)` when the server answered NBD_REP_ERR_UNSUP.
fn go(stream: &mut NbdStream, export: &str) -> Result<Option<(ExportInfo, u16)>, NbdError> {
    let payload = InfoRequest {
        name: export.to_string(),
        requests: vec![NBD_INFO_BLOCK_SIZE, NBD_INFO_NAME, NBD_INFO_DESCRIPTION],
    }
    .encode();
    send_option(stream, NBD_OPT_GO, &payload)?;

    let mut size_flags = None;
    let mut block_size = None;
    let mut name = None;
    let mut description = String::new();
    loop {
        let mut h = [0u8; OPTION_REPLY_HEADER_LEN];
        read_exact(stream, &mut h)?;
        let h = OptionReplyHeader::decode(&h)?;
        if h.option != NBD_OPT_GO {
            return Err(NbdError::Protocol(format!(
                "reply to {} while waiting for NBD_OPT_GO",
                option_name(h.option)
            )));
        }
        if h.len > MAX_OPTION_REPLY {
            return Err(NbdError::Protocol(format!(
                "option reply of {} bytes",
                h.len
            )));
        }
        let mut data = vec![0u8; h.len as usize];
        read_exact(stream, &mut data)?;
        match h.reply {
            NBD_REP_INFO => match Info::decode(&data)? {
                Info::Export { size, flags } => size_flags = Some((size, flags)),
                Info::BlockSize(bs) => block_size = Some(bs),
                Info::Name(n) => name = Some(n),
                Info::Description(d) => description = d,
                Info::Unknown(_) => {}
            },
            NBD_REP_ACK => break,
            NBD_REP_ERR_UNSUP => return Ok(None),
            r if h.is_error() => {
                // We give up while still haggling: the spec wants a soft
                // disconnect (NBD_OPT_ABORT), not a dropped socket.
                let _ = send_option(stream, NBD_OPT_ABORT, &[]);
                return Err(NbdError::OptionRefused {
                    option: option_name(NBD_OPT_GO),
                    reply: reply_name(r),
                    message: String::from_utf8_lossy(&data).into_owned(),
                });
            }
            r => {
                return Err(NbdError::Protocol(format!(
                    "unexpected {} to NBD_OPT_GO",
                    reply_name(r)
                )));
            }
        }
    }
    let (size, flags) = size_flags.ok_or_else(|| {
        NbdError::Protocol("NBD_OPT_GO acknowledged without NBD_INFO_EXPORT".into())
    })?;
    let block_size = match block_size {
        Some(bs) => check_block_size(bs)?,
        None => BlockSize::UNADVERTISED,
    };
    let name = name.unwrap_or_else(|| export.to_string());
    Ok(Some((
        ExportInfo::from_wire(name, description, size, flags, block_size),
        flags,
    )))
}

fn export_name(
    stream: &mut NbdStream,
    export: &str,
    no_zeroes: bool,
) -> Result<(ExportInfo, u16), NbdError> {
    send_option(stream, NBD_OPT_EXPORT_NAME, export.as_bytes())?;
    let mut b = [0u8; 10];
    // This option has no error reply: a server that rejects the export
    // just closes the connection.
    read_exact(stream, &mut b).map_err(|e| match e {
        NbdError::Disconnected => NbdError::OptionRefused {
            option: option_name(NBD_OPT_EXPORT_NAME),
            reply: "connection closed".into(),
            message: format!("the server has no usable export {export:?}"),
        },
        e => e,
    })?;
    let size = u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
    let flags = u16::from_be_bytes([b[8], b[9]]);
    if !no_zeroes {
        let mut pad = [0u8; EXPORT_NAME_ZERO_PAD];
        read_exact(stream, &mut pad)?;
    }
    Ok((
        ExportInfo::from_wire(
            export.to_string(),
            String::new(),
            size,
            flags,
            BlockSize::UNADVERTISED,
        ),
        flags,
    ))
}

/// Real servers advertise values outside the strict rules (e.g. a maximum
/// of 0xffffffff, or preferred < 512 for byte-granular exports); we only
/// insist on what our request checks rely on.
fn check_block_size(bs: BlockSize) -> Result<BlockSize, NbdError> {
    if !bs.minimum.is_power_of_two()
        || bs.minimum > MAX_MINIMUM_BLOCK_SIZE
        || bs.maximum < bs.minimum
    {
        return Err(NbdError::Protocol(format!(
            "nonsensical block sizes {bs:?}"
        )));
    }
    Ok(bs)
}

fn send_option(stream: &mut NbdStream, option: u32, data: &[u8]) -> Result<(), NbdError> {
    let mut msg = Vec::with_capacity(OPTION_HEADER_LEN + data.len());
    msg.extend_from_slice(
        &OptionHeader {
            option,
            len: data.len() as u32,
        }
        .encode(),
    );
    msg.extend_from_slice(data);
    stream.write_all(&msg)?;
    Ok(())
}
