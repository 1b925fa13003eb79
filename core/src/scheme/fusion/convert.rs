//! In-position conversion (paper §4.2, Fig. 7): a settled pair set becomes a parity stripe
//! in place of one of its copies. The kept stripe's data columns are read, parity computed
//! and written into its parity columns, and the other copies' stripes become free. A mirror
//! volume's set is one stripe whose columns are its copies: it converts without I/O, as
//! soon as it settles (`convert_mirror_sets`).

use super::FusionScheme;
use super::jobs::{ConvertJob, Job, JobId};
use super::pairs::{PairSet, SlotState};
use super::stripe_parity::push_parity;
use super::vol::Vol;
use super::write::write_columns;
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::policy::BackgroundAdmission;
use crate::space::StripeState;
use crate::types::{DiskId, Nanos};
use crate::volume::Loc;

/// How long a set whose conversion found a bad page waits before it is tried again.
const CONVERT_RETRY_NS: Nanos = 100_000_000;

/// The copy a conversion keeps: the stripe with the fewest lost columns (on failed members
/// or stale; at most what parity covers), then the fewest unresponsive members.
fn kept_stripe(ctx: &Ctx, v: &Vol, set: &PairSet) -> Option<usize> {
    let score = |i: usize| {
        let ds = v.zone.stripe_disk_list(set.stripes[i]);
        (
            v.lost_mask(ctx, set.stripes[i]).count_ones() as usize,
            ds.iter().filter(|&&d| ctx.is_unresponsive(d)).count(),
        )
    };
    (0..set.copies as usize)
        .filter(|&i| score(i).0 <= v.zone.nparity())
        .min_by_key(|&i| score(i))
}

/// Every live copy in the kept stripe must be readable from some copy.
fn every_live_copy_readable(ctx: &Ctx, v: &Vol, set: &PairSet) -> bool {
    set.slots.iter().all(|sl| {
        !sl.state.holds_data()
            || (0..set.copies as usize)
                .any(|j| !v.column_lost(ctx, set.stripes[j], sl.cols[j] as usize))
    })
}

/// Where data column `c` of the kept stripe is read from: itself, or, on a failed member,
/// another copy when the column is live. None when it is not: it counts as zeros (nobody
/// will read it, and a rebuild recreates exactly that).
fn column_source(ctx: &Ctx, v: &Vol, set: &PairSet, keep: usize, c: usize) -> Option<(u32, usize)> {
    let stripe = set.stripes[keep];
    if !v.column_lost(ctx, stripe, c) {
        return Some((stripe, c));
    }
    set.slots
        .iter()
        .find(|sl| sl.cols[keep] as usize == c && sl.state.holds_data())
        .and_then(|sl| {
            (0..set.copies as usize)
                .map(|j| (set.stripes[j], sl.cols[j] as usize))
                .find(|&(s2, c2)| !v.column_lost(ctx, s2, c2))
        })
}

/// A conversion just wrote the parity columns of `stripe` on every member not failed: stale
/// ones among them hold their contents now.
fn restore_parity(ctx: &Ctx, v: &mut Vol, stripe: u32) {
    if !v.cfg.level.is_mirror() {
        let parity = (v.zone.dcols()..v.zone.width())
            .filter(|&c| !ctx.is_failed(v.zone.disk(stripe, c)))
            .fold(0u32, |m, c| m | 1 << c);
        v.restore_columns(stripe, parity);
    }
}

impl FusionScheme {
    /// `memo` remembers each disk's answer for one scan (0 = not asked yet): a scan looks
    /// at up to 64 candidate sets, mostly on the same few busy disks.
    fn busy_disk(&self, ctx: &Ctx, disks: &[DiskId], memo: &mut [u8]) -> bool {
        let admission = &self.policy.admission;
        let members = ctx.members();
        disks.iter().any(|&d| {
            if memo[d.index()] == 0 {
                memo[d.index()] = 1 + !admission.may_convert_on(&members, d) as u8;
            }
            memo[d.index()] == 2
        })
    }

    /// The copy a conversion keeps so that admission lets it write the parity: `keep` when
    /// its parity members may take writes now (always, for the paper's policies), else another
    /// healthy copy whose members may; None to wait. `force` takes `keep` as it is.
    fn parity_admitted(
        &self,
        ctx: &Ctx,
        v: &Vol,
        set: &super::pairs::PairSet,
        keep: usize,
        force: bool,
    ) -> Option<usize> {
        let admission = &self.policy.admission;
        let members = ctx.members();
        let dcols = v.zone.dcols();
        let writable = |k: usize| {
            let disks = v.zone.stripe_disk_list(set.stripes[k]);
            disks[dcols..]
                .iter()
                .all(|&d| admission.may_write_on(&members, d))
                && (k == keep || v.lost_mask(ctx, set.stripes[k]) == 0)
        };
        if force || writable(keep) {
            return Some(keep);
        }
        (0..set.copies as usize).find(|&k| k != keep && writable(k))
    }

    /// `force`: ignore the foreground pause; `close_open`: with no settled set, close a
    /// partly used one (writes wait for space, or the volume is idle and nothing else
    /// would ever settle it).
    pub(super) fn start_conversion(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        force: bool,
        close_open: bool,
    ) -> bool {
        let cand = self.pick_conversion(ctx, vol, force);
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
        self.launch_conversion(ctx, vol, id, keep);
        true
    }

    /// A mirror volume converts every settled set at once: only the mapping changes, and a
    /// converted stripe is one the cleaner can compact.
    pub(super) fn convert_mirror_sets(&mut self, ctx: &mut Ctx, vol: usize) {
        if !self.vols[vol].cfg.level.is_mirror() {
            return;
        }
        // Each conversion takes its set out of the candidates; the bound only guards.
        for _ in 0..self.vols[vol].pairs.lru_len() {
            if !self.start_conversion(ctx, vol, true, false) {
                break;
            }
        }
    }

