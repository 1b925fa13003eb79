//! Property tests feeding hostile byte streams to a server connection over a
//! socket pair: the server must never panic, must always finish, and must
//! never let a malformed write reach the backend.

mod fuzz_support;

use std::io::Read;
use std::sync::atomic::Ordering;

use fusionraid_nbd::NbdError;
use fusionraid_nbd::proto::consts::*;
use fusionraid_nbd::proto::handshake::*;
use fusionraid_nbd::proto::transmission::*;
use fuzz_support::{SIZE, cases, run_server};
use proptest::prelude::*;

/// A valid fixed-newstyle prefix ending in NBD_OPT_GO for "disk".
fn handshake_prefix() -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES).to_be_bytes());
    let go = InfoRequest {
        name: "disk".into(),
        requests: vec![NBD_INFO_BLOCK_SIZE],
    }
    .encode();
    v.extend_from_slice(
        &OptionHeader {
            option: NBD_OPT_GO,
            len: go.len() as u32,
        }
        .encode(),
    );
    v.extend_from_slice(&go);
    v
}

/// One transmission-phase item: a request, well-formed or broken in a
/// specific way.
#[derive(Debug, Clone)]
enum Item {
    GoodWrite {
        block: u64,
        blocks: u32,
        fill: u8,
    },
    GoodRead {
        block: u64,
        blocks: u32,
    },
    Flush,
    Misaligned {
        offset: u64,
        fill: u8,
    },
    BeyondEnd {
        fill: u8,
    },
    BadFlags {
        fill: u8,
    },
    /// Recoverable for the stream, all are rejected without a backend write.
    Cache,
    /// A read longer than any payload (EINVAL, the stream goes on).
    HugeRead(u32),
    /// A range that wraps around 2^64: EINVAL for a read, ENOSPC for a write (whose payload
    /// is skipped).
    WrapRead,
    WrapWrite {
        fill: u8,
    },
    /// Zero-length read or write: success without touching the backend.
    ZeroLen {
        write: bool,
    },
    /// Commands whose feature was never negotiated (block status, resize): EINVAL.
    Unnegotiated(u16),
    /// Zeroes a range (MemBackend advertises write zeroes).
    Zero {
        block: u64,
        blocks: u32,
    },
    /// A read with FUA (allowed: the export advertises FUA).
    FuaRead,
    /// NBD_CMD_DISC: in-flight requests finish, nothing after it is read or answered.
    Disconnect,
    /// Each of these ends the connection.
    BadMagic,
    UnknownCommand(u16),
    HugeWrite,
    Truncated {
        fill: u8,
    },
    Garbage(Vec<u8>),
}

fn item() -> impl Strategy<Value = Item> {
    let blocks = SIZE / 4096;
    prop_oneof![
        4 => (0..blocks, 1u32..4, 1u8..=255).prop_map(move |(b, n, fill)| Item::GoodWrite {
            block: b.min(blocks - u64::from(n)),
            blocks: n,
            fill
        }),
        2 => (0..blocks, 1u32..4).prop_map(move |(b, n)| Item::GoodRead {
            block: b.min(blocks - u64::from(n)),
            blocks: n
        }),
        1 => Just(Item::Flush),
        1 => (1u64..4095, 1u8..=255).prop_map(|(offset, fill)| Item::Misaligned { offset, fill }),
        1 => (1u8..=255).prop_map(|fill| Item::BeyondEnd { fill }),
        1 => (1u8..=255).prop_map(|fill| Item::BadFlags { fill }),
        1 => Just(Item::Cache),
        1 => prop_oneof![Just(u32::MAX), Just((32 << 20) + 4096), Just(u32::MAX - 4095)]
            .prop_map(Item::HugeRead),
        1 => Just(Item::WrapRead),
        1 => (1u8..=255).prop_map(|fill| Item::WrapWrite { fill }),
        1 => any::<bool>().prop_map(|write| Item::ZeroLen { write }),
        1 => prop_oneof![Just(NBD_CMD_BLOCK_STATUS), Just(NBD_CMD_RESIZE)].prop_map(Item::Unnegotiated),
        1 => (0..blocks, 1u32..4).prop_map(move |(b, n)| Item::Zero {
            block: b.min(blocks - u64::from(n)),
            blocks: n
        }),
        1 => Just(Item::FuaRead),
        1 => Just(Item::Disconnect),
        1 => Just(Item::BadMagic),
        1 => (9u16..).prop_map(Item::UnknownCommand),
        1 => Just(Item::HugeWrite),
        1 => (1u8..=255).prop_map(|fill| Item::Truncated { fill }),
        1 => proptest::collection::vec(any::<u8>(), 1..40).prop_map(Item::Garbage),
    ]
}

