//! The driver end to end, in process: engine + members + loop + NBD server + our client.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fusionraid_core::scheme::fusion::{
    FusionConfig, FusionScheme, LayoutKind, Level, PoolGeometry, VolumeConfig,
};
use fusionraid_core::{Engine, EngineConfig};
use fusionraid_io::driver::ExportOptions;
use fusionraid_io::{
    Clock, Driver, DriverConfig, ExportMux, MemberSpec, OpenOptions, Waker, open_member,
};
use fusionraid_nbd::{Client, ClientReceiver, ClientSender, NbdError, Server, ServerHandle};

const DISK: u64 = 64 << 20;

struct Pool {
    driver: Option<Driver>,
    server: Option<ServerHandle>,
    sock: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Pool {
    fn uri(&self, export: &str) -> String {
        format!("nbd+unix:///{export}?socket={}", self.sock.display())
    }
    fn driver(&self) -> &Driver {
        self.driver.as_ref().unwrap()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
        if let Some(d) = self.driver.take() {
            d.shutdown(Duration::from_secs(5));
        }
    }
}

fn start(specs: &[&str], max_requests: usize, queue_depth: usize, unaligned: bool) -> Pool {
    let dir = tempfile::tempdir().unwrap();
    let n = specs.len();
    let geometry = PoolGeometry {
        disks: n,
        disk_bytes: DISK,
        block_size: 64 << 10,
        data_offset: 1 << 20,
        layout: LayoutKind::Mols,
        hdds: Vec::new(),
    };
    let vols = vec![
        VolumeConfig::new("v0", Level::Raid5, 4, 16 << 20),
        VolumeConfig::new("v1", Level::Raid6, 4, 8 << 20),
    ];
    let scheme = FusionScheme::new(FusionConfig::new(geometry, vols)).unwrap();
    let mut ecfg = EngineConfig::new(n);
    ecfg.max_requests = max_requests;
    let engine = Engine::new(ecfg, Box::new(scheme), 0);
    let waker = Arc::new(Waker::new().unwrap());
    let clock = Clock::new();
    let opts = OpenOptions {
        waker: waker.clone(),
        clock,
        seed: 1,
        create_size: Some(DISK),
        file_space: Default::default(),
        no_space_wait: fusionraid_io::member::DEFAULT_NO_SPACE_WAIT_NS,
        base_dir: Some(dir.path().to_path_buf()),
        uring: Default::default(),
    };
    let members = specs
        .iter()
        .map(|s| Some(open_member(&MemberSpec::parse(s).unwrap(), &opts).unwrap()))
        .collect();
    let driver =
        Driver::start(engine, members, clock, waker, DriverConfig { queue_depth }).unwrap();
    let backend = driver.backend(&ExportOptions::default());
    let mux = ExportMux::new(backend, vec![false, unaligned]);
    let sock = dir.path().join("nbd.sock");
    let server = Server::new(Arc::new(mux))
        .bind_unix(&sock)
        .unwrap()
        .start()
        .unwrap();
    Pool {
        driver: Some(driver),
        server: Some(server),
        sock,
        _dir: dir,
    }
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Pipelined writes of random sizes, then pipelined reads, all checked against a shadow.
fn exercise(sender: &mut ClientSender, receiver: &mut ClientReceiver, size: u64, rounds: u64) {
    let mut shadow = vec![0u8; size as usize];
    // In flight: handle -> written range. NBD does not order overlapping requests, so a
    // write overlapping one in flight waits until everything in flight completed.
    let mut inflight: std::collections::HashMap<u64, (u64, u64)> = Default::default();
    let mut drain = |inflight: &mut std::collections::HashMap<u64, (u64, u64)>| {
        while !inflight.is_empty() {
            let (h, r) = receiver.recv().unwrap();
            r.unwrap();
            inflight.remove(&h);
        }
    };
    for i in 0..rounds {
        let pages = 1 + (i * 7919 % 40);
        let len = pages * 4096;
        let off = (i * 104_729 * 4096) % (size - len) / 4096 * 4096;
        let overlaps = inflight
            .values()
            .any(|&(o, l)| off < o + l && o < off + len);
        if overlaps || inflight.len() >= 32 {
            drain(&mut inflight);
        }
        let data = pattern(i, len as usize);
        shadow[off as usize..(off + len) as usize].copy_from_slice(&data);
        let h = sender.send_write(off, &data, i % 5 == 0).unwrap();
        inflight.insert(h, (off, len));
    }
    drain(&mut inflight);
    let mut reads = std::collections::HashMap::new();
    for off in (0..size).step_by(256 << 10) {
        let h = sender
            .send(&fusionraid_nbd::CommandKind::Read {
                offset: off,
                len: 256 << 10,
            })
            .unwrap();
        reads.insert(h, off);
    }
    while !reads.is_empty() {
        let (h, r) = receiver.recv().unwrap();
        let off = reads.remove(&h).unwrap() as usize;
        let d = r.unwrap().unwrap();
        assert!(
            d == shadow[off..off + (256 << 10)],
            "data mismatch at {off}"
        );
    }
}

#[test]
fn mem_pool_round_trip_with_trim_zeroes_flush_and_degraded_reads() {
    let pool = start(&["mem:64M"; 5], 4096, 256, false);
    let c = Client::connect(&pool.uri("v0")).unwrap();
    assert_eq!(c.size(), 16 << 20);
    assert_eq!(c.info().block_size.minimum, 4096);
    assert!(c.info().trim && c.info().write_zeroes && c.info().can_multi_conn);
    let (mut s, mut r) = c.split();
    exercise(&mut s, &mut r, 16 << 20, 300);
    drop((s, r));

    let mut c = Client::connect(&pool.uri("v0")).unwrap();
    c.write_at(&vec![0xAB; 1 << 20], 0).unwrap();
    c.write_zeroes(4096, 8192, false).unwrap();
    c.trim(1 << 20, 64 << 10).unwrap();
    c.flush().unwrap();
    let mut buf = vec![0u8; 16384];
    c.read_at(&mut buf, 0).unwrap();
    assert!(buf[..4096].iter().all(|&b| b == 0xAB));
    assert!(buf[4096..12288].iter().all(|&b| b == 0));
    assert!(buf[12288..].iter().all(|&b| b == 0xAB));

    // Misaligned and out-of-range requests are refused by the server, not the engine.
    let e = c.write_at(&[1; 512], 512).unwrap_err();
    assert!(matches!(e, NbdError::InvalidRequest(_)), "{e}");

    // One member fails: RAID5 still returns the data.
    pool.driver().fail_member(2).unwrap();
    let mut after = vec![0u8; 1 << 20];
    c.read_at(&mut after, 0).unwrap();
    assert!(after[12288..].iter().all(|&b| b == 0xAB));
    let st = pool.driver().status(Duration::from_secs(5)).unwrap();
    assert_eq!(st.members.len(), 5);
    assert_eq!(
        st.members[2].state,
        fusionraid_io::driver::MemberState::Failed
    );
    assert_eq!(st.volumes.len(), 2);
    assert!(st.write_latency.count > 0 && st.read_latency.count > 0);
    c.disconnect().unwrap();
}

#[test]
fn backpressure_with_a_tiny_engine_and_queue() {
    // Two requests in the engine and one queued: 64 pipelined writes must all complete.
    let pool = start(&["mem:64M"; 5], 2, 1, false);
    let (mut s, mut r) = Client::connect(&pool.uri("v1")).unwrap().split();
    exercise(&mut s, &mut r, 8 << 20, 64);
}

#[test]
fn read_modify_write_follow_ups_do_not_deadlock_a_full_loop() {
    // The byte-granular export submits its merged writes from completions, on the loop
    // thread, while connection threads keep the one-slot queue full.
    let pool = start(&["mem:64M"; 5], 2, 1, true);
    let mut threads = Vec::new();
    for t in 0..4u64 {
        let uri = pool.uri("v1");
        threads.push(std::thread::spawn(move || {
            let (mut s, mut r) = Client::connect(&uri).unwrap().split();
            // Disjoint, unaligned ranges per thread, many in flight.
            let base = t * (2 << 20);
            let mut handles = Vec::new();
            for i in 0..64u64 {
                let data = pattern(t * 1000 + i, 3000);
                handles.push(s.send_write(base + i * 5000 + 7, &data, false).unwrap());
            }
            for _ in &handles {
                let (_, res) = r.recv().unwrap();
                res.unwrap();
            }
            let mut c_buf = Vec::new();
            for i in 0..64u64 {
                let h = s
                    .send(&fusionraid_nbd::CommandKind::Read {
                        offset: base + i * 5000 + 7,
                        len: 3000,
                    })
                    .unwrap();
                c_buf.push((h, i));
            }
            for _ in 0..64 {
                let (h, res) = r.recv().unwrap();
                let i = c_buf.iter().find(|(x, _)| *x == h).unwrap().1;
                assert_eq!(res.unwrap().unwrap(), pattern(t * 1000 + i, 3000));
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn file_members_through_io_uring_and_unaligned_export() {
    let specs: Vec<String> = (0..5).map(|i| format!("file:d{i}.img")).collect();
    let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
    let pool = start(&specs, 4096, 256, true);
    let (mut s, mut r) = Client::connect(&pool.uri("v0")).unwrap().split();
    exercise(&mut s, &mut r, 16 << 20, 200);
    // Export v1 takes byte-granular I/O through read-modify-write.
    let mut c = Client::connect(&pool.uri("v1")).unwrap();
    assert_eq!(c.info().block_size.minimum, 1);
    c.write_at(b"hello, unaligned world", 4093).unwrap();
    let mut buf = [0u8; 22];
    c.read_at(&mut buf, 4093).unwrap();
    assert_eq!(&buf, b"hello, unaligned world");
    assert!(Path::new(&pool.sock).exists());
}

#[test]
fn emulated_members_add_model_latency() {
    let pool = start(&["emu:consumer:mem:64M"; 5], 4096, 256, false);
    let mut c = Client::connect(&pool.uri("v0")).unwrap();
    for i in 0..50u64 {
        c.write_at(&pattern(i, 4096), i * 4096).unwrap();
    }
    let mut b = vec![0u8; 4096];
    c.read_at(&mut b, 49 * 4096).unwrap();
    assert_eq!(b, pattern(49, 4096));
    let st = pool.driver().status(Duration::from_secs(5)).unwrap();
    // The consumer model's writes take tens of microseconds at least.
    assert!(st.write_latency.p50_us >= 20.0, "{:?}", st.write_latency);
    assert!(st.members[0].notes.iter().any(|n| n.contains("emulated")));
}

#[test]
fn io_uring_work_survives_the_connection_threads_that_started_it() {
    // Connection threads run turns (and so start device I/O, background work included)
    // and exit with their client. io_uring ties a submission's async work to the thread
    // that entered the kernel and cancels it when that thread exits, so only the loop
    // thread hands submissions to the kernel: no device error, no failed member, however
    // many short-lived connections wrote.
    let specs: Vec<String> = (0..5).map(|i| format!("file:d{i}.img")).collect();
    let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
    let pool = start(&specs, 4096, 256, false);
    let mut x = 7u64;
    for round in 0..40u64 {
        let (mut s, mut r) = Client::connect(&pool.uri("v0")).unwrap().split();
        let handles: Vec<u64> = (0..32)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let off = (x % ((16 << 20) / 4096)) * 4096;
                s.send_write(off, &pattern(round, 4096), false).unwrap()
            })
            .collect();
        for _ in &handles {
            r.recv().unwrap().1.unwrap();
        }
        drop(s);
        drop(r);
    }
    // Let the background work those connections started finish.
    std::thread::sleep(Duration::from_millis(300));
    let st = pool.driver().status(Duration::from_secs(5)).unwrap();
    for m in &st.members {
        assert_eq!(m.errors, 0, "{m:?}");
        assert!(
            matches!(m.state, fusionraid_io::driver::MemberState::Healthy),
            "{m:?}"
        );
    }
}
