//! The request layer of the update-in-place parity baselines (4-RAID5, RAID50, ToleRAID,
//! sit-out): user requests are cut into per-chunk pieces and handed to the [`RaidCore`]; what
//! differs between those schemes is only where a volume's stripes are ([`VolMap`]) and the
//! core's read policy.
//!
//! Writes, zeroing and trims of a volume take page-granular range locks in submission order
//! and hold them until their reply, so overlapping writes complete (and are acknowledged) in
//! the order they were submitted. Reads take no lock: a read overlapping a write in flight may
//! see either version of each page, as a block device allows.
//!
//! Trim: whole stripes inside the range are discarded on every member (data and parity, so
//! the stripe stays consistent whatever the members return for discarded blocks); partial
//! stripes are left alone. The trimmed range's content is unspecified afterwards.
//! Flush: every member's cache is flushed (writes are acknowledged only after the members
//! acknowledged them, so that makes everything acknowledged durable).

use std::collections::{BTreeMap, VecDeque};

use super::array::{ColWrite, Outcome, RaidCore, Token};
use super::config::BaselineConfig;
use super::gather::Gather;
use super::geom::{VolMap, pieces};
use crate::engine::api::{Data, IoResult, Op, ReqError, Request, VolumeId};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::locks::BlockLocks;
use crate::scheme::{Scheme, VolumeStatus};
use crate::slab::Slab;
use crate::types::{DiskId, Nanos, PAGE_SIZE};

/// What a write-like request does to its range.
#[derive(Debug)]
pub enum WKind {
    Data(Data),
    Zeroes,
    Trim,
}

enum Job {
    Read {
        g: Gather,
        /// Where each device read's data goes in the result.
        offs: Vec<u64>,
    },
    Write {
        id: u64,
        at: Nanos,
        vol: usize,
        offset: u64,
        len: u64,
        kind: WKind,
        fua: bool,
        pending: u32,
        err: Option<String>,
    },
    Flush {
        id: u64,
        at: Nanos,
    },
}

pub struct InPlace {
    name: String,
    level: String,
    pub core: RaidCore,
    vols: Vec<VolMap>,
    locks: Vec<BlockLocks<u64>>,
    jobs: Slab<Job>,
    ready: VecDeque<u64>,
    max_request: u64,
}

impl InPlace {
    pub fn new(
        name: &str,
        level: String,
        core: RaidCore,
        vols: Vec<VolMap>,
        cfg: &BaselineConfig,
    ) -> Self {
        InPlace {
            name: name.to_string(),
            level,
            core,
            locks: vols.iter().map(|_| BlockLocks::default()).collect(),
            vols,
            jobs: Slab::default(),
            ready: VecDeque::new(),
            max_request: cfg.max_request_bytes,
        }
    }

    pub fn volume_map(&self, v: usize) -> &VolMap {
        &self.vols[v]
    }

    fn start_read(&mut self, ctx: &mut Ctx, id: u64, vol: usize, offset: u64, len: u64) {
        let ps = pieces(&self.core.geo, offset, len);
        let h = self.jobs.insert(Job::Read {
            g: Gather::new(ctx, id, len, ps.len() as u32),
            offs: ps.iter().map(|p| p.buf_off).collect(),
        });
        for (i, p) in ps.iter().enumerate() {
            let stripe = self.vols[vol].stripe(p.vstripe);
            self.core
                .read(ctx, (h, i as u32), stripe, p.col, p.first, p.count, false);
        }
    }

