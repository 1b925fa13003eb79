//! Background work: the triggers that start it. Conversion is in `convert.rs`, relocation in
//! `relocate.rs`.

use super::FusionScheme;
use super::config::MIRROR_MOVES_FACTOR;
use super::vol::Vol;
use crate::engine::ctx::Ctx;
use crate::space::StripeState;
use crate::types::Nanos;

/// After an idle look found no compaction worth starting, the next one waits this long.
const IDLE_CLEAN_RETRY_NS: Nanos = 1_000_000_000;
/// Idle compaction moves live data only where it gives back a stripe per three it fills
/// (victims two-thirds live on average, at most): what a trim or a rewrite left behind comes
/// back, while dead pages spread thinly over every stripe (after random overwrites) stay
/// until space is short, when cleaning them costs no more than it must.
const IDLE_MIN_YIELD: f64 = 1.0 / 3.0;

/// How long to wait before scanning again for background work after a scan found none.
const BG_RESCAN_NS: Nanos = 1_000_000;

impl FusionScheme {
    /// Could any background task (running or startable) free stripes in `vol`?
    pub(super) fn background_possible(&self, vol: usize) -> bool {
        let v = &self.vols[vol];
        let dcols = v.zone.dcols();
        v.bg_running > 0
            || v.pairs.set_count() > 0
            || v.holes() >= dcols as u64
            || v.patches.patched_blocks() >= dcols
    }

    /// Start background tasks where the triggers say so, up to the concurrency limit.
    pub(super) fn kick_background(&mut self, ctx: &mut Ctx) {
        if self.stopping() {
            // A clean shutdown: its last checkpoint waits for the jobs in flight only.
            return;
        }
        if ctx.now < self.bg_quiet_until {
            // Every volume would pass the skip test below (this runs after every device
            // completion; most find all volumes quiet). Debug builds (`cargo test` without
            // --release: failures, rebuilds, scrubs, full pools) check it against them.
            debug_assert!(
                ctx.now < self.quiet_until(),
                "a volume needs a kick the cache missed (a change without wake_background)"
            );
            return;
        }
        self.kick_volumes(ctx);
        self.bg_quiet_until = self.quiet_until();
    }

    /// Until when every volume passes `kick_volumes`' skip test, as things stand: no
    /// waiting write, no rebuild, rebalance or scrub, and before its next scan (0 when a
    /// volume needs a kick now). Only `wake_background` can make it earlier.
    fn quiet_until(&self) -> Nanos {
        let mut until = Nanos::MAX;
        for v in &self.vols {
            if !(v.space_waiters.is_empty()
                && v.rebuild.is_none()
                && v.rebalance.is_none()
                && v.scrub.is_none())
            {
                return 0;
            }
            until = until.min(v.next_bg_scan);
        }
        until
    }

    /// Something happened that the cached `bg_quiet_until` does not account for (a volume
    /// may need a kick before it): forget it.
    pub(super) fn wake_background(&mut self) {
        self.bg_quiet_until = 0;
    }

    fn kick_volumes(&mut self, ctx: &mut Ctx) {
        for vol in 0..self.vols.len() {
            let v = &self.vols[vol];
            if v.space_waiters.is_empty()
                && v.rebuild.is_none()
                && v.rebalance.is_none()
                && v.scrub.is_none()
                && ctx.now < v.next_bg_scan
            {
                // Nothing waits, nothing is being restored or checked, and the last scan is
                // recent: every step below would find nothing (this runs on every device
                // completion, for every volume).
                continue;
            }
            if !self.vols[vol].space_waiters.is_empty() {
                // Something finished: maybe space came back (re-planning every waiting write
                // on every event when nothing changed would cost more than the writes).
                let v = &self.vols[vol];
                if v.space_mark() != v.waiters_mark {
                    self.retry_space_waiters(ctx, vol);
                }
            }
            // The rebuild first, with its own concurrency (one job per member by default),
            // so a big pool rebuilds with all of its members at once.
            let rebuild_limit = match self.cfg.conversion.rebuild_concurrent {
                0 => ctx.disk_count(),
                n => n,
            };
            while self.vols[vol].rebuild_running < rebuild_limit
                && self.rebuild_due(ctx, vol)
                && self.start_rebuild(ctx, vol)
            {}
            while self.vols[vol].rebuild_running < rebuild_limit
                && self.rebalance_due(ctx, vol)
                && self.start_rebalance(ctx, vol)
            {}
            self.kick_scrub(ctx, vol);
            // A scan that found nothing startable is not repeated for a millisecond unless a
            // background task finished meanwhile, even while writes wait: each scan sweeps
            // part of the BMT, and repeating it on every completion would starve the
            // foreground of CPU without finding anything new.
            if ctx.now < self.vols[vol].next_bg_scan {
                continue; // (waiting writes are judged after a scan, never without one)
            }
            let commits_succeed = !self.journal_failing();
            let stuck = |v: &Vol| {
                !v.space_waiters.is_empty()
                    && v.bg_running == 0
                    && v.rebuild_running == 0
                    && !v.room_on_the_way(commits_succeed)
            };
            for _round in 0..2 {
                self.scan_background(ctx, vol);
                let v = &self.vols[vol];
                if !stuck(v) || v.space_mark() == v.waiters_mark {
                    break;
                }
                // The scan itself made room (closing a set with nothing live frees it at
                // once): try the waiters again, and scan once more for what they need.
                self.retry_space_waiters(ctx, vol);
            }
            if stuck(&self.vols[vol])
                && self.remap_free_stripes(ctx, vol, 64, super::column::DonorUse::FreeStripe) > 0
            {
                // Free stripes touching a failed member became usable.
                self.retry_space_waiters(ctx, vol);
            }
            if stuck(&self.vols[vol]) {
                // Nothing runs and nothing could start. Patches that chose to wait for the
                // replicated area take a zero-padded stripe instead; writes that found no
                // room even so fail: the pool is full for them.
                let waiters = std::mem::take(&mut self.vols[vol].space_waiters);
                for h in waiters {
                    if let Some(super::jobs::Job::Write(w)) = self.jobs.get_mut(h)
                        && w.may_wait
                    {
                        w.may_wait = false;
                        self.run_write(ctx, h);
                    } else {
                        let e = self.no_room_error();
                        self.fail_write(ctx, h, e);
                    }
                }
            }
        }
    }

