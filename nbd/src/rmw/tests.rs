//! Tests of the read-modify-write adapter against an inner backend that
//! counts misaligned requests and can complete out of order.

use super::*;
use crate::mem::MemBackend;
use proptest::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

const BLOCK: u64 = 4096;

/// Inner backend that insists on 4 KiB alignment (counting violations)
/// and either completes inline or queues for the test to complete.
struct Strict {
    mem: MemBackend,
    violations: AtomicUsize,
    queue: Option<Mutex<Vec<(Command, Completer)>>>,
}

impl Strict {
    fn new(size: u64, queued: bool) -> Arc<Strict> {
        Arc::new(Strict {
            mem: MemBackend::new(ExportInfo::new("s", size)),
            violations: AtomicUsize::new(0),
            queue: queued.then(|| Mutex::new(Vec::new())),
        })
    }

    /// Completes queued commands in an order driven by `seed`, until
    /// none are left (completions may queue more).
    fn drain_shuffled(&self, mut seed: u64) {
        loop {
            let next = {
                let mut q = self.queue.as_ref().unwrap().lock().unwrap();
                if q.is_empty() {
                    return;
                }
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let i = (seed >> 33) as usize % q.len();
                q.swap_remove(i)
            };
            self.mem.submit(0, next.0, next.1);
        }
    }
}

impl Backend for Strict {
    fn exports(&self) -> Vec<ExportInfo> {
        self.mem.exports()
    }

