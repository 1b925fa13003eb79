//! Rebuild after a member failure, onto distributed spare space.
//!
//! The BMT is swept from a cursor (no reverse map) for user blocks with a location on a
//! stripe that touches a failed member:
//! - a RAID stripe gets its lost columns (data, parity or holes alike) reconstructed into
//!   donor blocks on other members (column.rs, `space/remap.rs`): one free block per lost
//!   block, like a dRAID distributed spare;
//! - a block in the replicated area (or on a stripe no donor fits) is moved whole by the
//!   relocation machinery into a fresh stripe on survivors only.
//!
//! Reads for both are spread over every survivor by the declustered layout, and so are the
//! donors and new stripes, so the rebuild uses the whole pool: it gets faster as the pool
//! grows instead of being bound by one replacement disk. A rebuild is done when a whole
//! sweep finds nothing left and no job is in flight. It is paced by
//! `ConversionPolicy::rebuild_bytes_per_sec` and runs up to `rebuild_concurrent` jobs at
//! once (default: one per member).
//!
//! Once a new device takes a failed member's slot, a *rebalance* copies every remapped
//! column back to its home block there and frees the donors.
//!
//! A new device may take the slot before the rebuild moved everything off (a stripe as
//! wide as the survivors has no donor and no room clear of the failed member, so its
//! rebuild can never finish there). What was still there is then *stale* (space/stale.rs)
//! and the same sweep restores it: a RAID stripe's stale columns are reconstructed and
//! written in place onto the new device, replicated blocks with a stale copy are moved.

use super::FusionScheme;
use super::column::ColumnStart;
use super::progress::Cleared;
use super::progress::{Rebalance, Rebuild};
use super::vol::Vol;
use crate::engine::ctx::Ctx;
use crate::space::StripeState;
use crate::types::{DiskId, Nanos};
use crate::volume::Loc;

/// Credit a pace may bank while it waits for its next wake-up (deadlines come at least
/// 1 ms apart): without it a job costing less than that would run once per millisecond at
/// most, whatever the configured rate.
const PACE_SLACK_NS: Nanos = 2_000_000;

/// The first and the longest wait after a rebuild look that started nothing. Something
/// that lets it progress again (a stripe the cleaner frees, a member replaced, writes
/// that move blocks) is noticed within the cap.
const STALL_BACKOFF_MIN_NS: Nanos = 2_000_000;
const STALL_BACKOFF_MAX_NS: Nanos = 100_000_000;

/// When the next job may start after one of `bytes` at `rate` bytes per second.
fn paced(next_at: Nanos, now: Nanos, bytes: u64, rate: f64) -> Nanos {
    next_at.max(now.saturating_sub(PACE_SLACK_NS)) + (bytes as f64 / rate * 1e9) as Nanos
}

/// What user block `ub` needs from a rebuild.
enum Need {
    Nothing,
    /// Rebuild the lost columns of this RAID stripe.
    Columns(u32),
    /// Move the block (a replica on a failed member).
    Move,
    /// A location beyond its parity's reach.
    Lost,
}

/// One call's sweep of the rebuild.
struct Sweep {
    /// Blocks to move whole, up to a stripe's worth.
    picked: Vec<u64>,
    /// Stripes this call found no donor column for: their blocks join `picked`.
    no_donor: Vec<u32>,
    /// Blocks the call may still look at.
    budget: u64,
    /// A column rebuild was attempted (once per call), and whether it started.
    tried_column: bool,
    column_started: bool,
}

