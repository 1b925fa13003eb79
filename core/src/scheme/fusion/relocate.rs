//! Relocation: packs live blocks out of stripes full of holes (and merges patch lists) into
//! fresh full stripes so their space comes back; the rebuild moves blocks off failed members
//! the same way.

use super::FusionScheme;
use super::degraded::take_least_degraded;
use super::jobs::{Job, JobId, ReadPurpose, RelocJob, Segment};
use super::reloc_layout::{
    Layout, lay_out, map_moved, moves_anything, pin_sources, place_segments,
};
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
use crate::volume::Loc;
use crate::volume::PageSums;

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
