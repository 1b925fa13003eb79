//! Server side of the fixed newstyle handshake (option haggling).
//!
//! Every option gets an answer: unknown or unimplemented ones get
//! `NBD_REP_ERR_UNSUP` (a baseline requirement of the spec). The only
//! reasons to drop the connection are a broken framing (bad magic, unknown
//! client flags), an option too large to be legitimate, too many options,
//! and an `NBD_OPT_EXPORT_NAME` we cannot satisfy (it has no error reply).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::Backend;
use crate::error::NbdError;
use crate::export::ExportInfo;
use crate::proto::consts::*;
use crate::proto::handshake::*;
use crate::stream::{NbdStream, read_exact, read_header};

use super::ServerConfig;

/// Largest option payload we read. A GO/INFO carrying a maximal (4096
/// byte) export name plus a few info requests fits with room to spare.
pub(crate) const MAX_OPTION_LEN: u32 = 8192;
/// Options per connection; a client needing more is looping.
pub(crate) const MAX_OPTIONS: usize = 128;

/// The outcome of a successful negotiation.
pub(crate) struct Negotiated {
    pub export_index: usize,
    pub export: ExportInfo,
}

/// Runs the handshake. `Ok(None)` means the client aborted cleanly.
pub(crate) fn negotiate(
    stream: &mut NbdStream,
    backend: &dyn Backend,
    config: &ServerConfig,
    shutting_down: &AtomicBool,
) -> Result<Option<Negotiated>, NbdError> {
    let no_zeroes = greet(stream)?;
    for _ in 0..MAX_OPTIONS {
        let req = read_option(stream)?;
        let option = req.option;
        if shutting_down.load(Ordering::Relaxed) && option != NBD_OPT_ABORT {
            if option == NBD_OPT_EXPORT_NAME {
                return Err(NbdError::Protocol("server shutting down".into()));
            }
            reply(
                stream,
                option,
                NBD_REP_ERR_SHUTDOWN,
                b"server is shutting down",
            )?;
            continue;
        }
        if let Step::Done(outcome) = answer(stream, &req, backend, config, no_zeroes)? {
            return Ok(outcome);
        }
    }
    Err(NbdError::Protocol(format!(
        "more than {MAX_OPTIONS} options in one handshake"
    )))
}

/// Sends the greeting and reads the client's flags. Returns whether the client asked for
/// no zeroes after the export name reply.
fn greet(stream: &mut NbdStream) -> Result<bool, NbdError> {
    stream.write_all(&encode_greeting(
        NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES,
    ))?;
    let mut cf = [0u8; 4];
    read_exact(stream, &mut cf)?;
    let client_flags = u32::from_be_bytes(cf);
    if client_flags & !(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES) != 0 {
        // The spec requires dropping the connection on unknown client flags.
        return Err(NbdError::Protocol(format!(
            "unknown client flags {client_flags:#x}"
        )));
    }
    // Clients that omit C_FIXED_NEWSTYLE are still served the fixed
    // protocol (the spec allows it); a non-fixed client only ever sends
    // NBD_OPT_EXPORT_NAME, which behaves the same either way.
    Ok(client_flags & NBD_FLAG_C_NO_ZEROES != 0)
}

/// One option the client sent, with its data.
struct OptionRequest {
    option: u32,
    data: Vec<u8>,
}

/// Reads the next option. Data beyond `MAX_OPTION_LEN` ends the connection (with an
/// error reply first when the option has one).
fn read_option(stream: &mut NbdStream) -> Result<OptionRequest, NbdError> {
    let Some(h) = read_header::<_, OPTION_HEADER_LEN>(stream)? else {
        return Err(NbdError::Disconnected);
    };
    let OptionHeader { option, len } = OptionHeader::decode(&h)?;
    if len > MAX_OPTION_LEN {
        if option != NBD_OPT_EXPORT_NAME {
            reply(
                stream,
                option,
                NBD_REP_ERR_TOO_BIG,
                b"option data too large",
            )?;
        }
        return Err(NbdError::Protocol(format!(
            "{} with {len} bytes of data",
            option_name(option)
        )));
    }
    let mut data = vec![0u8; len as usize];
    read_exact(stream, &mut data)?;
    Ok(OptionRequest { option, data })
}

/// What the handshake does after answering an option.
enum Step {
    /// Wait for the next option.
    Next,
    /// The handshake is over: an export chosen, or (`None`) the client aborted.
    Done(Option<Negotiated>),
}

