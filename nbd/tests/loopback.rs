//! Our client against our server, over Unix sockets and TCP loopback.

mod common;

use std::io::Write;
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use fusionraid_nbd::proto::consts::*;
use fusionraid_nbd::proto::handshake::*;
use fusionraid_nbd::{
    Backend, BlockSize, Client, CommandKind, Completer, ErrorCode, ExportInfo, MemBackend,
    NbdError, Server, ServerConfig, ServerHandle,
};

const TIMEOUT: Duration = Duration::from_secs(20);

struct Fixture {
    handle: Option<ServerHandle>,
    sock: PathBuf,
    _dir: TempDir,
}

impl Fixture {
    fn new(backend: Arc<dyn Backend>, config: ServerConfig) -> Fixture {
        let dir = TempDir::new("loop");
        let sock = dir.join("nbd.sock");
        let handle = Server::new(backend)
            .with_config(config)
            .bind_unix(&sock)
            .unwrap()
            .start()
            .unwrap();
        Fixture {
            handle: Some(handle),
            sock,
            _dir: dir,
        }
    }

    fn client(&self, export: &str) -> Client {
        Client::connect_unix(&self.sock, export).expect("connect")
    }

    fn raw(&self) -> UnixStream {
        let s = UnixStream::connect(&self.sock).unwrap();
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        s
    }

    fn shutdown(&mut self) {
        if let Some(h) = self.handle.take() {
            h.shutdown();
        }
    }
}

fn mem(size: u64) -> Arc<MemBackend> {
    Arc::new(MemBackend::new(ExportInfo::new("disk", size)))
}

/// Random writes, reads, trims, zeroes and flushes, checked against a
/// shadow copy, through the blocking helpers.
fn random_io(c: &mut Client, size: u64, seed: u64, ops: usize) {
    let mut rng = Rng::new(seed);
    let mut shadow = vec![0u8; size as usize];
    let blocks = size / 4096;
    for _ in 0..ops {
        let start = rng.below(blocks);
        let n = 1 + rng.below((blocks - start).min(64));
        let (off, len) = (start * 4096, n * 4096);
        let r = (off as usize)..((off + len) as usize);
        match rng.below(10) {
            0..=3 => {
                let data = rng.bytes(len as usize);
                c.write_at(&data, off).unwrap();
                shadow[r].copy_from_slice(&data);
            }
            4..=7 => {
                let mut buf = vec![0u8; len as usize];
                c.read_at(&mut buf, off).unwrap();
                assert!(buf == shadow[r], "read at {off}+{len} differs from shadow");
            }
            8 => {
                // MemBackend zeroes trimmed ranges.
                c.trim(off, len).unwrap();
                shadow[r].fill(0);
            }
            _ => {
                c.write_zeroes(off, len, rng.below(2) == 0).unwrap();
                shadow[r].fill(0);
                c.flush().unwrap();
            }
        }
    }
    let mut all = vec![0u8; size as usize];
    c.read_at(&mut all, 0).unwrap();
    assert!(all == shadow, "final contents differ from shadow");
}

#[test]
fn random_io_over_unix_socket() {
    let backend = mem(8 << 20);
    let f = Fixture::new(backend.clone(), ServerConfig::default());
    let mut c = f.client("disk");
    assert_eq!(c.size(), 8 << 20);
    random_io(&mut c, 8 << 20, 1, 400);
    c.disconnect().unwrap();
}

#[test]
fn random_io_over_tcp_loopback() {
    let backend = mem(8 << 20);
    let h = Server::new(backend)
        .bind_tcp("127.0.0.1:0")
        .unwrap()
        .start()
        .unwrap();
    let addr = h.tcp_addrs()[0];
    assert!(addr.ip().is_loopback());
    let mut c = Client::connect(&format!("nbd://{addr}/disk")).unwrap();
    random_io(&mut c, 8 << 20, 2, 400);
    c.disconnect().unwrap();
    h.shutdown();
}

