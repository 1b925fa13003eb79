//! Scrub: read everything the pool stores and check it, in the background, paced.
//!
//! Two passes per volume:
//! 1. **Blocks.** Every mapped page of every user block is read from *every* copy that holds
//!    it (both or all three replicas, or the RAID block) and checked against its checksum.
//!    A bad copy queues the block for repair (`Vol::repair`: a relocation rewrites it from
//!    a good copy or from parity). Reads alone never look at the second replica; this does.
//! 2. **Parity.** Every RAID stripe is read whole and its parity recomputed. A parity that
//!    disagrees with the data columns is rewritten from them, unless a live block of the
//!    stripe is known bad (pass 1 found it and it has not been moved yet): then the parity
//!    is what will rebuild it and stays. A rewritten parity also covers holes whose content
//!    changed (a repaired block's old, bad copy), which later reconstructions of the other
//!    columns depend on.
//!
//! The parity rewrite is the one in-place write in FusionRAID. It is safe because a RAID
//! stripe's columns never change while the stripe is in use (all writes go to free
//! stripes) and the scrub pins the stripe from its reads to the end of its write, so it
//! can not be freed and reused meanwhile. A torn parity write leaves the stripe no worse
//! than it was, and the next scrub finds it again. No metadata changes.
//!
//! Paced by `ConversionPolicy::scrub_bytes_per_sec` per member, at most `SCRUB_JOBS` checks
//! in flight per volume.

use super::FusionScheme;
use super::jobs::{CheckRead, Job, JobId, ScrubJob};
use super::progress::{Pass, Scrub};
use super::stripe_parity::push_parity;
use super::write::write_columns;
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::space::StripeState;
use crate::types::{Nanos, PAGE_SIZE};
use crate::volume::patch::segments;
use crate::volume::{Loc, PageSums};

/// Checks in flight per volume at most.
const SCRUB_JOBS: usize = 4;
/// User blocks one block check reads.
const BLOCKS_PER_CHECK: u64 = 8;
/// BMT entries (or stripes) one step looks at at most, and the pause after a step that
/// found nothing to read: a sparse volume of millions of blocks is scrubbed in slices
/// instead of in one long event.
const SCAN_BUDGET: u64 = 65_536;
const SCAN_PAUSE_NS: Nanos = 1_000_000;

/// Pages a scrub of `v` looks at as things stand: every copy of every mapped page, and each
/// RAID stripe's pages (its parity check reads the whole stripe).
fn scrub_pages(v: &super::vol::Vol) -> u64 {
    let ppb = v.pages_per_block;
    let mut pages = 0u64;
    for ub in 0..v.blocks {
        let e = v.bmt.get(ub);
        if e.base == Loc::Unmapped && !e.patched {
            continue;
        }
        for g in segments(e.base, v.patches.get(ub), 0, ppb) {
            let (c, loc) = (g.count, g.loc);
            let copies = match loc {
                Loc::Unmapped => continue,
                Loc::Raid(_) if !v.cfg.level.is_mirror() => 1,
                Loc::Raid(_) | Loc::Rep(_) => v.copies() as u64,
            };
            pages += c as u64 * copies;
        }
    }
    if v.cfg.level.is_mirror() {
        return pages;
    }
    pages + v.stripes.count(StripeState::Raid) * stripe_pages(v)
}

/// Where the copies of pages at `loc` are, as (stripe, column); None for unmapped pages.
fn copies_of(v: &super::vol::Vol, loc: Loc) -> Option<Vec<(usize, u32, usize)>> {
    let mut copies = match loc {
        Loc::Unmapped => return None,
        // A mirror's copies are its stripe's columns: each is checked against the
        // checksums like a replica (no parity pass: a mirror stripe's pages that hold no
        // data need not match, and after a discard they may not).
        Loc::Raid(fl) if v.cfg.level.is_mirror() => {
            let (stripe, _) = v.zone.split(fl);
            (0..v.copies()).map(|c| (c, stripe, c)).collect()
        }
        Loc::Raid(fl) => {
            let (stripe, col) = v.zone.split(fl);
            vec![(0, stripe, col)]
        }
        Loc::Rep(key) => {
            let r = v.pairs.lookup(&v.zone, key).expect("replica key of a set");
            v.ssd_copies(r)
        }
    };
    // A stale copy holds nothing to check yet (its rebuild restores it).
    copies.retain(|&(_, stripe, col)| v.stripes.stale(stripe) & (1 << col) == 0);
    Some(copies)
}

