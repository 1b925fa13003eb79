//! The status document `serve` publishes on its status socket and `status` renders, and the
//! small server that publishes it (one JSON document per connection, then close).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use fusionraid_io::StatusSnapshot;
use serde::{Deserialize, Serialize};

use crate::socket_server::SocketServer;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StatusDoc {
    pub pool: String,
    pub uuid: String,
    pub layout: String,
    pub block_size: u64,
    /// Export URIs, one line per volume and listener.
    pub exports: Vec<String>,
    /// Volume names from the pool file, by index (baseline schemes name theirs v0, v1...).
    pub volume_names: Vec<String>,
    /// Members missing at start, with the reason.
    pub missing: Vec<String>,
    /// Things the operator must know (durability, fallbacks).
    pub notes: Vec<String>,
    pub snapshot: StatusSnapshot,
}

/// Serves the status document on a Unix socket until the returned server is dropped: one
/// JSON document per connection, then close.
pub fn serve_status(
    path: &Path,
    doc: impl Fn() -> Option<String> + Send + 'static,
) -> anyhow::Result<SocketServer> {
    SocketServer::start(path, "status", "status", move |mut c| {
        let _ = c.set_write_timeout(Some(Duration::from_secs(5)));
        let body = doc().unwrap_or_else(|| "{\"error\":\"engine not answering\"}".into());
        let _ = c.write_all(body.as_bytes());
    })
}