fn need(v: &Vol, ub: u64, failed: &[DiskId]) -> Need {
    let e = v.bmt.get(ub);
    let patches = if e.patched { v.patches.get(ub) } else { &[] };
    let mut need = Need::Nothing;
    for loc in std::iter::once(e.base).chain(patches.iter().map(|n| n.loc())) {
        if !on_failed(v, loc, failed, true) {
            continue;
        }
        match loc {
            Loc::Raid(f) => {
                let s = v.zone.split(f).0;
                let lost = v.lost_mask_where(s, |d| failed.contains(&d)).count_ones() as usize;
                if lost <= v.zone.nparity() {
                    return Need::Columns(s);
                }
                if matches!(need, Need::Nothing) {
                    need = Need::Lost;
                }
            }
            _ => need = Need::Move,
        }
    }
    need
}

/// Does location `loc` of a volume sit on a stripe touching one of `failed` (or, with
/// `stale`, with a stale column), or, for a replica, have a copy in the log of a failed HDD
/// (moved like one on a failed SSD: the move writes two fresh copies)?
fn on_failed(v: &Vol, loc: Loc, failed: &[DiskId], stale: bool) -> bool {
    let touches =
        |s: u32| (stale && v.stripes.stale(s) != 0) || failed.iter().any(|&d| v.zone.touches(s, d));
    match loc {
        Loc::Unmapped => false,
        Loc::Raid(f) => touches(v.zone.split(f).0),
        Loc::Rep(k) => v.pairs.lookup(&v.zone, k).is_some_and(|r| {
            v.pairs
                .set(r.set)
                .distinct_stripes()
                .iter()
                .any(|&s| touches(s))
                || v.offloaded
                    .on_failed(r.set, r.slot, |d| failed.contains(&d))
        }),
    }
}

/// Does user block `ub` (its base or any patch) have data on a stripe touching `failed`?
fn block_on_failed(v: &Vol, ub: u64, failed: &[DiskId]) -> bool {
    let e = v.bmt.get(ub);
    on_failed(v, e.base, failed, false)
        || (e.patched
            && v.patches
                .get(ub)
                .iter()
                .any(|n| on_failed(v, n.loc(), failed, false)))
}

impl FusionScheme {
    /// The journal generation on disk; `u64::MAX` without a journal.
    pub(super) fn durable_generation(&self) -> u64 {
        self.durable
            .as_ref()
            .map_or(u64::MAX, |d| d.journal.durable_generation())
    }

    /// Is any user block stored on a stripe touching `disk`? (Spare slots of open pair sets
    /// there hold nothing and may stay.) Also true while the records of a finished rebuild
    /// are not durable yet, and while those that moved the last blocks off `disk` are not:
    /// recovery would find the old mappings, pointing at the device that replaced it.
    pub(super) fn stored_on(&self, disk: DiskId) -> bool {
        let durable = self.durable_generation();
        let busy = self.vols.iter().any(|v| {
            v.rebuild
                .as_ref()
                .is_some_and(|r| r.done_at.is_some() && r.done_generation > durable)
                || (0..v.blocks).any(|ub| block_on_failed(v, ub, &[disk]))
        });
        if busy {
            self.cleared.set(None);
            return true;
        }
        // Every volume's sweep finished, with no data placed on a failed member since, and
        // (checked above) the records up to then are durable: what `status` shows as
        // "done". The moves that emptied `disk` are in those records; nothing more to wait
        // for. (Waiting for the records of the first call instead, as below, refused a
        // replacement for another commit while `status` already said "done".)
        if self.vols.iter().all(|v| {
            v.rebuild
                .as_ref()
                .is_some_and(|r| r.done_at.is_some() && r.degraded_seen == v.degraded_placements)
        }) {
            return false;
        }
        // Nothing on `disk` in memory. The moves that emptied it (a rebuild's remaps and
        // relocations, possibly still running for another failed member) are in the
        // records up to now: remember that generation the first time, so that records
        // written later (under load there always are some) do not delay the replacement.
        // A degraded placement since (data mapped onto a failed member, then moved off
        // again between two calls) starts the wait over.
        let placements: u64 = self.vols.iter().map(|v| v.degraded_placements).sum();
        let c = match self.cleared.get() {
            Some(c) if c.disk == disk && c.placements == placements => c,
            _ => Cleared {
                disk,
                generation: self.records_generation(),
                placements,
            },
        };
        self.cleared.set(Some(c));
        c.generation > durable
    }

