//! NV-RAID: an NVRAM write buffer above RAID50 (paper §5.2, emulated there with DRAM and a
//! 100 ns delay per 64-byte cache-line flush).
//!
//! - **Assumption: the buffer is non-volatile** (battery-backed / NVDIMM), and members have
//!   power-loss protection. A write is therefore complete once copied into the buffer, and
//!   Flush/FUA need nothing more: Flush is answered at once.
//! - **Write latency** = the copy cost, `write_ns_per_line` per `line_bytes` line, applied as a
//!   deadline: the reply is sent at `now + cost` from the scheme's timer. Reads served from the
//!   buffer are charged `read_ns_per_line` the same way (the reply never leaves earlier).
//! - **Capacity** in 4 KiB pages. A page occupies a slot while it has unflushed data and for
//!   each copy of it a flush is writing. When a write does not fit, it waits (in order, holding
//!   its range lock) until flushes free slots.
//! - **Flush policy** (background writes to RAID50, at most `max_flushes` stripes at once):
//!   stripes whose every data page is buffered go first (full-stripe writes, no pre-reads);
//!   partial stripes, oldest first, when the buffer is above `high_water`, when writes wait for
//!   room, or when a stripe's oldest dirty page is older than `max_age_ns`. Flushes of one stripe
//!   are ordered by the RAID core's stripe queue, so a page may be rewritten and flushed again
//!   while an older copy is still being written.
//! - Reads take each page from the buffer when it is there, the rest from RAID50.
//! - Trim drops buffered dirty pages of the range and discards whole stripes on the members;
//!   write-zeroes is a write of zeros.

use std::collections::{BTreeSet, HashMap, VecDeque};

use super::array::{ColWrite, Outcome, RaidCore, ReadPolicy, Token};
use super::config::{BaselineConfig, NvRaidConfig};
use super::gather::Gather;
use super::geom::{VolMap, pieces, place_volumes};
use super::pageset::PageSet;
use crate::engine::api::{Data, IoResult, Op, ReqError, Request, VolumeId};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::locks::BlockLocks;
use crate::scheme::{Scheme, VolumeStatus};
use crate::slab::Slab;
use crate::types::{DiskId, Nanos, PAGE_SIZE};

const PS: usize = PAGE_SIZE as usize;

/// The buffered pages of one RAID50 stripe. Kept per stripe, not per page, so a large
/// buffer in a size-only simulation costs a few hundred bytes per stripe it touches.
struct SBuf {
    vol: usize,
    /// Volume stripe.
    k: u64,
    /// Pages with data not yet flushed, per data column.
    dirty: Vec<PageSet>,
    dirty_count: u32,
    /// Flushes writing a copy of each page (index `col * ppb + page`).
    inflight: Vec<u16>,
    inflight_total: u32,
    /// Newest contents of every buffered page (data mode).
    data: Option<Vec<u8>>,
    /// When the oldest dirty page arrived (meaningful while `dirty_count > 0`).
    since: Nanos,
}

impl SBuf {
    fn present(&self, col: usize, pg: usize, ppb: usize) -> bool {
        self.dirty[col].contains(pg) || self.inflight[col * ppb + pg] > 0
    }
}

enum Job {
    Read {
        g: Gather,
        /// Where each device read's data goes in the result.
        offs: Vec<u64>,
        not_before: Nanos,
    },
    Write {
        id: u64,
        at: Nanos,
        vol: usize,
        offset: u64,
        len: u64,
        data: Option<Data>,
        trim: bool,
        pending: u32,
        err: Option<String>,
    },
    Flush {
        stripe: u64,
        cols: Vec<PageSet>,
    },
}

pub struct NvRaid {
    cfg: NvRaidConfig,
    core: RaidCore,
    vols: Vec<VolMap>,
    buf: HashMap<u64, SBuf>,
    full_q: VecDeque<u64>,
    age_q: BTreeSet<(Nanos, u64)>,
    cap_pages: u64,
    dirty_pages: u64,
    snapshots: u64,
    flushes: usize,
    locks: Vec<BlockLocks<u64>>,
    jobs: Slab<Job>,
    ready: VecDeque<u64>,
    admit_q: VecDeque<u64>,
    /// Replies held until their copy cost has passed: (when, job).
    timers: BTreeSet<(Nanos, u64)>,
    max_request: u64,
    pub buffer_read_pages: u64,
    pub flushed_stripes: u64,
    pub full_stripe_flushes: u64,
    pub waited_writes: u64,
}