fn header(typ: u16, flags: u16, handle: u64, offset: u64, len: u32) -> [u8; 28] {
    RequestHeader {
        flags,
        typ,
        handle,
        offset,
        len,
    }
    .encode()
}

/// A 4 KiB-aligned offset whose 8 KiB range wraps around 2^64.
const WRAP: u64 = u64::MAX - 4095;

/// A reply the model expects.
struct Expected {
    handle: u64,
    error: u32,
    /// Read data (empty for everything but reads).
    data: Vec<u8>,
}

/// What a correct server does with a stream of items: the bytes sent, the disk contents it
/// ends with, how many backend writes it performs, and the replies it sends, in order.
struct Model {
    bytes: Vec<u8>,
    disk: Vec<u8>,
    writes: u64,
    replies: Vec<Expected>,
}

/// Encodes the items into the model. MemBackend executes requests in arrival order, so the
/// data of each read is the model disk at that point.
fn encode(items: &[Item]) -> Model {
    let mut m = Model {
        bytes: handshake_prefix(),
        disk: vec![0u8; SIZE as usize],
        writes: 0,
        replies: Vec::new(),
    };
    for (i, it) in items.iter().enumerate() {
        let h = i as u64 + 1;
        if !m.request(h, it) {
            m.last(h, it, &items[i + 1..]);
            return m;
        }
    }
    m
}

impl Model {
    fn reply(&mut self, handle: u64, error: u32, data: Vec<u8>) {
        self.replies.push(Expected {
            handle,
            error,
            data,
        });
    }

    fn send(&mut self, typ: u16, flags: u16, handle: u64, offset: u64, len: u32) {
        self.bytes
            .extend_from_slice(&header(typ, flags, handle, offset, len));
    }

    fn payload(&mut self, fill: u8, len: usize) {
        self.bytes.extend(std::iter::repeat_n(fill, len));
    }

