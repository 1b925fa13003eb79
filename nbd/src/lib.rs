//! NBD (Network Block Device) protocol, server and client, written for
//! FusionRAID volumes but independent of the rest of the workspace.
//!
//! * [`proto`]: wire constants and message encode/decode (fixed newstyle
//!   handshake, simple replies).
//! * [`Server`]: serves a [`Backend`] over Unix and/or TCP sockets with
//!   out-of-order completion, bounded in-flight requests per connection and
//!   clean shutdown.
//! * [`Client`]: connects by URI, negotiates with NBD_OPT_GO (falling back to
//!   NBD_OPT_EXPORT_NAME) and offers blocking helpers or a pipelined
//!   sender/receiver pair.
//! * [`MemBackend`]: an in-memory backend for tests and examples.
//! * [`RmwBackend`]: makes a block-aligned backend byte-granular for clients
//!   that cannot align their I/O (nbdfuse).
//!
//! Size constraints: an export advertises its minimum block size through
//! NBD_INFO_BLOCK_SIZE (4 KiB by default, matching our volume pages), and
//! the server answers requests misaligned to it with NBD_EINVAL, as the spec
//! permits. qemu aligns (with its own read-modify-write) on its side;
//! libnbd-based tools such as nbdfuse do not, so an export meant for them is
//! wrapped in [`RmwBackend`], which advertises byte granularity instead.
//!
//! Deliberately not implemented: TLS, structured replies, block status,
//! extended headers (all optional in the spec; refused during negotiation)
//! and the oldstyle handshake (an oldstyle client sees the newstyle magic
//! and gives up; the server just sees it disconnect).

#![warn(clippy::too_many_lines)]

pub mod backend;
pub mod client;
pub mod error;
pub mod export;
pub mod mem;
pub mod proto;
pub mod rmw;
pub mod server;
mod stream;

pub use backend::{Backend, Command, CommandKind, Completer};
pub use client::{Client, ClientReceiver, ClientSender, CommandResult, NbdUri};
pub use error::{ErrorCode, NbdError};
pub use export::{BlockSize, ExportInfo};
pub use mem::MemBackend;
pub use rmw::RmwBackend;
pub use server::{
    DEFAULT_TCP_ADDR, Server, ServerConfig, ServerHandle, batch_replies, serve_connection,
};
pub use stream::NbdStream;
