//! The reply sink: replies sent from the completing thread when the socket takes them,
//! through the writer otherwise, and never a blocked completer.

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{Receiver, sync_channel};
use std::time::{Duration, Instant};

use super::*;

fn sink(slots: usize) -> (Arc<ReplySink>, UnixStream, Arc<Inflight>) {
    let (server, client) = UnixStream::pair().unwrap();
    let inflight = Arc::new(Inflight::new(
        slots,
        1 << 30,
        Arc::new(crate::server::budget::ByteBudget::new(u64::MAX)),
    ));
    let s = Arc::new(ReplySink::new(NbdStream::Unix(server), inflight.clone()));
    (s, client, inflight)
}

fn read_reply(handle: u64, len: u32) -> ReplyMsg {
    ReplyMsg {
        handle,
        result: Ok(vec![handle as u8; len as usize]),
        read_len: Some(len),
        budget: u64::from(len),
    }
}

fn take(client: &mut UnixStream, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    client.read_exact(&mut b).unwrap();
    b
}

fn channel() -> (SyncSender<WriterMsg>, Receiver<WriterMsg>) {
    sync_channel(64)
}

#[test]
fn a_small_reply_goes_out_at_once_and_frees_its_slot() {
    let (s, mut client, inflight) = sink(1);
    let (tx, rx) = channel();
    assert!(inflight.acquire_slot(|| {}));
    s.deliver(&tx, read_reply(7, 4096));
    assert!(rx.try_recv().is_err(), "the writer was not needed");
    let h = take(&mut client, SIMPLE_REPLY_LEN);
    let r = SimpleReply::decode(&h.try_into().unwrap()).unwrap();
    assert_eq!((r.handle, r.error), (7, 0));
    assert_eq!(take(&mut client, 4096), vec![7u8; 4096]);
    // The only slot is free again.
    assert!(inflight.acquire_slot(|| {}));
}

#[test]
fn a_busy_writer_or_a_large_reply_goes_through_the_channel() {
    let (s, _client, _) = sink(4);
    let (tx, rx) = channel();
    let held = s.lock();
    s.deliver(&tx, read_reply(1, 4096));
    drop(held);
    s.deliver(&tx, read_reply(2, 1 << 20));
    for want in [1, 2] {
        match rx.try_recv() {
            Ok(WriterMsg::Reply(m)) => assert_eq!(m.handle, want),
            _ => panic!("reply {want} was not queued"),
        }
    }
}

#[test]
fn a_wrong_length_read_is_an_eio_header_without_data() {
    let msg = ReplyMsg {
        handle: 3,
        result: Ok(vec![0; 10]),
        read_len: Some(4096),
        budget: 4096,
    };
    let (h, payload) = frame(&msg);
    assert!(payload.is_empty());
    assert_eq!(
        SimpleReply::decode(&h).unwrap().error,
        ErrorCode::Io.to_wire()
    );
}

/// A client that stops reading fills its socket; completers must still never block (the
/// replies queue to the writer, which is the one that waits), and once the client reads
/// again every reply arrives, partly sent ones included, in one piece each.
#[test]
fn a_client_that_does_not_read_never_blocks_a_completer() {
    const N: u64 = 100;
    let (s, mut client, inflight) = sink(N as usize);
    let (tx, rx) = sync_channel(N as usize);
    let w = s.clone();
    let writer = std::thread::spawn(move || super::super::writer::run(&w, rx));
    let t = Instant::now();
    for h in 0..N {
        assert!(inflight.acquire_slot(|| {}));
        s.deliver(&tx, read_reply(h, 16 * 1024));
    }
    drop(tx);
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "completers waited for the client: {:?}",
        t.elapsed()
    );
    let mut seen = vec![false; N as usize];
    for _ in 0..N {
        let h = take(&mut client, SIMPLE_REPLY_LEN);
        let r = SimpleReply::decode(&h.try_into().unwrap()).unwrap();
        assert_eq!(r.error, 0);
        let data = take(&mut client, 16 * 1024);
        assert!(
            data.iter().all(|&b| b == r.handle as u8),
            "reply {} torn",
            r.handle
        );
        seen[r.handle as usize] = true;
    }
    assert!(seen.iter().all(|&x| x));
    writer.join().unwrap();
}

