//! Our client facing a hostile or broken server (remote pool members are any NBD server):
//! random greetings, option replies with odd types, lengths and info payloads, and replies
//! in transmission with wrong magics, unknown handles, structured replies nobody agreed to
//! and truncated data. The client must answer with errors, never panic, never stall and
//! never hand out data it did not receive in full.

mod fuzz_support;

use std::io::Write;
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use fusionraid_nbd::Client;
use fusionraid_nbd::proto::consts::*;
use fusionraid_nbd::proto::handshake::*;
use fusionraid_nbd::proto::transmission::*;
use fuzz_support::cases;
use proptest::prelude::*;

const SIZE: u64 = 1 << 20;

/// Plays `script` as the server side (then closes its sending half), draining whatever the
/// client sends so neither side blocks; runs `client` on the other end.
fn against(script: Vec<u8>, client: impl FnOnce(UnixStream)) {
    let (c, mut s) = UnixStream::pair().unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let server = std::thread::spawn(move || {
        let _ = s.write_all(&script);
        let _ = s.shutdown(Shutdown::Write);
        let _ = std::io::copy(&mut s, &mut std::io::sink());
    });
    let t = Instant::now();
    client(c);
    server.join().unwrap();
    // The server half always ends in EOF, so a client waiting out the read timeout stalled.
    assert!(t.elapsed() < Duration::from_secs(8), "the client stalled");
}

fn option_reply(v: &mut Vec<u8>, option: u32, reply: u32, data: &[u8]) {
    let len = data.len() as u32;
    v.extend_from_slice(&OptionReplyHeader { option, reply, len }.encode());
    v.extend_from_slice(data);
}

/// A greeting and the replies to NBD_OPT_GO that a correct server would send.
fn good_handshake() -> Vec<u8> {
    let mut v = encode_greeting(NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES).to_vec();
    let info = |i: Info| i.encode();
    let flags = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH;
    option_reply(
        &mut v,
        NBD_OPT_GO,
        NBD_REP_INFO,
        &info(Info::Export { size: SIZE, flags }),
    );
    let bs = fusionraid_nbd::BlockSize {
        minimum: 4096,
        preferred: 4096,
        maximum: 1 << 20,
    };
    option_reply(&mut v, NBD_OPT_GO, NBD_REP_INFO, &info(Info::BlockSize(bs)));
    option_reply(&mut v, NBD_OPT_GO, NBD_REP_ACK, &[]);
    v
}

/// Option replies a server could send, sensible or not.
fn hostile_reply() -> impl Strategy<Value = Vec<u8>> {
    let typ = prop_oneof![
        Just(NBD_REP_ACK),
        Just(NBD_REP_INFO),
        Just(NBD_REP_SERVER),
        Just(NBD_REP_ERR_UNSUP),
        Just(NBD_REP_ERR_UNKNOWN),
        any::<u32>(),
    ];
    let option = prop_oneof![4 => Just(NBD_OPT_GO), 1 => any::<u32>()];
    let info = prop_oneof![
        (any::<u64>(), any::<u16>())
            .prop_map(|(size, flags)| Info::Export { size, flags }.encode()),
        (any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(minimum, preferred, maximum)| {
            Info::BlockSize(fusionraid_nbd::BlockSize {
                minimum,
                preferred,
                maximum,
            })
            .encode()
        }),
        proptest::collection::vec(any::<u8>(), 0..20),
    ];
    prop_oneof![
        4 => (option, typ, info).prop_map(|(o, t, d)| {
            let mut v = Vec::new();
            option_reply(&mut v, o, t, &d);
            v
        }),
        // A header claiming far more data than follows (or than any reply needs).
        1 => any::<u32>().prop_map(|len| {
            OptionReplyHeader { option: NBD_OPT_GO, reply: NBD_REP_INFO, len }.encode().to_vec()
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..40),
    ]
}

/// Replies in transmission: simple ones for plausible handles, structured ones, garbage.
fn hostile_transmission() -> impl Strategy<Value = Vec<u8>> {
    let simple = (0u64..4, prop_oneof![Just(0u32), any::<u32>()], 0usize..9000).prop_map(
        |(handle, error, data)| {
            let mut v = SimpleReply { error, handle }.encode().to_vec();
            v.extend(std::iter::repeat_n(0xd5, data));
            v
        },
    );
    let structured = (0u64..4, any::<u16>(), any::<u16>(), any::<u32>()).prop_map(
        |(handle, flags, typ, len)| {
            let mut v = NBD_STRUCTURED_REPLY_MAGIC.to_be_bytes().to_vec();
            v.extend_from_slice(&flags.to_be_bytes());
            v.extend_from_slice(&typ.to_be_bytes());
            v.extend_from_slice(&handle.to_be_bytes());
            v.extend_from_slice(&len.to_be_bytes());
            v
        },
    );
    prop_oneof![
        4 => simple,
        1 => structured,
        1 => proptest::collection::vec(any::<u8>(), 0..64),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(128)))]

    /// Any greeting and option replies: a connected client has a usable export description.
    #[test]
    fn hostile_handshakes(
        greet_ok in any::<bool>(),
        flags in any::<u16>(),
        junk in proptest::collection::vec(any::<u8>(), 0..18),
        replies in proptest::collection::vec(hostile_reply(), 0..6),
    ) {
        let mut script = if greet_ok { encode_greeting(flags).to_vec() } else { junk };
        for r in &replies {
            script.extend_from_slice(r);
        }
        against(script, |c| {
            if let Ok(client) = Client::from_stream(c, "disk") {
                let bs = client.info().block_size;
                assert!(bs.minimum.is_power_of_two() && bs.maximum >= bs.minimum, "{bs:?}");
            }
        });
    }

    /// A good handshake, then any replies: a read either fails or returns the 4096 bytes
    /// that followed the first reply header (simple replies do not say how long their data
    /// is, so those bytes are the data, whatever they look like).
    #[test]
    fn hostile_replies(replies in proptest::collection::vec(hostile_transmission(), 0..4)) {
        let mut script = good_handshake();
        let data_at = script.len() + SIMPLE_REPLY_LEN;
        for r in &replies {
            script.extend_from_slice(r);
        }
        let expected = script.get(data_at..data_at + 4096).map(<[u8]>::to_vec);
        against(script, |c| {
            let mut client = Client::from_stream(c, "disk").expect("a valid handshake");
            let mut buf = [0x11u8; 4096];
            if client.read_at(&mut buf, 0).is_ok() {
                let want = expected.expect("a read succeeded without 4096 bytes of data");
                assert!(buf[..] == want[..], "data not from the reply");
            }
            let _ = client.write_at(&[0u8; 4096], 4096);
            let _ = client.flush();
        });
    }
}

/// The client refuses what it must not allocate for.
#[test]
fn a_huge_option_reply_is_refused_without_reading_it() {
    let mut script = encode_greeting(NBD_FLAG_FIXED_NEWSTYLE).to_vec();
    script.extend_from_slice(
        &OptionReplyHeader {
            option: NBD_OPT_GO,
            reply: NBD_REP_INFO,
            len: u32::MAX,
        }
        .encode(),
    );
    against(script, |c| {
        let Err(e) = Client::from_stream(c, "disk") else {
            panic!("a 4 GiB option reply was accepted");
        };
        assert!(e.to_string().contains("option reply"), "{e}");
    });
}