#[test]
fn pipelined_io_from_two_threads_matches_shadow() {
    let size = 4u64 << 20;
    let f = Fixture::new(mem(size), ServerConfig::default());
    let (mut tx, mut rx) = f.client("disk").split();
    // MemBackend executes at submission, in arrival order, so the expected
    // result of every read is known when it is sent.
    let (exp_tx, exp_rx) = std::sync::mpsc::channel::<(u64, Option<Vec<u8>>)>();
    let sender = std::thread::spawn(move || {
        let mut rng = Rng::new(3);
        let mut shadow = vec![0u8; size as usize];
        for _ in 0..2000 {
            let off = rng.below(size / 4096 - 16) * 4096;
            let len = (1 + rng.below(16)) * 4096;
            let r = off as usize..(off + len) as usize;
            if rng.below(2) == 0 {
                let data = rng.bytes(len as usize);
                let h = tx.send_write(off, &data, rng.below(4) == 0).unwrap();
                shadow[r].copy_from_slice(&data);
                exp_tx.send((h, None)).unwrap();
            } else {
                let h = tx
                    .send(&CommandKind::Read {
                        offset: off,
                        len: len as u32,
                    })
                    .unwrap();
                exp_tx.send((h, Some(shadow[r].to_vec()))).unwrap();
            }
        }
        tx.disconnect().unwrap();
    });
    let mut expected = std::collections::HashMap::new();
    let mut replies = 0;
    loop {
        match rx.recv() {
            Ok((h, result)) => {
                while !expected.contains_key(&h) {
                    let (eh, ev) = exp_rx.recv_timeout(TIMEOUT).expect("sender stalled");
                    expected.insert(eh, ev);
                }
                assert_eq!(result.unwrap(), expected.remove(&h).unwrap(), "handle {h}");
                replies += 1;
            }
            Err(NbdError::Disconnected) => break,
            Err(e) => panic!("recv: {e}"),
        }
    }
    sender.join().unwrap();
    assert_eq!(replies, 2000);
}

#[test]
fn out_of_order_completion_reaches_the_right_handles() {
    let backend = HoldBackend::new(ExportInfo::new("disk", 1 << 20));
    // Block i holds the byte i everywhere, so each read's answer is unique.
    for i in 0..32u8 {
        assert!(backend.inner.fill(0, u64::from(i) * 4096, &[i; 4096]));
    }
    let f = Fixture::new(backend.clone(), ServerConfig::default());
    let (mut tx, mut rx) = f.client("disk").split();
    let mut sent = Vec::new();
    for i in 0..32u64 {
        let h = tx
            .send(&CommandKind::Read {
                offset: i * 4096,
                len: 4096,
            })
            .unwrap();
        sent.push((h, i as u8));
    }
    assert_eq!(backend.wait_queued(32, TIMEOUT), 32);
    let mut queued = backend.take_all();
    queued.reverse();
    for (export, cmd, done) in queued {
        backend.finish(export, cmd, done);
    }
    let mut order = Vec::new();
    for _ in 0..32 {
        let (h, r) = rx.recv().unwrap();
        let fill = sent
            .iter()
            .find(|(sh, _)| *sh == h)
            .expect("known handle")
            .1;
        assert_eq!(r.unwrap().unwrap(), vec![fill; 4096], "handle {h}");
        order.push(h);
    }
    let mut reversed: Vec<u64> = sent.iter().map(|(h, _)| *h).collect();
    reversed.reverse();
    assert_eq!(order, reversed, "replies must follow completion order");
    tx.disconnect().unwrap();
}