/// The copies of replica pages `[at, at+count)` that write offload put in HDD logs, as
/// (copy, its stripe, member, offset): checked like the others, so a log copy that went
/// bad (or was overwritten) is found and its block rewritten from a good copy.
fn log_copies(
    v: &super::vol::Vol,
    loc: Loc,
    at: u16,
    count: u16,
) -> Vec<(usize, u32, crate::types::DiskId, u64)> {
    let Loc::Rep(key) = loc else {
        return Vec::new();
    };
    if v.offloaded.live() == 0 {
        return Vec::new();
    }
    let r = v.pairs.lookup(&v.zone, key).expect("replica key of a set");
    let (copies, n) = v.pairs.copies_array(r);
    (1..n)
        .filter_map(|ci| {
            let e = v.offloaded.covering(r.set, r.slot, ci, at, count)?;
            Some((ci, copies[ci].0, e.disk(), e.offset_of(at)))
        })
        .collect()
}

/// Pages of one whole stripe of `v`.
fn stripe_pages(v: &super::vol::Vol) -> u64 {
    v.zone.width() as u64 * u64::from(v.pages_per_block)
}

/// A device read: member, offset, length.
type DevRead = (crate::types::DiskId, u64, u64);
/// A check ready to issue.
type Check = (ScrubJob, Vec<DevRead>);

impl FusionScheme {
    /// Start scrubbing every volume (again, if one ran before). Refused while one runs.
    pub(super) fn begin_scrub(&mut self, now: Nanos) -> Result<(), String> {
        if self
            .vols
            .iter()
            .any(|v| v.scrub.as_ref().is_some_and(|s| s.done_at.is_none()))
        {
            return Err("a scrub is already running".into());
        }
        for v in &mut self.vols {
            v.scrub = Some(Scrub {
                started_at: now,
                next_at: now,
                total_pages: scrub_pages(v),
                ..Default::default()
            });
        }
        self.wake_background();
        self.maintenance_begun = true;
        Ok(())
    }

    pub(super) fn scrub_deadline(&self, now: Nanos) -> Option<Nanos> {
        self.vols
            .iter()
            .filter_map(|v| v.scrub.as_ref())
            .filter(|s| s.done_at.is_none() && s.pass != Pass::Done && s.running < SCRUB_JOBS)
            .map(|s| s.next_at.max(now + 1_000_000))
            .min()
    }

    /// Start scrub checks where the pace allows.
    pub(super) fn kick_scrub(&mut self, ctx: &mut Ctx, vol: usize) {
        while let Some(s) = self.vols[vol].scrub.as_ref() {
            if s.done_at.is_some() || s.running >= SCRUB_JOBS || ctx.now < s.next_at {
                return;
            }
            if !self.start_scrub_check(ctx, vol) {
                return;
            }
        }
    }

    /// Launch the next check of `vol`'s scrub. Returns false when there is none now.
    fn start_scrub_check(&mut self, ctx: &mut Ctx, vol: usize) -> bool {
        let mut s = self.vols[vol].scrub.take().expect("scrub");
        let next = match s.pass {
            Pass::Blocks => self.check_blocks(ctx, vol, &mut s),
            Pass::Parity => self.check_parity(ctx, vol, &mut s),
            Pass::Done => None,
        };
        if s.pass == Pass::Done && s.running == 0 && s.done_at.is_none() {
            s.done_at = Some(ctx.now);
        }
        let more = s.done_at.is_none() && s.pass != Pass::Done;
        let Some((job, ios)) = next else {
            self.vols[vol].scrub = Some(s);
            return more; // the pass moved on (or ended)
        };
        if ios.is_empty() {
            // Every copy of these blocks is on a failed member: nothing to read. Go on at
            // the next tick (a long stretch of such blocks must not hold up the loop).
            s.next_at = s.next_at.max(ctx.now + SCAN_PAUSE_NS);
            self.vols[vol].scrub = Some(s);
            for st in job.pins {
                self.vols[vol].stripes.unpin(st);
            }
            return false;
        }
        let bytes: u64 = ios.iter().map(|x| x.2).sum();
        let members = ctx.disk_count().max(1) as f64;
        let rate = (self.cfg.conversion.scrub_bytes_per_sec * members).max(1.0);
        s.next_at = s.next_at.max(ctx.now) + (bytes as f64 / rate * 1e9) as Nanos;
        s.running += 1;
        self.vols[vol].scrub = Some(s);
        self.issue_check(ctx, job, ios);
        true
    }

