//! Option haggling under a model: random sequences of options (lists, info and go for known
//! and unknown exports, malformed info requests, structured replies, TLS, meta contexts,
//! extended headers and options nobody defined, oversized option data, abort, the old
//! export-name option), with and without the no-zeroes flag and the option cap. Every
//! option gets the answer the spec asks for, echoing its option number; the connection
//! ends exactly when it should; and a client that reaches transmission gets simple replies
//! (structured replies are never agreed).

mod fuzz_support;

use std::io::Read;

use fusionraid_nbd::proto::consts::*;
use fusionraid_nbd::proto::handshake::*;
use fusionraid_nbd::proto::transmission::*;
use fuzz_support::{SIZE, cases, run_server};
use proptest::prelude::*;

/// The server's limits (nbd/src/server/handshake.rs).
const MAX_OPTION_LEN: u32 = 8192;
const MAX_OPTIONS: usize = 128;

#[derive(Clone, Debug)]
enum Opt {
    List {
        data: bool,
    },
    /// NBD_OPT_INFO or NBD_OPT_GO with `data` as payload (a valid request or garbage).
    InfoGo {
        go: bool,
        data: Vec<u8>,
    },
    Unsupported(u32),
    Abort,
    ExportName(String),
    TooBig(u32),
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just("disk".to_string()),
        1 => Just(String::new()),
        1 => "\\PC{0,12}",
    ]
}

fn info_data() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => (name(), proptest::collection::vec(
            prop_oneof![Just(NBD_INFO_NAME), Just(NBD_INFO_DESCRIPTION),
                        Just(NBD_INFO_BLOCK_SIZE), any::<u16>()], 0..4))
            .prop_map(|(name, requests)| InfoRequest { name, requests }.encode()),
        1 => proptest::collection::vec(any::<u8>(), 0..24),
    ]
}

fn opt() -> impl Strategy<Value = Opt> {
    let unsupported = prop_oneof![
        Just(NBD_OPT_STARTTLS),
        Just(NBD_OPT_STRUCTURED_REPLY),
        Just(NBD_OPT_LIST_META_CONTEXT),
        Just(NBD_OPT_SET_META_CONTEXT),
        Just(NBD_OPT_EXTENDED_HEADERS),
        Just(NBD_OPT_PEEK_EXPORT),
        (12u32..).prop_map(|o| o),
        Just(0u32),
    ];
    prop_oneof![
        2 => any::<bool>().prop_map(|data| Opt::List { data }),
        4 => (any::<bool>(), info_data()).prop_map(|(go, data)| Opt::InfoGo { go, data }),
        3 => unsupported.prop_map(Opt::Unsupported),
        1 => Just(Opt::Abort),
        1 => name().prop_map(Opt::ExportName),
        1 => prop_oneof![Just(NBD_OPT_GO), Just(NBD_OPT_LIST), Just(NBD_OPT_EXPORT_NAME),
                         Just(NBD_OPT_STRUCTURED_REPLY), (12u32..)]
            .prop_map(Opt::TooBig),
    ]
}

fn option(v: &mut Vec<u8>, option: u32, data: &[u8]) {
    let len = data.len() as u32;
    v.extend_from_slice(&OptionHeader { option, len }.encode());
    v.extend_from_slice(data);
}

/// Where the client ends up.
#[derive(Debug, PartialEq)]
enum End {
    /// Transmission (after GO or EXPORT_NAME).
    Transmission,
    /// The server hung up (abort, fatal option, cap), or the input ran out.
    Closed,
}

fn known(name: &str) -> bool {
    name == "disk" || name.is_empty()
}

/// True for an option after which a correct server reads no further options.
fn ends_haggling(o: &Opt) -> bool {
    match o {
        Opt::InfoGo { go: true, data } => {
            InfoRequest::decode(data).is_ok_and(|req| known(&req.name))
        }
        Opt::Abort | Opt::ExportName(_) | Opt::TooBig(_) => true,
        _ => false,
    }
}

/// The options a client sends: up to and including the first that ends haggling (a client
/// then either transmits or hangs up).
fn sent(opts: &[Opt]) -> &[Opt] {
    match opts.iter().position(ends_haggling) {
        Some(i) => &opts[..=i],
        None => opts,
    }
}

