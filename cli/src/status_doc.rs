//! The status document `serve` publishes on its status socket and `status` renders, and the
//! small server that publishes it (one JSON document per connection, then close).

use std::io::Write;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use fusionraid_io::StatusSnapshot;
use serde::{Deserialize, Serialize};

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

/// Serves the status document on a Unix socket until dropped.
pub struct StatusServer {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StatusServer {
    pub fn start(
        path: &Path,
        doc: impl Fn() -> Option<String> + Send + 'static,
    ) -> anyhow::Result<StatusServer> {
        if path.exists() && UnixStream::connect(path).is_err() {
            // A stale socket of a previous run: nobody is listening on it.
            let _ = std::fs::remove_file(path);
        }
        let listener = UnixListener::bind(path)
            .with_context(|| format!("binding the status socket {}", path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("status".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if s.load(Ordering::Acquire) {
                        break;
                    }
                    let Ok(mut c) = conn else { continue };
                    let _ = c.set_write_timeout(Some(Duration::from_secs(5)));
                    let body =
                        doc().unwrap_or_else(|| "{\"error\":\"engine not answering\"}".into());
                    let _ = c.write_all(body.as_bytes());
                }
            })?;
        Ok(StatusServer {
            path: path.to_path_buf(),
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for StatusServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the blocking accept with a connection of our own.
        let _ = UnixStream::connect(&self.path);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}
