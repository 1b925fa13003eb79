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
//!
//! Here the buffer's bookkeeping; `write.rs` admission and trim, `read.rs` reads, `flush.rs`
//! the flush policy, `scheme.rs` the [`crate::scheme::Scheme`] implementation.

mod flush;
mod read;
mod scheme;
mod write;

use std::collections::{BTreeSet, HashMap, VecDeque};

use super::array::{Outcome, RaidCore, ReadPolicy, Token};
use super::config::{BaselineConfig, NvRaidConfig};
use super::gather::Gather;
use super::geom::{VolMap, place_volumes};
use super::pageset::PageSet;
use crate::engine::api::Data;
use crate::engine::ctx::Ctx;
use crate::scheme::locks::BlockLocks;
use crate::slab::Slab;
use crate::types::{Nanos, PAGE_SIZE};

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

/// Where a page of a volume sits: its RAID50 stripe, the volume stripe `k`, its data column
/// and its page in the chunk.
#[derive(Clone, Copy, Debug)]
struct PagePos {
    stripe: u64,
    k: u64,
    col: usize,
    pg: usize,
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

    /// Where page `p` of volume `vol` sits.
    fn locate(&self, vol: usize, p: u64) -> PagePos {
        let geo = &self.core.geo;
        let ppb = geo.ppb as u64;
        let chunk = p / ppb;
        let k = chunk / geo.dcols() as u64;
        PagePos {
            stripe: self.vols[vol].stripe(k),
            k,
            col: (chunk % geo.dcols() as u64) as usize,
            pg: (p % ppb) as usize,
        }
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