/// Answers one option.
fn answer(
    stream: &mut NbdStream,
    req: &OptionRequest,
    backend: &dyn Backend,
    config: &ServerConfig,
    no_zeroes: bool,
) -> Result<Step, NbdError> {
    let (option, data) = (req.option, &req.data[..]);
    match option {
        NBD_OPT_EXPORT_NAME => {
            let name = decode_string(data)?;
            let Some(chosen) = lookup(backend, &name, config) else {
                return Err(NbdError::Protocol(format!(
                    "NBD_OPT_EXPORT_NAME for unknown export {name:?}"
                )));
            };
            stream.write_all(&encode_export_name_reply(
                chosen.export.size,
                chosen.export.transmission_flags(),
                no_zeroes,
            ))?;
            return Ok(Step::Done(Some(chosen)));
        }
        NBD_OPT_ABORT => {
            // The client may already be gone; that is not an error.
            let _ = reply(stream, option, NBD_REP_ACK, &[]);
            return Ok(Step::Done(None));
        }
        NBD_OPT_LIST => list(stream, option, data, backend)?,
        NBD_OPT_INFO | NBD_OPT_GO => {
            if let Some(export) = info_or_go(stream, option, data, backend, config)?
                && option == NBD_OPT_GO
            {
                return Ok(Step::Done(Some(export)));
            }
        }
        // STARTTLS (we are a NOTLS server), STRUCTURED_REPLY (simple
        // replies only), meta contexts, extended headers, and anything
        // we have never heard of.
        _ => reply(
            stream,
            option,
            NBD_REP_ERR_UNSUP,
            format!("{} is not supported", option_name(option)).as_bytes(),
        )?,
    }
    Ok(Step::Next)
}

/// Answers NBD_OPT_LIST: one reply per export, then an ACK.
fn list(
    stream: &mut NbdStream,
    option: u32,
    data: &[u8],
    backend: &dyn Backend,
) -> Result<(), NbdError> {
    if !data.is_empty() {
        return reply(
            stream,
            option,
            NBD_REP_ERR_INVALID,
            b"NBD_OPT_LIST takes no data",
        );
    }
    for e in backend.exports() {
        reply(
            stream,
            option,
            NBD_REP_SERVER,
            &encode_server_entry(&e.name, &e.description),
        )?;
    }
    reply(stream, option, NBD_REP_ACK, &[])
}

/// Answers NBD_OPT_INFO / NBD_OPT_GO. Returns the export on success.
fn info_or_go(
    stream: &mut NbdStream,
    option: u32,
    data: &[u8],
    backend: &dyn Backend,
    config: &ServerConfig,
) -> Result<Option<Negotiated>, NbdError> {
    let req = match InfoRequest::decode(data) {
        Ok(r) => r,
        Err(e) => {
            reply(
                stream,
                option,
                NBD_REP_ERR_INVALID,
                e.to_string().as_bytes(),
            )?;
            return Ok(None);
        }
    };
    let Some(chosen) = lookup(backend, &req.name, config) else {
        let msg = format!("no export named {:?}", req.name);
        reply(stream, option, NBD_REP_ERR_UNKNOWN, msg.as_bytes())?;
        return Ok(None);
    };
    let export = &chosen.export;
    let mut infos = vec![Info::Export {
        size: export.size,
        flags: export.transmission_flags(),
    }];
    if req.requests.contains(&NBD_INFO_NAME) {
        infos.push(Info::Name(export.name.clone()));
    }
    if req.requests.contains(&NBD_INFO_DESCRIPTION) && !export.description.is_empty() {
        infos.push(Info::Description(export.description.clone()));
    }
    // Sent even when not requested: our constraints differ from the
    // defaults, and clients that do not understand it must ignore it.
    infos.push(Info::BlockSize(export.block_size));
    for info in infos {
        reply(stream, option, NBD_REP_INFO, &info.encode())?;
    }
    reply(stream, option, NBD_REP_ACK, &[])?;
    Ok(Some(chosen))
}

/// Finds an export by name; the empty name means the first export unless
/// one is literally named "". The advertised maximum payload is clamped to
/// what this server will read.
fn lookup(backend: &dyn Backend, name: &str, config: &ServerConfig) -> Option<Negotiated> {
    let exports = backend.exports();
    let index = exports
        .iter()
        .position(|e| e.name == name)
        .or_else(|| (name.is_empty() && !exports.is_empty()).then_some(0))?;
    let mut export = exports.into_iter().nth(index)?;
    export.block_size.maximum = export.block_size.maximum.min(config.max_payload);
    if let Err(e) = export.validate() {
        tracing::error!("refusing misconfigured export: {e}");
        return None;
    }
    Some(Negotiated {
        export_index: index,
        export,
    })
}

fn reply(stream: &mut NbdStream, option: u32, typ: u32, data: &[u8]) -> Result<(), NbdError> {
    let mut msg = Vec::with_capacity(OPTION_REPLY_HEADER_LEN + data.len());
    msg.extend_from_slice(
        &OptionReplyHeader {
            option,
            reply: typ,
            len: data.len() as u32,
        }
        .encode(),
    );
    msg.extend_from_slice(data);
    stream.write_all(&msg)?;
    Ok(())
}
