//! `serve` checks every address it will listen on before it touches the pool: the NBD Unix
//! socket and TCP address, the status and control sockets, the metrics endpoint. A port or
//! socket in use (another `serve` of the same pool, say) then fails at once with the
//! address named, before recovery reads the members and before the first commit writes
//! them; found after recovery, it cost that work and left a new commit on the members of a
//! pool that was not served.
//!
//! Each address is bound and let go at once, not held through recovery: a held socket
//! file would tell a client waiting for it that the server is up, and the client would
//! connect into a backlog that is reset when the servers bind for real. An address taken
//! by someone else during recovery still fails then, when the servers bind it.

use std::net::TcpListener;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

use anyhow::{Context, bail};

/// Check the Unix socket `path`; `what` names it in errors as its server would ("the NBD
/// socket"). A live socket there (someone accepts on it) is an error; a stale one of a run
/// that ended without removing it is left for its server to replace.
pub fn unix(path: &Path, what: &str) -> anyhow::Result<()> {
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
        return Ok(());
    }
    // Nothing there: a bind shows the directory takes a socket.
    drop(UnixListener::bind(path).with_context(binding)?);
    std::fs::remove_file(path).with_context(|| format!("{}: removing the probe", binding()))?;
    Ok(())
}

/// Check TCP address `addr`; `what` names it in errors ("NBD TCP").
pub fn tcp(addr: &str, what: &str) -> anyhow::Result<()> {
    drop(TcpListener::bind(addr).with_context(|| format!("binding {what} {addr}"))?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_addresses_are_refused_and_free_ones_are_left_free() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("s.sock");
        let busy = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = busy.local_addr().unwrap().to_string();
        let e = tcp(&port, "NBD TCP").unwrap_err();
        assert!(
            format!("{e:#}").contains(&format!("binding NBD TCP {port}")),
            "{e:#}"
        );

        // Free: checked, and nothing is left behind to look like a server.
        unix(&sock, "the status socket").unwrap();
        assert!(!sock.exists(), "the check left a socket file behind");
        // Someone listening there: refused.
        let live = UnixListener::bind(&sock).unwrap();
        let e = unix(&sock, "the status socket").unwrap_err();
        assert!(
            format!("{e:#}").contains("listening there already"),
            "{e:#}"
        );
        // A stale socket file (its server gone) is fine.
        drop(live);
        unix(&sock, "the status socket").expect("a stale socket is replaced by its server");

        // A plain file in the way is not taken for a stale socket.
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let e = unix(&file, "the NBD socket").unwrap_err();
        assert!(format!("{e:#}").contains("not a socket"), "{e:#}");
        assert_eq!(std::fs::read(&file).unwrap(), b"x");
    }
}
