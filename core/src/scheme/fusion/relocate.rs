//! Relocation: packs live blocks out of stripes full of holes (and merges patch lists) into
//! fresh full stripes so their space comes back; the rebuild moves blocks off failed members
//! the same way.

use super::FusionScheme;
use super::jobs::{Job, ReadPurpose, RelocJob};
use super::stripe_parity::fill_parity;
use super::write::write_columns;
use crate::engine::api::{Data, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::fasthash::{FastMap, FastSet};
use crate::space::StripeState;
use crate::types::Nanos;
use crate::volume::Loc;

/// User blocks one relocation moves, planned by a sweep.
pub struct RelocBatch {
    pub blocks: Vec<u64>,
    /// Moving them empties more stripes than the move takes (when the sweep saw them).
    pub frees: bool,
}

/// Why blocks move.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RelocKind {
    /// Compaction of holes and merging of patch lists.
    Clean,
    /// Off failed members.
    Rebuild,
    /// Off a copy that failed its checksum.
    Repair,
}

/// Relocation batches one sweep plans at most, and how long they stay good: the blocks may
/// be rewritten meanwhile (a relocation then moves a block that needed no move, which its
/// compare-and-swap makes harmless, only wasted).
const RELOC_PLAN_BATCHES: usize = 256;
const RELOC_PLAN_NS: Nanos = 200_000_000;

impl FusionScheme {
    /// Start up to `max_jobs` relocations, each moving one stripe's worth of user blocks
    /// that `plan_relocations` found worth moving. Returns whether any started.
    pub(super) fn start_relocation(&mut self, ctx: &mut Ctx, vol: usize, max_jobs: usize) -> bool {
        let v = &mut self.vols[vol];
        let dcols = v.zone.dcols();
        if v.holes() < dcols as u64 && v.patches.patched_blocks() == 0 {
            return false;
        }
        // Plans stay good while the space is tight too: the stripes a batch empties can only
        // have lost references since the sweep (new data never lands in a RAID stripe with
        // holes), so a batch that freed space then frees at least as much now, as long as
        // none of its blocks dropped out. (Dropping plans at the reserve made a sweep of the
        // whole BMT every few milliseconds under sustained small writes, most of its batches
        // thrown away unused: 16% of the engine's time.)
        if ctx.now >= v.reloc_batches_until {
            v.reloc_batches.clear();
        }
        let mut started = 0;
        // Batches left from an earlier sweep first; if none of them is still worth
        // starting, a fresh sweep (never give up on stale plans alone).
        for fresh in [false, true] {
            if fresh {
                let plan = self.plan_relocations(vol);
                self.vols[vol].reloc_batches = plan;
                self.vols[vol].reloc_batches_until = ctx.now + RELOC_PLAN_NS;
            }
            while started < max_jobs.max(1) {
                let Some(RelocBatch {
                    blocks: mut picked,
                    frees,
                }) = self.vols[vol].reloc_batches.pop()
                else {
                    break;
                };
                // Drop blocks that no longer need a move (rewritten whole since the sweep)
                // or are being moved already.
                let planned = picked.len();
                let v = &self.vols[vol];
                picked.retain(|&u| {
                    let e = v.bmt.get(u);
                    if v.relocating.contains(&u) {
                        return false;
                    }
                    e.patched
                        || match e.base {
                            Loc::Raid(f) => {
                                let s = v.zone.split(f).0;
                                (v.stripes.valid(s).count_ones() as usize) < dcols
                            }
                            _ => false,
                        }
                });
                if picked.is_empty() {
                    continue;
                }
                if v.stripes.available() <= v.cleaner_reserve()
                    && !(frees && picked.len() == planned)
                {
                    // The last stripes go only to moves sure to empty more than they take:
                    // anything else could use them all up and leave nothing to clean into.
                    continue;
                }
                if !self.launch_relocation(ctx, vol, picked, false) {
                    return started > 0; // no target stripe: nothing more can start now
                }
                started += 1;
            }
            if started > 0 {
                break;
            }
        }
        started > 0
    }

