//! Planning reads (paper §4.3): each requested page comes from its newest location (a patch
//! or the base). A replicated block is read from the copy read routing picks (the paper's:
//! the least troubled member); a RAID block on a failed member, or one routing goes around,
//! is rebuilt from the rest of its stripe (as ToleRAID does). Completions are in
//! `read_done`, hedged reads in `hedge`.

use super::FusionScheme;
use super::jobs::{BAD_RAID, BAD_REBUILD, Job, JobId, PartMode, ReadJob, ReadPart, ReadPurpose};
use super::pairs::SlotRef;
use super::vol::Vol;
use crate::engine::api::DevOp;
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::policy::ReadRouting;
use crate::types::{DiskId, PAGE_SIZE};
use crate::volume::patch::{Seg, segments};
use crate::volume::{Loc, PageSums};

/// IoTag.part = part index * PART_STRIDE + code. Codes below DIRECT are the columns of a
/// rebuild; DIRECT + i is a plain read of copy i (0 for a RAID block).
pub(super) const PART_STRIDE: u32 = 64;
pub(super) const DIRECT: u32 = 32;
/// Device reads one part may take before it fails.
pub(super) const MAX_TRIES: u8 = 4;

/// What planning one part needs to know about it.
#[derive(Clone, Copy)]
pub(super) struct PartAt {
    pub job: JobId,
    pub part: usize,
    pub vol: usize,
    /// Where its pages start within the block at its location, and their length.
    pub page_off: u64,
    pub len: u64,
    /// A relocation's read (background I/O).
    pub background: bool,
    /// The part's copies known bad (`ReadPart::bad`).
    pub bad: u8,
}

impl PartAt {
    fn tag(&self, code: u32) -> IoTag {
        self.job.tag(self.part as u32 * PART_STRIDE + code)
    }
}

/// The device reads one part sent out: its new mode, the stripes they pin (with their
/// codes), and how many.
pub(super) struct Issued {
    pub mode: PartMode,
    pub pins: Vec<(u32, u32)>,
    pub reads: u32,
}

/// The columns of stripe `s` a rebuild of its column `c` can not read: those on failed
/// members or stale, and `c` itself.
pub(super) fn missing_columns(ctx: &Ctx, v: &Vol, s: u32, c: usize) -> Vec<usize> {
    let lost = v.lost_mask(ctx, s);
    let mut missing: Vec<usize> = (0..v.zone.width())
        .filter(|&x| lost & (1 << x) != 0)
        .collect();
    if !missing.contains(&c) {
        missing.push(c);
    }
    missing
}

/// Adds to `missing` (the columns a rebuild of data column `target` of stripe `s` can not
/// read, `target` among them) the ones it need not read: a stripe with more parity than
/// erasures is rebuilt from as many columns as it has data columns (a RAID6 stripe short
/// of one column reads four of its five others, not all five). Columns on members `shun`
/// marks (slow, in write mode) go first, then Q, then P: with P read, one lost data column
/// is an XOR.
pub(super) fn skip_unneeded(
    zone: &crate::space::zone::Zone,
    s: u32,
    missing: &mut Vec<usize>,
    shun: impl Fn(DiskId) -> bool,
) {
    let (width, nparity) = (zone.width(), zone.nparity());
    let ndata = width - nparity;
    let spare = |missing: &[usize]| nparity.saturating_sub(missing.len());
    for x in 0..width {
        if spare(missing) == 0 {
            return;
        }
        if !missing.contains(&x) && shun(zone.disk(s, x)) {
            missing.push(x);
        }
    }
    for x in (ndata..width).rev() {
        if spare(missing) == 0 {
            return;
        }
        if !missing.contains(&x) {
            missing.push(x);
        }
    }
}

/// Reads every column of stripe `s` but the `missing` ones, to rebuild column `target`
/// (one of them) of part `at` from them.
pub(super) fn rebuild_reads(
    ctx: &mut Ctx,
    v: &mut Vol,
    at: PartAt,
    s: u32,
    target: usize,
    missing: Vec<usize>,
) -> Issued {
    let width = v.zone.width();
    let mut pins = Vec::new();
    for x in (0..width).filter(|x| !missing.contains(x)) {
        let (dk, off) = v.zone.device_offset(s, x, at.page_off);
        v.stripes.pin(s);
        pins.push((x as u32, s));
        let op = DevOp::Read {
            offset: off,
            len: at.len,
        };
        ctx.issue(dk, op, at.tag(x as u32), at.background);
    }
    let reads = pins.len() as u32;
    Issued {
        mode: PartMode::Rebuild {
            target,
            missing,
            cols: vec![None; width],
            waiting: reads,
        },
        pins,
        reads,
    }
}