impl NvRaid {
    pub fn new(cfg: &BaselineConfig) -> Result<Self, String> {
        let geo = cfg.geometry()?;
        let (vols, rows) = place_volumes(&geo, &cfg.volumes, false);
        cfg.check_rows(&geo, rows)?;
        let nv = cfg.nvraid.clone();
        let cap_pages = nv.buffer_bytes / PAGE_SIZE;
        if cap_pages * PAGE_SIZE < cfg.max_request_bytes {
            return Err(format!(
                "nvraid: buffer of {} bytes is smaller than the largest request ({})",
                nv.buffer_bytes, cfg.max_request_bytes
            ));
        }
        if nv.line_bytes == 0 || nv.max_flushes == 0 {
            return Err("nvraid: line_bytes and max_flushes must be positive".into());
        }
        let core = RaidCore::new(geo, ReadPolicy::Plain, cfg.raid5.batch_delay_ns);
        Ok(NvRaid {
            locks: vols.iter().map(|_| BlockLocks::default()).collect(),
            vols,
            core,
            buf: HashMap::new(),
            full_q: VecDeque::new(),
            age_q: BTreeSet::new(),
            cap_pages,
            dirty_pages: 0,
            snapshots: 0,
            flushes: 0,
            jobs: Slab::default(),
            ready: VecDeque::new(),
            admit_q: VecDeque::new(),
            timers: BTreeSet::new(),
            max_request: cfg.max_request_bytes,
            cfg: nv,
            buffer_read_pages: 0,
            flushed_stripes: 0,
            full_stripe_flushes: 0,
            waited_writes: 0,
        })
    }

    /// Slots in use: dirty pages plus copies being flushed.
    pub fn used_pages(&self) -> u64 {
        self.dirty_pages + self.snapshots
    }
    pub fn capacity_pages(&self) -> u64 {
        self.cap_pages
    }

    fn cost(&self, bytes: u64, per_line: u64) -> Nanos {
        bytes.div_ceil(self.cfg.line_bytes) * per_line
    }

    /// (stripe, volume stripe, column, page in chunk) of page `p` of volume `vol`.
    fn locate(&self, vol: usize, p: u64) -> (u64, u64, usize, usize) {
        let geo = &self.core.geo;
        let ppb = geo.ppb as u64;
        let chunk = p / ppb;
        let k = chunk / geo.dcols() as u64;
        (
            self.vols[vol].stripe(k),
            k,
            (chunk % geo.dcols() as u64) as usize,
            (p % ppb) as usize,
        )
    }

    // ------------------------------------------------------------------ reads

    fn start_read(&mut self, ctx: &mut Ctx, id: u64, vol: usize, offset: u64, len: u64) {
        let ppb = self.core.geo.ppb;
        // The number of device reads is known only after the buffer hits are copied.
        let mut g = Gather::new(ctx, id, len, 0);
        let mut raid: Vec<(u64, usize, usize, usize, u64)> = Vec::new(); // stripe col first count off
        let mut hits = 0u64;
        for pc in pieces(&self.core.geo, offset, len) {
            let stripe = self.vols[vol].stripe(pc.vstripe);
            let sb = self.buf.get(&stripe);
            for i in 0..pc.count {
                let pg = pc.first + i;
                let boff = pc.buf_off + (i * PS) as u64;
                if let Some(sb) = sb
                    && sb.present(pc.col, pg, ppb)
                {
                    hits += 1;
                    if let Some(d) = sb.data.as_ref() {
                        let src = (pc.col * ppb + pg) * PS;
                        g.put(boff, &d[src..src + PS]);
                    }
                    continue;
                }
                match raid.last_mut() {
                    Some(r) if r.0 == stripe && r.1 == pc.col && r.2 + r.3 == pg => r.3 += 1,
                    _ => raid.push((stripe, pc.col, pg, 1, boff)),
                }
            }
        }
        self.buffer_read_pages += hits;
        let not_before = ctx.now + self.cost(hits * PAGE_SIZE, self.cfg.read_ns_per_line);
        g.pending = raid.len() as u32;
        let h = self.jobs.insert(Job::Read {
            g,
            offs: raid.iter().map(|r| r.4).collect(),
            not_before,
        });
        for (i, &(stripe, col, first, count, _)) in raid.iter().enumerate() {
            self.core
                .read(ctx, (h, i as u32), stripe, col, first, count, false);
        }
        if raid.is_empty() {
            self.read_ready(ctx, h);
        }
    }

