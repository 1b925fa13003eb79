//! The md-like RAID5/RAID6 engine every parity baseline runs on: per-stripe serialisation,
//! read-modify-write or reconstruct-write chosen per page row, optional batching delay,
//! degraded reads and writes, and reads rebuilt from parity to avoid a slow member.
//!
//! Callers hand it single-stripe operations tagged with a [`Token`]; each finishes with exactly
//! one [`Outcome`], collected with [`RaidCore::pop_done`] (some finish inside the call that
//! started them, so callers drain after every call).
//!
//! ## Stripe serialisation
//! Writes, trims and reconstructing reads of a stripe pass through that stripe's FIFO queue and
//! run one at a time (md's stripe_head lock): concurrent partial writes of one stripe never read
//! parity the other is about to change, and a rebuild never mixes columns from before and after
//! a write. Consecutive writes waiting at the head of a queue are merged into one stripe job
//! (md attaches every queued bio to the stripe_head and handles them together). Plain reads of a
//! healthy member bypass the queue, as md's chunk-aligned reads bypass its stripe cache.
//!
//! ## Choosing how to write (per 4 KiB page row, like md's per-page stripe_heads)
//! - every data column of the row written: *full* (no reads, parity from the new data);
//! - healthy row: pre-reads for read-modify-write = written columns + parity columns, for
//!   reconstruct-write = unwritten data columns; fewer wins, a tie goes to reconstruct-write
//!   (md's default preference);
//! - degraded (some member failed): if every failed data column is being written, a
//!   reconstruct-write over the survivors; otherwise read every surviving column, rebuild the
//!   missing ones, apply the new data and recompute parity. Either way what is written keeps
//!   the failed columns' new contents implied by the parity;
//! - no parity column survives: just write the data.
//!
//! Optional batching delay (md's delayed stripes): a stripe whose queued writes do not cover all
//! its data waits up to `batch_delay` from the first write's arrival for more writes, and starts
//! at once when it becomes full.

mod policy;
mod queue;
mod rebuild;
mod write;

use std::collections::{BTreeSet, HashMap, VecDeque};

use super::geom::ArrayGeom;
use super::pageset::PageSet;
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::slab::Slab;
use crate::types::{DiskId, Nanos, PAGE_SIZE};
pub use policy::{ReadPolicy, SitOutTracker};

/// The caller's name for an operation: (job handle, part index).
pub type Token = (u64, u32);
/// Read data (data mode) or nothing; an error says why the operation could not be done.
pub type Outcome = Result<Option<Vec<u8>>, String>;

const PS: usize = PAGE_SIZE as usize;
const MAX_TRIES: u8 = 4;
/// Part code of the plain read a rebuild falls back to when too many members are missing.
const FALLBACK_PART: u32 = 1 << 20;

/// New data for pages `first..first+count` of data column `col` (`data` is None in size-only
/// mode).
#[derive(Debug, Clone)]
pub struct ColWrite {
    pub col: usize,
    pub first: usize,
    pub count: usize,
    pub data: Option<Vec<u8>>,
}

/// What the engine did, for tests and reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoreCounters {
    pub stripe_jobs: u64,
    /// Writes merged into a stripe job already holding another one.
    pub merged_parts: u64,
    pub full_rows: u64,
    pub rmw_rows: u64,
    pub rcw_rows: u64,
    pub degraded_rows: u64,
    pub pre_read_pages: u64,
    pub rebuilt_reads: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Untouched,
    Full,
    Rmw,
    Rcw,
    Rebuild,
    NoParity,
}

struct DirectRead {
    token: Token,
    stripe: u64,
    col: usize,
    first: usize,
    count: usize,
    bg: bool,
    tries: u8,
}

struct RebuildRead {
    token: Token,
    stripe: u64,
    col: usize,
    first: usize,
    count: usize,
    bg: bool,
    tries: u8,
    cols: Vec<Option<Vec<u8>>>,
    missing: Vec<usize>,
    pending: u32,
    failed: bool,
}

struct WritePart {
    token: Token,
    writes: Vec<ColWrite>,
    fua: bool,
    bg: bool,
}

