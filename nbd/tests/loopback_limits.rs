//! Our server's bounds and endings: in-flight requests and bytes, connection limit, DISC, shutdown.

mod common;

use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use common::*;
use fusionraid_nbd::{Client, CommandKind, ExportInfo, NbdError, ServerConfig};

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
    // From a thread: once the server stops reading, the socket's send buffer (charged per
    // write, not per byte) can fill before all 300 requests are in it, and the sender
    // blocks until replies free slots; sent from the test's own thread, that hung the test.
    let sender = std::thread::spawn(move || {
        for i in 0..total {
            tx.send(&CommandKind::Read {
                offset: (i % 256) * 4096,
                len: 4096,
            })
            .unwrap();
        }
        tx
    });
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
    sender.join().unwrap().disconnect().unwrap();
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

/// Clients that send large requests on many connections and stop reading the replies
/// pinned every connection's budget at once (256 MiB each by default, 256 connections):
/// the server's memory grew with each connection. The server-wide budget bounds them
/// together: two connections whose own budgets would admit 64 KiB each get 64 KiB
/// between them, and everything completes once the backend answers.
#[test]
fn server_budget_bounds_payload_over_all_connections() {
    let backend = HoldBackend::new(ExportInfo::new("disk", 1 << 20));
    let config = ServerConfig {
        max_in_flight: 128,
        max_in_flight_bytes: 64 * 1024,
        max_total_in_flight_bytes: 64 * 1024,
        ..ServerConfig::default()
    };
    let f = Fixture::new(backend.clone(), config);
    let senders: Vec<_> = (0..2u64)
        .map(|c| {
            let (mut tx, rx) = f.client("disk").split();
            let t = std::thread::spawn(move || {
                for i in 0..8u64 {
                    let at = (c * 8 + i) * 16384;
                    tx.send_write(at, &[(c * 8 + i) as u8; 16384], false)
                        .unwrap();
                }
                tx
            });
            (t, rx)
        })
        .collect();
    assert_eq!(backend.wait_queued(4, TIMEOUT), 4);
    // Give the server every chance to (wrongly) admit more.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        backend.queued(),
        4,
        "a 64 KiB server budget allows four 16 KiB writes over all connections"
    );
    let mut done = 0;
    let deadline = Instant::now() + TIMEOUT;
    while done < 16 {
        assert!(Instant::now() < deadline, "only {done} of 16 completed");
        for (e, c, d) in backend.take_all() {
            backend.finish(e, c, d);
            done += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(backend.peak.load(std::sync::atomic::Ordering::SeqCst), 4);
    let c = backend.inner.contents(0).unwrap();
    for (t, mut rx) in senders {
        for _ in 0..8 {
            assert!(rx.recv().unwrap().1.is_ok());
        }
        t.join().unwrap().disconnect().unwrap();
    }
    for i in 0..16usize {
        assert_eq!(c[i * 16384], i as u8, "write {i}");
    }
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
/// spinning with a full pool) must not hold `shutdown` forever, or `serve` never gets to
/// stop the backend: shutdown gives up on such connections after the grace period.
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
