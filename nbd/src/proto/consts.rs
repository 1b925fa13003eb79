//! Every numeric constant of the NBD protocol (doc/proto.md of the
//! NetworkBlockDevice/nbd repository), named as the spec names them so a
//! grep against the spec finds them.
//!
//! All values travel in network byte order (big endian).

// ---- Magics -------------------------------------------------------------

/// ASCII "NBDMAGIC": the first 8 bytes the server sends, in every style.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// ASCII "IHAVEOPT": second server magic in newstyle, and the prefix of
/// every option the client sends.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Second server magic of the (unsupported) oldstyle handshake. A client
/// seeing it knows the server is too old for us.
pub const CLISERV_MAGIC: u64 = 0x0000_4202_8186_1253;
/// Prefix of every option reply in fixed newstyle.
pub const NBD_REP_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Prefix of every transmission request.
pub const NBD_REQUEST_MAGIC: u32 = 0x2560_9513;
/// Prefix of every simple reply.
pub const NBD_SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// Prefix of structured reply chunks. We never negotiate them, so seeing
/// this magic from a server is a protocol violation.
pub const NBD_STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;
/// Reserved for the EXTENDED_HEADERS extension (never negotiated by us).
pub const NBD_EXTENDED_REQUEST_MAGIC: u32 = 0x21e4_1c71;

// ---- Handshake flags (16 bits, server -> client) --------------------------

pub const NBD_FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
pub const NBD_FLAG_NO_ZEROES: u16 = 1 << 1;

// ---- Client flags (32 bits, client -> server) -----------------------------

pub const NBD_FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
pub const NBD_FLAG_C_NO_ZEROES: u32 = 1 << 1;

// ---- Transmission flags (16 bits) ------------------------------------------

pub const NBD_FLAG_HAS_FLAGS: u16 = 1 << 0;
pub const NBD_FLAG_READ_ONLY: u16 = 1 << 1;
pub const NBD_FLAG_SEND_FLUSH: u16 = 1 << 2;
pub const NBD_FLAG_SEND_FUA: u16 = 1 << 3;
pub const NBD_FLAG_ROTATIONAL: u16 = 1 << 4;
pub const NBD_FLAG_SEND_TRIM: u16 = 1 << 5;
pub const NBD_FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub const NBD_FLAG_SEND_DF: u16 = 1 << 7;
pub const NBD_FLAG_CAN_MULTI_CONN: u16 = 1 << 8;
pub const NBD_FLAG_SEND_RESIZE: u16 = 1 << 9;
pub const NBD_FLAG_SEND_CACHE: u16 = 1 << 10;
pub const NBD_FLAG_SEND_FAST_ZERO: u16 = 1 << 11;
pub const NBD_FLAG_BLOCK_STATUS_PAYLOAD: u16 = 1 << 12;

// ---- Options --------------------------------------------------------------

pub const NBD_OPT_EXPORT_NAME: u32 = 1;
pub const NBD_OPT_ABORT: u32 = 2;
pub const NBD_OPT_LIST: u32 = 3;
pub const NBD_OPT_PEEK_EXPORT: u32 = 4;
pub const NBD_OPT_STARTTLS: u32 = 5;
pub const NBD_OPT_INFO: u32 = 6;
pub const NBD_OPT_GO: u32 = 7;
pub const NBD_OPT_STRUCTURED_REPLY: u32 = 8;
pub const NBD_OPT_LIST_META_CONTEXT: u32 = 9;
pub const NBD_OPT_SET_META_CONTEXT: u32 = 10;
pub const NBD_OPT_EXTENDED_HEADERS: u32 = 11;

// ---- Option reply types ---------------------------------------------------

pub const NBD_REP_ACK: u32 = 1;
pub const NBD_REP_SERVER: u32 = 2;
pub const NBD_REP_INFO: u32 = 3;
pub const NBD_REP_META_CONTEXT: u32 = 4;
/// Bit 31 marks every error reply.
pub const NBD_REP_FLAG_ERROR: u32 = 1 << 31;
pub const NBD_REP_ERR_UNSUP: u32 = NBD_REP_FLAG_ERROR | 1;
pub const NBD_REP_ERR_POLICY: u32 = NBD_REP_FLAG_ERROR | 2;
pub const NBD_REP_ERR_INVALID: u32 = NBD_REP_FLAG_ERROR | 3;
pub const NBD_REP_ERR_PLATFORM: u32 = NBD_REP_FLAG_ERROR | 4;
pub const NBD_REP_ERR_TLS_REQD: u32 = NBD_REP_FLAG_ERROR | 5;
pub const NBD_REP_ERR_UNKNOWN: u32 = NBD_REP_FLAG_ERROR | 6;
pub const NBD_REP_ERR_SHUTDOWN: u32 = NBD_REP_FLAG_ERROR | 7;
pub const NBD_REP_ERR_BLOCK_SIZE_REQD: u32 = NBD_REP_FLAG_ERROR | 8;
pub const NBD_REP_ERR_TOO_BIG: u32 = NBD_REP_FLAG_ERROR | 9;
pub const NBD_REP_ERR_EXT_HEADER_REQD: u32 = NBD_REP_FLAG_ERROR | 10;

// ---- NBD_REP_INFO information types (16 bits) -----------------------------

