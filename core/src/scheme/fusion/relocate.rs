//! Relocation: packs live blocks out of stripes full of holes (and merges patch lists) into
//! fresh full stripes so their space comes back; the rebuild moves blocks off failed members
//! the same way.

use super::FusionScheme;
use super::jobs::{Job, ReadPurpose, RelocJob, Segment};
use super::reloc_plan;
use super::stripe_parity::fill_parity;
use super::write::write_columns;
use crate::engine::api::{Data, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::space::StripeState;
use crate::types::{Nanos, PAGE_SIZE};
use crate::volume::Loc;

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
    /// Start up to `max_jobs` relocations, each moving one stripe's worth of columns that
    /// `reloc_plan::plan` found worth moving. Returns whether any started.
    /// `frees_only`: start only moves that give stripes back (idle compaction).
    pub(super) fn start_relocation(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        max_jobs: usize,
        frees_only: bool,
    ) -> bool {
        let v = &mut self.vols[vol];
        let dcols = v.zone.dcols();
        if v.holes() < dcols as u64 && v.patches.patched_blocks() == 0 {
            return false;
        }
        if ctx.now >= v.reloc_batches_until {
            v.reloc_batches.clear();
        }
        let mut started = 0;
        // Batches left from an earlier sweep first; if none of them is still worth
        // starting, a fresh sweep (never give up on stale plans alone).
        for fresh in [false, true] {
            if fresh {
                let v = &mut self.vols[vol];
                let mut plan = reloc_plan::plan(v, RELOC_PLAN_BATCHES);
                if !v.user_may_take(1) {
                    // Writers wait for room and the cleaner works in its reserve: the moves
                    // that give back the most columns for what they write go first.
                    let v = &*v;
                    plan.sort_by_cached_key(|b| {
                        let (emptied, columns) = reloc_plan::effect(v, b);
                        (emptied, columns as i64 - b.len() as i64)
                    });
                }
                v.reloc_batches = plan;
                v.reloc_batches_until = ctx.now + RELOC_PLAN_NS;
            }
            while started < max_jobs.max(1) {
                let v = &mut self.vols[vol];
                let Some(mut batch) = v.reloc_batches.pop() else {
                    break;
                };
                // Drop what no longer needs a move (rewritten whole since the sweep) or is
                // being moved already.
                batch.blocks.retain(|&u| {
                    let e = v.bmt.get(u);
                    !v.relocating.contains(&u)
                        && (e.patched
                            || match e.base {
                                Loc::Raid(f) => {
                                    let s = v.zone.split(f).0;
                                    (v.stripes.valid(s).count_ones() as usize) < dcols
                                }
                                _ => false,
                            })
                });
                for g in &mut batch.shared {
                    g.retain_mut(|(f, owners)| {
                        owners.retain(|&o| v.patches.references(o, Loc::Raid(*f)));
                        !owners.is_empty()
                            && !owners.iter().any(|o| v.relocating.contains(o))
                            && v.stripes.state(v.zone.split(*f).0) == StripeState::Raid
                    });
                }
                batch.shared.retain(|g| !g.is_empty());
                if batch.is_empty() {
                    continue;
                }
                if !worth_starting(v, &batch, frees_only) {
                    continue;
                }
                if !self.launch_relocation_as(
                    ctx,
                    vol,
                    batch.blocks,
                    batch.shared,
                    RelocKind::Clean,
                ) {
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

    /// A free stripe for a move: away from unresponsive members if one is, and clear of
    /// failed members (through their remaps) in any case.
    fn clear_target(&mut self, ctx: &Ctx, vol: usize) -> Option<(u32, usize)> {
        let redirect = self.cfg.redirect;
        let v = &mut self.vols[vol];
        let width = v.zone.width();
        let zone = &v.zone;
        v.stripes
            .take_spare(|s| {
                (0..width).all(|c| {
                    let d = zone.disk(s, c);
                    !(ctx.is_failed(d) || redirect && ctx.is_unresponsive(d))
                })
            })
            .or_else(|| {
                v.stripes
                    .take_spare(|s| (0..width).all(|c| !ctx.is_failed(zone.disk(s, c))))
            })
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
        self.launch_relocation_as(ctx, vol, picked, Vec::new(), RelocKind::Repair)
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
        self.launch_relocation_as(ctx, vol, picked, Vec::new(), kind)
    }

    fn launch_relocation_as(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        picked: Vec<u64>,
        shared: Vec<reloc_plan::Group>,
        kind: RelocKind,
    ) -> bool {
        let rebuild = kind == RelocKind::Rebuild;
        {
            let v = &self.vols[vol];
            if rebuild && v.stripes.available() <= v.cleaner_reserve() {
                // A rebuild move leaves holes behind, not free stripes: the last ones stay
                // with the cleaner, which turns those holes back into stripes to rebuild into.
                return false;
            }
        }
        let mut target = self.clear_target(ctx, vol);
        let rebuilding = self.vols[vol]
            .rebuild
            .as_ref()
            .is_some_and(|r| r.done_at.is_none());
        if target.is_none()
            && rebuilding
            && self.remap_free_stripes(ctx, vol, 1, super::column::DonorUse::CleanerTarget) > 0
        {
            target = self.clear_target(ctx, vol);
        }
        // Moves land clear of the failed members where they can. While a rebuild runs, a
        // free stripe is remapped off them if need be: a move into a degraded stripe would
        // be one more for the rebuild to make, and rebuild and cleaner would move the same
        // blocks back and forth. Otherwise, or where no stripe can be clear (no donor column
        // fits), the cleaner writes degraded stripes, as user writes do: they hold as much.
        if target.is_none() && !rebuild {
            let v = &mut self.vols[vol];
            let (zone, nparity) = (&v.zone, v.zone.nparity());
            target = v.stripes.take_spare(|s| {
                (0..zone.width())
                    .filter(|&c| ctx.is_failed(zone.disk(s, c)))
                    .count()
                    <= nparity
            });
        }
        let Some((stripe, _)) = target else {
            return false;
        };
        let v = &mut self.vols[vol];
        v.bg_running += 1;
        v.rebuild_running += rebuild as usize;
        for &u in &picked {
            assert!(v.relocating.insert(u), "block {u} relocated twice at once");
        }
        // Shared blocks take the columns after the whole blocks; each owner's pages there
        // are read at their own positions.
        let mut moves = Vec::with_capacity(shared.len());
        let mut segments = Vec::new();
        let mut owners = Vec::new();
        let mut col = picked.len();
        for group in shared {
            for (f, who) in group {
                let before = segments.len();
                for o in who {
                    if picked.contains(&o) {
                        continue; // moved whole: its pages here go with it
                    }
                    let nodes = v.patches.get(o);
                    segments.extend(nodes.iter().filter(|n| n.loc() == Loc::Raid(f)).map(|n| {
                        Segment {
                            ub: o,
                            first: n.first(),
                            count: n.count(),
                            col,
                        }
                    }));
                    if !owners.iter().any(|x: &(u64, _, _)| x.0 == o) {
                        assert!(v.relocating.insert(o), "block {o} relocated twice at once");
                        owners.push((o, v.bmt.get(o), nodes.to_vec()));
                    }
                }
                if segments.len() > before {
                    moves.push((f, col));
                }
            }
            if moves.last().is_some_and(|m| m.1 == col) {
                col += 1;
            }
        }
        let mut snapshot = Vec::with_capacity(picked.len());
        let mut pins = Vec::new();
        let every = picked
            .iter()
            .map(|&ub| (ub, v.bmt.get(ub), v.patches.get(ub).to_vec()))
            .chain(owners.iter().cloned());
        for (i, (ub, e, nodes)) in every.enumerate() {
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
            if i < picked.len() {
                debug_assert_eq!(ub, picked[i]);
                snapshot.push((e, nodes));
            }
        }
        let n = picked.len() + segments.len();
        let bs = v.zone.block_size();
        let reads: Vec<(u64, u64)> = picked
            .iter()
            .map(|&ub| (ub * bs, bs))
            .chain(segments.iter().map(|g| {
                (
                    g.ub * bs + g.first as u64 * PAGE_SIZE,
                    g.count as u64 * PAGE_SIZE,
                )
            }))
            .collect();
        let h = self.jobs.insert(Job::Reloc(RelocJob {
            vol,
            stripe,
            blocks: picked,
            moves,
            segments,
            owners,
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
        for (i, (offset, len)) in reads.into_iter().enumerate() {
            self.start_read(
                ctx,
                vol,
                ReadPurpose::Reloc { job: h, index: i },
                offset,
                len,
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
            let nb = j.blocks.len();
            let mut cols: Vec<Vec<u8>> = (0..width)
                .map(|c| {
                    (c < nb)
                        .then(|| j.data[c].take())
                        .flatten()
                        .unwrap_or_else(|| vec![0u8; bs as usize])
                })
                .collect();
            // Moved shared blocks: each owner's pages at their own positions.
            for (g, d) in j.segments.iter().zip(&j.data[nb..]) {
                let d = d.as_ref().expect("segment read");
                let at = g.first as usize * PAGE_SIZE as usize;
                cols[g.col][at..at + d.len()].copy_from_slice(d);
            }
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
        for u in j.blocks.iter().chain(j.owners.iter().map(|o| &o.0)) {
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
            moved += retarget_moved(v, &j, now);
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

/// The shared blocks relocation `j` moved as they are: retarget the references of every
/// owner nobody rewrote since the read to the new column, and release the old block once
/// its last owner left it. Returns the owners moved.
fn retarget_moved(v: &mut super::vol::Vol, j: &RelocJob, now: Nanos) -> u64 {
    let mut moved = 0;
    for (ub, entry, nodes) in &j.owners {
        if v.bmt.get(*ub) != *entry || v.patches.get(*ub) != nodes.as_slice() {
            continue;
        }
        let mut counted = 0u32; // target columns this block already owns
        for &(from, col) in &j.moves {
            let (from, to) = (Loc::Raid(from), Loc::Raid(v.zone.flbn(j.stripe, col)));
            if !nodes.iter().any(|n| n.loc() == from) {
                continue;
            }
            // One more owner of the new block: the first makes it live, the rest share it.
            if counted & (1 << col) == 0 {
                counted |= 1 << col;
                if v.stripes.valid(j.stripe) & (1 << col) == 0 {
                    v.raid_block_live(j.stripe, col);
                } else if let Loc::Raid(f) = to {
                    *v.raid_extra.entry(f).or_insert(0) += 1;
                }
            }
            let ub = *ub;
            v.record(|vol| crate::meta::Record::Retarget { vol, ub, from, to });
            v.patches.replace_loc(ub, from, to);
            v.release(ub, from, now);
        }
        moved += 1;
    }
    moved
}

/// Is `b` worth a stripe now? A move pays for its target stripe when, as the mappings
/// stand, it empties more stripes than it takes, or empties one and fills its target (which
/// then never needs cleaning again, so live data in part-empty stripes strictly shrinks).
/// Other moves make progress of another kind and may not take the cleaner's reserve (the
/// volume's last free stripes): merges (all whole blocks with patches: patch lists only
/// shrink) and packing shared blocks together (at least a stripe's worth of columns
/// freed: shared blocks only get fewer). Anything else could cycle, or use the last
/// stripes up and leave nothing to clean into. `frees_only`: only the first kind.
fn worth_starting(v: &super::vol::Vol, b: &reloc_plan::RelocBatch, frees_only: bool) -> bool {
    let dcols = v.zone.dcols();
    let (emptied, columns) = reloc_plan::effect(v, b);
    if emptied >= 2 || emptied >= 1 && b.len() == dcols {
        return true;
    }
    if frees_only {
        return false;
    }
    let merge = b.shared.is_empty()
        && b.blocks.len() == dcols
        && b.blocks.iter().all(|&u| v.bmt.get(u).patched);
    let packs = b.blocks.is_empty() && columns >= dcols;
    if !(merge || packs) {
        return false;
    }
    // In the reserve: when the volume holds less than a stripe's worth of holes its free
    // room is dead pages inside blocks, and only these moves turn it into holes. One at a
    // time, and only one that writes no more columns than it frees and leaves a stripe's
    // worth of holes behind, with a stripe still free for the compaction that follows: a
    // move that took a reserve stripe and freed less (a merge of blocks with no base yet,
    // whose pages all sit in shared blocks) could leave nothing to compact into.
    let avail = v.stripes.available();
    avail > v.cleaner_reserve()
        || avail >= 2
            && v.bg_running == 0
            && columns >= b.len()
            && v.holes() + columns as u64 >= dcols as u64
}