    fn start_write(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Write {
            vol,
            offset,
            len,
            kind,
            fua,
            ..
        }) = self.jobs.get(h)
        else {
            unreachable!()
        };
        let (vol, offset, len, fua) = (*vol, *offset, *len, *fua);
        let geo = &self.core.geo;
        let mut n = 0u32;
        match kind {
            WKind::Trim => {
                let sp = geo.stripe_data_bytes();
                let first = offset.div_ceil(sp);
                let end = (offset + len) / sp;
                let vol_end = self.vols[vol].size / sp;
                let stripes: Vec<u64> = (first..end.min(vol_end))
                    .map(|k| self.vols[vol].stripe(k))
                    .collect();
                for s in stripes {
                    self.core.trim(ctx, (h, n), s);
                    n += 1;
                }
            }
            WKind::Data(_) | WKind::Zeroes => {
                let mut per: BTreeMap<u64, Vec<ColWrite>> = BTreeMap::new();
                for p in pieces(geo, offset, len) {
                    let bytes = (p.count as u64 * PAGE_SIZE) as usize;
                    let data = if ctx.size_only {
                        None
                    } else {
                        Some(match kind {
                            WKind::Data(d) => {
                                let b = d.bytes().expect("data mode payload");
                                b[p.buf_off as usize..p.buf_off as usize + bytes].to_vec()
                            }
                            _ => vec![0u8; bytes],
                        })
                    };
                    per.entry(p.vstripe).or_default().push(ColWrite {
                        col: p.col,
                        first: p.first,
                        count: p.count,
                        data,
                    });
                }
                let per: Vec<(u64, Vec<ColWrite>)> = per.into_iter().collect();
                for (k, writes) in per {
                    let s = self.vols[vol].stripe(k);
                    self.core.write(ctx, (h, n), s, writes, fua, false);
                    n += 1;
                }
            }
        }
        if let Some(Job::Write { pending, kind, .. }) = self.jobs.get_mut(h) {
            *pending = n;
            // The payload went into the core; keep only the kind.
            if let WKind::Data(_) = kind {
                *kind = WKind::Zeroes;
            }
        }
        if n == 0 {
            self.finish_write(ctx, h);
        }
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
        let first = offset / PAGE_SIZE;
        let end = (offset + len) / PAGE_SIZE;
        self.ready.extend(self.locks[vol].release(first, end));
        ctx.reply(id, at, err.map_or(Ok(None), |e| Err(ReqError::Io(e))));
    }

    fn on_outcome(&mut self, ctx: &mut Ctx, (h, part): Token, out: Outcome) {
        match self.jobs.get_mut(h) {
            Some(Job::Read { g, offs }) => {
                if g.part_done(offs[part as usize], out) {
                    let Some(Job::Read { g, .. }) = self.jobs.remove(h) else {
                        unreachable!()
                    };
                    g.reply(ctx);
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
                let Some(Job::Flush { id, at }) = self.jobs.remove(h) else {
                    unreachable!()
                };
                ctx.reply(id, at, Ok(None));
            }
            None => unreachable!("outcome for a finished job"),
        }
    }

    /// Deliver finished core operations and start writes whose locks came free, until
    /// nothing is left to do.
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

impl Scheme for InPlace {
    /// In place: a never-written block is read from its home (assume-clean members).
    fn members_start_zeroed(&self) -> bool {
        true
    }
    fn name(&self) -> &str {
        &self.name
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
        let (offset, len, kind, fua) = match req.op {
            Op::Read { offset, len } => {
                self.start_read(ctx, req.id, vol, offset, len);
                self.pump(ctx);
                return;
            }
            Op::Flush => {
                let h = self.jobs.insert(Job::Flush { id: req.id, at });
                let disks: Vec<DiskId> = self.core.geo.used_disks().collect();
                self.core.flush(ctx, (h, 0), disks.into_iter());
                self.pump(ctx);
                return;
            }
            Op::Write { offset, data, fua } => (offset, data.len(), WKind::Data(data), fua),
            Op::WriteZeroes { offset, len, fua } => (offset, len, WKind::Zeroes, fua),
            Op::Trim { offset, len } => (offset, len, WKind::Trim, false),
        };
        let h = self.jobs.insert(Job::Write {
            id: req.id,
            at,
            vol,
            offset,
            len,
            kind,
            fua,
            pending: 0,
            err: None,
        });
        let first = offset / PAGE_SIZE;
        let end = (offset + len) / PAGE_SIZE;
        if self.locks[vol].acquire(first, end, h).is_some() {
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
        self.pump(ctx);
    }

    fn next_deadline(&self, now: Nanos) -> Option<Nanos> {
        self.core.next_deadline(now)
    }

    fn on_disk_failed(&mut self, ctx: &mut Ctx, _disk: DiskId) {
        // Nothing to remap: reads rebuild and writes fold the lost column into parity.
        self.pump(ctx);
    }

    fn volume_status(&self, v: VolumeId) -> Option<VolumeStatus> {
        let m = self.vols.get(v as usize)?;
        let geo = &self.core.geo;
        Some(VolumeStatus {
            name: m.name.clone(),
            size_bytes: m.size,
            level: self.level.clone(),
            raid_bytes: m.stripes(geo) * geo.width as u64 * geo.block_size,
            replicated_bytes: 0,
            free_bytes: 0,
            conversion_backlog: 0,
            mapped_bytes: m.size,
            metadata_bytes: 0,
            rebuild: None,
            scrub: None,
            stale_columns: 0,
            rebuild_phase: None,
            rebuild_progress: None,
            scrub_progress: None,
        })
    }

    fn is_idle(&self) -> bool {
        self.jobs.is_empty() && self.core.is_idle() && self.ready.is_empty()
    }

    fn check_invariants(&self) {
        self.core.check_invariants();
        if self.jobs.is_empty() {
            for l in &self.locks {
                assert_eq!(l.held(), 0, "range locks held with no request in flight");
                assert_eq!(
                    l.waiting(),
                    0,
                    "range lock waiters with no request in flight"
                );
            }
        }
    }

    fn debug_state(&self) -> String {
        format!(
            "{}: jobs {} ready {} locks held {:?} {}",
            self.name,
            self.jobs.len(),
            self.ready.len(),
            self.locks.iter().map(|l| l.held()).collect::<Vec<_>>(),
            self.core.debug_state()
        )
    }
}
