//! Relocation: packs live blocks out of stripes full of holes (and merges patch lists) into
//! fresh full stripes so their space comes back; the rebuild moves blocks off failed members
//! the same way.

use super::FusionScheme;
use super::degraded::take_least_degraded;
use super::jobs::{Job, JobId, ReadPurpose, RelocJob, Segment};
use super::reloc_plan;
use super::stripe_parity::push_parity;
use super::write::write_columns;
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::fasthash::FastSet;
use crate::policy::{ReadRouting, WritePlacement};
use crate::space::StripeState;
use crate::types::{Nanos, PAGE_SIZE};
use crate::volume::PageSums;
use crate::volume::patch::{Seg, segments_at};
use crate::volume::{Entry, Loc, PatchNode};

/// Tag parts of a relocation's direct reads start here (`DIRECT_READ + read index`); those
/// below are its column writes.
const DIRECT_READ: u32 = 1 << 16;

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
/// Batches of a mirror's plan the cleaner passes over, at most, looking for one that may
/// start while the first waits for a move in flight (`start_relocation`).
const PASS_OVER_BATCHES: usize = 16;

impl FusionScheme {
    /// Start up to `max_jobs` relocations, each filling one stripe with the live pages
    /// `reloc_plan::plan` found worth moving (a fresh plan must give back at least
    /// `min_yield` stripes per stripe it fills). Returns whether any started.
    pub(super) fn start_relocation(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        max_jobs: usize,
        min_yield: f64,
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
                let plan = reloc_plan::plan(v, RELOC_PLAN_BATCHES, min_yield);
                v.reloc_batches = plan;
                v.reloc_batches_until = ctx.now + RELOC_PLAN_NS;
            }
            // Batches passed over for now (waiting for a move in flight), in plan order,
            // and their blocks: a later batch sharing one keeps its place behind them.
            let mut held: Vec<reloc_plan::RelocBatch> = Vec::new();
            let mut held_blocks: FastSet<u64> = FastSet::default();
            let may_pass = self.vols[vol].cfg.level.is_mirror();
            while started < max_jobs.max(1) && held.len() < PASS_OVER_BATCHES {
                let v = &mut self.vols[vol];
                let Some(mut batch) = v.reloc_batches.pop() else {
                    break;
                };
                // Drop what no longer needs a move (rewritten since the sweep).
                batch
                    .items
                    .retain(|it| v.references(it.ub, Loc::Raid(it.from)));
                if !held.is_empty() && batch.items.iter().any(|it| held_blocks.contains(&it.ub)) {
                    held_blocks.extend(batch.items.iter().map(|it| it.ub));
                    held.push(batch);
                    continue;
                }
                match readiness(v, &batch) {
                    // (Behind a held batch, it may empty its stripe once that one moved.)
                    Ready::Stale if held.is_empty() => continue,
                    Ready::Stale | Ready::WaitBlock if may_pass => {
                        // Its blocks are in a move in flight: a mirror's later batches
                        // that share none may start meanwhile (they empty stripes of
                        // their own, counted by `readiness` as they start).
                        held_blocks.extend(batch.items.iter().map(|it| it.ub));
                        held.push(batch);
                        continue;
                    }
                    Ready::Stale | Ready::WaitBlock | Ready::WaitReserve => {
                        // It comes next once the moves in flight are done (their
                        // completion scans again): keep it, and the plan behind it.
                        v.reloc_batches.push(batch);
                        restore(v, held);
                        return started > 0;
                    }
                    Ready::Go => {}
                }
                if !moves_anything(v, &batch.items) {
                    // Every item changed since the plan (a split item's tail whose head
                    // did not move): nothing left to move.
                    continue;
                }
                let items = batch.items.clone();
                if !self.launch_relocation_as(ctx, vol, Vec::new(), items, RelocKind::Clean) {
                    // No target stripe: nothing more can start now.
                    self.vols[vol].reloc_batches.push(batch);
                    restore(&mut self.vols[vol], held);
                    return started > 0;
                }
                started += 1;
            }
            if !held.is_empty() {
                // They come next once the moves in flight are done (whose completions scan
                // again): no fresh sweep meanwhile.
                restore(&mut self.vols[vol], held);
                return started > 0;
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
        let placement = &self.policy.placement;
        let members = ctx.members();
        let v = &mut self.vols[vol];
        let width = v.zone.width();
        let zone = &v.zone;
        // Off members the policy would rather not write too, first, when it has any.
        let fits = |s: u32, prefer: bool| {
            (0..width).all(|c| {
                let d = zone.disk(s, c);
                !(ctx.is_failed(d)
                    || placement.steer_clear(&members, d)
                    || prefer && placement.rather_not(&members, d))
            })
        };
        let passes: &[bool] = if placement.has_preferences() {
            &[true, false]
        } else {
            &[false]
        };
        passes
            .iter()
            .find_map(|&prefer| v.stripes.take_spare(|s| fits(s, prefer)))
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
        items: Vec<reloc_plan::Item>,
        kind: RelocKind,
    ) -> bool {
        let rebuild = kind == RelocKind::Rebuild;
        let Some(stripe) = self.move_target(ctx, vol, rebuild) else {
            return false;
        };
        let v = &mut self.vols[vol];
        v.bg_running += 1;
        v.rebuild_running += rebuild as usize;
        for &u in &picked {
            assert!(v.relocating.insert(u), "block {u} relocated twice at once");
        }
        let Layout {
            segments,
            owners,
            leaving,
        } = lay_out(v, picked.len(), &items);
        for (o, _, _) in &owners {
            assert!(v.relocating.insert(*o), "block {o} relocated twice at once");
        }
        for &f in &leaving {
            *v.leaving.entry(f).or_insert(0) += 1;
        }
        let (snapshot, pins) = pin_sources(v, &picked, &owners);
        let n = picked.len() + segments.len();
        assert!(
            n > 0,
            "a relocation with nothing to move would never finish"
        );
        let bs = v.zone.block_size();
        let whole = picked.len();
        let reads: Vec<(u64, u64)> = picked.iter().map(|&ub| (ub * bs, bs)).collect();
        let nmoved = segments.len();
        let h = self.jobs.insert(Job::Reloc(RelocJob {
            vol,
            stripe,
            blocks: picked,
            segments,
            owners,
            leaving,
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
            let purpose = ReadPurpose::Reloc { job: h, index: i };
            self.start_read(ctx, vol, purpose, offset, len);
        }
        for k in 0..nmoved {
            let Some(Job::Reloc(j)) = self.jobs.get(h) else {
                unreachable!()
            };
            let g = j.segments[k];
            self.read_moved(ctx, vol, h, whole + k, &g);
        }
        true
    }

    /// Reads moved pages `g` (read `index` of relocation `h`) from the RAID block the plan
    /// found them in, with one device read, when the read path would read that block
    /// itself; otherwise (its member failed or is gone around, its column is stale) through
    /// the read path, which rebuilds them from the rest of their stripe. The read path's
    /// planning (the mapping resolved again, a read job, pins per read) is what a clean
    /// move costs most besides the copies, and the plan already resolved these pages; the
    /// job's pins keep their stripe from being reused meanwhile.
    fn read_moved(&mut self, ctx: &mut Ctx, vol: usize, h: JobId, index: usize, g: &Segment) {
        let v = &self.vols[vol];
        let (s, c) = v.zone.split(g.from);
        let disk = v.zone.disk(s, c);
        let direct = !v.column_lost(ctx, s, c)
            && !self.policy.routing.reconstruct_around(&ctx.members(), disk);
        if !direct {
            return self.read_moved_via_path(ctx, vol, h, index, g);
        }
        let (dk, offset) = v.zone.device_offset(s, c, g.from_at as u64 * PAGE_SIZE);
        let op = DevOp::Read {
            offset,
            len: g.count as u64 * PAGE_SIZE,
        };
        ctx.issue(dk, op, h.tag(DIRECT_READ + index as u32), true);
    }

    fn read_moved_via_path(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        h: JobId,
        index: usize,
        g: &Segment,
    ) {
        let bs = self.vols[vol].zone.block_size();
        let offset = g.ub * bs + g.first as u64 * PAGE_SIZE;
        let purpose = ReadPurpose::Reloc { job: h, index };
        self.start_read(ctx, vol, purpose, offset, g.count as u64 * PAGE_SIZE);
    }

    /// A direct read of moved pages is back (`read_moved`). Pages that match their
    /// checksums go on to the move; a failed read or a mismatch sends them through the read
    /// path, which retries, rebuilds around the bad copy and counts it, as for any read.
    fn moved_read_done(&mut self, ctx: &mut Ctx, h: JobId, index: usize, result: IoResult) {
        let Some(Job::Reloc(j)) = self.jobs.get(h) else {
            unreachable!()
        };
        let vol = j.vol;
        let g = j.segments[index - j.blocks.len()];
        let bytes = match result {
            Ok(Some(Data::Bytes(b))) => Some(b),
            Ok(_) if ctx.size_only => Some(Vec::new()),
            _ => None,
        };
        let good = bytes.filter(|b| {
            ctx.size_only
                || self.vols[vol]
                    .sums
                    .slice(g.ub, g.first, g.count)
                    .is_none_or(|expect| PageSums::first_mismatch(expect, b).is_none())
        });
        match good {
            Some(b) => self.reloc_block_read(ctx, h, index, Some(b), false),
            None => self.read_moved_via_path(ctx, vol, h, index, &g),
        }
    }

    /// The free stripe a move lands in. Moves land clear of the failed members where they
    /// can. While a rebuild runs, a free stripe is remapped off them if need be: a move into
    /// a degraded stripe would be one more for the rebuild to make, and rebuild and cleaner
    /// would move the same blocks back and forth. Otherwise, or where no stripe can be
    /// clear (no donor column fits), the cleaner writes degraded stripes, the least degraded
    /// first (`degraded.rs`), and while no write waits for room only those that keep a
    /// parity column to spare: a move must not leave blocks with less redundancy than they
    /// had for nothing more than tidier space (when writes wait, any stripe parity covers
    /// will do, as for the writes themselves). A rebuild's own move never does (landing on
    /// a failed member again would achieve nothing).
    fn move_target(&mut self, ctx: &mut Ctx, vol: usize, rebuild: bool) -> Option<u32> {
        let v = &self.vols[vol];
        if rebuild && v.stripes.available() <= v.cleaner_reserve() {
            // A rebuild move leaves holes behind, not free stripes: the last ones stay
            // with the cleaner, which turns those holes back into stripes to rebuild into.
            return None;
        }
        let mut target = self.clear_target(ctx, vol);
        let rebuilding = self.vols[vol].rebuilding();
        if target.is_none()
            && rebuilding
            && self.remap_free_stripes(ctx, vol, 1, super::column::DonorUse::CleanerTarget) > 0
        {
            target = self.clear_target(ctx, vol);
        }
        if let Some((s, _)) = target {
            return Some(s);
        }
        if rebuild {
            return None;
        }
        let v = &mut self.vols[vol];
        let nparity = v.zone.nparity();
        let most = if v.space_waiters.is_empty() {
            nparity - 1
        } else {
            nparity
        };
        take_least_degraded(&mut v.stripes, &v.zone, |d| ctx.is_failed(d), 1..=most)
    }

    /// One block of a relocation has been read (None: unreadable, the relocation is dropped;
    /// `lost`: some of its pages had no good copy and are moved as they were read).
    pub(super) fn reloc_block_read(
        &mut self,
        ctx: &mut Ctx,
        h: JobId,
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
            let dcols = v.zone.dcols();
            let mut cols: Vec<Vec<u8>> = (0..dcols)
                .map(|c| (c < nb).then(|| j.data[c].take()).flatten())
                .map(|d| d.unwrap_or_else(|| Vec::with_capacity(bs as usize)))
                .collect();
            place_segments(&mut cols[nb..], nb, &j.segments, &j.data[nb..]);
            for c in &mut cols {
                c.resize(bs as usize, 0);
            }
            push_parity(&mut cols, v.zone.nparity());
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
        if let Some(index) = tag.part.checked_sub(DIRECT_READ) {
            return self.moved_read_done(ctx, JobId::of(tag), index as usize, result);
        }
        let Some(Job::Reloc(j)) = self.jobs.get_mut(JobId::of(tag)) else {
            unreachable!()
        };
        j.pending -= 1;
        if result.is_err() {
            j.failed = true;
        }
        if j.pending == 0 {
            let ok = !j.failed;
            self.finish_reloc(ctx, JobId::of(tag), ok);
        }
    }

    fn finish_reloc(&mut self, ctx: &mut Ctx, h: JobId, ok: bool) {
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
        for f in &j.leaving {
            let n = v.leaving.get_mut(f).expect("a block being left");
            *n -= 1;
            if *n == 0 {
                v.leaving.remove(f);
            }
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
            moved += map_moved(v, &j, now);
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

/// What a relocation reads and moves, laid out in its target stripe.
struct Layout {
    /// The page runs to read, and where each goes.
    segments: Vec<Segment>,
    /// The blocks they belong to, with their mappings now.
    owners: Vec<Owner>,
    /// The RAID block each moved item leaves (one entry per item).
    leaving: Vec<u64>,
}

/// A block whose pages a relocation moves, with its mapping when read.
type Owner = (u64, crate::volume::Entry, Vec<crate::volume::PatchNode>);

/// Moved pages where the layout placed them: segment `i` (`data[i]`) goes to pages
/// `[at, at + count)` of column `col` (`cols[col - first_col]`). Columns are built in page
/// order, so only gaps are zeroed, not pages a copy overwrites next (a relocation's
/// columns are mostly full: zeroing them first cost as much as the copies).
fn place_segments(
    cols: &mut [Vec<u8>],
    first_col: usize,
    segs: &[Segment],
    data: &[Option<Vec<u8>>],
) {
    let mut order: Vec<usize> = (0..segs.len()).collect();
    order.sort_unstable_by_key(|&i| (segs[i].col, segs[i].at));
    for i in order {
        let (g, d) = (&segs[i], data[i].as_deref().expect("segment read"));
        let col = &mut cols[g.col - first_col];
        let at = g.at as usize * PAGE_SIZE as usize;
        if col.len() < at + d.len() {
            // Zeroes up to `at` (a gap), or drops what `d` replaces.
            col.resize(at, 0);
            col.extend_from_slice(d);
        } else {
            col[at..at + d.len()].copy_from_slice(d);
        }
    }
}

/// Pins every stripe the moved blocks (`picked`, whole) and the owners of the moved runs
/// are read from, so none is reused while the move is out; returns the picked blocks'
/// mappings as they were (a block rewritten meanwhile is not remapped) and the pins.
fn pin_sources(
    v: &mut super::vol::Vol,
    picked: &[u64],
    owners: &[(u64, Entry, Vec<PatchNode>)],
) -> (Vec<(Entry, Vec<PatchNode>)>, Vec<u32>) {
    let mut pins = Vec::new();
    let snapshot: Vec<(Entry, Vec<PatchNode>)> = picked
        .iter()
        .map(|&ub| (v.bmt.get(ub), v.patches.get(ub).to_vec()))
        .collect();
    let blocks = snapshot.iter().map(|(e, n)| (e, n.as_slice()));
    // A stripe once per run of locations in it (a sort to pin each only once cost more
    // than the pins it saved).
    let pin = |pins: &mut Vec<u32>, s: u32| {
        if pins.last() != Some(&s) {
            pins.push(s);
        }
    };
    for (e, nodes) in blocks.chain(owners.iter().map(|(_, e, n)| (e, n.as_slice()))) {
        for loc in std::iter::once(e.base).chain(nodes.iter().map(|n| n.loc())) {
            match loc {
                Loc::Unmapped => {}
                Loc::Raid(f) => pin(&mut pins, v.zone.split(f).0),
                Loc::Rep(k) => {
                    let r = v
                        .pairs
                        .lookup(&v.zone, k)
                        .expect("replica key without a set");
                    for &s in v.pairs.set(r.set).distinct_stripes() {
                        pin(&mut pins, s);
                    }
                }
            }
        }
    }
    for &s in &pins {
        v.stripes.pin(s);
    }
    (snapshot, pins)
}

/// Where relocation pages go in the target stripe: blocks moved whole (`whole` of them,
/// rebuild and repair) take the first columns; then each item's pages as the mappings stand,
/// a block whose every page is in the item at its own positions in a column of its own,
/// every other run in the next free pages (cut where a column ends).
fn lay_out(v: &super::vol::Vol, whole: usize, items: &[reloc_plan::Item]) -> Layout {
    let mut leaving = Vec::with_capacity(items.len());
    let ppb = v.pages_per_block;
    let mut owners: Vec<Owner> = Vec::new();
    let mut runs: Vec<(u64, u64, Seg)> = Vec::new();
    let mut room = (v.zone.dcols() - whole) * ppb as usize;
    for it in items {
        let Some((mine, pages, head)) = item_runs(v, it, room) else {
            continue;
        };
        room -= pages;
        if !head {
            leaving.push(it.from);
        }
        runs.extend(mine.into_iter().map(|g| (it.ub, it.from, g)));
        if !owners.iter().any(|o| o.0 == it.ub) {
            owners.push((it.ub, v.bmt.get(it.ub), v.patches.get(it.ub).to_vec()));
        }
    }
    let is_whole = |g: &Seg| g.first == 0 && g.count == ppb && g.at == 0;
    let mut out = Vec::with_capacity(runs.len() + 4);
    let mut col = whole;
    for (ub, from, g) in runs.iter().filter(|r| is_whole(&r.2)) {
        out.push(Segment {
            ub: *ub,
            first: g.first,
            count: g.count,
            col,
            at: 0,
            from: *from,
            from_at: g.at,
        });
        col += 1;
    }
    let mut at = 0u16;
    for (ub, from, g) in runs.iter().filter(|r| !is_whole(&r.2)) {
        let (mut first, mut count) = (g.first, g.count);
        while count > 0 {
            let take = count.min(ppb - at);
            out.push(Segment {
                ub: *ub,
                first,
                count: take,
                col,
                at,
                from: *from,
                from_at: g.at + (first - g.first),
            });
            (first, count, at) = (first + take, count - take, at + take);
            if at == ppb {
                (col, at) = (col + 1, 0);
            }
        }
    }
    assert!(
        col < v.zone.dcols() || col == v.zone.dcols() && at == 0,
        "relocation pages overflow the target stripe"
    );
    Layout {
        segments: out,
        owners,
        leaving,
    }
}

/// What item `it` moves as the mappings stand, if it still moves anything and fits in
/// `room` pages: its runs, their pages, and whether it is a head (its first pages only,
/// the rest still there to follow).
fn item_runs(
    v: &super::vol::Vol,
    it: &reloc_plan::Item,
    room: usize,
) -> Option<(Vec<Seg>, usize, bool)> {
    let e = v.bmt.get(it.ub);
    let nodes = v.patches.get(it.ub);
    let mut mine = segments_at(e.base, nodes, v.pages_per_block, Loc::Raid(it.from));
    let mut pages: usize = mine.iter().map(|g| g.count as usize).sum();
    let head = it.head && pages > it.pages as usize;
    if head {
        pages = first_pages(&mut mine, it.pages);
    }
    // More pages than planned: the block was rewritten into a new stripe that reuses the
    // planned block's place, and this move is stale.
    (pages > 0 && pages <= it.pages as usize && pages <= room).then_some((mine, pages, head))
}

/// Would `lay_out(v, 0, items)` move anything? (Its first item that still moves something
/// always fits: a batch holds at most a stripe of pages.)
fn moves_anything(v: &super::vol::Vol, items: &[reloc_plan::Item]) -> bool {
    let room = v.zone.dcols() * v.pages_per_block as usize;
    items.iter().any(|it| item_runs(v, it, room).is_some())
}

/// Cuts `segs` to their first `n` pages (in order); returns how many that is.
fn first_pages(segs: &mut Vec<Seg>, n: u16) -> usize {
    let mut left = n;
    segs.retain_mut(|g| {
        let take = g.count.min(left);
        g.count = take;
        left -= take;
        take > 0
    });
    (n - left) as usize
}

/// The pages relocation `j` moved: map every owner nobody rewrote since the read to its
/// pages' new places. An owner's old blocks are released as it leaves them (a base whose
/// pages all moved is dropped). Returns the owners moved.
fn map_moved(v: &mut super::vol::Vol, j: &RelocJob, now: Nanos) -> u64 {
    let mut moved = 0;
    for (ub, entry, nodes) in &j.owners {
        if v.bmt.get(*ub) != *entry || v.patches.get(*ub) != nodes.as_slice() {
            continue;
        }
        let mut counted = 0u64; // target columns this block already owns
        for g in j.segments.iter().filter(|g| g.ub == *ub) {
            let to = v.zone.flbn(j.stripe, g.col);
            if counted & (1 << g.col) == 0 {
                counted |= 1 << g.col;
                v.add_raid_owner(j.stripe, g.col);
            }
            v.map_patch(*ub, g.first, g.count, Loc::Raid(to), g.at, now);
        }
        moved += 1;
    }
    moved
}

/// Puts the batches `start_relocation` passed over back at the head of the queue, in plan
/// order (the queue pops its last entry first).
fn restore(v: &mut super::vol::Vol, held: Vec<reloc_plan::RelocBatch>) {
    v.reloc_batches.extend(held.into_iter().rev());
}

/// Whether a planned batch may start now.
enum Ready {
    Go,
    /// Not before the moves in flight that have some of its blocks are done.
    WaitBlock,
    /// Not before the moves in flight are done: the volume is within the cleaner's reserve.
    WaitReserve,
    /// It would empty no stripe any more (its blocks were rewritten): drop it.
    Stale,
}

/// May `b` take a stripe now? Every planned batch empties a stripe, counting what the
/// batches before it (in flight) take out (`reloc_plan::stripes_emptied`), unless what it was to
/// move was rewritten meanwhile. A batch with a block that another move still has in flight
/// waits for it, and so does every batch within the cleaner's reserve (the volume's last
/// free stripes) while another runs: there they go one at a time, each giving back the
/// stripe it takes before the next takes one.
fn readiness(v: &super::vol::Vol, b: &reloc_plan::RelocBatch) -> Ready {
    if b.is_empty() {
        return Ready::Stale;
    }
    if v.stripes.available() <= v.cleaner_reserve() && v.bg_running > 0 {
        return Ready::WaitReserve;
    }
    if b.items.iter().any(|it| v.relocating.contains(&it.ub)) {
        return Ready::WaitBlock;
    }
    if reloc_plan::stripes_emptied(v, b) == 0 {
        return Ready::Stale;
    }
    Ready::Go
}
