//! Shared by the server fuzz tests: one server connection over a socket pair fed with a
//! byte string, and the case count.
//!
//! `FUSIONRAID_FUZZ_CASES=N` sets the cases per property (default: what each property asks
//! for, small enough for CI) for long soaks.

#![allow(dead_code)] // each test binary uses a different subset

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use fusionraid_nbd::{ExportInfo, MemBackend, NbdError, ServerConfig, serve_connection};

pub const SIZE: u64 = 256 * 1024;

pub fn cases(default: u32) -> u32 {
    std::env::var("FUSIONRAID_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs one server connection for a memory export "disk" of `SIZE` bytes, fed with
/// `input`; returns what the server wrote, how the connection ended, and the backend.
pub fn run_server(input: Vec<u8>) -> (Vec<u8>, Result<(), NbdError>, Arc<MemBackend>) {
    let backend = Arc::new(MemBackend::new(
        ExportInfo::new("disk", SIZE).with_description("fuzzed"),
    ));
    let (mut client, server_end) = UnixStream::pair().unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let b = backend.clone();
    let config = ServerConfig {
        handshake_timeout: Duration::from_secs(10),
        ..ServerConfig::default()
    };
    let server = std::thread::spawn(move || serve_connection(server_end, b, &config));
    // Write on a thread: the server may stop reading (or answer a lot)
    // before all input is consumed, and neither side may block the other.
    let mut w = client.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(&input);
        let _ = w.shutdown(Shutdown::Write);
    });
    let mut out = Vec::new();
    client
        .read_to_end(&mut out)
        .or_else(|e| match e.kind() {
            std::io::ErrorKind::ConnectionReset => Ok(0),
            _ => Err(e),
        })
        .expect("server must close the connection, not stall");
    writer.join().unwrap();
    let result = server.join().expect("server thread must not panic");
    (out, result, backend)
}
