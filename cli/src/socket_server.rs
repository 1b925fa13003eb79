//! A Unix-socket server for the small local protocols of `serve` (status document, operator
//! commands): one thread accepts connections and hands each to a handler; dropping the server
//! stops the thread and removes the socket.

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use anyhow::Context;

pub struct SocketServer {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SocketServer {
    /// Listen on `path` (`what` names it in errors; `thread` names the accept thread) and
    /// call `serve` for every connection, one at a time.
    pub fn start(
        path: &Path,
        what: &str,
        thread: &str,
        serve: impl Fn(UnixStream) + Send + 'static,
    ) -> anyhow::Result<SocketServer> {
        if path.exists() && UnixStream::connect(path).is_err() {
            // A stale socket of a previous run: nobody is listening on it.
            let _ = std::fs::remove_file(path);
        }
        let listener = UnixListener::bind(path)
            .with_context(|| format!("binding the {what} socket {}", path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name(thread.into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if s.load(Ordering::Acquire) {
                        break;
                    }
                    if let Ok(c) = conn {
                        serve(c);
                    }
                }
            })?;
        Ok(SocketServer {
            path: path.to_path_buf(),
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for SocketServer {
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
