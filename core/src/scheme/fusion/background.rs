//! Background work: the triggers that start it, and in-position conversion of replica pair
//! sets to parity stripes (paper §4.2, Fig. 7). Relocation is in `relocate.rs`.

use super::FusionScheme;
use super::jobs::{ConvertJob, Job};
use super::pairs::SlotState;
use super::stripe_parity::fill_parity;
use super::vol::Vol;
use super::write::write_columns;
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::space::StripeState;
use crate::types::{DiskId, Nanos};
use crate::volume::Loc;

/// After an idle look found no compaction worth starting, the next one waits this long.
const IDLE_CLEAN_RETRY_NS: Nanos = 1_000_000_000;
/// Idle compaction moves live data only where it gives back a stripe per three it fills
/// (victims two-thirds live on average, at most): what a trim or a rewrite left behind comes
/// back, while dead pages spread thinly over every stripe (after random overwrites) stay
/// until space is short, when cleaning them costs no more than it must.
const IDLE_MIN_YIELD: f64 = 1.0 / 3.0;

/// How long to wait before scanning again for background work after a scan found none.
const BG_RESCAN_NS: Nanos = 1_000_000;
/// How long a set whose conversion found a bad page waits before it is tried again.
const CONVERT_RETRY_NS: Nanos = 100_000_000;