    /// Adds a request the stream goes on after. False (and nothing added) for an item
    /// that ends the stream: `last` takes those.
    fn request(&mut self, h: u64, it: &Item) -> bool {
        match *it {
            Item::GoodWrite {
                block,
                blocks,
                fill,
            } => {
                let (off, len) = (block * 4096, blocks * 4096);
                self.send(NBD_CMD_WRITE, 0, h, off, len);
                self.payload(fill, len as usize);
                self.disk[off as usize..(off + u64::from(len)) as usize].fill(fill);
                self.writes += 1;
                self.reply(h, 0, Vec::new());
            }
            Item::GoodRead { block, blocks } => {
                self.send(NBD_CMD_READ, 0, h, block * 4096, blocks * 4096);
                let r = (block * 4096) as usize..((block + u64::from(blocks)) * 4096) as usize;
                let data = self.disk[r].to_vec();
                self.reply(h, 0, data);
            }
            Item::Flush => {
                self.send(NBD_CMD_FLUSH, 0, h, 0, 0);
                self.reply(h, 0, Vec::new());
            }
            Item::Misaligned { offset, fill } => {
                self.send(NBD_CMD_WRITE, 0, h, offset, 4096);
                self.payload(fill, 4096);
                self.reply(h, NBD_EINVAL, Vec::new());
            }
            Item::BeyondEnd { fill } => {
                self.send(NBD_CMD_WRITE, 0, h, SIZE, 4096);
                self.payload(fill, 4096);
                self.reply(h, NBD_ENOSPC, Vec::new());
            }
            Item::BadFlags { fill } => {
                self.send(NBD_CMD_WRITE, NBD_CMD_FLAG_NO_HOLE, h, 0, 4096);
                self.payload(fill, 4096);
                self.reply(h, NBD_EINVAL, Vec::new());
            }
            Item::Cache => {
                self.send(NBD_CMD_CACHE, 0, h, 0, 4096);
                self.reply(h, NBD_EINVAL, Vec::new());
            }
            Item::HugeRead(len) => {
                self.send(NBD_CMD_READ, 0, h, 0, len);
                self.reply(h, NBD_EINVAL, Vec::new());
            }
            Item::WrapRead => {
                self.send(NBD_CMD_READ, 0, h, WRAP, 8192);
                self.reply(h, NBD_EINVAL, Vec::new());
            }
            Item::WrapWrite { fill } => {
                self.send(NBD_CMD_WRITE, 0, h, WRAP, 8192);
                self.payload(fill, 8192);
                self.reply(h, NBD_ENOSPC, Vec::new());
            }
            Item::ZeroLen { write } => {
                let typ = if write { NBD_CMD_WRITE } else { NBD_CMD_READ };
                self.send(typ, 0, h, 4096, 0);
                self.reply(h, 0, Vec::new());
            }
            Item::Unnegotiated(typ) => {
                self.send(typ, 0, h, 0, 4096);
                self.reply(h, NBD_EINVAL, Vec::new());
            }
            Item::Zero { block, blocks } => {
                let (off, len) = (block * 4096, blocks * 4096);
                self.send(NBD_CMD_WRITE_ZEROES, 0, h, off, len);
                self.disk[off as usize..(off + u64::from(len)) as usize].fill(0);
                self.reply(h, 0, Vec::new());
            }
            Item::FuaRead => {
                self.send(NBD_CMD_READ, NBD_CMD_FLAG_FUA, h, 0, 4096);
                let data = self.disk[..4096].to_vec();
                self.reply(h, 0, data);
            }
            _ => return false,
        }
        true
    }

    /// Adds an item after which the server takes nothing more (`rest` follows it).
    fn last(&mut self, h: u64, it: &Item, rest: &[Item]) {
        match it {
            Item::Disconnect => {
                self.send(NBD_CMD_DISC, 0, h, 0, 0);
                // Whatever follows is sent but must have no effect and get no reply.
                let tail = encode(rest).bytes;
                self.bytes
                    .extend_from_slice(&tail[handshake_prefix().len()..]);
            }
            Item::BadMagic => {
                let mut b = header(NBD_CMD_WRITE, 0, h, 0, 4096);
                b[0] ^= 0xff;
                self.bytes.extend_from_slice(&b);
                self.payload(0xbb, 4096);
            }
            Item::UnknownCommand(t) => {
                self.send(*t, 0, h, 0, 4096);
                self.payload(0xbb, 4096);
                self.reply(h, NBD_EINVAL, Vec::new());
            }
            Item::HugeWrite => {
                self.send(NBD_CMD_WRITE, 0, h, 0, (64 << 20) + 4096);
                self.payload(0xbb, 8192);
                self.reply(h, NBD_EINVAL, Vec::new());
            }
            Item::Truncated { fill } => {
                self.send(NBD_CMD_WRITE, 0, h, 0, 8192);
                self.payload(*fill, 4000);
            }
            Item::Garbage(g) => {
                // Garbage whose first four bytes happen to be the request
                // magic would be a (random) request; keep the model exact.
                let mut g = g.clone();
                if g.len() >= 4 && g[..4] == NBD_REQUEST_MAGIC.to_be_bytes() {
                    g[0] ^= 1;
                }
                self.bytes.extend_from_slice(&g);
                // Fewer than 28 bytes then EOF, or a bad magic: either way
                // the stream ends here without a reply.
            }
            _ => unreachable!("`request` takes every item the stream goes on after"),
        }
    }
}