    /// A member failed: every volume (re)starts a rebuild sweep.
    pub(super) fn begin_rebuild(&mut self, now: Nanos) {
        for v in &mut self.vols {
            let moved = v.rebuild.as_ref().map_or(0, |r| r.moved);
            v.rebuild = Some(Rebuild {
                started_at: now,
                moved,
                cursor: 0,
                next_at: now,
                ..Default::default()
            });
        }
        self.wake_background();
        self.maintenance_begun = true;
    }

    /// When the next rebuild step may start (the background rescan period at the soonest).
    pub(super) fn rebuild_deadline(&self, now: Nanos) -> Option<Nanos> {
        let rebuilds = self
            .vols
            .iter()
            .filter_map(|v| v.rebuild.as_ref().filter(|r| r.done_at.is_none()))
            .map(|r| r.next_at);
        let rebalances = self
            .vols
            .iter()
            .filter_map(|v| v.rebalance.as_ref().filter(|r| r.done_at.is_none()))
            .map(|r| r.next_at);
        rebuilds
            .chain(rebalances)
            .map(|t| t.max(now + 1_000_000))
            .min()
    }

    pub(super) fn rebuild_due(&mut self, ctx: &Ctx, vol: usize) -> bool {
        let v = &mut self.vols[vol];
        let degraded = v.degraded_placements;
        let Some(r) = v.rebuild.as_mut() else {
            return false;
        };
        if r.done_at.is_some() && r.degraded_seen != degraded {
            // Data landed on a failed member after the rebuild finished (a degraded write
            // when no room clear of it was left): sweep again.
            r.done_at = None;
            r.clean_scan = 0;
        }
        r.degraded_seen = degraded;
        r.done_at.is_none() && ctx.now >= r.next_at
    }

    /// Sweep for blocks on failed members: rebuild the columns of the next RAID stripe
    /// found, or move up to one stripe's worth of blocks (replicated ones, and those of
    /// RAID stripes no donor column fits).
    ///
    /// The blocks of a stripe without a donor are batched with the sweep's other moves:
    /// each relocation takes a whole fresh stripe, so moving them one at a time would
    /// spend a stripe per block (the rest zero-padded holes). When free stripes are short,
    /// as on a small pool after a failure, that used up the last spare stripes the cleaner
    /// needs to compact holes, and user writes failed for want of space with most of the
    /// volume's blocks holes.
    pub(super) fn start_rebuild(&mut self, ctx: &mut Ctx, vol: usize) -> bool {
        let failed: Vec<DiskId> = (0..ctx.disk_count() as u32)
            .map(DiskId)
            .filter(|&d| ctx.is_failed(d))
            .collect();
        let v = &self.vols[vol];
        let mut sw = Sweep {
            picked: Vec::with_capacity(v.zone.dcols()),
            no_donor: Vec::new(),
            budget: v.blocks.min(65_536),
            tried_column: false,
            column_started: false,
        };
        let dcols = v.zone.dcols();
        while let Some((s, ub)) = self.sweep_rebuild(vol, &failed, &mut sw) {
            sw.tried_column = true;
            match self.start_column_rebuild(ctx, vol, s) {
                ColumnStart::Started => {
                    sw.column_started = true;
                    break;
                }
                ColumnStart::Running | ColumnStart::Lost => break,
                // No spare block fits: move the stripe's blocks whole instead, as many at
                // once as one fresh stripe holds.
                ColumnStart::NoDonor => {
                    sw.no_donor.push(s);
                    if !self.vols[vol].relocating.contains(&ub) {
                        sw.picked.push(ub);
                    }
                    if sw.picked.len() == dcols || sw.budget == 0 {
                        break;
                    }
                }
            }
        }
        if sw.picked.is_empty() && !sw.tried_column {
            self.note_clean_sweep(ctx, vol);
            return false;
        }
        self.pace_rebuild(ctx, vol, &sw, failed.len());
        let mut started = sw.column_started;
        if !sw.picked.is_empty() {
            let n = sw.picked.len() as u64;
            let moved = self.launch_relocation(ctx, vol, sw.picked, true);
            if moved && let Some(r) = self.vols[vol].rebuild.as_mut() {
                r.moved += n;
            }
            started |= moved;
        }
        self.note_rebuild_stall(ctx, vol, started, failed.len());
        started
    }