    fn read_ready(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Read { not_before, .. }) = self.jobs.get(h) else {
            unreachable!()
        };
        if *not_before > ctx.now {
            self.timers.insert((*not_before, h));
            return;
        }
        let Some(Job::Read { g, .. }) = self.jobs.remove(h) else {
            unreachable!()
        };
        g.reply(ctx);
    }

    // ------------------------------------------------------------------ writes

    fn start_write(&mut self, ctx: &mut Ctx, h: u64) {
        let trim = matches!(self.jobs.get(h), Some(Job::Write { trim: true, .. }));
        if trim {
            self.do_trim(ctx, h);
            return;
        }
        if !self.admit_q.is_empty() || !self.admit(ctx, h) {
            self.waited_writes += 1;
            self.admit_q.push_back(h);
            self.kick_flush(ctx);
        }
    }

    /// Copy the write into the buffer if it fits. The reply leaves after the copy cost.
    fn admit(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        let Some(Job::Write {
            vol, offset, len, ..
        }) = self.jobs.get(h)
        else {
            unreachable!()
        };
        let (vol, offset, len) = (*vol, *offset, *len);
        let p0 = offset / PAGE_SIZE;
        let n = len / PAGE_SIZE;
        let need = (0..n)
            .filter(|&i| {
                let (stripe, _, col, pg) = self.locate(vol, p0 + i);
                !self
                    .buf
                    .get(&stripe)
                    .is_some_and(|sb| sb.dirty[col].contains(pg))
            })
            .count() as u64;
        if self.used_pages() + need > self.cap_pages {
            return false;
        }
        let bytes = match self.jobs.get_mut(h) {
            Some(Job::Write { data, .. }) => data.take(),
            _ => unreachable!(),
        };
        let geo = &self.core.geo;
        let (ppb, dcols, spages) = (geo.ppb, geo.dcols(), geo.stripe_pages() as u32);
        for i in 0..n {
            let (stripe, k, col, pg) = self.locate(vol, p0 + i);
            let sb = self.buf.entry(stripe).or_insert_with(|| SBuf {
                vol,
                k,
                dirty: vec![PageSet::default(); dcols],
                dirty_count: 0,
                inflight: vec![0; dcols * ppb],
                inflight_total: 0,
                data: None,
                since: ctx.now,
            });
            if !ctx.size_only {
                let d = sb.data.get_or_insert_with(|| vec![0u8; dcols * ppb * PS]);
                let dst = (col * ppb + pg) * PS;
                match &bytes {
                    Some(Data::Bytes(b)) => {
                        d[dst..dst + PS].copy_from_slice(&b[i as usize * PS..(i as usize + 1) * PS])
                    }
                    _ => d[dst..dst + PS].fill(0),
                }
            }
            if !sb.dirty[col].contains(pg) {
                sb.dirty[col].insert(pg);
                if sb.dirty_count == 0 {
                    sb.since = ctx.now;
                    self.age_q.insert((ctx.now, stripe));
                }
                sb.dirty_count += 1;
                self.dirty_pages += 1;
                if sb.dirty_count == spages {
                    self.full_q.push_back(stripe);
                }
            }
        }
        let when = ctx.now + self.cost(len, self.cfg.write_ns_per_line);
        if when > ctx.now {
            self.timers.insert((when, h));
        } else {
            self.finish_write(ctx, h);
        }
        self.kick_flush(ctx);
        true
    }

    fn do_trim(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Write {
            vol, offset, len, ..
        }) = self.jobs.get(h)
        else {
            unreachable!()
        };
        let (vol, offset, len) = (*vol, *offset, *len);
        for page in offset / PAGE_SIZE..(offset + len) / PAGE_SIZE {
            let (stripe, _, col, pg) = self.locate(vol, page);
            let Some(sb) = self.buf.get_mut(&stripe) else {
                continue;
            };
            if !sb.dirty[col].contains(pg) {
                continue;
            }
            sb.dirty[col].remove(pg);
            sb.dirty_count -= 1;
            self.dirty_pages -= 1;
            if sb.dirty_count == 0 {
                self.age_q.remove(&(sb.since, stripe));
                if sb.inflight_total == 0 {
                    self.buf.remove(&stripe);
                }
            }
        }
        let sp = self.core.geo.stripe_data_bytes();
        let first = offset.div_ceil(sp);
        let end = ((offset + len) / sp).min(self.vols[vol].size / sp);
        let stripes: Vec<u64> = (first..end).map(|k| self.vols[vol].stripe(k)).collect();
        let n = stripes.len() as u32;
        if let Some(Job::Write { pending, .. }) = self.jobs.get_mut(h) {
            *pending = n;
        }
        for (i, s) in stripes.into_iter().enumerate() {
            self.core.trim(ctx, (h, i as u32), s);
        }
        if n == 0 {
            self.finish_write(ctx, h);
        }
        self.admit_waiting(ctx);
    }

    fn finish_write(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Write {
            id,
            at,
            vol,
            offset,
            len,
            err,
            ..
        }) = self.jobs.remove(h)
        else {
            unreachable!()
        };
        self.ready
            .extend(self.locks[vol].release(offset / PAGE_SIZE, (offset + len) / PAGE_SIZE));
        ctx.reply(id, at, err.map_or(Ok(None), |e| Err(ReqError::Io(e))));
    }

    fn admit_waiting(&mut self, ctx: &mut Ctx) {
        while let Some(&h) = self.admit_q.front() {
            if self.admit(ctx, h) {
                self.admit_q.pop_front();
            } else {
                break;
            }
        }
    }

    // ------------------------------------------------------------------ flushing

    fn pressure(&self) -> bool {
        !self.admit_q.is_empty()
            || self.used_pages() as f64 > self.cfg.high_water * self.cap_pages as f64
    }

    fn kick_flush(&mut self, ctx: &mut Ctx) {
        while self.flushes < self.cfg.max_flushes {
            let spages = self.core.geo.stripe_pages() as u32;
            let mut pick = None;
            while let Some(s) = self.full_q.pop_front() {
                if self.buf.get(&s).is_some_and(|d| d.dirty_count == spages) {
                    pick = Some(s);
                    break;
                }
            }
            if pick.is_none()
                && let Some(&(since, s)) = self.age_q.first()
            {
                let old = self.cfg.max_age_ns.is_some_and(|a| since + a <= ctx.now);
                if old || self.pressure() {
                    pick = Some(s);
                }
            }
            let Some(s) = pick else { break };
            self.start_flush(ctx, s);
        }
    }

    fn start_flush(&mut self, ctx: &mut Ctx, stripe: u64) {
        let geo = &self.core.geo;
        let (ppb, spages) = (geo.ppb, geo.stripe_pages() as u32);
        let sb = self.buf.get_mut(&stripe).expect("dirty stripe");
        assert!(sb.dirty_count > 0);
        self.age_q.remove(&(sb.since, stripe));
        if sb.dirty_count == spages {
            self.full_stripe_flushes += 1;
        }
        let cols = std::mem::replace(&mut sb.dirty, vec![PageSet::default(); geo.dcols()]);
        let mut writes = Vec::new();
        for (col, set) in cols.iter().enumerate() {
            for (f, n) in set.runs() {
                for p in f..f + n {
                    sb.inflight[col * ppb + p] += 1;
                }
                let data = sb
                    .data
                    .as_ref()
                    .map(|d| d[(col * ppb + f) * PS..(col * ppb + f + n) * PS].to_vec());
                writes.push(ColWrite {
                    col,
                    first: f,
                    count: n,
                    data,
                });
            }
        }
        let count = sb.dirty_count;
        sb.dirty_count = 0;
        sb.inflight_total += count;
        self.dirty_pages -= count as u64;
        self.snapshots += count as u64;
        self.flushes += 1;
        self.flushed_stripes += 1;
        let h = self.jobs.insert(Job::Flush { stripe, cols });
        self.core.write(ctx, (h, 0), stripe, writes, false, true);
    }

    fn flush_done(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Flush { stripe, cols }) = self.jobs.remove(h) else {
            unreachable!()
        };
        let ppb = self.core.geo.ppb;
        let sb = self.buf.get_mut(&stripe).expect("flushed stripe buffered");
        let mut n = 0;
        for (col, set) in cols.iter().enumerate() {
            for p in set.iter() {
                sb.inflight[col * ppb + p] -= 1;
                n += 1;
            }
        }
        sb.inflight_total -= n;
        if sb.inflight_total == 0 && sb.dirty_count == 0 {
            self.buf.remove(&stripe);
        }
        self.snapshots -= n as u64;
        self.flushes -= 1;
        self.admit_waiting(ctx);
        self.kick_flush(ctx);
    }

    fn on_outcome(&mut self, ctx: &mut Ctx, (h, part): Token, out: Outcome) {
        match self.jobs.get_mut(h) {
            Some(Job::Read { g, offs, .. }) => {
                if g.part_done(offs[part as usize], out) {
                    self.read_ready(ctx, h);
                }
            }
            Some(Job::Write { pending, err, .. }) => {
                if let Err(e) = out {
                    err.get_or_insert(e);
                }
                *pending -= 1;
                if *pending == 0 {
                    self.finish_write(ctx, h);
                }
            }
            Some(Job::Flush { .. }) => {
                // A flush that failed beyond the parity's reach lost the stripe on the
                // members; the buffer can not keep it forever either, so it is dropped.
                self.flush_done(ctx, h);
            }
            None => unreachable!("outcome for a finished job"),
        }
    }

    fn pump(&mut self, ctx: &mut Ctx) {
        loop {
            if let Some((t, out)) = self.core.pop_done() {
                self.on_outcome(ctx, t, out);
            } else if let Some(h) = self.ready.pop_front() {
                self.start_write(ctx, h);
            } else {
                break;
            }
        }
    }
}