struct StripeJob {
    stripe: u64,
    parts: Vec<Token>,
    fua: bool,
    bg: bool,
    /// Pages written per data column, and their new contents (chunk-sized buffers).
    wmask: Vec<PageSet>,
    new: Vec<Vec<u8>>,
    rows: PageSet,
    mode: Vec<Mode>,
    /// Pre-read contents per column (chunk-sized) and the reads in flight.
    old: Vec<Vec<u8>>,
    reads: Vec<PreRead>,
    missing: Vec<usize>,
    pending: u32,
    read_failed: bool,
    writing: bool,
    tries: u8,
}

/// A pre-read of a stripe job: where its pages land, from page `first` of column `col`.
#[derive(Clone, Copy)]
struct PreRead {
    col: usize,
    first: usize,
}

struct TrimOp {
    token: Token,
    stripe: u64,
    pending: u32,
}

enum COp {
    Direct(DirectRead),
    Rebuild(RebuildRead),
    Part(WritePart),
    Stripe(StripeJob),
    Trim(TrimOp),
    Raw(Token),
    Flush(Token, u32),
}

#[derive(Default)]
struct StripeQ {
    busy: bool,
    queue: VecDeque<u64>,
    ready_at: Option<Nanos>,
}

pub struct RaidCore {
    pub geo: ArrayGeom,
    policy: ReadPolicy,
    batch_delay: Option<Nanos>,
    ops: Slab<COp>,
    stripes: HashMap<u64, StripeQ>,
    delayed: BTreeSet<(Nanos, u64)>,
    done: VecDeque<(Token, Outcome)>,
    /// Issue time and member of each device I/O in flight, kept only when latencies are
    /// tracked (sit-out).
    io_meta: Option<IoMeta>,
    pub counters: CoreCounters,
}

/// Where and when a device I/O was issued.
struct Issued {
    disk: DiskId,
    at: Nanos,
}

/// The device I/Os in flight, by (op, part).
type IoMeta = HashMap<(u64, u32), Issued>;

fn issue(meta: &mut Option<IoMeta>, ctx: &mut Ctx, disk: DiskId, op: DevOp, tag: IoTag, bg: bool) {
    if let Some(m) = meta {
        m.insert((tag.job, tag.part), Issued { disk, at: ctx.now });
    }
    ctx.issue(disk, op, tag, bg);
}

fn read_bytes(r: &IoResult) -> Option<&[u8]> {
    match r {
        Ok(Some(Data::Bytes(b))) => Some(b),
        _ => None,
    }
}

impl RaidCore {
    pub fn new(geo: ArrayGeom, policy: ReadPolicy, batch_delay: Option<Nanos>) -> Self {
        let track = matches!(policy, ReadPolicy::SitOut(_));
        RaidCore {
            geo,
            policy,
            batch_delay: batch_delay.filter(|&d| d > 0),
            ops: Slab::default(),
            stripes: HashMap::new(),
            delayed: BTreeSet::new(),
            done: VecDeque::new(),
            io_meta: track.then(HashMap::new),
            counters: CoreCounters::default(),
        }
    }

    pub fn pop_done(&mut self) -> Option<(Token, Outcome)> {
        self.done.pop_front()
    }
    pub fn is_idle(&self) -> bool {
        self.ops.is_empty() && self.done.is_empty()
    }
    pub fn ops_in_flight(&self) -> usize {
        self.ops.len()
    }
    pub fn policy(&self) -> &ReadPolicy {
        &self.policy
    }

    // ---------------------------------------------------------------- read policy

    /// Whether the policy wants reads of `disk` rebuilt from parity right now.
    fn slow(&self, ctx: &Ctx, disk: DiskId) -> bool {
        self.policy.slow(ctx, &self.geo, disk)
    }

    /// Rebuild a read of a healthy column when its member is slow and the rest of the stripe
    /// can rebuild it without touching another slow member.
    fn avoid_column(&self, ctx: &Ctx, stripe: u64, col: usize) -> bool {
        if matches!(self.policy, ReadPolicy::Plain) || !self.slow(ctx, self.geo.disk(stripe, col)) {
            return false;
        }
        let mut failed = 0;
        for c in (0..self.geo.width).filter(|&c| c != col) {
            let d = self.geo.disk(stripe, c);
            if ctx.is_failed(d) {
                failed += 1;
            } else if self.slow(ctx, d) {
                return false;
            }
        }
        failed < self.geo.nparity
    }

