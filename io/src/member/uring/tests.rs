//! Tests of `file:` members: round trips through the shared ring, creation, errors.

use std::time::Duration;

use super::*;
use crate::member::run_sync;
use crate::waker::Waker;

#[test]
fn a_short_write_suggests_a_full_filesystem() {
    let w = short_transfer(Kind::Write, 8192, 65536);
    assert!(w.contains("8192 of 65536") && w.contains("full"), "{w}");
    let r = short_transfer(Kind::Read, 0, 4096);
    assert!(r.contains("end of the file"), "{r}");
}

fn write(offset: u64, data: Vec<u8>) -> DevOp {
    DevOp::Write {
        offset,
        data: Data::Bytes(data),
        fua: false,
    }
}

#[test]
fn round_trip_many_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d0.img");
    let waker = Waker::new().unwrap();
    let ring = SharedRing::new(&waker).unwrap();
    let mut m =
        FileMember::open("file:d0", &path, Some(256 << 20), FileSpace::Reserved, ring).unwrap();
    assert_eq!(m.size_bytes(), 256 << 20);
    // More than DEPTH operations at once, of sizes above and below the fixed slot,
    // at disjoint offsets (concurrent writes have no order).
    let n = ring::DEPTH as u64 + 200;
    let at = |i: u64| i * (300 << 10);
    for i in 0..n {
        let len = if i % 7 == 0 { 192 << 10 } else { 4096 };
        m.submit(i, write(at(i), vec![(i % 251) as u8; len]), 0);
    }
    m.commit();
    let mut out = Vec::new();
    while out.len() < n as usize {
        m.reap(0, &mut out);
        m.commit();
        waker.prepare_sleep();
        waker.wait(Some(Duration::from_millis(5)));
    }
    assert!(out.iter().all(|c| c.result.is_ok()), "{out:?}");
    assert_eq!(m.inflight(), 0);
    let clock = crate::Clock::new();
    for i in [7u64, 8, n - 1] {
        let len = if i % 7 == 0 { 192 << 10 } else { 4096 };
        let got = run_sync(
            &mut m,
            DevOp::Read { offset: at(i), len },
            &clock,
            &waker,
            Duration::from_secs(5),
        )
        .unwrap()
        .unwrap();
        assert_eq!(got, vec![(i % 251) as u8; len as usize]);
    }
    run_sync(&mut m, DevOp::Flush, &clock, &waker, Duration::from_secs(5)).unwrap();
    run_sync(
        &mut m,
        DevOp::Trim {
            offset: 0,
            len: 1 << 20,
        },
        &clock,
        &waker,
        Duration::from_secs(5),
    )
    .unwrap();
    let err = run_sync(
        &mut m,
        DevOp::Read {
            offset: 256 << 20,
            len: 4096,
        },
        &clock,
        &waker,
        Duration::from_secs(5),
    );
    assert!(err.is_err());
}

#[test]
fn missing_devices_are_never_created() {
    let waker = Waker::new().unwrap();
    let ring = SharedRing::new(&waker).unwrap();
    let p = Path::new("/dev/fusionraid-test-no-such-device");
    let e = FileMember::open("x", p, Some(1 << 20), FileSpace::Reserved, ring)
        .err()
        .unwrap();
    assert!(e.to_string().contains("no such device"), "{e}");
    assert!(!p.exists());
}

#[test]
fn missing_file_is_a_clear_error() {
    let waker = Waker::new().unwrap();
    let ring = SharedRing::new(&waker).unwrap();
    let e = FileMember::open(
        "file:/nonexistent/x",
        Path::new("/nonexistent/x"),
        None,
        FileSpace::Reserved,
        ring,
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("/nonexistent/x"), "{e}");
}

/// Issue 22: a member that is a file reports no device wear, and says nothing about
/// SMART (only NVMe block devices are asked).
#[test]
fn a_file_reports_no_device_wear() {
    let dir = tempfile::tempdir().unwrap();
    let waker = Waker::new().unwrap();
    let ring = SharedRing::new(&waker).unwrap();
    let m = FileMember::open(
        "f",
        &dir.path().join("f"),
        Some(1 << 20),
        FileSpace::Reserved,
        ring,
    )
    .unwrap();
    assert!(m.smart.is_none());
    assert_eq!((m.wear(), m.device_written_bytes()), (None, None));
    assert!(
        m.notes().iter().all(|n| !n.contains("wear")),
        "{:?}",
        m.notes()
    );
}

/// Members sharing one ring.
mod shared {
    use super::*;

    #[test]
    fn members_share_one_ring_and_outlive_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let waker = Waker::new().unwrap();
        let ring = SharedRing::new(&waker).unwrap();
        let mut a = FileMember::open(
            "a",
            &dir.path().join("a"),
            Some(1 << 20),
            FileSpace::Reserved,
            ring.clone(),
        )
        .unwrap();
        let mut b = FileMember::open(
            "b",
            &dir.path().join("b"),
            Some(1 << 20),
            FileSpace::Reserved,
            ring,
        )
        .unwrap();
        for i in 0..8u64 {
            let op = |v: u8| DevOp::Write {
                offset: i * 4096,
                data: Data::Bytes(vec![v; 4096]),
                fua: false,
            };
            a.submit(i, op(1), 0);
            b.submit(100 + i, op(2), 0);
        }
        a.commit();
        // b's completions may be reaped from the ring by a; they wait for b.
        let (mut ca, mut cb) = (Vec::new(), Vec::new());
        while ca.len() < 8 || cb.len() < 8 {
            a.reap(0, &mut ca);
            b.reap(0, &mut cb);
            waker.prepare_sleep();
            waker.wait(Some(Duration::from_millis(5)));
        }
        assert!(ca.iter().all(|c| c.tag < 8 && c.result.is_ok()));
        assert!(cb.iter().all(|c| c.tag >= 100 && c.result.is_ok()));
        // Dropping a member with work in flight is safe: the ring owns the buffers.
        b.submit(
            200,
            DevOp::Read {
                offset: 0,
                len: 4096,
            },
            0,
        );
        b.commit();
        drop(b);
        drop(a);
    }
}