impl FusionScheme {
    pub(super) fn read_job(&mut self, h: JobId) -> &mut ReadJob {
        match self.jobs.get_mut(h) {
            Some(Job::Read(r)) => r,
            _ => panic!("read job {h:#x} missing"),
        }
    }

    pub(super) fn start_read(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        purpose: ReadPurpose,
        offset: u64,
        len: u64,
    ) -> JobId {
        let v = &self.vols[vol];
        let bs = v.zone.block_size();
        let end = offset + len;
        // One part per block unless a block is patched.
        let mut parts = Vec::with_capacity((end.div_ceil(bs) - offset / bs) as usize);
        let mut b = offset / bs;
        while b * bs < end {
            let lo = offset.max(b * bs);
            let hi = end.min((b + 1) * bs);
            let first = ((lo - b * bs) / PAGE_SIZE) as u16;
            let count = ((hi - lo) / PAGE_SIZE) as u16;
            let e = v.bmt.get(b);
            // Most blocks carry no patches: one segment, no allocation.
            let patched;
            let segs: &[Seg] = if e.patched {
                patched = segments(e.base, v.patches.get(b), first, count);
                &patched
            } else {
                &[Seg {
                    first,
                    count,
                    loc: e.base,
                    at: first,
                }]
            };
            for g in segs {
                let buf_off = (b * bs + g.first as u64 * PAGE_SIZE - offset) as usize;
                parts.push(ReadPart {
                    ub: b,
                    first: g.first,
                    count: g.count,
                    at: g.at,
                    buf_off,
                    loc: g.loc,
                    mode: PartMode::Done,
                    tries: 0,
                    inflight: 0,
                    issued_at: ctx.now,
                    hedged: false,
                    pins: Vec::new(),
                    expect: Vec::new(),
                    bad: 0,
                    lost_copy: None,
                });
            }
            b += 1;
        }
        let n = parts.len();
        let job = ReadJob {
            vol,
            purpose,
            buf: None,
            len: len as usize,
            parts,
            pending: n,
            error: None,
            lost: false,
        };
        let h = self.jobs.insert(Job::Read(job));
        for i in 0..n {
            self.plan_part(ctx, h, i);
        }
        if self.read_job(h).pending == 0 {
            self.finish_read(ctx, h);
        }
        h
    }

    /// Choose how to serve part `i` and issue its device reads. Unmapped parts finish at once.
    pub(super) fn plan_part(&mut self, ctx: &mut Ctx, h: JobId, i: usize) {
        let at = {
            let job = self.read_job(h);
            let p = &job.parts[i];
            PartAt {
                job: h,
                part: i,
                vol: job.vol,
                page_off: p.at as u64 * PAGE_SIZE,
                len: p.count as u64 * PAGE_SIZE,
                background: matches!(job.purpose, ReadPurpose::Reloc { .. }),
                bad: p.bad,
            }
        };
        let (loc, ub, first, count) = {
            let p = &self.read_job(h).parts[i];
            (p.loc, p.ub, p.first, p.count)
        };
        if loc != Loc::Unmapped && !ctx.size_only {
            let expect = self.vols[at.vol].sums.get(ub, first, count);
            self.read_job(h).parts[i].expect = expect;
        }
        let issued = match loc {
            Loc::Unmapped => None,
            Loc::Rep(key) => match self.read_replica(ctx, at, key, count) {
                Some(x) => Some(x),
                None => return, // the part is finished: failed or lost
            },
            Loc::Raid(f) => match self.read_raid(ctx, at, f) {
                Some(x) => Some(x),
                None => return,
            },
        };
        let now = ctx.now;
        let job = self.read_job(h);
        let p = &mut job.parts[i];
        match issued {
            None => {
                p.mode = PartMode::Done;
                job.pending -= 1;
            }
            Some(x) => {
                p.mode = x.mode;
                p.pins.extend(x.pins);
                p.inflight += x.reads;
                p.issued_at = now;
            }
        }
    }