    /// Advances the rebuild's cursor over `vol`'s blocks, within the sweep's budget,
    /// collecting blocks to move whole into `sw.picked` (up to a stripe's worth). Returns a
    /// stripe whose lost columns should be rebuilt in place (and the block that found it),
    /// at most once per call: the pace of donor use stays that of the sweep.
    fn sweep_rebuild(
        &mut self,
        vol: usize,
        failed: &[DiskId],
        sw: &mut Sweep,
    ) -> Option<(u32, u64)> {
        let v = &mut self.vols[vol];
        let (blocks, dcols) = (v.blocks, v.zone.dcols());
        let mut r = v.rebuild.take().expect("rebuild in progress");
        let mut column = None;
        while sw.budget > 0 {
            sw.budget -= 1;
            let ub = r.cursor;
            r.cursor = (r.cursor + 1) % blocks;
            if r.cursor == 0 {
                r.lost = r.lost_now;
                r.lost_now = 0;
            }
            r.clean_scan += 1;
            let need = match need(v, ub, failed) {
                // No donor fits that stripe: its blocks are moved whole.
                Need::Columns(s) if sw.no_donor.contains(&s) => Need::Move,
                n => n,
            };
            match need {
                Need::Nothing => {}
                Need::Lost => r.lost_now += 1,
                Need::Columns(s) => {
                    r.clean_scan = 0;
                    if v.columns.contains(&s) {
                        continue;
                    }
                    if sw.tried_column {
                        // One column attempt per call: the next call starts here.
                        if r.cursor != 0 {
                            r.cursor = ub;
                        }
                        sw.budget = 0;
                        break;
                    }
                    column = Some((s, ub));
                    break;
                }
                Need::Move => {
                    r.clean_scan = 0;
                    if v.relocating.contains(&ub) {
                        continue; // being moved already; the sweep looks again where it lands
                    }
                    sw.picked.push(ub);
                    if sw.picked.len() == dcols {
                        break;
                    }
                }
            }
        }
        v.rebuild = Some(r);
        column
    }

    /// A call found nothing to do: once a whole pass over the volume found nothing and no
    /// move is in flight, the rebuild is done (durable once this generation is).
    fn note_clean_sweep(&mut self, ctx: &Ctx, vol: usize) {
        let generation = self.records_generation();
        let v = &mut self.vols[vol];
        let (running, blocks) = (v.rebuild_running, v.blocks);
        let r = v.rebuild.as_mut().expect("rebuild in progress");
        if r.clean_scan >= blocks && running == 0 {
            r.done_at = Some(ctx.now);
            r.done_generation = generation;
        }
    }

    /// The next call waits for what this one moves at the rebuild's pace (per surviving
    /// member: the whole pool rebuilds). A column attempt counts a stripe's worth, as a
    /// column job reads that much.
    fn pace_rebuild(&mut self, ctx: &Ctx, vol: usize, sw: &Sweep, failed: usize) {
        let v = &self.vols[vol];
        let (width, bs) = (v.zone.width() as u64, v.zone.block_size());
        let column = if sw.tried_column { width } else { 0 };
        let bytes = (sw.picked.len() as u64 + column) * bs;
        let survivors = (ctx.disk_count() - failed).max(1) as f64;
        let rate = (self.cfg.conversion.rebuild_bytes_per_sec * survivors).max(1.0);
        let r = self.vols[vol]
            .rebuild
            .as_mut()
            .expect("rebuild in progress");
        r.next_at = paced(r.next_at, ctx.now, bytes, rate);
    }