impl Scheme for NvRaid {
    /// In place: a never-written block is read from its home (assume-clean members).
    fn members_start_zeroed(&self) -> bool {
        true
    }
    fn name(&self) -> &str {
        "nvraid"
    }
    fn volume_count(&self) -> usize {
        self.vols.len()
    }
    fn volume_size(&self, v: VolumeId) -> Option<u64> {
        self.vols.get(v as usize).map(|m| m.size)
    }
    fn max_request_bytes(&self) -> u64 {
        self.max_request
    }

    fn submit(&mut self, ctx: &mut Ctx, req: Request) {
        let vol = req.volume as usize;
        let at = ctx.now;
        let (offset, len, data, trim) = match req.op {
            Op::Read { offset, len } => {
                self.start_read(ctx, req.id, vol, offset, len);
                self.pump(ctx);
                return;
            }
            Op::Flush => {
                // The buffer is non-volatile: everything acknowledged is durable already.
                ctx.reply(req.id, at, Ok(None));
                return;
            }
            Op::Write { offset, data, .. } => (offset, data.len(), Some(data), false),
            Op::WriteZeroes { offset, len, .. } => (offset, len, None, false),
            Op::Trim { offset, len } => (offset, len, None, true),
        };
        let h = self.jobs.insert(Job::Write {
            id: req.id,
            at,
            vol,
            offset,
            len,
            data,
            trim,
            pending: 0,
            err: None,
        });
        if self.locks[vol]
            .acquire(offset / PAGE_SIZE, (offset + len) / PAGE_SIZE, h)
            .is_some()
        {
            self.start_write(ctx, h);
        }
        self.pump(ctx);
    }