/// Encodes the options.
fn encode(opts: &[Opt]) -> Vec<u8> {
    let mut v = Vec::new();
    for o in opts {
        match o {
            Opt::List { data } => option(&mut v, NBD_OPT_LIST, if *data { b"x" } else { b"" }),
            Opt::InfoGo { go, data } => {
                option(&mut v, if *go { NBD_OPT_GO } else { NBD_OPT_INFO }, data)
            }
            Opt::Unsupported(o) => option(&mut v, *o, b"opaque"),
            Opt::Abort => option(&mut v, NBD_OPT_ABORT, b""),
            Opt::ExportName(n) => option(&mut v, NBD_OPT_EXPORT_NAME, n.as_bytes()),
            Opt::TooBig(o) => {
                // Only the header and a little data: the server must refuse before reading
                // (or allocating) the claimed length.
                let len = MAX_OPTION_LEN + 1 + (*o % 7) * 1_000_000;
                v.extend_from_slice(&OptionHeader { option: *o, len }.encode());
                v.extend_from_slice(&[0xcc; 64]);
            }
        }
    }
    v
}

/// Reads one option reply for `option`; returns its type and data.
fn reply(r: &mut &[u8], option: u32) -> (u32, Vec<u8>) {
    let mut h = [0u8; OPTION_REPLY_HEADER_LEN];
    r.read_exact(&mut h)
        .unwrap_or_else(|_| panic!("no reply to option {option}"));
    let h = OptionReplyHeader::decode(&h).expect("reply magic");
    assert_eq!(h.option, option, "reply echoes another option");
    let mut d = vec![0u8; h.len as usize];
    r.read_exact(&mut d).expect("reply data");
    (h.reply, d)
}

/// Checks the INFO replies and ACK of a successful INFO/GO.
fn check_info(r: &mut &[u8], option: u32, req: &InfoRequest) {
    let mut seen = Vec::new();
    loop {
        let (typ, d) = reply(r, option);
        if typ == NBD_REP_ACK {
            break;
        }
        assert_eq!(typ, NBD_REP_INFO, "unexpected reply {typ:#x}");
        match Info::decode(&d).expect("a valid info payload") {
            Info::Export { size, .. } => {
                assert_eq!(size, SIZE);
                seen.push(NBD_INFO_EXPORT);
            }
            Info::Name(n) => {
                assert_eq!(n, "disk");
                seen.push(NBD_INFO_NAME);
            }
            Info::Description(_) => seen.push(NBD_INFO_DESCRIPTION),
            Info::BlockSize(b) => {
                assert!(b.minimum <= b.preferred && b.preferred <= b.maximum);
                seen.push(NBD_INFO_BLOCK_SIZE);
            }
            Info::Unknown(t) => panic!("server sent unknown info type {t}"),
        }
    }
    assert!(seen.contains(&NBD_INFO_EXPORT), "INFO_EXPORT is mandatory");
    for want in [NBD_INFO_NAME, NBD_INFO_DESCRIPTION] {
        assert_eq!(
            seen.contains(&want),
            req.requests.contains(&want),
            "info {want}"
        );
    }
}