#[test]
fn backpressure_bounds_requests_in_flight() {
    let backend = HoldBackend::new(ExportInfo::new("disk", 1 << 20));
    let config = ServerConfig {
        max_in_flight: 16,
        ..ServerConfig::default()
    };
    let f = Fixture::new(backend.clone(), config);
    let (mut tx, mut rx) = f.client("disk").split();
    let total = 300;
    for i in 0..total {
        tx.send(&CommandKind::Read {
            offset: (i % 256) * 4096,
            len: 4096,
        })
        .unwrap();
    }
    assert_eq!(backend.wait_queued(16, TIMEOUT), 16);
    // Give the server every chance to (wrongly) admit more.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        backend.queued(),
        16,
        "server admitted more than max_in_flight"
    );

    let receiver = std::thread::spawn(move || {
        for _ in 0..total {
            let (_, r) = rx.recv().unwrap();
            assert_eq!(r.unwrap().unwrap().len(), 4096);
        }
        rx
    });
    let mut done = 0;
    let deadline = Instant::now() + TIMEOUT;
    while done < total {
        assert!(
            Instant::now() < deadline,
            "only {done} of {total} completed"
        );
        for (e, c, d) in backend.take_all() {
            backend.finish(e, c, d);
            done += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    receiver.join().unwrap();
    assert_eq!(backend.peak.load(std::sync::atomic::Ordering::SeqCst), 16);
    tx.disconnect().unwrap();
}

#[test]
fn byte_budget_bounds_payload_in_flight() {
    let backend = HoldBackend::new(ExportInfo::new("disk", 1 << 20));
    let config = ServerConfig {
        max_in_flight: 128,
        max_in_flight_bytes: 64 * 1024,
        ..ServerConfig::default()
    };
    let f = Fixture::new(backend.clone(), config);
    let (mut tx, mut rx) = f.client("disk").split();
    // From a thread: once the server stops reading, 320 KiB of writes no
    // longer fit in the socket buffers and the sender blocks (that is the
    // backpressure working).
    let sender = std::thread::spawn(move || {
        for i in 0..20u64 {
            tx.send_write(i * 16384, &[i as u8; 16384], false).unwrap();
        }
        tx
    });
    assert_eq!(backend.wait_queued(4, TIMEOUT), 4);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        backend.queued(),
        4,
        "64 KiB budget allows four 16 KiB writes"
    );
    let mut done = 0;
    let deadline = Instant::now() + TIMEOUT;
    while done < 20 {
        assert!(Instant::now() < deadline, "only {done} of 20 completed");
        for (e, c, d) in backend.take_all() {
            backend.finish(e, c, d);
            done += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    for _ in 0..20 {
        assert!(rx.recv().unwrap().1.is_ok());
    }
    assert_eq!(backend.peak.load(std::sync::atomic::Ordering::SeqCst), 4);
    let c = backend.inner.contents(0).unwrap();
    assert_eq!(&c[19 * 16384..20 * 16384], &[19u8; 16384][..]);
    sender.join().unwrap().disconnect().unwrap();
}

#[test]
fn disc_finishes_in_flight_requests_before_closing() {
    let backend = HoldBackend::new(ExportInfo::new("disk", 1 << 20));
    let f = Fixture::new(backend.clone(), ServerConfig::default());
    let (mut tx, mut rx) = f.client("disk").split();
    let mut handles = Vec::new();
    for i in 0..5u64 {
        handles.push(tx.send_write(i * 4096, &[0x5a; 4096], false).unwrap());
    }
    tx.disconnect().unwrap();
    assert_eq!(backend.wait_queued(5, TIMEOUT), 5);
    std::thread::sleep(Duration::from_millis(100));
    for (e, c, d) in backend.take_all() {
        backend.finish(e, c, d);
    }
    let mut got = Vec::new();
    for _ in 0..5 {
        let (h, r) = rx.recv().unwrap();
        assert!(r.is_ok());
        got.push(h);
    }
    assert_eq!(got, handles);
    assert!(matches!(rx.recv(), Err(NbdError::Disconnected)));
    assert_eq!(
        &backend.inner.contents(0).unwrap()[..5 * 4096],
        &[0x5a; 5 * 4096][..]
    );
}

#[test]
fn many_clients_at_once() {
    let backend = mem(8 << 20);
    let h = Server::new(backend.clone())
        .bind_tcp("127.0.0.1:0")
        .unwrap()
        .start()
        .unwrap();
    let addr = h.tcp_addrs()[0];
    let threads: Vec<_> = (0..8u64)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = Client::connect_tcp(addr, "disk").unwrap();
                let data = Rng::new(100 + i).bytes(1 << 20);
                c.write_at(&data, i << 20).unwrap();
                let mut back = vec![0u8; 1 << 20];
                c.read_at(&mut back, i << 20).unwrap();
                assert!(back == data);
                c.disconnect().unwrap();
                data
            })
        })
        .collect();
    let datas: Vec<Vec<u8>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let all = backend.contents(0).unwrap();
    for (i, data) in datas.iter().enumerate() {
        assert!(all[i << 20..(i + 1) << 20] == data[..], "client {i} region");
    }
    h.shutdown();
}

#[test]
fn client_enforces_advertised_constraints_locally() {
    let backend = Arc::new(MemBackend::new(
        ExportInfo::new("ro", 1 << 20).with_read_only(true),
    ));
    let f = Fixture::new(backend, ServerConfig::default());
    let mut c = f.client("ro");
    assert!(c.info().read_only);
    assert!(matches!(
        c.write_at(&[0; 4096], 0),
        Err(NbdError::InvalidRequest(_))
    ));
    let mut buf = [0u8; 512];
    assert!(matches!(
        c.read_at(&mut buf, 0),
        Err(NbdError::InvalidRequest(_))
    ));
    let mut buf = vec![0u8; 8192];
    assert!(matches!(
        c.read_at(&mut buf, (1 << 20) - 4096),
        Err(NbdError::InvalidRequest(_))
    ));
    // Still usable after refusing locally.
    let mut buf = vec![1u8; 4096];
    c.read_at(&mut buf, 0).unwrap();
    assert_eq!(buf, vec![0u8; 4096]);
}