    /// Move up to a stripe's worth of blocks a read or scrub found a bad copy of: the
    /// relocation reads them (verified, from a good copy or rebuilt from parity) and writes
    /// them to a fresh stripe, which is the repair. Blocks that find no target stripe are
    /// dropped from the queue: the next read or scrub of them queues them again.
    pub(super) fn start_repair(&mut self, ctx: &mut Ctx, vol: usize) -> bool {
        let v = &mut self.vols[vol];
        if v.repair.is_empty() {
            return false;
        }
        let n = v.zone.dcols().min(v.repair.len());
        let mut picked: Vec<u64> = v.repair.drain(..n).collect();
        picked.retain(|&u| {
            let e = v.bmt.get(u);
            (e.base != Loc::Unmapped || e.patched) && !v.relocating.contains(&u)
        });
        if picked.is_empty() || v.stripes.available() <= v.cleaner_reserve() {
            return false;
        }
        self.launch_relocation_as(ctx, vol, picked, RelocKind::Repair)
    }

    /// Sweep part of the BMT and cut what is worth moving into relocation batches, the best
    /// last (they are popped from the end). A sweep costs far more than a relocation's
    /// bookkeeping, so one sweep plans many of them.
    fn plan_relocations(&mut self, vol: usize) -> Vec<RelocBatch> {
        let max_jobs = RELOC_PLAN_BATCHES;
        let v = &mut self.vols[vol];
        let dcols = v.zone.dcols();
        // Gather the live blocks of RAID stripes that have holes or shared blocks, by
        // stripe. A relocation must empty whole stripes, at least two of them, or it would
        // only move space around (it consumes one stripe itself).
        // stripe -> (user blocks with data in it, references those blocks make to it).
        let mut by_stripe: FastMap<u32, (Vec<u64>, u32)> = FastMap::default();
        // stripe -> its references in all (None: not a candidate), computed once per sweep.
        let mut refs: FastMap<u32, Option<u32>> = FastMap::default();
        let mut locs: Vec<Loc> = Vec::new();
        let budget = v.blocks.min(65_536);
        for _ in 0..budget {
            let ub = v.sweep_cursor;
            v.sweep_cursor = (v.sweep_cursor + 1) % v.blocks;
            let e = v.bmt.get(ub);
            locs.clear();
            locs.push(e.base);
            if e.patched {
                locs.extend(v.patches.get(ub).iter().map(|n| n.loc()));
                locs.sort_by_key(|l| l.pack());
                locs.dedup();
            }
            for &loc in &locs {
                let Loc::Raid(f) = loc else { continue };
                let (s, _) = v.zone.split(f);
                let r = *refs.entry(s).or_insert_with(|| {
                    let n = v.stripe_refs(s);
                    let holes = (v.stripes.valid(s).count_ones() as usize) < dcols;
                    (holes || n as usize > dcols).then_some(n)
                });
                // A block already on its way is left out: planning it again would move it
                // twice, and the slower move would only leave a hole behind. (Looked up
                // only for candidates: the sweep is the cleaner's hot loop.)
                if r.is_some() && !v.relocating.contains(&ub) {
                    let g = by_stripe.entry(s).or_default();
                    // Blocks are swept in order, so a repeat can only be the last one.
                    if g.0.last() != Some(&ub) {
                        g.0.push(ub);
                    }
                    g.1 += 1;
                }
            }
        }
        let mut groups: Vec<(u32, Vec<u64>, bool)> = by_stripe
            .into_iter()
            .map(|(s, (ubs, seen))| {
                let total = refs[&s].expect("candidate stripe");
                (s, ubs, seen == total)
            })
            .collect();
        groups.sort_by_key(|(s, _, _)| (refs[s], *s));
        // Fill targets from the emptiest stripes, one stripe's worth of blocks each. A target
        // is worth it when it empties two stripes, or empties one and is filled completely:
        // a full target is never a candidate again, so live data in part-empty stripes
        // strictly shrinks and cleaning can not cycle. Or when it is filled with blocks that
        // all carry patches: merging a block's patches into one whole block never adds
        // space, strictly shortens patch lists (so it can not cycle either), and is how
        // shared blocks of converted packs empty. A stripe split over two targets counts as
        // emptied by the second.
        let mut order: Vec<(u64, bool)> = Vec::new();
        let mut seen: FastSet<u64> = FastSet::default();
        for (_, ubs, complete) in &groups {
            let fresh: Vec<u64> = ubs.iter().copied().filter(|&u| seen.insert(u)).collect();
            let n = fresh.len();
            for (k, u) in fresh.into_iter().enumerate() {
                order.push((u, *complete && k + 1 == n));
            }
            if order.len() >= dcols * max_jobs {
                break;
            }
        }
        let mut batches = Vec::new();
        for batch in order.chunks(dcols).take(max_jobs) {
            let emptied = batch.iter().filter(|b| b.1).count();
            let full = batch.len() == dcols;
            let merges = full && batch.iter().all(|&(u, _)| v.bmt.get(u).patched);
            let frees = emptied >= 2 || (emptied >= 1 && full);
            if !(frees || merges) {
                break;
            }
            batches.push(RelocBatch {
                blocks: batch.iter().map(|b| b.0).collect(),
                frees,
            });
        }
        batches.reverse();
        batches
    }