    /// Read a replicated part from the copy read routing picks among the readable ones.
    /// None: no copy is readable and the part is finished (failed, or lost when every
    /// readable copy failed its checksum).
    fn read_replica(&mut self, ctx: &mut Ctx, at: PartAt, key: u64, count: u16) -> Option<Issued> {
        let v = &mut self.vols[at.vol];
        let r = v
            .pairs
            .lookup(&v.zone, key)
            .expect("replica key without a pair set");
        v.pairs.touch(r.set, ctx.now);
        // At most 3 copies: fixed arrays instead of two vectors per read.
        let (copies, n) = v.pairs.copies_array(r);
        let copies = &copies[..n];
        let mut alive = [(0u32, 0usize); 3];
        let mut disks = [DiskId(0); 3];
        let mut n_alive = 0;
        let first = (at.page_off / PAGE_SIZE) as u16;
        for (ci, &(s, c)) in copies.iter().enumerate() {
            let d = v.zone.disk(s, c);
            // A copy written to an HDD log instead left a hole at its SSD place.
            let in_log = ci > 0 && v.offloaded.overlaps(r.set, r.slot, ci, first, count);
            if !v.column_lost(ctx, s, c) && at.bad & (1 << ci) == 0 && !in_log {
                (alive[n_alive], disks[n_alive]) = ((s, c), d);
                n_alive += 1;
            }
        }
        if n_alive == 0
            && let Some(issued) = self.read_log_copy(ctx, at, r, first, count)
        {
            return Some(issued);
        }
        let v = &mut self.vols[at.vol];
        if n_alive == 0 {
            if at.bad != 0 {
                ctx.stats.unrecoverable_pages += count as u64;
                let why = "every readable copy of a replicated block failed its checksum";
                self.part_lost(ctx, at.job, at.part, why);
            } else {
                let why = "every copy of a replicated block is on a failed member";
                self.part_failed(ctx, at.job, at.part, why);
            }
            return None;
        }
        if !at.background {
            ctx.note_read_choice(n_alive > 1);
        }
        let (s, c) = alive[self
            .policy
            .routing
            .pick_copy(&ctx.members(), &disks[..n_alive])];
        if (s, c) != copies[0] && ctx.avoid(v.zone.disk(copies[0].0, copies[0].1)) {
            ctx.stats.redirected_reads += 1;
        }
        let ci = copies
            .iter()
            .position(|&x| x == (s, c))
            .expect("picked copy") as u32;
        let (disk, off) = v.zone.device_offset(s, c, at.page_off);
        v.stripes.pin(s);
        let op = DevOp::Read {
            offset: off,
            len: at.len,
        };
        ctx.issue(disk, op, at.tag(DIRECT + ci), at.background);
        Some(Issued {
            mode: PartMode::Direct { stripe: s },
            pins: vec![(DIRECT + ci, s)],
            reads: 1,
        })
    }

    /// Read a replicated part from a copy write offload put in an HDD log, the last resort
    /// when no SSD copy is readable (SeRW reads its logs only then). The copy must hold
    /// every page of the part (pages `[first, first+count)` of the slot) in one extent, on
    /// a member that has not failed.
    fn read_log_copy(
        &mut self,
        ctx: &mut Ctx,
        at: PartAt,
        r: SlotRef,
        first: u16,
        count: u16,
    ) -> Option<Issued> {
        let v = &mut self.vols[at.vol];
        let (copies, n) = v.pairs.copies_array(r);
        let (ci, e) = (1..n).find_map(|ci| {
            let e = v.offloaded.covering(r.set, r.slot, ci, first, count)?;
            (at.bad & (1 << ci) == 0 && !ctx.is_failed(e.disk())).then_some((ci, e))
        })?;
        let s = copies[ci].0;
        v.stripes.pin(s);
        let op = DevOp::Read {
            offset: e.offset_of(first),
            len: at.len,
        };
        ctx.stats.log_reads += 1;
        ctx.issue(e.disk(), op, at.tag(DIRECT + ci as u32), at.background);
        Some(Issued {
            mode: PartMode::Direct { stripe: s },
            pins: vec![(DIRECT + ci as u32, s)],
            reads: 1,
        })
    }

    /// Read a RAID part from its own column, or rebuild it from the rest of its stripe when
    /// its member failed, its copy failed its checksum, or read routing goes around its
    /// member (only while every other column's member is fine). None: more members of the
    /// stripe failed than parity covers, and the part is finished (failed).
    fn read_raid(&mut self, ctx: &mut Ctx, at: PartAt, f: u64) -> Option<Issued> {
        if !at.background {
            ctx.note_read_choice(false);
            if self.cfg.raid_hedge_ns.is_some() {
                self.raid_hedges.earn();
            }
        }
        let routing = &self.policy.routing;
        let v = &mut self.vols[at.vol];
        let (s, c) = v.zone.split(f);
        let width = v.zone.width();
        let disk = v.zone.disk(s, c);
        let lost = v.column_lost(ctx, s, c);
        let forced = lost || at.bad & BAD_RAID != 0;
        let around = !forced
            && at.bad & BAD_REBUILD == 0
            && routing.reconstruct_around(&ctx.members(), disk);
        // The other columns are looked at only when the target's state asks for it: most
        // reads go straight to a healthy member.
        let missing = (forced || around).then(|| {
            let mut missing = missing_columns(ctx, v, s, c);
            let members = ctx.members();
            let shun = |d| ctx.avoid(d) || routing.reconstruct_around(&members, d);
            skip_unneeded(&v.zone, s, &mut missing, shun);
            missing
        });
        // Going around a slow member is worth it only when the parity covers what is not
        // read and the columns read are fine.
        let others_fine = |missing: &[usize]| {
            missing.len() <= v.zone.nparity()
                && (0..width)
                    .filter(|x| !missing.contains(x))
                    .all(|x| !ctx.avoid(v.zone.disk(s, x)))
        };
        let rebuild = forced || missing.as_deref().is_some_and(others_fine);
        if !rebuild {
            let (dk, off) = v.zone.device_offset(s, c, at.page_off);
            v.stripes.pin(s);
            let op = DevOp::Read {
                offset: off,
                len: at.len,
            };
            ctx.issue(dk, op, at.tag(DIRECT), at.background);
            return Some(Issued {
                mode: PartMode::Direct { stripe: s },
                pins: vec![(DIRECT, s)],
                reads: 1,
            });
        }
        let missing = missing.expect("planned for every rebuild");
        if missing.len() > v.zone.nparity() {
            let why = "more members of a stripe failed than its parity covers";
            self.part_failed(ctx, at.job, at.part, why);
            return None;
        }
        if !lost && at.bad & BAD_RAID == 0 {
            ctx.stats.redirected_reads += 1;
        }
        ctx.stats.reconstructed_reads += 1;
        Some(rebuild_reads(ctx, v, at, s, c, missing))
    }