/// Replies completed inside a batch wait for its end, then leave in one send per
/// connection; a nested batch joins the outer one.
#[test]
fn a_batch_sends_its_replies_together_at_the_end() {
    let (s, mut client, inflight) = sink(3);
    let (tx, rx) = channel();
    client.set_nonblocking(true).unwrap();
    super::super::batch::batch_replies(|| {
        for h in 0..2 {
            assert!(inflight.acquire_slot(|| {}));
            s.deliver(&tx, read_reply(h, 4096));
        }
        super::super::batch::batch_replies(|| {
            assert!(inflight.acquire_slot(|| {}));
            s.deliver(&tx, read_reply(2, 4096));
        });
        let mut b = [0u8; 1];
        let early = client.read(&mut b);
        assert!(early.is_err(), "a reply left before the batch ended");
    });
    assert!(rx.try_recv().is_err(), "the writer was not needed");
    client.set_nonblocking(false).unwrap();
    for h in 0..3u64 {
        let r = SimpleReply::decode(&take(&mut client, SIMPLE_REPLY_LEN).try_into().unwrap());
        assert_eq!(r.unwrap().handle, h);
        assert_eq!(take(&mut client, 4096), vec![h as u8; 4096]);
    }
    // All three slots came back.
    for _ in 0..3 {
        assert!(inflight.acquire_slot(|| {}));
    }
}

/// A batch that can not be sent now (the writer holds the socket) goes to the writer, each
/// reply with its slot.
#[test]
fn a_batch_the_socket_can_not_take_goes_to_the_writer() {
    let (s, _client, _) = sink(4);
    let (tx, rx) = channel();
    let held = s.lock();
    super::super::batch::batch_replies(|| {
        s.deliver(&tx, read_reply(1, 4096));
        s.deliver(&tx, read_reply(2, 512));
    });
    drop(held);
    for want in [1, 2] {
        match rx.try_recv() {
            Ok(WriterMsg::Reply(m)) => assert_eq!(m.handle, want),
            _ => panic!("reply {want} was not queued"),
        }
    }
}

/// A reply the socket takes only in part stays in the sink, as it is, and the writer sends
/// the rest before anything else.
#[test]
fn a_partly_sent_reply_is_finished_by_the_writer_first() {
    let (s, mut client, inflight) = sink(4);
    let small: libc::c_int = 4096;
    let NbdStream::Unix(u) = &s.stream else {
        unreachable!()
    };
    // SAFETY: setsockopt on our own socket with a c_int option value.
    let r = unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(u),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&small as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0);
    let (tx, rx) = channel();
    assert!(inflight.acquire_slot(|| {}));
    s.deliver(&tx, read_reply(5, 16 * 1024));
    {
        let st = s.lock();
        assert_eq!(st.partial.len(), 1, "the small socket took the whole reply");
        assert!(st.partial_sent > 0 && st.partial_sent < SIMPLE_REPLY_LEN + 16 * 1024);
    }
    assert!(matches!(rx.try_recv(), Ok(WriterMsg::Resume)));
    // A reply completed meanwhile waits behind the partial one.
    assert!(inflight.acquire_slot(|| {}));
    s.deliver(&tx, read_reply(6, 4096));
    let w = s.clone();
    let (wtx, wrx) = sync_channel(4);
    wtx.send(WriterMsg::Resume).unwrap();
    for m in rx.try_iter() {
        wtx.send(m).unwrap();
    }
    drop((tx, wtx));
    let writer = std::thread::spawn(move || super::super::writer::run(&w, wrx));
    for (h, len) in [(5u64, 16 * 1024), (6, 4096)] {
        let r = SimpleReply::decode(&take(&mut client, SIMPLE_REPLY_LEN).try_into().unwrap());
        assert_eq!(r.unwrap().handle, h);
        assert_eq!(take(&mut client, len), vec![h as u8; len]);
    }
    writer.join().unwrap();
    // Both slots are back.
    for _ in 0..4 {
        assert!(inflight.acquire_slot(|| {}));
    }
}
