//! A Unix-socket server for the small local protocols of `serve` (status document, operator
//! commands): one thread accepts connections and hands each to a handler; dropping the server
//! stops the thread and removes the socket.

use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use anyhow::Context;

pub struct SocketServer {
    path: PathBuf,
    /// The listening socket (a second handle to the one the thread accepts on): shutting it
    /// down wakes the blocked `accept` even when the socket's file is gone.
    listener: UnixListener,
    /// (device, inode) of the socket file we bound, so we remove only our own file.
    file_id: Option<(u64, u64)>,
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
        let file_id = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
        let ours = listener
            .try_clone()
            .context("cloning the listening socket")?;
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
            listener: ours,
            file_id,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for SocketServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the blocking accept: on Linux, shutting a listening socket down makes accept
        // fail at once. (Connecting to the path would hang shutdown forever when someone
        // removed or replaced the socket file meanwhile.)
        // SAFETY: shutdown on a descriptor we own; it changes no memory.
        unsafe { libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR) };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // Remove the file only if it is still the socket we bound (another server may have
        // taken the path since).
        let now = std::fs::metadata(&self.path)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        if now.is_some() && now == self.file_id {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn stops_within_seconds(server: SocketServer) -> bool {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            drop(server);
            let _ = tx.send(());
        });
        rx.recv_timeout(Duration::from_secs(10)).is_ok()
    }

    #[test]
    fn stops_and_removes_its_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let server = SocketServer::start(&path, "test", "test-accept", |_| {}).unwrap();
        UnixStream::connect(&path).expect("serving");
        assert!(stops_within_seconds(server), "shutdown hung");
        assert!(!path.exists(), "socket file left behind");
    }

    #[test]
    fn stops_when_its_socket_file_was_removed_or_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let server = SocketServer::start(&path, "test", "test-accept", |_| {}).unwrap();
        std::fs::remove_file(&path).unwrap();
        // Another server now owns the path: ours must not remove its file.
        let other = UnixListener::bind(&path).unwrap();
        assert!(
            stops_within_seconds(server),
            "shutdown hung on a removed socket file"
        );
        assert!(path.exists(), "removed another server's socket");
        drop(other);
    }
}
