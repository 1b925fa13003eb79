//! Our client against our server, over Unix sockets and TCP loopback.

mod common;

use std::sync::Arc;

use common::*;
use fusionraid_nbd::{
    Backend, BlockSize, Client, CommandKind, Completer, ErrorCode, ExportInfo, MemBackend,
    NbdError, Server, ServerConfig,
};

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