    fn on_io_complete(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        self.core.on_io(ctx, tag, result);
        self.pump(ctx);
    }

    fn on_tick(&mut self, ctx: &mut Ctx) {
        self.core.on_tick(ctx);
        while let Some(&(t, h)) = self.timers.first() {
            if t > ctx.now {
                break;
            }
            self.timers.remove(&(t, h));
            match self.jobs.get(h) {
                Some(Job::Read { .. }) => self.read_ready(ctx, h),
                Some(Job::Write { .. }) => self.finish_write(ctx, h),
                _ => unreachable!("timer for a flush"),
            }
        }
        self.kick_flush(ctx);
        self.pump(ctx);
    }

    fn next_deadline(&self, now: Nanos) -> Option<Nanos> {
        let mut best = self.core.next_deadline(now);
        let mut take = |t: Nanos| best = Some(best.map_or(t, |b| b.min(t)));
        if let Some(&(t, _)) = self.timers.first() {
            take(t);
        }
        if let (Some(age), Some(&(since, _))) = (self.cfg.max_age_ns, self.age_q.first())
            && self.flushes < self.cfg.max_flushes
            && since + age > now
        {
            take(since + age);
        }
        best
    }

    fn on_disk_failed(&mut self, ctx: &mut Ctx, _disk: DiskId) {
        self.pump(ctx);
    }