#[test]
fn large_transfers_are_split_at_max_payload() {
    let backend = Arc::new(MemBackend::new(
        ExportInfo::new("d", 4 << 20).with_block_size(BlockSize {
            minimum: 512,
            preferred: 4096,
            maximum: 64 * 1024,
        }),
    ));
    let f = Fixture::new(backend.clone(), ServerConfig::default());
    let mut c = f.client("d");
    assert_eq!(c.info().block_size.maximum, 64 * 1024);
    let data = Rng::new(9).bytes(1 << 20);
    c.write_at(&data, 512).unwrap();
    let mut back = vec![0u8; 1 << 20];
    c.read_at(&mut back, 512).unwrap();
    assert!(back == data);
    let writes = backend
        .stats()
        .writes
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(writes, 16, "1 MiB in 64 KiB pieces");
}

#[test]
fn unknown_export_is_refused_with_a_clear_error() {
    let f = Fixture::new(mem(1 << 20), ServerConfig::default());
    match Client::connect_unix(&f.sock, "nope") {
        Err(NbdError::OptionRefused { reply, message, .. }) => {
            assert_eq!(reply, "NBD_REP_ERR_UNKNOWN");
            assert!(message.contains("nope"), "{message}");
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("connected to a missing export"),
    }
}

#[test]
fn default_export_is_the_first() {
    let backend = Arc::new(MemBackend::with_exports(vec![
        ExportInfo::new("a", 1 << 20),
        ExportInfo::new("b", 2 << 20),
    ]));
    let f = Fixture::new(backend.clone(), ServerConfig::default());
    let c = f.client("");
    assert_eq!(c.size(), 1 << 20);
    assert_eq!(c.info().name, "a");
    let mut c = f.client("b");
    assert_eq!(c.size(), 2 << 20);
    c.write_at(&[7; 4096], 0).unwrap();
    assert_eq!(backend.contents(1).unwrap()[0], 7);
    assert_eq!(backend.contents(0).unwrap()[0], 0);
}

#[test]
fn shutdown_drains_in_flight_and_removes_socket() {
    let backend = HoldBackend::new(ExportInfo::new("disk", 1 << 20));
    let mut f = Fixture::new(backend.clone(), ServerConfig::default());
    let (mut tx, mut rx) = f.client("disk").split();
    let _idle = f.client("disk");
    tx.send_write(0, &[9; 4096], false).unwrap();
    assert_eq!(backend.wait_queued(1, TIMEOUT), 1);
    let b = backend.clone();
    let completer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        for (e, c, d) in b.take_all() {
            b.finish(e, c, d);
        }
    });
    let t0 = Instant::now();
    f.shutdown();
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "shutdown took {:?}",
        t0.elapsed()
    );
    completer.join().unwrap();
    let (_, r) = rx.recv().unwrap();
    assert!(r.is_ok(), "in-flight write answered before close");
    assert!(matches!(rx.recv(), Err(NbdError::Disconnected)));
    assert!(!f.sock.exists(), "socket file removed");
    assert!(UnixStream::connect(&f.sock).is_err());
}

/// Found by the benchmark: a backend stuck on admitted commands (the engine's write path
/// spinning with a full pool) held `shutdown` forever, so `serve` never got to stop the
/// backend. Shutdown now gives up on such connections after the grace period.
#[test]
fn shutdown_does_not_wait_forever_for_a_stuck_backend() {
    let backend = HoldBackend::new(ExportInfo::new("disk", 1 << 20));
    let config = ServerConfig {
        shutdown_grace: Duration::from_millis(300),
        ..ServerConfig::default()
    };
    let mut f = Fixture::new(backend.clone(), config);
    let (mut tx, _rx) = f.client("disk").split();
    tx.send_write(0, &[9; 4096], false).unwrap();
    assert_eq!(backend.wait_queued(1, TIMEOUT), 1);
    let h = f.handle.take().unwrap();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let stopper = std::thread::spawn(move || {
        h.shutdown();
        let _ = done_tx.send(());
    });
    let returned = done_rx.recv_timeout(Duration::from_secs(5)).is_ok();
    // The backend lets go at last: the connection ends, the completion finds no client
    // (and a shutdown that was still waiting returns).
    for (e, c, d) in backend.take_all() {
        backend.finish(e, c, d);
    }
    stopper.join().unwrap();
    assert!(
        returned,
        "shutdown waited for a backend that never completes"
    );
    assert!(!f.sock.exists(), "socket file removed");
}