    fn failed_cols(&self, ctx: &Ctx, stripe: u64) -> Vec<usize> {
        (0..self.geo.width)
            .filter(|&c| ctx.is_failed(self.geo.disk(stripe, c)))
            .collect()
    }

    // ---------------------------------------------------------------- entry points

    /// Read pages `first..first+count` of column `col` (data or parity) of `stripe`.
    #[allow(clippy::too_many_arguments)]
    pub fn read(
        &mut self,
        ctx: &mut Ctx,
        token: Token,
        stripe: u64,
        col: usize,
        first: usize,
        count: usize,
        bg: bool,
    ) {
        assert!(count > 0 && first + count <= self.geo.ppb);
        let disk = self.geo.disk(stripe, col);
        let failed = ctx.is_failed(disk);
        if !failed && !self.avoid_column(ctx, stripe, col) {
            let h = self.ops.insert(COp::Direct(DirectRead {
                token,
                stripe,
                col,
                first,
                count,
                bg,
                tries: 0,
            }));
            let (disk, off) = self.geo.offset(stripe, col, first);
            issue(
                &mut self.io_meta,
                ctx,
                disk,
                DevOp::Read {
                    offset: off,
                    len: (count * PS) as u64,
                },
                IoTag { job: h, part: 0 },
                bg,
            );
            return;
        }
        if !failed {
            ctx.stats.redirected_reads += 1;
        }
        self.queue_rebuild(ctx, token, stripe, col, first, count, bg, 0);
    }

    #[allow(clippy::too_many_arguments)]
    fn queue_rebuild(
        &mut self,
        ctx: &mut Ctx,
        token: Token,
        stripe: u64,
        col: usize,
        first: usize,
        count: usize,
        bg: bool,
        tries: u8,
    ) {
        let h = self.ops.insert(COp::Rebuild(RebuildRead {
            token,
            stripe,
            col,
            first,
            count,
            bg,
            tries,
            cols: Vec::new(),
            missing: Vec::new(),
            pending: 0,
            failed: false,
        }));
        self.enqueue(ctx, stripe, h);
    }

    /// Write data columns of one stripe. Pages of one call must not overlap; calls are applied
    /// in order.
    pub fn write(
        &mut self,
        ctx: &mut Ctx,
        token: Token,
        stripe: u64,
        writes: Vec<ColWrite>,
        fua: bool,
        bg: bool,
    ) {
        for w in &writes {
            assert!(w.col < self.geo.dcols() && w.count > 0 && w.first + w.count <= self.geo.ppb);
            if let Some(d) = &w.data {
                assert_eq!(d.len(), w.count * PS, "write payload length");
            }
        }
        let h = self.ops.insert(COp::Part(WritePart {
            token,
            writes,
            fua,
            bg,
        }));
        self.enqueue(ctx, stripe, h);
    }

    /// Discard a whole stripe (every column) on the members, in order with its other writes.
    pub fn trim(&mut self, ctx: &mut Ctx, token: Token, stripe: u64) {
        let h = self.ops.insert(COp::Trim(TrimOp {
            token,
            stripe,
            pending: 0,
        }));
        self.enqueue(ctx, stripe, h);
    }

    /// One device command, passed through (its result comes back as the outcome).
    pub fn raw(&mut self, ctx: &mut Ctx, token: Token, disk: DiskId, op: DevOp, bg: bool) {
        let h = self.ops.insert(COp::Raw(token));
        issue(
            &mut self.io_meta,
            ctx,
            disk,
            op,
            IoTag { job: h, part: 0 },
            bg,
        );
    }

    /// Flush the write caches of `disks` (failed ones skipped; a member failing its flush is
    /// covered by redundancy like any other failure).
    pub fn flush(&mut self, ctx: &mut Ctx, token: Token, disks: impl Iterator<Item = DiskId>) {
        let h = self.ops.insert(COp::Flush(token, 0));
        let mut n = 0;
        for d in disks {
            if !ctx.is_failed(d) {
                ctx.issue(d, DevOp::Flush, IoTag { job: h, part: n }, false);
                n += 1;
            }
        }
        if n == 0 {
            self.ops.remove(h);
            self.done.push_back((token, Ok(None)));
        } else if let Some(COp::Flush(_, p)) = self.ops.get_mut(h) {
            *p = n;
        }
    }