/// Walks the server's output along the model; returns where the model ended.
fn check(out: &[u8], flags: u32, opts: &[Opt]) -> End {
    let mut r: &[u8] = out;
    let mut g = [0u8; GREETING_LEN];
    r.read_exact(&mut g).expect("greeting");
    decode_greeting(&g).expect("valid greeting");
    if flags & !(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES) != 0 {
        assert!(r.is_empty(), "unknown client flags must end the handshake");
        return End::Closed;
    }
    let mut end = End::Closed;
    for (i, o) in opts.iter().enumerate() {
        if i == MAX_OPTIONS {
            break;
        }
        match o {
            Opt::List { data: true } => {
                assert_eq!(reply(&mut r, NBD_OPT_LIST).0, NBD_REP_ERR_INVALID)
            }
            Opt::List { data: false } => {
                let (t, d) = reply(&mut r, NBD_OPT_LIST);
                assert_eq!(t, NBD_REP_SERVER);
                assert_eq!(decode_server_entry(&d).unwrap().0, "disk");
                assert_eq!(reply(&mut r, NBD_OPT_LIST).0, NBD_REP_ACK);
            }
            Opt::InfoGo { go, data } => {
                let o = if *go { NBD_OPT_GO } else { NBD_OPT_INFO };
                match InfoRequest::decode(data) {
                    Err(_) => assert_eq!(reply(&mut r, o).0, NBD_REP_ERR_INVALID),
                    Ok(req) if !known(&req.name) => {
                        assert_eq!(reply(&mut r, o).0, NBD_REP_ERR_UNKNOWN)
                    }
                    Ok(req) => {
                        check_info(&mut r, o, &req);
                        if *go {
                            end = End::Transmission;
                            break;
                        }
                    }
                }
            }
            Opt::Unsupported(o) => assert_eq!(reply(&mut r, *o).0, NBD_REP_ERR_UNSUP),
            Opt::Abort => {
                assert_eq!(reply(&mut r, NBD_OPT_ABORT).0, NBD_REP_ACK);
                break;
            }
            Opt::ExportName(n) => {
                if known(n) {
                    let want = if flags & NBD_FLAG_C_NO_ZEROES != 0 {
                        10
                    } else {
                        134
                    };
                    let mut b = vec![0u8; want];
                    r.read_exact(&mut b).expect("export name reply");
                    assert_eq!(u64::from_be_bytes(b[..8].try_into().unwrap()), SIZE);
                    assert!(b[10..].iter().all(|&z| z == 0));
                    end = End::Transmission;
                }
                break;
            }
            Opt::TooBig(o) => {
                if *o != NBD_OPT_EXPORT_NAME {
                    assert_eq!(reply(&mut r, *o).0, NBD_REP_ERR_TOO_BIG);
                }
                break;
            }
        }
    }
    if end == End::Transmission {
        // The request sent after the handshake: a simple reply, never a structured one.
        let mut b = [0u8; SIMPLE_REPLY_LEN];
        r.read_exact(&mut b).expect("reply to the first request");
        let rep = SimpleReply::decode(&b).expect("a simple reply");
        assert_eq!((rep.handle, rep.error), (77, 0));
        let mut data = [1u8; 4096];
        r.read_exact(&mut data).expect("read data");
        assert!(data.iter().all(|&z| z == 0));
    }
    assert!(r.is_empty(), "{} unexpected trailing bytes", r.len());
    end
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(128)))]

    #[test]
    fn option_sequences_follow_the_model(
        flags in prop_oneof![
            4 => Just(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES),
            2 => Just(NBD_FLAG_C_FIXED_NEWSTYLE),
            1 => Just(0u32),
            1 => any::<u32>(),
        ],
        opts in proptest::collection::vec(opt(), 0..12),
        // Sometimes pad to the option cap with harmless options first.
        pad in prop_oneof![4 => Just(0usize), 1 => (MAX_OPTIONS - 2)..(MAX_OPTIONS + 3)],
    ) {
        let mut all = vec![Opt::Unsupported(NBD_OPT_STRUCTURED_REPLY); pad];
        all.extend(opts);
        let all = sent(&all);
        let mut input = flags.to_be_bytes().to_vec();
        input.extend_from_slice(&encode(all));
        // A read and a disconnect, in case the handshake reaches transmission.
        input.extend_from_slice(&RequestHeader { flags: 0, typ: NBD_CMD_READ, handle: 77,
                                                 offset: 0, len: 4096 }.encode());
        input.extend_from_slice(&RequestHeader { flags: 0, typ: NBD_CMD_DISC, handle: 78,
                                                 offset: 0, len: 0 }.encode());
        let (out, result, backend) = run_server(input);
        let end = check(&out, flags, all);
        let reads = backend.stats().reads.load(std::sync::atomic::Ordering::Relaxed);
        prop_assert_eq!(reads, u64::from(end == End::Transmission));
        if end == End::Transmission {
            prop_assert!(result.is_ok(), "{:?}", result);
        }
    }
}
