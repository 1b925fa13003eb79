//! The wire below our client: our server against raw bytes, our client against scripted servers.

mod common;

use std::io::Write;
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use common::*;
use fusionraid_nbd::proto::consts::*;
use fusionraid_nbd::proto::handshake::*;
use fusionraid_nbd::{BlockSize, Client, ExportInfo, MemBackend, ServerConfig};

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

/// Records what `Backend::rejected` hears, passing everything else to a memory backend.
struct Refusals {
    inner: Arc<MemBackend>,
    heard: std::sync::Mutex<Vec<(usize, fusionraid_nbd::ErrorCode)>>,
}

impl fusionraid_nbd::Backend for Refusals {
    fn exports(&self) -> Vec<ExportInfo> {
        self.inner.exports()
    }
    fn submit(&self, export: usize, cmd: fusionraid_nbd::Command, done: fusionraid_nbd::Completer) {
        self.inner.submit(export, cmd, done)
    }
    fn rejected(&self, export: usize, error: fusionraid_nbd::ErrorCode) {
        self.heard.lock().unwrap().push((export, error));
    }
}

/// Issue 19: requests the server refuses (out of range, misaligned) never reach the
/// backend, yet `fusionraid status` must count them as failed: the backend hears of each
/// one, also through the read-modify-write layer.
#[test]
fn the_backend_hears_of_every_refused_request() {
    use fusionraid_nbd::{Backend, ErrorCode, RmwBackend};
    let refusals = Arc::new(Refusals {
        inner: mem(1 << 20),
        heard: Default::default(),
    });
    for rmw in [false, true] {
        refusals.heard.lock().unwrap().clear();
        let backend: Arc<dyn Backend> = if rmw {
            Arc::new(RmwBackend::new(refusals.clone()))
        } else {
            refusals.clone()
        };
        let f = Fixture::new(backend, ServerConfig::default());
        let (mut s, _, _) = raw_session(&f, "disk");
        raw_request(&mut s, NBD_CMD_READ, 0, 1, 1 << 20, 4096);
        assert_eq!(raw_reply(&mut s, 4096).0.error, NBD_EINVAL);
        raw_request(&mut s, NBD_CMD_WRITE, 0, 2, (1 << 20) - 4096, 8192);
        s.write_all(&[0xee; 8192]).unwrap();
        assert_eq!(raw_reply(&mut s, 0).0.error, NBD_ENOSPC);
        raw_request(&mut s, NBD_CMD_READ, 0, 3, 0, 4096);
        assert_eq!(
            raw_reply(&mut s, 4096).0.error,
            0,
            "a good read is no refusal"
        );
        let mut want = vec![(0, ErrorCode::Inval), (0, ErrorCode::NoSpc)];
        if !rmw {
            // Misaligned: refused only where 4 KiB alignment is required.
            raw_request(&mut s, NBD_CMD_READ, 0, 4, 512, 4096);
            assert_eq!(raw_reply(&mut s, 4096).0.error, NBD_EINVAL);
            want.push((0, ErrorCode::Inval));
        }
        assert_eq!(*refusals.heard.lock().unwrap(), want, "rmw {rmw}");
    }
}