    /// Whether the rebuild is stalled (nothing started), and why, worked out when it first
    /// stalls.
    fn note_rebuild_stall(&mut self, ctx: &Ctx, vol: usize, started: bool, failed: usize) {
        let newly_stalled = !started && self.vols[vol].rebuild.as_ref().is_some_and(|r| !r.stalled);
        let why = newly_stalled.then(|| self.rebuild_stall_reason(ctx, vol, failed));
        if let Some(r) = self.vols[vol].rebuild.as_mut() {
            r.stalled = !started;
            if let Some(why) = why {
                r.stall_reason = why;
            }
            r.backoff_ns = if started {
                0
            } else {
                (r.backoff_ns * 2).clamp(STALL_BACKOFF_MIN_NS, STALL_BACKOFF_MAX_NS)
            };
            r.next_at = r.next_at.max(ctx.now + r.backoff_ns);
        }
    }

    /// Why the rebuild of `vol` found nowhere to put what it moves, with `failed` members
    /// down: the geometry (fewer survivors than the width: no stripe can be whole), the
    /// space (the survivors hold less than the data and the reserves need: how much is
    /// missing), or neither, and the cleaner is turning holes into free stripes meanwhile.
    fn rebuild_stall_reason(&self, ctx: &Ctx, vol: usize, failed: usize) -> String {
        let v = &self.vols[vol];
        let (width, dcols) = (v.zone.width() as u64, v.zone.dcols() as u64);
        let members = ctx.disk_count() as u64;
        let survivors = members - failed as u64;
        if survivors < width {
            return format!(
                "a stripe of width {width} needs {width} members and {survivors} work, so no \
                 stripe can be whole again on the survivors (serving degraded); replace the \
                 failed member and its columns are rebuilt in place onto the new device"
            );
        }
        // Every member holds an equal share of the zone's columns (the layout spreads them),
        // so the survivors hold this many stripes' worth; the data needs its own stripes,
        // the replicated area's, and the reserves.
        let hold = v.stripes.len() * survivors / members;
        let data = v
            .mapped_bytes()
            .div_ceil(v.zone.block_size())
            .div_ceil(dcols);
        let replicas = v.stripes.count(StripeState::Replica);
        let need = data + replicas + v.reserve_stripes();
        if need > hold {
            let missing = (need - hold) * width * v.zone.block_size();
            return format!(
                "the surviving members hold {hold} stripes of this volume's zone and its data \
                 needs {need}: {} more member space or a smaller volume would let it finish \
                 (serving degraded meanwhile); or replace the failed member, and what is \
                 left on it is rebuilt in place onto the new device",
                crate::meta::recover::human_bytes(missing)
            );
        }
        format!(
            "no free stripe clear of the failed members yet ({} free); the cleaner is \
             turning holes into free stripes (serving degraded meanwhile)",
            v.stripes.available()
        )
    }

    /// A new device took a failed member's slot: bring remapped columns home.
    pub(super) fn begin_rebalance(&mut self, now: Nanos) {
        self.start_rebalances(now, |v, _| !v.zone.remaps().is_empty());
        self.wake_background();
        self.maintenance_begun = true;
    }

    /// (Re)start the rebalance of every volume `wants` (given the members recorded as
    /// failed) picks, keeping the count of columns already copied home. Returns whether
    /// any volume got one.
    fn start_rebalances(
        &mut self,
        now: Nanos,
        wants: impl Fn(&Vol, &std::collections::BTreeSet<u16>) -> bool,
    ) -> bool {
        let failed = &self.failed_members;
        let mut any = false;
        for v in &mut self.vols {
            if wants(v, failed) {
                let copied = v.rebalance.as_ref().map_or(0, |r| r.copied);
                v.rebalance = Some(Rebalance {
                    started_at: now,
                    next_at: now,
                    copied,
                    ..Default::default()
                });
                any = true;
            }
        }
        any
    }