    fn volume_status(&self, v: VolumeId) -> Option<VolumeStatus> {
        let m = self.vols.get(v as usize)?;
        let geo = &self.core.geo;
        Some(VolumeStatus {
            name: m.name.clone(),
            size_bytes: m.size,
            level: format!(
                "nvram {} MiB + raid50 {}+{}",
                (self.cap_pages * PAGE_SIZE) >> 20,
                geo.dcols(),
                geo.nparity
            ),
            raid_bytes: m.stripes(geo) * geo.width as u64 * geo.block_size,
            replicated_bytes: 0,
            free_bytes: (self.cap_pages - self.used_pages()) * PAGE_SIZE,
            conversion_backlog: self.age_q.len() as u64,
            mapped_bytes: m.size,
            metadata_bytes: self.buf.len() as u64 * (64 + 4 * self.core.geo.stripe_pages() as u64),
            rebuild: None,
            scrub: None,
            rebuild_progress: None,
            scrub_progress: None,
        })
    }

    fn is_idle(&self) -> bool {
        self.jobs.is_empty() && self.core.is_idle() && self.ready.is_empty()
    }

    fn check_invariants(&self) {
        self.core.check_invariants();
        let mut dirty = 0u64;
        let mut snaps = 0u64;
        for (&s, sb) in &self.buf {
            let d: u32 = sb.dirty.iter().map(|c| c.len() as u32).sum();
            let f: u32 = sb.inflight.iter().map(|&x| x as u32).sum();
            assert_eq!(d, sb.dirty_count, "stripe {s} dirty count");
            assert_eq!(f, sb.inflight_total, "stripe {s} copies in flight");
            assert!(d > 0 || f > 0, "stripe {s} buffered with nothing in it");
            assert_eq!(
                d > 0,
                self.age_q.contains(&(sb.since, s)),
                "stripe {s} in the age queue iff dirty"
            );
            assert_eq!(self.vols[sb.vol].stripe(sb.k), s);
            dirty += d as u64;
            snaps += f as u64;
        }
        assert_eq!(dirty, self.dirty_pages, "dirty page count");
        assert_eq!(snaps, self.snapshots, "copies in flight");
        assert!(self.used_pages() <= self.cap_pages, "buffer over capacity");
        assert_eq!(
            self.age_q.len(),
            self.buf.values().filter(|b| b.dirty_count > 0).count()
        );
    }

    fn debug_state(&self) -> String {
        format!(
            "nvraid: jobs {} used {}/{} dirty stripes {} flushes {} (full {}) admit_q {} waited {} timers {} | {}",
            self.jobs.len(),
            self.used_pages(),
            self.cap_pages,
            self.age_q.len(),
            self.flushes,
            self.full_stripe_flushes,
            self.admit_q.len(),
            self.waited_writes,
            self.timers.len(),
            self.core.debug_state()
        )
    }
}