    pub fn on_tick(&mut self, ctx: &mut Ctx) {
        while let Some(&(t, s)) = self.delayed.first() {
            if t > ctx.now {
                break;
            }
            self.delayed.remove(&(t, s));
            self.try_start(ctx, s);
        }
        if let ReadPolicy::SitOut(so) = &mut self.policy {
            so.check(ctx, &self.geo);
        }
    }

    pub fn next_deadline(&self, _now: Nanos) -> Option<Nanos> {
        let a = self.delayed.first().map(|&(t, _)| t);
        let b = match &self.policy {
            ReadPolicy::SitOut(s) => s.next_deadline(),
            _ => None,
        };
        match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        }
    }

    // ---------------------------------------------------------------- the rest

    /// A device I/O this core issued has completed.
    pub fn on_io(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        if let Some(meta) = &mut self.io_meta
            && let Some(Issued { disk, at }) = meta.remove(&(tag.job, tag.part))
            && let ReadPolicy::SitOut(so) = &mut self.policy
        {
            so.observe(disk, ctx.now.saturating_sub(at), ctx.now);
        }
        let h = tag.job;
        match self.ops.get_mut(h) {
            None => {}
            Some(COp::Direct(d)) => {
                if result.is_ok() {
                    let data = read_bytes(&result).map(|b| b.to_vec());
                    let t = d.token;
                    self.ops.remove(h);
                    self.done.push_back((t, Ok(data)));
                } else {
                    let Some(COp::Direct(d)) = self.ops.remove(h) else {
                        unreachable!()
                    };
                    if d.tries + 1 >= MAX_TRIES {
                        self.done
                            .push_back((d.token, Err("reads failed on every member tried".into())));
                    } else {
                        self.queue_rebuild(
                            ctx,
                            d.token,
                            d.stripe,
                            d.col,
                            d.first,
                            d.count,
                            d.bg,
                            d.tries + 1,
                        );
                    }
                }
            }
            Some(COp::Rebuild(_)) => self.rebuild_io_done(ctx, h, tag.part, result),
            Some(COp::Stripe(_)) => self.stripe_io_done(ctx, h, tag.part, result),
            Some(COp::Trim(t)) => {
                t.pending -= 1;
                if t.pending == 0 {
                    let (tok, s) = (t.token, t.stripe);
                    self.ops.remove(h);
                    self.done.push_back((tok, Ok(None)));
                    self.release_stripe(ctx, s);
                }
            }
            Some(COp::Raw(t)) => {
                let t = *t;
                self.ops.remove(h);
                let out = match result {
                    Ok(Some(Data::Bytes(b))) => Ok(Some(b)),
                    Ok(_) => Ok(None),
                    Err(e) => Err(e.0),
                };
                self.done.push_back((t, out));
            }
            Some(COp::Flush(t, p)) => {
                *p -= 1;
                if *p == 0 {
                    let t = *t;
                    self.ops.remove(h);
                    self.done.push_back((t, Ok(None)));
                }
            }
            Some(COp::Part(_)) => unreachable!("queued writes issue no I/O"),
        }
    }

    /// Consistency checks for tests: every queued op exists and is of a queueable kind, and
    /// every delayed stripe has a queue.
    pub fn check_invariants(&self) {
        for (s, q) in &self.stripes {
            for &h in &q.queue {
                assert!(
                    matches!(
                        self.ops.get(h),
                        Some(COp::Part(_) | COp::Rebuild(_) | COp::Trim(_))
                    ),
                    "stripe {s} queues a missing or running op"
                );
            }
            if let Some(r) = q.ready_at {
                assert!(
                    self.delayed.contains(&(r, *s)),
                    "stripe {s} delay not armed"
                );
            }
        }
        for &(_, s) in &self.delayed {
            assert!(
                self.stripes.contains_key(&s),
                "delay for unknown stripe {s}"
            );
        }
    }

    pub fn debug_state(&self) -> String {
        let busy = self.stripes.values().filter(|q| q.busy).count();
        let queued: usize = self.stripes.values().map(|q| q.queue.len()).sum();
        format!(
            "core: ops {} stripes busy {} queued {} delayed {} done {} {:?}",
            self.ops.len(),
            busy,
            queued,
            self.delayed.len(),
            self.done.len(),
            self.counters
        )
    }
}