    /// The oldest settled pair set that may convert now, and which of its stripes it keeps.
    /// `force` ignores background admission (writes wait for the space).
    fn pick_conversion(&self, ctx: &Ctx, vol: usize, force: bool) -> Option<(u32, usize)> {
        let v = &self.vols[vol];
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
            if v.cfg.level.is_mirror() {
                // No I/O to admit: the copies are the stripe's columns already. Column 0
                // becomes the data, readable from the others if its member failed.
                if healthy || kept_stripe(ctx, v, set).is_some() {
                    return Some((id, 0));
                }
                continue;
            }
            let keep = if healthy {
                Some(0)
            } else {
                kept_stripe(ctx, v, set)
            };
            let Some(keep) = keep else { continue };
            let Some(keep) = self.parity_admitted(ctx, v, set, keep, force) else {
                continue;
            };
            let disks = v.zone.stripe_disk_list(set.stripes[keep]);
            // A set with copies in an HDD log converts only keeping copy 0 (never
            // offloaded), read whole from its own members: the other copies' SSD places
            // hold holes where a copy went to a log.
            if v.offloaded.has(id) && (keep != 0 || v.lost_mask(ctx, set.stripes[keep]) != 0) {
                continue;
            }
            if !force && self.busy_disk(ctx, &disks, &mut memo) {
                continue; // paper: conversion pauses while a disk is busy with foreground I/O
            }
            if healthy || every_live_copy_readable(ctx, v, set) {
                return Some((id, keep));
            }
        }
        None
    }

    /// Converts pair set `id` into a parity stripe in place of its copy `keep`: reads every
    /// data column as it is on disk, dead copies and never-written blocks included, since
    /// parity must describe the stripe's actual content (paper Fig. 7).
    fn launch_conversion(&mut self, ctx: &mut Ctx, vol: usize, id: u32, keep: usize) {
        let v = &mut self.vols[vol];
        v.pairs.set_mut(id).converting = true;
        v.pairs.refresh(id);
        let set = v.pairs.set(id).clone();
        let (width, dcols, bs) = (v.zone.width(), v.zone.dcols(), v.zone.block_size());
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
        if v.cfg.level.is_mirror() {
            // Every column holds the same pages already: the parity is in place.
            return self.finish_conversion(ctx, h);
        }
        let mut n = 0;
        for c in 0..dcols {
            let Some((s2, c2)) = column_source(ctx, v, &set, keep, c) else {
                continue;
            };
            let (disk, off) = v.zone.device_offset(s2, c2, 0);
            let op = DevOp::Read {
                offset: off,
                len: bs,
            };
            let tag = h.tag(c as u32);
            ctx.issue(disk, op, tag, true);
            n += 1;
        }
        let Some(Job::Convert(j)) = self.jobs.get_mut(h) else {
            unreachable!()
        };
        j.pending = n;
        if n == 0 {
            self.convert_write_parity(ctx, h);
        }
    }

    pub(super) fn convert_io_done(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        let Some(Job::Convert(j)) = self.jobs.get_mut(JobId::of(tag)) else {
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
            let _ = self.jobs.remove(JobId::of(tag));
            let v = &mut self.vols[vol];
            v.bg_running -= 1;
            v.next_bg_scan = 0; // a finished task changes what can start
            self.bg_quiet_until = 0; // (wake_background, with `v` borrowed)
            v.pairs.set_mut(id).converting = false;
            v.settle_set(id, ctx.now);
            return;
        }
        if writing {
            self.finish_conversion(ctx, JobId::of(tag));
        } else if !self.kept_copy_verifies(ctx, JobId::of(tag)) {
            // The copy that would stay has bad pages: converting would make parity from
            // them and drop the good copy. Give the set back; its blocks move (repair)
            // from the good copy, and the set converts later.
            let _ = self.jobs.remove(JobId::of(tag));
            let v = &mut self.vols[vol];
            v.bg_running -= 1;
            v.next_bg_scan = 0;
            self.bg_quiet_until = 0; // (wake_background, with `v` borrowed)
            let set = v.pairs.set_mut(id);
            set.converting = false;
            set.convert_after = ctx.now + CONVERT_RETRY_NS;
            v.settle_set(id, ctx.now);
        } else {
            self.convert_write_parity(ctx, JobId::of(tag));
        }
    }

    /// Check the live pages of the columns a conversion read (the copy it keeps) against
    /// their checksums; queue the blocks of bad ones for repair.
    fn kept_copy_verifies(&mut self, ctx: &mut Ctx, h: JobId) -> bool {
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
    fn convert_write_parity(&mut self, ctx: &mut Ctx, h: JobId) {
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
            let mut cols: Vec<Vec<u8>> = j.cols[..dcols]
                .iter_mut()
                .map(|c| c.take().unwrap_or_else(|| vec![0u8; bs as usize]))
                .collect();
            push_parity(&mut cols, width - dcols);
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
    fn finish_conversion(&mut self, ctx: &mut Ctx, h: JobId) {
        let Some(Job::Convert(j)) = self.jobs.remove(h) else {
            unreachable!()
        };
        let v = &mut self.vols[j.vol];
        v.bg_running -= 1;
        v.next_bg_scan = 0; // a finished task changes what can start
        self.bg_quiet_until = 0; // (wake_background, with `v` borrowed)
        let keep = j.keep;
        let set = v.pairs.remove(j.set);
        v.offloaded.set_gone(j.set);
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
        restore_parity(ctx, v, stripe);
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
        for (i, &s) in set.distinct_stripes().iter().enumerate() {
            if i != keep && s != stripe {
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