    /// Move the user blocks `picked` (at most one stripe's worth) into a fresh full stripe:
    /// read each whole (reconstructing around failed members), write data and parity, then
    /// remap every block nobody rewrote meanwhile. `rebuild`: part of a rebuild, whose
    /// target must avoid every failed member (landing on one again would achieve nothing).
    pub(super) fn launch_relocation(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        picked: Vec<u64>,
        rebuild: bool,
    ) -> bool {
        let kind = if rebuild {
            RelocKind::Rebuild
        } else {
            RelocKind::Clean
        };
        self.launch_relocation_as(ctx, vol, picked, kind)
    }

    fn launch_relocation_as(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        picked: Vec<u64>,
        kind: RelocKind,
    ) -> bool {
        let rebuild = kind == RelocKind::Rebuild;
        let strict = rebuild;
        let v = &mut self.vols[vol];
        let redirect = self.cfg.redirect;
        let width = v.zone.width();
        let nparity = v.zone.nparity();
        let zone = &v.zone;
        let target = v.stripes.take_spare(|s| {
            (0..width).all(|c| {
                let d = zone.disk(s, c);
                !(ctx.is_failed(d) || redirect && ctx.is_unresponsive(d))
            })
        });
        let target = target.or_else(|| {
            v.stripes
                .take_spare(|s| (0..width).all(|c| !ctx.is_failed(zone.disk(s, c))))
        });
        let target = target.or_else(|| {
            (!strict)
                .then(|| {
                    v.stripes.take_spare(|s| {
                        (0..width)
                            .filter(|&c| ctx.is_failed(zone.disk(s, c)))
                            .count()
                            <= nparity
                    })
                })
                .flatten()
        });
        let Some((stripe, _)) = target else {
            return false;
        };
        v.bg_running += 1;
        v.rebuild_running += rebuild as usize;
        for &u in &picked {
            assert!(v.relocating.insert(u), "block {u} relocated twice at once");
        }
        let mut snapshot = Vec::with_capacity(picked.len());
        let mut pins = Vec::new();
        for &ub in &picked {
            let e = v.bmt.get(ub);
            let nodes = v.patches.get(ub).to_vec();
            for loc in std::iter::once(e.base).chain(nodes.iter().map(|n| n.loc())) {
                let stripes: Vec<u32> = match loc {
                    Loc::Unmapped => vec![],
                    Loc::Raid(f) => vec![v.zone.split(f).0],
                    Loc::Rep(k) => {
                        let r = v
                            .pairs
                            .lookup(&v.zone, k)
                            .expect("replica key without a set");
                        v.pairs.set(r.set).stripes().to_vec()
                    }
                };
                for s in stripes {
                    v.stripes.pin(s);
                    pins.push(s);
                }
            }
            snapshot.push((e, nodes));
        }
        let n = picked.len();
        let bs = v.zone.block_size();
        let h = self.jobs.insert(Job::Reloc(RelocJob {
            vol,
            stripe,
            blocks: picked.clone(),
            snapshot,
            pins,
            data: vec![None; n],
            reads_left: n,
            pending: 0,
            writing: false,
            failed: false,
            rebuild,
            repair: kind == RelocKind::Repair,
            lost: vec![false; n],
        }));
        for (i, ub) in picked.into_iter().enumerate() {
            self.start_read(
                ctx,
                vol,
                ReadPurpose::Reloc { job: h, index: i },
                ub * bs,
                bs,
            );
        }
        true
    }