/// Parses the server output (greeting, GO replies, simple replies) and
/// checks every reply against the model.
fn check_output(out: &[u8], replies: &[Expected]) {
    let mut r: &[u8] = out;
    let mut greeting = [0u8; GREETING_LEN];
    r.read_exact(&mut greeting).unwrap();
    decode_greeting(&greeting).unwrap();
    loop {
        let mut h = [0u8; OPTION_REPLY_HEADER_LEN];
        r.read_exact(&mut h).unwrap();
        let h = OptionReplyHeader::decode(&h).unwrap();
        let mut d = vec![0u8; h.len as usize];
        r.read_exact(&mut d).unwrap();
        if h.reply == NBD_REP_ACK {
            break;
        }
        assert_eq!(h.reply, NBD_REP_INFO);
    }
    for Expected {
        handle,
        error,
        data,
    } in replies
    {
        let mut b = [0u8; SIMPLE_REPLY_LEN];
        r.read_exact(&mut b)
            .unwrap_or_else(|_| panic!("missing reply for {handle}"));
        let reply = SimpleReply::decode(&b).unwrap();
        assert_eq!((reply.handle, reply.error), (*handle, *error));
        let mut got = vec![0u8; data.len()];
        r.read_exact(&mut got).unwrap();
        assert!(got == *data, "read data for handle {handle}");
    }
    assert!(r.is_empty(), "{} unexpected trailing bytes", r.len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(64)))]

    /// Arbitrary bytes as the whole client side: the handshake parser must
    /// end cleanly (error or abort), and nothing reaches the backend.
    #[test]
    fn arbitrary_handshake_bytes(input in proptest::collection::vec(any::<u8>(), 0..512)) {
        let (out, result, backend) = run_server(input);
        prop_assert!(out.len() >= GREETING_LEN);
        prop_assert!(result.is_err() || out.len() > GREETING_LEN);
        let s = backend.stats();
        prop_assert_eq!(s.writes.load(Ordering::Relaxed) + s.reads.load(Ordering::Relaxed), 0);
    }

    /// A valid handshake followed by arbitrary bytes in transmission.
    #[test]
    fn arbitrary_transmission_bytes(tail in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let mut input = handshake_prefix();
        input.extend_from_slice(&tail);
        let (out, _result, backend) = run_server(input);
        prop_assert!(out.len() > GREETING_LEN);
        // Without the request magic in the first header the stream ends
        // there, so nothing can have been written.
        let writes = backend.stats().writes.load(Ordering::Relaxed);
        if tail.len() < 4 || tail[..4] != NBD_REQUEST_MAGIC.to_be_bytes() {
            prop_assert_eq!(writes, 0);
        }
    }

    /// Structured mix of good and malformed requests: exactly the good
    /// writes before the first stream-breaking item reach the backend, and
    /// every request that deserves a reply gets the right one, in order.
    #[test]
    fn malformed_writes_never_reach_the_backend(items in proptest::collection::vec(item(), 0..24)) {
        let model = encode(&items);
        let (out, _result, backend) = run_server(model.bytes);
        prop_assert_eq!(backend.stats().writes.load(Ordering::Relaxed), model.writes);
        prop_assert!(backend.contents(0).unwrap() == model.disk, "disk differs from model");
        check_output(&out, &model.replies);
    }
}

#[test]
fn empty_input_is_a_clean_disconnect_error() {
    let (out, result, _) = run_server(Vec::new());
    assert_eq!(out.len(), GREETING_LEN);
    assert!(matches!(result, Err(NbdError::Disconnected)));
}

#[test]
fn abort_is_a_clean_end() {
    let mut input = (NBD_FLAG_C_FIXED_NEWSTYLE).to_be_bytes().to_vec();
    input.extend_from_slice(
        &OptionHeader {
            option: NBD_OPT_ABORT,
            len: 0,
        }
        .encode(),
    );
    let (out, result, _) = run_server(input);
    assert!(result.is_ok());
    assert_eq!(out.len(), GREETING_LEN + OPTION_REPLY_HEADER_LEN);
}