    /// After recovery: carry on with a rebalance a restart cut short. The remaps are
    /// durable but the rebalance state is not, so without this the columns still on spare
    /// space would stay there for good (their donor stripes lent, never handed out). Only
    /// volumes with a remapped column whose home member is not failed get one; columns
    /// whose home member fails at start (`serve` fails missing and stale members right
    /// after recovery, before any background work runs) are left to the rebuild.
    pub(super) fn resume_rebalance(&mut self, now: Nanos) {
        let any = self.start_rebalances(now, |v, failed| {
            v.zone.remaps().sorted().iter().any(|&(s, m)| {
                let home = v.zone.home(s, m.col as usize).disk;
                !failed.contains(&(home.0 as u16))
            })
        });
        if any {
            self.wake_background();
            self.maintenance_begun = true;
        }
    }

    pub(super) fn rebalance_due(&self, ctx: &Ctx, vol: usize) -> bool {
        // Runs alongside a rebuild after another failure: the donors it frees may be what
        // that rebuild needs. (A column whose donor failed is the rebuild's to move.)
        self.vols[vol]
            .rebalance
            .as_ref()
            .is_some_and(|r| r.done_at.is_none() && ctx.now >= r.next_at)
    }

    /// Copy the next remapped column home. Returns false when nothing more can start now.
    pub(super) fn start_rebalance(&mut self, ctx: &mut Ctx, vol: usize) -> bool {
        let v = &mut self.vols[vol];
        let mut r = v.rebalance.take().expect("rebalance in progress");
        if r.queue.is_empty() {
            // A new pass over what is still remapped onto spare space with its home healthy.
            let idle_pass = r.deferred > 0;
            r.deferred = 0;
            r.queue = v
                .zone
                .remaps()
                .sorted()
                .into_iter()
                .rev()
                .filter(|&(s, m)| !ctx.is_failed(v.zone.home(s, m.col as usize).disk))
                .map(|(s, m)| (s, m.col))
                .collect();
            if r.queue.is_empty() && v.rebuild_running == 0 {
                r.done_at = Some(ctx.now);
            } else if idle_pass {
                // The last pass found only stripes it could not copy: wait for them to
                // settle (convert or free) rather than spin.
                r.next_at = ctx.now + 10_000_000;
            }
            v.rebalance = Some(r);
            return false;
        }
        let (s, c) = r.queue.pop().expect("non-empty");
        let bs = v.zone.block_size();
        let survivors = ctx.disk_count().max(1) as f64;
        let rate = (self.cfg.conversion.rebuild_bytes_per_sec * survivors).max(1.0);
        v.rebalance = Some(r);
        let went = self.start_column_home(ctx, vol, s, c as usize);
        let r = self.vols[vol].rebalance.as_mut().expect("rebalance");
        if went {
            r.next_at = paced(r.next_at, ctx.now, 2 * bs, rate);
        } else {
            r.deferred += 1;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::Rebuild;

    #[test]
    fn a_finished_rebuild_reads_done_only_once_durable() {
        let r = Rebuild {
            done_at: Some(2_000_000_000),
            started_at: 1_000_000_000,
            moved: 7,
            done_generation: 5,
            ..Default::default()
        };
        let committing = r.describe(100, 4);
        assert!(
            committing.starts_with("committing: 7 blocks moved"),
            "{committing}"
        );
        let done = r.describe(100, 5);
        assert!(done.starts_with("done: 7 blocks moved"), "{done}");
        assert!(done.contains("in 1.000 s"), "{done}");
        // Without a journal everything is durable at once.
        assert!(r.describe(100, u64::MAX).starts_with("done"));
    }
}
