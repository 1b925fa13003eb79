//! Rebuild after a member failure, onto distributed spare space.
//!
//! Every user block with a location on a stripe that touches a failed member (a RAID stripe
//! with any column there, parity included, or a pair set with a stripe there) is moved by the
//! relocation machinery into a fresh full stripe on survivors only. Its reads reconstruct
//! from the surviving columns (or the surviving copy), and both reads and new stripes are
//! spread over every survivor by the declustered layout, so the rebuild uses the whole pool:
//! it gets faster as the pool grows instead of being bound by one replacement disk.
//!
//! The BMT is swept from a cursor (no reverse map); a rebuild is done when a whole sweep
//! finds nothing left and no relocation is in flight. It is paced by
//! `ConversionPolicy::rebuild_bytes_per_sec` and runs up to `rebuild_concurrent` moves at
//! once (default: one per member).

use super::FusionScheme;
use super::vol::Vol;
use crate::engine::ctx::Ctx;
use crate::types::{DiskId, Nanos};
use crate::volume::Loc;

/// Progress of one volume's rebuild.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rebuild {
    pub started_at: Nanos,
    pub done_at: Option<Nanos>,
    /// User blocks moved off failed members so far.
    pub moved: u64,
    /// BMT entries swept since the last candidate was found.
    clean_scan: u64,
    cursor: u64,
    next_at: Nanos,
    /// The last move found no free stripe clear of the failed members.
    stalled: bool,
}

impl Rebuild {
    pub fn describe(&self, blocks: u64) -> String {
        match self.done_at {
            Some(t) => format!(
                "done: {} blocks moved in {:.3} s",
                self.moved,
                (t - self.started_at) as f64 / 1e9
            ),
            None if self.stalled => format!(
                "stalled after {} blocks: no free stripe avoids the failed members (the zone \
                 needs more spare space; serving degraded meanwhile)",
                self.moved
            ),
            None => format!(
                "rebuilding: {} blocks moved, clean sweep {}%",
                self.moved,
                (self.clean_scan * 100 / blocks.max(1)).min(100)
            ),
        }
    }
}

/// Does location `loc` of a volume sit on a stripe touching one of `failed`?
fn on_failed(v: &Vol, loc: Loc, failed: &[DiskId]) -> bool {
    let touches = |s: u32| failed.iter().any(|&d| v.zone.touches(s, d));
    match loc {
        Loc::Unmapped => false,
        Loc::Raid(f) => touches(v.zone.split(f).0),
        Loc::Rep(k) => v
            .pairs
            .lookup(&v.zone, k)
            .is_some_and(|r| v.pairs.set(r.set).stripes().iter().any(|&s| touches(s))),
    }
}

/// Does user block `ub` (its base or any patch) have data on a stripe touching `failed`?
fn block_on_failed(v: &Vol, ub: u64, failed: &[DiskId]) -> bool {
    let e = v.bmt.get(ub);
    on_failed(v, e.base, failed)
        || (e.patched
            && v.patches
                .get(ub)
                .iter()
                .any(|n| on_failed(v, n.loc(), failed)))
}

impl FusionScheme {
    /// Is any user block stored on a stripe touching `disk`? (Spare slots of open pair sets
    /// there hold nothing and may stay.)
    pub(super) fn stored_on(&self, disk: DiskId) -> bool {
        self.vols
            .iter()
            .any(|v| (0..v.blocks).any(|ub| block_on_failed(v, ub, &[disk])))
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
    }

    /// When the next rebuild step may start (the background rescan period at the soonest).
    pub(super) fn rebuild_deadline(&self, now: Nanos) -> Option<Nanos> {
        self.vols
            .iter()
            .filter_map(|v| v.rebuild.as_ref().filter(|r| r.done_at.is_none()))
            .map(|r| r.next_at.max(now + 1_000_000))
            .min()
    }

    pub(super) fn rebuild_due(&self, ctx: &Ctx, vol: usize) -> bool {
        self.vols[vol]
            .rebuild
            .as_ref()
            .is_some_and(|r| r.done_at.is_none() && ctx.now >= r.next_at)
    }

    /// Sweep for blocks on failed members and move up to one stripe's worth of them.
    pub(super) fn start_rebuild(&mut self, ctx: &mut Ctx, vol: usize) -> bool {
        let failed: Vec<DiskId> = (0..ctx.disk_count() as u32)
            .map(DiskId)
            .filter(|&d| ctx.is_failed(d))
            .collect();
        let v = &mut self.vols[vol];
        let dcols = v.zone.dcols();
        let blocks = v.blocks;
        let mut r = v.rebuild.take().expect("rebuild in progress");
        let mut picked = Vec::with_capacity(dcols);
        for _ in 0..blocks.min(65_536) {
            let ub = r.cursor;
            r.cursor = (r.cursor + 1) % blocks;
            r.clean_scan += 1;
            if block_on_failed(v, ub, &failed) {
                r.clean_scan = 0;
                if v.relocating.contains(&ub) {
                    continue; // being moved already; the sweep looks again where it lands
                }
                picked.push(ub);
                if picked.len() == dcols {
                    break;
                }
            }
        }
        if picked.is_empty() {
            if r.clean_scan >= blocks && v.rebuild_running == 0 {
                r.done_at = Some(ctx.now);
            }
            v.rebuild = Some(r);
            return false;
        }
        let bytes = picked.len() as u64 * v.zone.block_size();
        let survivors = (ctx.disk_count() - failed.len()).max(1) as f64;
        let rate = (self.cfg.conversion.rebuild_bytes_per_sec * survivors).max(1.0);
        r.next_at = r.next_at.max(ctx.now) + (bytes as f64 / rate * 1e9) as Nanos;
        let n = picked.len() as u64;
        self.vols[vol].rebuild = Some(r);
        let started = self.launch_relocation(ctx, vol, picked, true);
        if let Some(r) = self.vols[vol].rebuild.as_mut() {
            r.stalled = !started;
            if started {
                r.moved += n;
            }
        }
        started
    }
}