    /// Point part `i` at where its pages live now. When they are spread over several
    /// locations by now, the part is cut into one part per location. Returns the parts to
    /// plan (`i` first).
    pub(super) fn reresolve_part(&mut self, h: JobId, i: usize) -> Vec<usize> {
        let vol = self.read_job(h).vol;
        let (ub, first, count, buf_off) = {
            let p = &self.read_job(h).parts[i];
            (p.ub, p.first, p.count, p.buf_off)
        };
        let v = &self.vols[vol];
        let e = v.bmt.get(ub);
        let segs = segments(e.base, v.patches.get(ub), first, count);
        let job = self.read_job(h);
        let mut out = Vec::with_capacity(segs.len());
        for (k, g) in segs.iter().enumerate() {
            let off = buf_off + (g.first - first) as usize * PAGE_SIZE as usize;
            if k == 0 {
                let p = &mut job.parts[i];
                if p.loc != g.loc || p.at != g.at {
                    p.bad = 0; // the bad copies were those of the old location
                    p.lost_copy = None;
                }
                (p.first, p.count, p.at, p.buf_off, p.loc) = (g.first, g.count, g.at, off, g.loc);
                out.push(i);
            } else {
                let tries = job.parts[i].tries;
                job.parts.push(ReadPart {
                    ub,
                    first: g.first,
                    count: g.count,
                    at: g.at,
                    buf_off: off,
                    loc: g.loc,
                    mode: PartMode::Done,
                    tries,
                    inflight: 0,
                    issued_at: 0,
                    hedged: false,
                    pins: Vec::new(),
                    expect: Vec::new(),
                    bad: 0,
                    lost_copy: None,
                });
                job.pending += 1;
                out.push(job.parts.len() - 1);
            }
        }
        out
    }

    pub(super) fn part_failed(&mut self, _ctx: &mut Ctx, h: JobId, i: usize, why: &str) {
        let job = self.read_job(h);
        job.parts[i].mode = PartMode::Done;
        job.pending -= 1;
        job.error.get_or_insert_with(|| why.to_string());
    }

    /// No copy of part `i` is good: its pages are lost. A relocation gets the bytes last
    /// read for them (`ReadPart::lost_copy`) and moves them; any other read fails with `why`.
    pub(super) fn part_lost(&mut self, ctx: &mut Ctx, h: JobId, i: usize, why: &str) {
        let job = self.read_job(h);
        let (vol, total) = (job.vol, job.len);
        let relocating = matches!(job.purpose, ReadPurpose::Reloc { .. });
        let p = &mut job.parts[i];
        let (ub, first, count) = (p.ub, p.first, p.count);
        let len = count as usize * PAGE_SIZE as usize;
        let copy = p.lost_copy.take().filter(|b| b.len() == len);
        // The pages to remember as lost: those of the last copy read that fail their
        // checksums (the rest of it is good), or all of the part when none was kept.
        let bad: Vec<usize> = match &copy {
            Some(b) if p.expect.len() == count as usize => {
                PageSums::mismatches(&p.expect, b).collect()
            }
            _ => (0..count as usize).collect(),
        };
        let moved = match copy {
            Some(b) if relocating => {
                p.mode = PartMode::Done;
                let off = p.buf_off;
                let buf = job.buf.get_or_insert_with(|| vec![0u8; total]);
                buf[off..off + len].copy_from_slice(&b);
                job.pending -= 1;
                job.lost = true;
                true
            }
            _ => false,
        };
        for page in bad {
            self.vols[vol].mark_lost(ub, first + page as u16, 1);
        }
        if !moved {
            self.part_failed(ctx, h, i, why);
        }
    }
}