    /// Plan reads of every copy of the next few mapped blocks (None: the pass is over).
    fn check_blocks(&mut self, ctx: &mut Ctx, vol: usize, s: &mut Scrub) -> Option<Check> {
        let v = &mut self.vols[vol];
        let ppb = v.pages_per_block;
        let mut reads = Vec::new();
        let mut ios: Vec<DevRead> = Vec::new();
        let mut pins = Vec::new();
        let mut picked = 0;
        let mut scanned = 0;
        while picked < BLOCKS_PER_CHECK && s.cursor < v.blocks && scanned < SCAN_BUDGET {
            scanned += 1;
            let ub = s.cursor;
            s.cursor += 1;
            let e = v.bmt.get(ub);
            if e.base == Loc::Unmapped && !e.patched {
                continue;
            }
            picked += 1;
            for g in segments(e.base, v.patches.get(ub), 0, ppb) {
                let (f, c, loc) = (g.first, g.count, g.loc);
                let Some(copies) = copies_of(v, loc) else {
                    continue;
                };
                s.passed_pages += c as u64 * copies.len() as u64;
                let mut expect = if ctx.size_only {
                    Vec::new()
                } else {
                    v.sums.get(ub, f, c)
                };
                s.known_lost_pages += v.skip_lost(ub, f, &mut expect);
                let ssd = copies.into_iter().map(|(copy, stripe, col)| {
                    let (disk, off) = v.zone.device_offset(stripe, col, g.at as u64 * PAGE_SIZE);
                    (copy, stripe, disk, off)
                });
                let logged = log_copies(v, loc, g.at, c);
                s.passed_pages += c as u64 * logged.len() as u64;
                for (copy, stripe, disk, off) in ssd.collect::<Vec<_>>().into_iter().chain(logged) {
                    if ctx.is_failed(disk) {
                        continue;
                    }
                    v.stripes.pin(stripe);
                    pins.push(stripe);
                    ios.push((disk, off, c as u64 * PAGE_SIZE));
                    reads.push(CheckRead {
                        ub,
                        stripe,
                        raid: match loc {
                            Loc::Raid(fl) if !v.cfg.level.is_mirror() => Some(fl),
                            _ => None,
                        },
                        loc,
                        copy: copy as u8,
                        expect: expect.clone(),
                    });
                }
            }
        }
        if s.cursor >= v.blocks && reads.is_empty() {
            s.pass = Pass::Parity;
            s.cursor = 0;
            return None;
        }
        if picked == 0 {
            // A long unmapped stretch: go on at the next tick rather than hold up the loop.
            s.next_at = s.next_at.max(ctx.now + SCAN_PAUSE_NS);
            return None;
        }
        Some((
            ScrubJob {
                vol,
                reads,
                parity_of: None,
                cols: Vec::new(),
                pending: 0,
                writing: false,
                failed: false,
                pins,
            },
            ios,
        ))
    }

    /// Plan reading the next RAID stripe whole to check its parity (None: the pass is over).
    fn check_parity(&mut self, ctx: &mut Ctx, vol: usize, s: &mut Scrub) -> Option<Check> {
        let v = &mut self.vols[vol];
        if v.cfg.level.is_mirror() {
            // Every copy was checked page by page in the block pass.
            s.pass = Pass::Done;
            return None;
        }
        let nstripes = v.zone.stripes();
        let mut scanned = 0;
        while s.cursor < nstripes {
            if scanned == SCAN_BUDGET {
                s.next_at = s.next_at.max(ctx.now + SCAN_PAUSE_NS);
                return None;
            }
            scanned += 1;
            let stripe = s.cursor as u32;
            s.cursor += 1;
            if v.stripes.state(stripe) != StripeState::Raid {
                continue;
            }
            s.passed_pages += stripe_pages(v);
            if v.columns.contains(&stripe) || v.rows.protects(stripe) {
                // A rebuild or rebalance is moving one of its columns, or rows are still
                // being written into it (its parity pass would race them).
                s.stripes_skipped += 1;
                continue;
            }
            let width = v.zone.width();
            if v.lost_mask(ctx, stripe) != 0 {
                s.stripes_skipped += 1;
                continue;
            }
            let bs = v.zone.block_size();
            let ios: Vec<_> = (0..width)
                .map(|c| {
                    let (disk, off) = v.zone.device_offset(stripe, c, 0);
                    (disk, off, bs)
                })
                .collect();
            v.stripes.pin(stripe);
            return Some((
                ScrubJob {
                    vol,
                    reads: Vec::new(),
                    parity_of: Some(stripe),
                    cols: vec![None; width],
                    pending: 0,
                    writing: false,
                    failed: false,
                    pins: vec![stripe],
                },
                ios,
            ));
        }
        s.pass = Pass::Done;
        None
    }