    /// Start conversions and relocations in `vol` while the triggers call for them and the
    /// concurrency limit allows.
    fn scan_background(&mut self, ctx: &mut Ctx, vol: usize) {
        let pol = self.cfg.conversion.clone();
        self.convert_mirror_sets(ctx, vol);
        loop {
            let v = &self.vols[vol];
            // At the replicated area's hard cap small writes would fall back to zero-padded
            // stripes (write amplification of a whole stripe per block): conversion then
            // runs regardless of the foreground pause, and with more of it in flight.
            let at_cap =
                v.stripes.count(StripeState::Replica) + v.set_stripes() > v.max_replica_stripes;
            let base = if v.cfg.level.is_mirror() {
                pol.max_concurrent * MIRROR_MOVES_FACTOR
            } else {
                pol.max_concurrent
            };
            let limit = if at_cap { base * 4 } else { base };
            if v.bg_running >= limit {
                break;
            }
            // Writes wait for room, or the rebuild found no spare block to rebuild into:
            // conversion and cleaning run whatever the other triggers say.
            let starving =
                !v.space_waiters.is_empty() || v.rebuild.as_ref().is_some_and(|r| r.stalled);
            let low_space = v.low_on_space(pol.spare_low_water);
            let rep_full = v.stripes.count(StripeState::Replica) as f64
                >= pol.replicated_high_water * v.max_replica_stripes as f64;
            let idle = pol
                .idle_ns
                .is_some_and(|i| ctx.now >= self.last_user_at + i);
            let mut started = false;
            let triggered = pol.enabled && (low_space || rep_full || idle);
            if triggered || starving || at_cap {
                started = self.start_conversion(
                    ctx,
                    vol,
                    starving || at_cap,
                    starving || (idle && self.vols[vol].bg_running == 0),
                );
            }
            if !started {
                started = self.start_repair(ctx, vol);
            }
            if !started && (starving || low_space) {
                let room = limit - self.vols[vol].bg_running;
                started = self.start_relocation(ctx, vol, room, 0.0);
            }
            // An idle volume compacts the holes and dead pages that overwrites, trims and
            // zeroing left, so their space shows as free and the next burst finds it ready
            // (every plan gives stripes back). After a fruitless look with nothing else
            // moving it waits until the mappings change.
            let v = &self.vols[vol];
            if !started
                && pol.enabled
                && idle
                && v.idle_clean_wanted()
                && ctx.now >= v.idle_clean_after
            {
                let room = limit - self.vols[vol].bg_running;
                started = self.start_relocation(ctx, vol, room, IDLE_MIN_YIELD);
                let v = &mut self.vols[vol];
                if !started && v.bg_running == 0 {
                    // (With moves in flight, their completions look again.)
                    v.idle_clean_after = ctx.now + IDLE_CLEAN_RETRY_NS;
                    v.idle_clean_mark = Some(v.mapping_changes);
                }
            }
            if !started {
                // Nothing startable now; look again in a millisecond.
                self.vols[vol].next_bg_scan = ctx.now + BG_RESCAN_NS;
                break;
            }
        }
    }
}
