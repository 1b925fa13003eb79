//! `serve` takes every address it will listen on before it touches the pool: the NBD Unix
//! socket and TCP address, the status and control sockets, the metrics endpoint. A port or
//! socket in use (another `serve` of the same pool, say) then fails at once with the
//! address named, before recovery reads the members and before the first commit writes
//! them; found after recovery, it cost that work and left a new commit on the members of a
//! pool that was not served.
//!
//! The servers that later accept on these addresses bind them themselves, so the addresses
//! are held (bound, not accepting) while the pool is assembled and let go just before
//! those servers start. A Unix socket file let go is removed if it is still the one bound
//! here; the servers replace stale socket files anyway.

use std::net::TcpListener;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// Addresses held for `serve` until [`Reserved::release`] (or drop).
#[derive(Default)]
pub struct Reserved {
    tcp: Vec<TcpListener>,
    unix: Vec<HeldSocket>,
}

/// A Unix socket bound, and the (device, inode) of the file bound at its path, so that
/// only that file is removed.
struct HeldSocket {
    listener: UnixListener,
    path: PathBuf,
    file_id: Option<(u64, u64)>,
}

impl Reserved {
    /// Hold the Unix socket `path`; `what` names it in errors as its server would ("the
    /// NBD socket"). A live socket there (someone accepts on it) is an error; a stale one
    /// of a run that ended without removing it is replaced, as its server would.
    pub fn unix(&mut self, path: &Path, what: &str) -> anyhow::Result<()> {
        let binding = || format!("binding {what} {}", path.display());
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_socket() {
                bail!("{}: the path exists and is not a socket", binding());
            }
            if UnixStream::connect(path).is_ok() {
                bail!(
                    "{}: something is listening there already (another `fusionraid serve`?)",
                    binding()
                );
            }
            std::fs::remove_file(path)
                .with_context(|| format!("{}: removing the stale socket", binding()))?;
        }
        let l = UnixListener::bind(path).with_context(binding)?;
        self.unix.push(HeldSocket {
            listener: l,
            path: path.to_path_buf(),
            file_id: std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino())),
        });
        Ok(())
    }

    /// Hold TCP address `addr`; `what` names it in errors ("NBD TCP").
    pub fn tcp(&mut self, addr: &str, what: &str) -> anyhow::Result<()> {
        let l = TcpListener::bind(addr).with_context(|| format!("binding {what} {addr}"))?;
        self.tcp.push(l);
        Ok(())
    }

    /// Let every address go, for the servers to bind.
    pub fn release(self) {
        drop(self);
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        self.tcp.clear();
        for h in self.unix.drain(..) {
            drop(h.listener);
            let now = std::fs::metadata(&h.path).ok().map(|m| (m.dev(), m.ino()));
            if now.is_some() && now == h.file_id {
                let _ = std::fs::remove_file(&h.path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_addresses_are_refused_and_released_ones_are_free_again() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("s.sock");
        let busy = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = busy.local_addr().unwrap().to_string();
        let mut r = Reserved::default();
        let e = r.tcp(&port, "NBD TCP").unwrap_err();
        assert!(
            format!("{e:#}").contains(&format!("binding NBD TCP {port}")),
            "{e:#}"
        );

        r.unix(&sock, "the status socket").unwrap();
        // Held: a second reservation finds it live.
        let e = Reserved::default()
            .unix(&sock, "the status socket")
            .unwrap_err();
        assert!(
            format!("{e:#}").contains("listening there already"),
            "{e:#}"
        );
        r.release();
        assert!(!sock.exists(), "the reserved socket file was left behind");
        UnixListener::bind(&sock).expect("free again after release");

        // A plain file in the way is not taken for a stale socket.
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let e = Reserved::default()
            .unix(&file, "the NBD socket")
            .unwrap_err();
        assert!(format!("{e:#}").contains("not a socket"), "{e:#}");
        assert_eq!(std::fs::read(&file).unwrap(), b"x");
    }
}