    fn issue_check(&mut self, ctx: &mut Ctx, mut job: ScrubJob, ios: Vec<DevRead>) {
        job.pending = ios.len() as u32;
        let h = self.jobs.insert(Job::Scrub(job));
        for (i, (disk, offset, len)) in ios.into_iter().enumerate() {
            ctx.issue(disk, DevOp::Read { offset, len }, h.tag(i as u32), true);
        }
    }

    pub(super) fn scrub_io_done(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        let Some(Job::Scrub(j)) = self.jobs.get_mut(JobId::of(tag)) else {
            unreachable!("scrub job")
        };
        j.pending -= 1;
        let i = tag.part as usize;
        let vol = j.vol;
        match result {
            // A member error fails the member (the engine does that); the rebuild, not the
            // scrub, deals with what it held.
            Err(_) => j.failed = true,
            Ok(Some(Data::Bytes(b))) if !j.writing => {
                if j.parity_of.is_some() {
                    j.cols[i] = Some(b);
                } else {
                    let r = &j.reads[i];
                    let (ub, raid, stripe, loc, copy) = (r.ub, r.raid, r.stripe, r.loc, r.copy);
                    let bad = PageSums::first_mismatch(&r.expect, &b).is_some();
                    let pages = r.expect.len() as u64;
                    let v = &mut self.vols[vol];
                    let s = v.scrub.as_mut().expect("scrub");
                    s.pages_checked += pages;
                    if bad {
                        s.bad_copies += 1;
                        if let Some(f) = raid {
                            s.bad_raid.entry(stripe).or_default().push((ub, f));
                        }
                        v.queue_repair(ub);
                        self.count_bad_copy(ctx, vol, ub, loc, copy);
                    }
                }
            }
            Ok(_) => {}
        }
        let Some(Job::Scrub(j)) = self.jobs.get(JobId::of(tag)) else {
            unreachable!()
        };
        if j.pending > 0 {
            return;
        }
        if j.writing || j.failed || j.parity_of.is_none() || ctx.size_only {
            return self.finish_check(ctx, JobId::of(tag));
        }
        self.compare_parity(ctx, JobId::of(tag));
    }

    /// All columns of a stripe are in: recompute its parity, rewrite it if it differs.
    fn compare_parity(&mut self, ctx: &mut Ctx, h: JobId) {
        let Some(Job::Scrub(j)) = self.jobs.get_mut(h) else {
            unreachable!()
        };
        let stripe = j.parity_of.expect("parity check");
        let v = &mut self.vols[j.vol];
        let (width, dcols) = (v.zone.width(), v.zone.dcols());
        let mut cols: Vec<Vec<u8>> = j.cols.iter_mut().map(|c| c.take().unwrap()).collect();
        let on_disk: Vec<Vec<u8>> = cols.split_off(dcols);
        push_parity(&mut cols, width - dcols);
        let s = v.scrub.as_mut().expect("scrub");
        s.stripes_checked += 1;
        if cols[dcols..] == on_disk[..] {
            return self.finish_check(ctx, h);
        }
        // A bad block still living here is rebuilt from this parity: keep it for now.
        let bad = s.bad_raid.get(&stripe).cloned().unwrap_or_default();
        let known_bad = bad.iter().any(|&(ub, f)| v.references(ub, Loc::Raid(f)));
        let s = v.scrub.as_mut().expect("scrub");
        if known_bad {
            s.stripes_skipped += 1;
            return self.finish_check(ctx, h);
        }
        s.parity_rewritten += 1;
        ctx.stats.parity_rewrites += 1;
        let n = write_columns(
            ctx,
            &v.zone,
            h,
            stripe,
            dcols,
            cols.drain(dcols..).map(Data::Bytes),
        );
        j.writing = true;
        j.pending = n;
        if n == 0 {
            self.finish_check(ctx, h);
        }
    }

    fn finish_check(&mut self, ctx: &mut Ctx, h: JobId) {
        let Some(Job::Scrub(j)) = self.jobs.remove(h) else {
            unreachable!("scrub job")
        };
        let v = &mut self.vols[j.vol];
        for s in j.pins {
            v.stripes.unpin(s);
        }
        let s = v.scrub.as_mut().expect("scrub");
        s.running -= 1;
        if let Some(st) = j.parity_of {
            s.bad_raid.remove(&st);
        }
        if s.pass == Pass::Done && s.running == 0 && s.done_at.is_none() {
            s.done_at = Some(ctx.now);
        }
    }
}
