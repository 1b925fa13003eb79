//! The NBD server: listeners, per-connection threads, clean shutdown.
//!
//! ```no_run
//! use std::sync::Arc;
//! use fusionraid_nbd::{ExportInfo, MemBackend, Server};
//!
//! let backend = Arc::new(MemBackend::new(ExportInfo::new("disk", 64 << 20)));
//! let handle = Server::new(backend)
//!     .bind_unix("/tmp/disk.sock")?
//!     .bind_tcp(fusionraid_nbd::DEFAULT_TCP_ADDR)?
//!     .start()?;
//! // ... clients connect ...
//! handle.shutdown();
//! # Ok::<(), std::io::Error>(())
//! ```

mod batch;
mod budget;
mod connection;
mod handshake;
mod inflight;
mod listener;
pub(crate) mod sink;
mod sock_reader;
mod validate;
mod writer;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::backend::Backend;
use crate::error::NbdError;
use crate::proto::consts::DEFAULT_MAX_PAYLOAD;
use crate::stream::NbdStream;

pub use batch::batch_replies;
pub use listener::{Server, ServerHandle};

/// Loopback on the IANA port: the server is only reachable from this host
/// unless the caller binds elsewhere on purpose.
pub const DEFAULT_TCP_ADDR: &str = "127.0.0.1:10809";

/// Limits that keep each connection's memory and the server's thread count
/// bounded.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Requests admitted but not yet answered, per connection. At the bound
    /// the server stops reading that socket.
    pub max_in_flight: usize,
    /// READ/WRITE payload bytes admitted but not yet answered, per
    /// connection (one request larger than this is still admitted alone).
    pub max_in_flight_bytes: u64,
    /// READ/WRITE payload bytes admitted but not yet answered, over all connections
    /// together: the per-connection bound times `max_connections` is more memory than a
    /// machine has, and clients that stop reading replies on many connections would
    /// otherwise grow the server without limit (one request larger than this is still
    /// admitted alone).
    pub max_total_in_flight_bytes: u64,
    /// Largest WRITE payload the server reads, and the ceiling of the
    /// maximum payload it advertises. Larger writes close the connection.
    pub max_payload: u32,
    /// Concurrent connections; more are closed right after accept.
    pub max_connections: usize,
    /// How long a client may take per read or write during the handshake
    /// (none applies afterwards: an idle NBD connection is normal).
    pub handshake_timeout: Duration,
    /// On shutdown, how long connections get to finish in-flight requests
    /// after their sockets stop being read, before they are cut hard.
    pub shutdown_grace: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_in_flight: 128,
            max_in_flight_bytes: 256 << 20,
            max_total_in_flight_bytes: 1 << 30,
            max_payload: DEFAULT_MAX_PAYLOAD,
            max_connections: 256,
            handshake_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// Serves a single already-connected client on the calling thread until it
/// disconnects. For inetd-style use, socket pairs and tests; [`Server`] is
/// the usual entry point.
pub fn serve_connection(
    stream: impl Into<NbdStream>,
    backend: Arc<dyn Backend>,
    config: &ServerConfig,
) -> Result<(), NbdError> {
    let budget = Arc::new(budget::ByteBudget::new(config.max_total_in_flight_bytes));
    connection::serve(
        stream.into(),
        backend,
        config,
        &budget,
        &AtomicBool::new(false),
    )
}