#[test]
fn connections_beyond_the_limit_are_closed() {
    let config = ServerConfig {
        max_connections: 2,
        ..ServerConfig::default()
    };
    let f = Fixture::new(mem(1 << 20), config);
    let _a = f.client("disk");
    let _b = f.client("disk");
    let mut c = f.raw();
    assert!(at_eof(&mut c), "third connection must be closed");
    drop(_a);
    // The slot frees once the first connection's thread has finished.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match Client::connect_unix(&f.sock, "disk") {
            Ok(_) => break,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("slot never freed: {e}"),
        }
    }
}

/// A backend that misbehaves: drops some completers, returns short reads.
struct SloppyBackend(MemBackend);

impl Backend for SloppyBackend {
    fn exports(&self) -> Vec<ExportInfo> {
        self.0.exports()
    }
    fn submit(&self, export: usize, cmd: fusionraid_nbd::Command, done: Completer) {
        match cmd.kind {
            CommandKind::Read { offset: 0, .. } => drop(done),
            CommandKind::Read { offset: 4096, .. } => done.complete(Ok(vec![1, 2, 3])),
            _ => self.0.submit(export, cmd, done),
        }
    }
}

#[test]
fn backend_bugs_become_eio_without_desync() {
    let backend = Arc::new(SloppyBackend(MemBackend::new(ExportInfo::new(
        "d",
        1 << 20,
    ))));
    let f = Fixture::new(backend, ServerConfig::default());
    let mut c = f.client("d");
    let mut buf = [0u8; 4096];
    assert!(matches!(
        c.read_at(&mut buf, 0),
        Err(NbdError::Server(ErrorCode::Io))
    ));
    assert!(matches!(
        c.read_at(&mut buf, 4096),
        Err(NbdError::Server(ErrorCode::Io))
    ));
    c.write_at(&[3; 4096], 8192).unwrap();
    c.read_at(&mut buf, 8192).unwrap();
    assert_eq!(buf, [3; 4096]);
}

// ---- Server behaviour a well-behaved client never triggers (raw bytes) -----