impl FusionScheme {
    /// Could any background task (running or startable) free stripes in `vol`?
    pub(super) fn background_possible(&self, vol: usize) -> bool {
        let v = &self.vols[vol];
        let dcols = v.zone.dcols();
        v.bg_running > 0
            || (self.cfg.conversion.enabled && v.pairs.set_count() > 0)
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
        loop {
            let v = &self.vols[vol];
            // At the replicated area's hard cap small writes would fall back to zero-padded
            // stripes (write amplification of a whole stripe per block): conversion then
            // runs regardless of the foreground pause, and with more of it in flight.
            let at_cap =
                v.stripes.count(StripeState::Replica) + v.copies() as u64 > v.max_replica_stripes;
            let limit = if at_cap {
                pol.max_concurrent * 4
            } else {
                pol.max_concurrent
            };
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
            if pol.enabled && (starving || at_cap || low_space || rep_full || idle) {
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

    /// `memo` remembers each disk's answer for one scan (0 = not asked yet): a scan looks
    /// at up to 64 candidate sets, mostly on the same few busy disks.
    fn busy_disk(&self, ctx: &Ctx, disks: &[DiskId], memo: &mut [u8]) -> bool {
        let admission = &*self.policy.admission;
        let members = ctx.members();
        disks.iter().any(|&d| {
            if memo[d.index()] == 0 {
                memo[d.index()] = 1 + !admission.may_convert_on(&members, d) as u8;
            }
            memo[d.index()] == 2
        })
    }

    /// `force`: ignore the foreground pause; `close_open`: with no settled set, close a
    /// partly used one (writes wait for space, or the volume is idle and nothing else
    /// would ever settle it).
    fn start_conversion(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        force: bool,
        close_open: bool,
    ) -> bool {
        let v = &self.vols[vol];
        let nparity = v.zone.nparity();
        // The candidates (`oldest` looks at `OLDEST_SCAN` at most).
        let mut ids = [0u32; super::pairs::OLDEST_SCAN];
        let mut n_ids = 0;
        v.pairs.oldest(|id, _| {
            if n_ids < ids.len() {
                ids[n_ids] = id;
                n_ids += 1;
            }
            false
        });
        let mut cand = None;
        let mut memo = vec![0u8; ctx.disk_count()];
        // With no member failed or slow (the usual case) every copy scores (0, 0), so the
        // first is kept, and every copy is readable: the scan, repeated every millisecond
        // while conversion is paused, skips those per-candidate checks.
        let healthy = (0..ctx.disk_count()).all(|d| !ctx.avoid(DiskId(d as u32)));
        for &id in &ids[..n_ids] {
            let set = v.pairs.set(id);
            if set.convert_after > ctx.now {
                continue;
            }
            // Keep the stripe with the fewest failed members (at most what parity covers),
            // then the fewest slow ones.
            let score = |i: usize| {
                let ds = v.zone.stripe_disk_list(set.stripes[i]);
                (
                    ds.iter().filter(|&&d| ctx.is_failed(d)).count(),
                    ds.iter().filter(|&&d| ctx.is_unresponsive(d)).count(),
                )
            };
            let keep = if healthy {
                Some(0)
            } else {
                (0..set.copies as usize)
                    .filter(|&i| score(i).0 <= nparity)
                    .min_by_key(|&i| score(i))
            };
            let Some(keep) = keep else { continue };
            let disks = v.zone.stripe_disk_list(set.stripes[keep]);
            if !force && self.busy_disk(ctx, &disks, &mut memo) {
                continue; // paper: conversion pauses while a disk is busy with foreground I/O
            }
            // Every live copy in the kept stripe must be readable from some copy.
            let readable = healthy
                || set.slots.iter().all(|sl| {
                    !sl.state.holds_data()
                        || (0..set.copies as usize).any(|j| {
                            !ctx.is_failed(v.zone.disk(set.stripes[j], sl.cols[j] as usize))
                        })
                });
            if readable {
                cand = Some((id, keep));
                break;
            }
        }
        if cand.is_none() && close_open {
            // No settled set: close a partially used one so its space can come back.
            let v = &mut self.vols[vol];
            if let Some(id) = v.pairs.closable() {
                if v.close_set(id, ctx.now) {
                    return true;
                }
                return self.start_conversion(ctx, vol, false, false);
            }
        }
        let Some((id, keep)) = cand else { return false };
        let v = &mut self.vols[vol];
        v.pairs.set_mut(id).converting = true;
        v.pairs.refresh(id);
        let set = v.pairs.set(id).clone();
        let stripe = set.stripes[keep];
        let width = v.zone.width();
        let dcols = v.zone.dcols();
        let bs = v.zone.block_size();
        let h = self.jobs.insert(Job::Convert(ConvertJob {
            vol,
            set: id,
            keep,
            cols: vec![None; width],
            pending: 0,
            writing: false,
            failed: false,
        }));
        let v = &mut self.vols[vol];
        v.bg_running += 1;
        // Read every data column as it is on disk, dead copies and never-written blocks
        // included: parity must describe the stripe's actual content (paper Fig. 7). A column
        // on a failed member is read from another copy when it is live, and counts as zeros
        // when it is not (nobody will read it, and a rebuild recreates exactly that).
        let mut n = 0;
        for c in 0..dcols {
            let mut src = Some((stripe, c));
            if ctx.is_failed(v.zone.disk(stripe, c)) {
                src = set
                    .slots
                    .iter()
                    .find(|sl| sl.cols[keep] as usize == c && sl.state.holds_data())
                    .and_then(|sl| {
                        (0..set.copies as usize)
                            .map(|j| (set.stripes[j], sl.cols[j] as usize))
                            .find(|&(s2, c2)| !ctx.is_failed(v.zone.disk(s2, c2)))
                    });
            }
            if let Some((s2, c2)) = src {
                let (disk, off) = v.zone.device_offset(s2, c2, 0);
                ctx.issue(
                    disk,
                    DevOp::Read {
                        offset: off,
                        len: bs,
                    },
                    IoTag {
                        job: h,
                        part: c as u32,
                    },
                    true,
                );
                n += 1;
            }
        }
        let Some(Job::Convert(j)) = self.jobs.get_mut(h) else {
            unreachable!()
        };
        j.pending = n;
        if n == 0 {
            self.convert_write_parity(ctx, h);
        }
        true
    }

    pub(super) fn convert_io_done(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        let Some(Job::Convert(j)) = self.jobs.get_mut(tag.job) else {
            unreachable!()
        };
        j.pending -= 1;
        match result {
            Err(_) => j.failed = true,
            Ok(Some(Data::Bytes(b))) if !j.writing => j.cols[tag.part as usize] = Some(b),
            Ok(_) => {}
        }
        if j.pending > 0 {
            return;
        }
        let vol = j.vol;
        let (id, failed, writing) = (j.set, j.failed, j.writing);
        if failed {
            // A member failed: give the set back untouched; it stays replicated (still
            // redundant where it can be) and a later attempt keeps another stripe.
            let _ = self.jobs.remove(tag.job);
            let v = &mut self.vols[vol];
            v.bg_running -= 1;
            v.next_bg_scan = 0; // a finished task changes what can start
            self.bg_quiet_until = 0; // (wake_background, with `v` borrowed)
            v.pairs.set_mut(id).converting = false;
            v.settle_set(id, ctx.now);
            return;
        }
        if writing {
            self.finish_conversion(ctx, tag.job);
        } else if !self.kept_copy_verifies(ctx, tag.job) {
            // The copy that would stay has bad pages: converting would make parity from
            // them and drop the good copy. Give the set back; its blocks move (repair)
            // from the good copy, and the set converts later.
            let _ = self.jobs.remove(tag.job);
            let v = &mut self.vols[vol];
            v.bg_running -= 1;
            v.next_bg_scan = 0;
            self.bg_quiet_until = 0; // (wake_background, with `v` borrowed)
            let set = v.pairs.set_mut(id);
            set.converting = false;
            set.convert_after = ctx.now + CONVERT_RETRY_NS;
            v.settle_set(id, ctx.now);
        } else {
            self.convert_write_parity(ctx, tag.job);
        }
    }

    /// Check the live pages of the columns a conversion read (the copy it keeps) against
    /// their checksums; queue the blocks of bad ones for repair.
    fn kept_copy_verifies(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        let Some(Job::Convert(j)) = self.jobs.get(h) else {
            unreachable!()
        };
        let v = &self.vols[j.vol];
        if ctx.size_only || !v.sums.active() {
            return true;
        }
        let set = v.pairs.set(j.set);
        let mut bad = Vec::new();
        for (i, sl) in set.slots.iter().enumerate() {
            let Some(data) = &j.cols[sl.cols[j.keep] as usize] else {
                continue; // not read: a dead column on a failed member
            };
            let r = super::pairs::SlotRef {
                set: j.set,
                slot: i as u16,
            };
            let loc = Loc::Rep(v.pairs.key(&v.zone, r));
            bad.extend(v.bad_owners(&v.slot_owners(r), loc, data));
        }
        let vol = j.vol;
        ctx.stats.checksum_errors += bad.len() as u64;
        for &ub in &bad {
            self.vols[vol].queue_repair(ub);
        }
        bad.is_empty()
    }

    /// Fill the parity of the kept stripe.
    fn convert_write_parity(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Convert(j)) = self.jobs.get_mut(h) else {
            unreachable!()
        };
        let v = &self.vols[j.vol];
        let stripe = v.pairs.set(j.set).stripes[j.keep];
        let width = v.zone.width();
        let dcols = v.zone.dcols();
        let bs = v.zone.block_size();
        let payloads: Vec<Data> = if ctx.size_only {
            vec![Data::Size(bs); width - dcols]
        } else {
            let mut cols: Vec<Vec<u8>> = j
                .cols
                .iter_mut()
                .map(|c| c.take().unwrap_or_else(|| vec![0u8; bs as usize]))
                .collect();
            fill_parity(&mut cols, width - dcols);
            cols.drain(dcols..).map(Data::Bytes).collect()
        };
        j.writing = true;
        // Degraded parity columns are skipped: the data columns are all readable.
        let n = write_columns(ctx, &v.zone, h, stripe, dcols, payloads);
        j.pending = n;
        if n == 0 {
            self.finish_conversion(ctx, h);
        }
    }

    /// Parity is on disk: the kept stripe's live copies become RAID data (W: 1 -> 0), the
    /// other stripes are reclaimed and the set leaves the BPT.
    fn finish_conversion(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Convert(j)) = self.jobs.remove(h) else {
            unreachable!()
        };
        let v = &mut self.vols[j.vol];
        v.bg_running -= 1;
        v.next_bg_scan = 0; // a finished task changes what can start
        self.bg_quiet_until = 0; // (wake_background, with `v` borrowed)
        let keep = j.keep;
        let set = v.pairs.remove(j.set);
        let stripe = set.stripes[keep];
        let mut mask = 0u32;
        let mut moves = Vec::new();
        for (i, slot) in set.slots.iter().enumerate() {
            let key = v.zone.flbn(set.stripes[0], slot.cols[0] as usize);
            let col = slot.cols[keep] as usize;
            let flbn = v.zone.flbn(stripe, col);
            match slot.state {
                SlotState::Live(ub) => {
                    mask |= 1 << col;
                    moves.push((ub, key, flbn));
                }
                SlotState::Packed => {
                    let owners = v.packs.take_owners(super::pairs::SlotRef {
                        set: j.set,
                        slot: i as u16,
                    });
                    assert!(!owners.is_empty(), "packed slot without owners");
                    mask |= 1 << col;
                    if owners.len() > 1 {
                        v.raid_extra.insert(flbn, owners.len() as u16 - 1);
                    }
                    moves.extend(owners.into_iter().map(|ub| (ub, key, flbn)));
                }
                _ => {}
            }
        }
        v.stripes.set_state(stripe, StripeState::Raid);
        v.note_stripe(ctx, stripe);
        v.stripes.set_valid_mask(stripe, mask);
        v.raid_valid_blocks += mask.count_ones() as u64;
        // The retargets of one conversion are one journal group: replayed all or none.
        self.drain_log(j.vol);
        let v = &mut self.vols[j.vol];
        for (ub, key, flbn) in moves {
            v.record(|vol| crate::meta::Record::Retarget {
                vol,
                ub,
                from: Loc::Rep(key),
                to: Loc::Raid(flbn),
            });
            let e = v.bmt.get(ub);
            if e.base == Loc::Rep(key) {
                v.bmt.set(
                    ub,
                    crate::volume::Entry {
                        base: Loc::Raid(flbn),
                        patched: e.patched,
                    },
                );
            }
            v.patches.replace_loc(ub, Loc::Rep(key), Loc::Raid(flbn));
            assert!(
                v.references(ub, Loc::Raid(flbn)),
                "converted slot not referenced by its owner"
            );
        }
        for (i, &s) in set.stripes().iter().enumerate() {
            if i != keep {
                v.stripes.set_state(s, StripeState::Free);
            }
        }
        if mask == 0 {
            v.stripes.set_state(stripe, StripeState::Free);
        }
        self.drain_log(j.vol);
        ctx.stats.conversions += 1;
    }
}
