//! The NBD wire format: constants and encode/decode of every message we
//! send or accept. No I/O happens here; the server and client drive sockets.

pub mod consts;
mod cursor;
pub mod handshake;
pub mod transmission;