    /// One block of a relocation has been read (None: unreadable, the relocation is dropped;
    /// `lost`: some of its pages had no good copy and are moved as they were read).
    pub(super) fn reloc_block_read(
        &mut self,
        ctx: &mut Ctx,
        h: u64,
        index: usize,
        data: Option<Vec<u8>>,
        lost: bool,
    ) {
        let Some(Job::Reloc(j)) = self.jobs.get_mut(h) else {
            unreachable!()
        };
        j.reads_left -= 1;
        j.lost[index] = lost;
        match data {
            Some(d) => j.data[index] = Some(d),
            None => j.failed = true,
        }
        if j.reads_left > 0 {
            return;
        }
        if j.failed {
            return self.finish_reloc(ctx, h, false);
        }
        let vol = j.vol;
        let stripe = j.stripe;
        let v = &self.vols[vol];
        let width = v.zone.width();
        let bs = v.zone.block_size();
        let Some(Job::Reloc(j)) = self.jobs.get_mut(h) else {
            unreachable!()
        };
        let payloads: Vec<Data> = if ctx.size_only {
            vec![Data::Size(bs); width]
        } else {
            let mut cols: Vec<Vec<u8>> = (0..width)
                .map(|c| {
                    j.data
                        .get_mut(c)
                        .and_then(Option::take)
                        .unwrap_or_else(|| vec![0u8; bs as usize])
                })
                .collect();
            fill_parity(&mut cols, v.zone.nparity());
            cols.into_iter().map(Data::Bytes).collect()
        };
        j.writing = true;
        // A degraded target's column on a failed member is covered by its parity.
        let n = write_columns(ctx, &v.zone, h, stripe, 0, payloads);
        j.pending = n;
        if n == 0 {
            self.finish_reloc(ctx, h, true);
        }
    }

    pub(super) fn reloc_io_done(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        let Some(Job::Reloc(j)) = self.jobs.get_mut(tag.job) else {
            unreachable!()
        };
        j.pending -= 1;
        if result.is_err() {
            j.failed = true;
        }
        if j.pending == 0 {
            let ok = !j.failed;
            self.finish_reloc(ctx, tag.job, ok);
        }
    }

    fn finish_reloc(&mut self, ctx: &mut Ctx, h: u64, ok: bool) {
        let Some(Job::Reloc(j)) = self.jobs.remove(h) else {
            unreachable!()
        };
        let v = &mut self.vols[j.vol];
        v.bg_running -= 1;
        v.next_bg_scan = 0; // a finished task changes what can start
        self.bg_quiet_until = 0; // (wake_background, with `v` borrowed)
        v.rebuild_running -= j.rebuild as usize;
        for u in &j.blocks {
            v.relocating.remove(u);
        }
        let now = ctx.now;
        let (mut moved, mut repaired) = (0, 0);
        if ok {
            v.stripes.set_state(j.stripe, StripeState::Raid);
            v.note_stripe(ctx, j.stripe);
            for (c, (&ub, (entry, nodes))) in j.blocks.iter().zip(&j.snapshot).enumerate() {
                // Compare-and-swap: only a block nobody rewrote since the read moves; its new
                // column otherwise stays a hole.
                if v.bmt.get(ub) != *entry || v.patches.get(ub) != nodes.as_slice() {
                    continue;
                }
                v.raid_block_live(j.stripe, c);
                let loc = Loc::Raid(v.zone.flbn(j.stripe, c));
                v.map_whole(ub, loc, now);
                moved += 1;
                repaired += u64::from(!j.lost[c]);
            }
            if v.stripes.valid(j.stripe) == 0 {
                v.stripes.set_state(j.stripe, StripeState::Free);
            }
            ctx.stats.relocations += moved;
            if j.repair {
                ctx.stats.repaired_blocks += repaired;
            }
        } else if v.stripes.state(j.stripe) == StripeState::Busy {
            v.stripes.set_state(j.stripe, StripeState::Free);
        }
        for s in j.pins {
            v.stripes.unpin(s);
        }
    }
}