fn raw_session(f: &Fixture, export: &str) -> (UnixStream, u64, u16) {
    let mut s = f.raw();
    let hs = raw_greet(&mut s);
    assert_eq!(hs, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
    let (size, flags) = raw_go(&mut s, export);
    (s, size, flags)
}

#[test]
fn server_errors_follow_the_spec_and_keep_the_stream_in_sync() {
    let backend = mem(1 << 20);
    let f = Fixture::new(backend.clone(), ServerConfig::default());
    let (mut s, size, flags) = raw_session(&f, "disk");
    assert_eq!(size, 1 << 20);
    assert!(flags & NBD_FLAG_SEND_FLUSH != 0 && flags & NBD_FLAG_CAN_MULTI_CONN != 0);

    // Misaligned read.
    raw_request(&mut s, NBD_CMD_READ, 0, 1, 512, 4096);
    assert_eq!(raw_reply(&mut s, 4096).0.error, NBD_EINVAL);
    // Read past the end.
    raw_request(&mut s, NBD_CMD_READ, 0, 2, 1 << 20, 4096);
    assert_eq!(raw_reply(&mut s, 4096).0.error, NBD_EINVAL);
    // Write past the end: ENOSPC, and its payload is skipped, not parsed.
    raw_request(&mut s, NBD_CMD_WRITE, 0, 3, 1 << 20, 4096);
    s.write_all(&[0xee; 4096]).unwrap();
    let (r, _) = raw_reply(&mut s, 0);
    assert_eq!((r.handle, r.error), (3, NBD_ENOSPC));
    // Unknown flag on a write, payload again skipped.
    raw_request(&mut s, NBD_CMD_WRITE, NBD_CMD_FLAG_DF, 4, 0, 4096);
    s.write_all(&[0xee; 4096]).unwrap();
    assert_eq!(raw_reply(&mut s, 0).0.error, NBD_EINVAL);
    // CACHE is not offered: EINVAL, connection stays up.
    raw_request(&mut s, NBD_CMD_CACHE, 0, 5, 0, 4096);
    assert_eq!(raw_reply(&mut s, 0).0.error, NBD_EINVAL);
    // Zero-length read: success with no data.
    raw_request(&mut s, NBD_CMD_READ, 0, 6, 0, 0);
    let (r, d) = raw_reply(&mut s, 0);
    assert_eq!((r.handle, r.error, d.len()), (6, 0, 0));
    // A good write still lands after all that.
    raw_request(&mut s, NBD_CMD_WRITE, NBD_CMD_FLAG_FUA, 7, 4096, 4096);
    s.write_all(&[0x11; 4096]).unwrap();
    assert_eq!(
        raw_reply(&mut s, 0).0,
        fusionraid_nbd::proto::transmission::SimpleReply {
            error: 0,
            handle: 7
        }
    );
    raw_request(&mut s, NBD_CMD_READ, 0, 8, 4096, 4096);
    assert_eq!(raw_reply(&mut s, 4096).1, vec![0x11; 4096]);
    let c = backend.contents(0).unwrap();
    assert!(c[..4096].iter().all(|&b| b == 0));
    assert!(
        !c.contains(&0xee),
        "rejected payloads never reach the backend"
    );
    assert_eq!(
        backend
            .stats()
            .writes
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    // NBD_CMD_DISC: the server closes without a reply.
    raw_request(&mut s, NBD_CMD_DISC, 0, 9, 0, 0);
    assert!(at_eof(&mut s));
}

#[test]
fn read_only_export_refuses_writes_with_eperm() {
    let backend = Arc::new(MemBackend::new(
        ExportInfo::new("ro", 1 << 20).with_read_only(true),
    ));
    let f = Fixture::new(backend.clone(), ServerConfig::default());
    let (mut s, _, flags) = raw_session(&f, "ro");
    assert!(flags & NBD_FLAG_READ_ONLY != 0);
    assert_eq!(flags & (NBD_FLAG_SEND_TRIM | NBD_FLAG_SEND_WRITE_ZEROES), 0);
    raw_request(&mut s, NBD_CMD_WRITE, 0, 1, 0, 4096);
    s.write_all(&[1; 4096]).unwrap();
    assert_eq!(raw_reply(&mut s, 0).0.error, NBD_EPERM);
    raw_request(&mut s, NBD_CMD_TRIM, 0, 2, 0, 4096);
    assert_eq!(raw_reply(&mut s, 0).0.error, NBD_EPERM);
    raw_request(&mut s, NBD_CMD_WRITE_ZEROES, 0, 3, 0, 4096);
    assert_eq!(raw_reply(&mut s, 0).0.error, NBD_EPERM);
    assert_eq!(
        backend
            .stats()
            .writes
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    assert!(backend.contents(0).unwrap().iter().all(|&b| b == 0));
}

#[test]
fn malformed_requests_close_the_connection_without_writing() {
    let backend = mem(1 << 20);
    let f = Fixture::new(backend.clone(), ServerConfig::default());

    // Bad magic.
    let (mut s, _, _) = raw_session(&f, "disk");
    s.write_all(&[0xde; 28]).unwrap();
    assert!(at_eof(&mut s));

    // Unknown command: EINVAL for it, then the connection closes (we cannot
    // know whether a payload follows).
    let (mut s, _, _) = raw_session(&f, "disk");
    raw_request(&mut s, 77, 0, 5, 0, 4096);
    let (r, _) = raw_reply(&mut s, 0);
    assert_eq!((r.handle, r.error), (5, NBD_EINVAL));
    assert!(at_eof(&mut s));

    // Absurd write length: refused and closed before any payload is read.
    let (mut s, _, _) = raw_session(&f, "disk");
    raw_request(&mut s, NBD_CMD_WRITE, 0, 6, 0, u32::MAX);
    assert_eq!(raw_reply(&mut s, 0).0.error, NBD_EINVAL);
    assert!(at_eof(&mut s));

    // Truncated write payload, then EOF.
    let (mut s, _, _) = raw_session(&f, "disk");
    raw_request(&mut s, NBD_CMD_WRITE, 0, 7, 0, 8192);
    s.write_all(&[0x77; 4096]).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    assert!(at_eof(&mut s));

    assert_eq!(
        backend
            .stats()
            .writes
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    assert!(backend.contents(0).unwrap().iter().all(|&b| b == 0));
}

#[test]
fn handshake_options() {
    let backend = Arc::new(MemBackend::with_exports(vec![
        ExportInfo::new("one", 1 << 20).with_description("first"),
        ExportInfo::new("two", 2 << 20),
    ]));
    let f = Fixture::new(backend, ServerConfig::default());
    let mut s = f.raw();
    raw_greet(&mut s);

    // LIST: one NBD_REP_SERVER per export, then ACK.
    raw_option(&mut s, NBD_OPT_LIST, &[]);
    let mut names = Vec::new();
    loop {
        let (h, d) = raw_option_reply(&mut s);
        assert_eq!(h.option, NBD_OPT_LIST);
        match h.reply {
            NBD_REP_SERVER => names.push(decode_server_entry(&d).unwrap()),
            NBD_REP_ACK => break,
            r => panic!("reply {r:#x}"),
        }
    }
    assert_eq!(
        names,
        vec![
            ("one".into(), "first".into()),
            ("two".into(), String::new())
        ]
    );
    // LIST with data is invalid.
    raw_option(&mut s, NBD_OPT_LIST, b"x");
    assert_eq!(raw_option_reply(&mut s).0.reply, NBD_REP_ERR_INVALID);
    // Unsupported and unknown options.
    for opt in [
        NBD_OPT_STRUCTURED_REPLY,
        NBD_OPT_STARTTLS,
        NBD_OPT_SET_META_CONTEXT,
        0x1234,
    ] {
        raw_option(&mut s, opt, &[]);
        let (h, _) = raw_option_reply(&mut s);
        assert_eq!((h.option, h.reply), (opt, NBD_REP_ERR_UNSUP));
    }
    // INFO for an unknown export, then a malformed INFO.
    let req = InfoRequest {
        name: "zzz".into(),
        requests: vec![],
    };
    raw_option(&mut s, NBD_OPT_INFO, &req.encode());
    assert_eq!(raw_option_reply(&mut s).0.reply, NBD_REP_ERR_UNKNOWN);
    raw_option(&mut s, NBD_OPT_INFO, &[0, 0, 0, 9, b'a']);
    assert_eq!(raw_option_reply(&mut s).0.reply, NBD_REP_ERR_INVALID);
    // INFO with every info type: export, name, description, block size.
    let req = InfoRequest {
        name: "one".into(),
        requests: vec![NBD_INFO_NAME, NBD_INFO_DESCRIPTION, NBD_INFO_BLOCK_SIZE],
    };
    raw_option(&mut s, NBD_OPT_INFO, &req.encode());
    let mut infos = Vec::new();
    loop {
        let (h, d) = raw_option_reply(&mut s);
        match h.reply {
            NBD_REP_INFO => infos.push(Info::decode(&d).unwrap()),
            NBD_REP_ACK => break,
            r => panic!("reply {r:#x}"),
        }
    }
    assert!(infos.contains(&Info::Name("one".into())));
    assert!(infos.contains(&Info::Description("first".into())));
    assert!(infos.contains(&Info::BlockSize(BlockSize::PAGE_4K)));
    assert!(
        infos
            .iter()
            .any(|i| matches!(i, Info::Export { size, .. } if *size == 1 << 20))
    );
    // Still in option haggling after INFO: GO works.
    let (size, _) = raw_go(&mut s, "two");
    assert_eq!(size, 2 << 20);
}

#[test]
fn handshake_abort_and_export_name() {
    let f = Fixture::new(mem(1 << 20), ServerConfig::default());
    // ABORT gets an ACK and a close.
    let mut s = f.raw();
    raw_greet(&mut s);
    raw_option(&mut s, NBD_OPT_ABORT, &[]);
    assert_eq!(raw_option_reply(&mut s).0.reply, NBD_REP_ACK);
    assert!(at_eof(&mut s));

    // EXPORT_NAME without NO_ZEROES: size, flags, 124 zero bytes.
    let mut s = f.raw();
    read_exact_vec(&mut s, GREETING_LEN);
    s.write_all(&NBD_FLAG_C_FIXED_NEWSTYLE.to_be_bytes())
        .unwrap();
    raw_option(&mut s, NBD_OPT_EXPORT_NAME, b"disk");
    let r = read_exact_vec(&mut s, 134);
    assert_eq!(u64::from_be_bytes(r[..8].try_into().unwrap()), 1 << 20);
    assert!(r[10..].iter().all(|&b| b == 0));
    raw_request(&mut s, NBD_CMD_READ, 0, 1, 0, 4096);
    assert_eq!(raw_reply(&mut s, 4096).1, vec![0; 4096]);

    // EXPORT_NAME for a missing export: the only possible answer is a close.
    let mut s = f.raw();
    raw_greet(&mut s);
    raw_option(&mut s, NBD_OPT_EXPORT_NAME, b"missing");
    assert!(at_eof(&mut s));

    // Unknown client flags: closed.
    let mut s = f.raw();
    read_exact_vec(&mut s, GREETING_LEN);
    s.write_all(&0x8000_0001u32.to_be_bytes()).unwrap();
    assert!(at_eof(&mut s));

    // An option too large to be legitimate: ERR_TOO_BIG, then closed.
    let mut s = f.raw();
    raw_greet(&mut s);
    s.write_all(
        &OptionHeader {
            option: NBD_OPT_GO,
            len: 1 << 20,
        }
        .encode(),
    )
    .unwrap();
    assert_eq!(raw_option_reply(&mut s).0.reply, NBD_REP_ERR_TOO_BIG);
    assert!(at_eof(&mut s));
}

// ---- Our client against servers that are not ours (scripted) ---------------

/// Plays a server that predates NBD_OPT_GO: the client must fall back.
#[test]
fn client_falls_back_to_export_name() {
    let (client_end, mut s) = UnixStream::pair().unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    let server = std::thread::spawn(move || {
        s.write_all(&encode_greeting(NBD_FLAG_FIXED_NEWSTYLE))
            .unwrap();
        let cf = u32::from_be_bytes(read_exact_vec(&mut s, 4).try_into().unwrap());
        assert_eq!(cf, NBD_FLAG_C_FIXED_NEWSTYLE, "no NO_ZEROES unless offered");
        let h: [u8; OPTION_HEADER_LEN] = read_exact_vec(&mut s, 16).try_into().unwrap();
        let h = OptionHeader::decode(&h).unwrap();
        assert_eq!(h.option, NBD_OPT_GO);
        let req = InfoRequest::decode(&read_exact_vec(&mut s, h.len as usize)).unwrap();
        assert!(req.requests.contains(&NBD_INFO_BLOCK_SIZE));
        s.write_all(
            &OptionReplyHeader {
                option: NBD_OPT_GO,
                reply: NBD_REP_ERR_UNSUP,
                len: 0,
            }
            .encode(),
        )
        .unwrap();
        let h: [u8; OPTION_HEADER_LEN] = read_exact_vec(&mut s, 16).try_into().unwrap();
        let h = OptionHeader::decode(&h).unwrap();
        assert_eq!(h.option, NBD_OPT_EXPORT_NAME);
        assert_eq!(read_exact_vec(&mut s, h.len as usize), b"vol");
        s.write_all(&encode_export_name_reply(
            1 << 30,
            NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_READ_ONLY,
            false,
        ))
        .unwrap();
        // The client's Drop must end with NBD_CMD_DISC.
        let r = read_exact_vec(&mut s, 28);
        assert_eq!(u16::from_be_bytes([r[6], r[7]]), NBD_CMD_DISC);
    });
    let c = Client::from_stream(client_end, "vol").unwrap();
    assert_eq!(c.size(), 1 << 30);
    assert!(c.info().read_only && c.info().flush && !c.info().trim);
    assert_eq!(c.info().block_size, BlockSize::UNADVERTISED);
    drop(c);
    server.join().unwrap();
}

#[test]
fn client_rejects_oldstyle_and_garbage_servers() {
    for (greeting, want) in [
        (
            [NBDMAGIC.to_be_bytes(), CLISERV_MAGIC.to_be_bytes()].concat(),
            "oldstyle",
        ),
        (
            b"HTTP/1.1 400 Bad Request\r\n".to_vec(),
            "not an NBD server",
        ),
    ] {
        let (client_end, mut s) = UnixStream::pair().unwrap();
        s.write_all(&greeting).unwrap();
        s.write_all(&[0; 16]).unwrap();
        let err = Client::from_stream(client_end, "")
            .err()
            .expect("must fail");
        assert!(err.to_string().contains(want), "{err}");
    }
}