pub const NBD_INFO_EXPORT: u16 = 0;
pub const NBD_INFO_NAME: u16 = 1;
pub const NBD_INFO_DESCRIPTION: u16 = 2;
pub const NBD_INFO_BLOCK_SIZE: u16 = 3;

// ---- Command types (16 bits) -----------------------------------------------

pub const NBD_CMD_READ: u16 = 0;
pub const NBD_CMD_WRITE: u16 = 1;
pub const NBD_CMD_DISC: u16 = 2;
pub const NBD_CMD_FLUSH: u16 = 3;
pub const NBD_CMD_TRIM: u16 = 4;
pub const NBD_CMD_CACHE: u16 = 5;
pub const NBD_CMD_WRITE_ZEROES: u16 = 6;
pub const NBD_CMD_BLOCK_STATUS: u16 = 7;
pub const NBD_CMD_RESIZE: u16 = 8;

// ---- Command flags (16 bits) -----------------------------------------------

pub const NBD_CMD_FLAG_FUA: u16 = 1 << 0;
pub const NBD_CMD_FLAG_NO_HOLE: u16 = 1 << 1;
pub const NBD_CMD_FLAG_DF: u16 = 1 << 2;
pub const NBD_CMD_FLAG_REQ_ONE: u16 = 1 << 3;
pub const NBD_CMD_FLAG_FAST_ZERO: u16 = 1 << 4;
pub const NBD_CMD_FLAG_PAYLOAD_LEN: u16 = 1 << 5;

// ---- Transmission error values (32 bits) -----------------------------------

pub const NBD_EPERM: u32 = 1;
pub const NBD_EIO: u32 = 5;
pub const NBD_ENOMEM: u32 = 12;
pub const NBD_EINVAL: u32 = 22;
pub const NBD_ENOSPC: u32 = 28;
pub const NBD_EOVERFLOW: u32 = 75;
pub const NBD_ENOTSUP: u32 = 95;
pub const NBD_ESHUTDOWN: u32 = 108;

// ---- Sizes ----------------------------------------------------------------

/// IANA port for newstyle NBD.
pub const NBD_DEFAULT_PORT: u16 = 10809;
/// Zero padding after the NBD_OPT_EXPORT_NAME reply unless NO_ZEROES.
pub const EXPORT_NAME_ZERO_PAD: usize = 124;
/// Strings (export names, messages) MUST be no longer than this.
pub const MAX_STRING_LEN: usize = 4096;
/// Payloads up to 2^25 bytes SHOULD NOT be treated as a denial of service;
/// this is also the default maximum payload both sides assume.
pub const DEFAULT_MAX_PAYLOAD: u32 = 1 << 25;
/// Largest minimum block size the spec allows.
pub const MAX_MINIMUM_BLOCK_SIZE: u32 = 1 << 16;

/// Human-readable option name, for errors and logs.
pub fn option_name(option: u32) -> String {
    let s = match option {
        NBD_OPT_EXPORT_NAME => "NBD_OPT_EXPORT_NAME",
        NBD_OPT_ABORT => "NBD_OPT_ABORT",
        NBD_OPT_LIST => "NBD_OPT_LIST",
        NBD_OPT_PEEK_EXPORT => "NBD_OPT_PEEK_EXPORT",
        NBD_OPT_STARTTLS => "NBD_OPT_STARTTLS",
        NBD_OPT_INFO => "NBD_OPT_INFO",
        NBD_OPT_GO => "NBD_OPT_GO",
        NBD_OPT_STRUCTURED_REPLY => "NBD_OPT_STRUCTURED_REPLY",
        NBD_OPT_LIST_META_CONTEXT => "NBD_OPT_LIST_META_CONTEXT",
        NBD_OPT_SET_META_CONTEXT => "NBD_OPT_SET_META_CONTEXT",
        NBD_OPT_EXTENDED_HEADERS => "NBD_OPT_EXTENDED_HEADERS",
        other => return format!("option {other}"),
    };
    s.to_string()
}

/// Human-readable option reply type, for errors and logs.
pub fn reply_name(reply: u32) -> String {
    let s = match reply {
        NBD_REP_ACK => "NBD_REP_ACK",
        NBD_REP_SERVER => "NBD_REP_SERVER",
        NBD_REP_INFO => "NBD_REP_INFO",
        NBD_REP_META_CONTEXT => "NBD_REP_META_CONTEXT",
        NBD_REP_ERR_UNSUP => "NBD_REP_ERR_UNSUP",
        NBD_REP_ERR_POLICY => "NBD_REP_ERR_POLICY",
        NBD_REP_ERR_INVALID => "NBD_REP_ERR_INVALID",
        NBD_REP_ERR_PLATFORM => "NBD_REP_ERR_PLATFORM",
        NBD_REP_ERR_TLS_REQD => "NBD_REP_ERR_TLS_REQD",
        NBD_REP_ERR_UNKNOWN => "NBD_REP_ERR_UNKNOWN",
        NBD_REP_ERR_SHUTDOWN => "NBD_REP_ERR_SHUTDOWN",
        NBD_REP_ERR_BLOCK_SIZE_REQD => "NBD_REP_ERR_BLOCK_SIZE_REQD",
        NBD_REP_ERR_TOO_BIG => "NBD_REP_ERR_TOO_BIG",
        NBD_REP_ERR_EXT_HEADER_REQD => "NBD_REP_ERR_EXT_HEADER_REQD",
        other => return format!("reply type {other:#x}"),
    };
    s.to_string()
}