    fn submit(&self, export: usize, cmd: Command, done: Completer) {
        let (off, len) = match &cmd.kind {
            CommandKind::Read { offset, len } => (*offset, u64::from(*len)),
            CommandKind::Write { offset, data, .. } => (*offset, data.len() as u64),
            CommandKind::Trim { offset, len, .. }
            | CommandKind::WriteZeroes { offset, len, .. } => (*offset, u64::from(*len)),
            CommandKind::Flush => (0, 0),
        };
        if off % BLOCK != 0 || len % BLOCK != 0 {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
        match &self.queue {
            Some(q) => q.lock().unwrap().push((cmd, done)),
            None => self.mem.submit(export, cmd, done),
        }
    }
}

fn call(b: &RmwBackend<Strict>, kind: CommandKind) -> Result<Vec<u8>, ErrorCode> {
    let out = Arc::new(Mutex::new(None));
    let o = out.clone();
    b.submit(
        0,
        Command { handle: 1, kind },
        Completer::from_fn(1, move |r| *o.lock().unwrap() = Some(r)),
    );
    let r = out.lock().unwrap().take();
    r.expect("inline inner completes inline")
}

#[test]
fn advertises_byte_granularity() {
    let b = RmwBackend::new(Strict::new(1 << 20, false));
    let e = &b.exports()[0];
    assert_eq!(e.block_size.minimum, 1);
    assert_eq!(e.block_size.preferred, 4096);
    assert_eq!(e.block_size.maximum, (32 << 20) - 8192);
    assert!(e.validate().is_ok());
}

#[derive(Debug, Clone)]
enum Op {
    Write(u64, Vec<u8>),
    Read(u64, u32),
    Zero(u64, u32),
    Trim(u64, u32),
}

const SIZE: u64 = 64 * 1024;

fn op() -> impl Strategy<Value = Op> {
    let off = 0..SIZE;
    prop_oneof![
        (off.clone(), proptest::collection::vec(any::<u8>(), 1..9000))
            .prop_map(|(o, d)| Op::Write(o.min(SIZE - d.len() as u64), d)),
        (off.clone(), 1u32..9000).prop_map(|(o, l)| Op::Read(o.min(SIZE - u64::from(l)), l)),
        (off.clone(), 1u32..9000).prop_map(|(o, l)| Op::Zero(o.min(SIZE - u64::from(l)), l)),
        (off, 1u32..20000).prop_map(|(o, l)| Op::Trim(o.min(SIZE - u64::from(l)), l)),
    ]
}

proptest! {
    /// Any byte-granular sequence behaves like a flat byte array, and
    /// the inner backend only ever sees aligned requests.
    #[test]
    fn matches_a_byte_array(ops in proptest::collection::vec(op(), 1..40)) {
        let inner = Strict::new(SIZE, false);
        let b = RmwBackend::new(inner.clone());
        let mut shadow = vec![0u8; SIZE as usize];
        for o in ops {
            match o {
                Op::Write(off, d) => {
                    prop_assert_eq!(call(&b, CommandKind::Write { offset: off, data: d.clone(), fua: false }), Ok(vec![]));
                    shadow[off as usize..off as usize + d.len()].copy_from_slice(&d);
                }
                Op::Read(off, len) => {
                    let got = call(&b, CommandKind::Read { offset: off, len }).unwrap();
                    prop_assert!(got == shadow[off as usize..(off + u64::from(len)) as usize]);
                }
                Op::Zero(off, len) => {
                    prop_assert_eq!(call(&b, CommandKind::WriteZeroes { offset: off, len, no_hole: false, fua: false }), Ok(vec![]));
                    shadow[off as usize..(off + u64::from(len)) as usize].fill(0);
                }
                Op::Trim(off, len) => {
                    prop_assert_eq!(call(&b, CommandKind::Trim { offset: off, len, fua: false }), Ok(vec![]));
                    // MemBackend zeroes what it trims: the whole blocks.
                    let start = off.div_ceil(BLOCK) * BLOCK;
                    let end = (off + u64::from(len)) / BLOCK * BLOCK;
                    if end > start {
                        shadow[start as usize..end as usize].fill(0);
                    }
                }
            }
        }
        prop_assert!(inner.mem.contents(0).unwrap() == shadow);
        prop_assert_eq!(inner.violations.load(Ordering::SeqCst), 0);
    }
}

/// Many sub-block writes into the same block, in flight together and
/// completed by the inner backend in scrambled order: every patch must
/// survive (without the range locks, concurrent merges lose updates).
#[test]
fn concurrent_patches_to_one_block_all_survive() {
    for seed in 0..20 {
        let inner = Strict::new(4 * BLOCK, true);
        let b = RmwBackend::new(inner.clone());
        let ok = Arc::new(AtomicUsize::new(0));
        for i in 0..40u64 {
            let ok = ok.clone();
            b.submit(
                0,
                Command {
                    handle: i,
                    kind: CommandKind::Write {
                        offset: BLOCK + i * 100,
                        data: vec![i as u8 + 1; 100],
                        fua: false,
                    },
                },
                Completer::from_fn(i, move |r| {
                    assert_eq!(r, Ok(vec![]));
                    ok.fetch_add(1, Ordering::SeqCst);
                }),
            );
            // Interleave aligned writes to the neighbouring blocks.
            b.submit(
                0,
                Command {
                    handle: 100 + i,
                    kind: CommandKind::Write {
                        offset: 2 * BLOCK,
                        data: vec![0xee; BLOCK as usize],
                        fua: false,
                    },
                },
                Completer::from_fn(i, |r| assert_eq!(r, Ok(vec![]))),
            );
        }
        inner.drain_shuffled(seed);
        assert_eq!(ok.load(Ordering::SeqCst), 40, "seed {seed}");
        let c = inner.mem.contents(0).unwrap();
        for i in 0..40usize {
            let at = BLOCK as usize + i * 100;
            assert!(
                c[at..at + 100].iter().all(|&x| x == i as u8 + 1),
                "seed {seed}: patch {i} lost"
            );
        }
        assert!(
            c[2 * BLOCK as usize..3 * BLOCK as usize]
                .iter()
                .all(|&x| x == 0xee)
        );
        assert_eq!(inner.violations.load(Ordering::SeqCst), 0);
    }
}

#[test]
fn edge_read_errors_fail_the_write_and_release_the_lock() {
    struct FailReads(MemBackend);
    impl Backend for FailReads {
        fn exports(&self) -> Vec<ExportInfo> {
            self.0.exports()
        }
        fn submit(&self, e: usize, cmd: Command, done: Completer) {
            match cmd.kind {
                CommandKind::Read { .. } => done.fail(ErrorCode::Io),
                _ => self.0.submit(e, cmd, done),
            }
        }
    }
    let b = RmwBackend::new(Arc::new(FailReads(MemBackend::new(ExportInfo::new(
        "f",
        1 << 20,
    )))));
    let run = |kind| {
        let out = Arc::new(Mutex::new(None));
        let o = out.clone();
        b.submit(
            0,
            Command { handle: 1, kind },
            Completer::from_fn(1, move |r| *o.lock().unwrap() = Some(r)),
        );
        let r = out.lock().unwrap().take();
        r.unwrap()
    };
    assert_eq!(
        run(CommandKind::Write {
            offset: 10,
            data: vec![1; 10],
            fua: false
        }),
        Err(ErrorCode::Io)
    );
    // The lock was released: an aligned write to the same block runs.
    assert_eq!(
        run(CommandKind::Write {
            offset: 0,
            data: vec![2; 4096],
            fua: false
        }),
        Ok(vec![])
    );
    assert_eq!(b.inner().0.contents(0).unwrap()[10], 2);
}
