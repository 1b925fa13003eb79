//! Column jobs: rebuild the lost columns of one RAID stripe into donor blocks after a member
//! failed, or copy one remapped column back to its home block once the member's slot holds
//! a new device (`space/remap.rs` has the idea).
//!
//! A column that is stale rather than on a failed member (its member was replaced by a
//! blank device while the column still held data: `space/stale.rs`) is rebuilt in place:
//! the same job writes it where it is, and a `Restored` record follows the write as a
//! `Remap` follows a donor's (so the commit flushes it first).
//!
//! A rebuild job pins its stripe, reserves one donor column per lost column (on a healthy
//! member the stripe does not use), reads every surviving column whole, reconstructs the
//! lost ones from parity and writes them to the donors. Only when those writes completed
//! does the zone point the columns at the donors and a `Remap` record go to the journal;
//! the commit that makes the record durable first flushes the donors' members (durable.rs),
//! so a recovered remap always finds its data. A crash before that leaves the donor stripe
//! free on recovery and the stripe degraded, as it was.
//!
//! A RAID stripe's columns never change while it is pinned (all writes go to free stripes;
//! the scrub skips stripes with a column job), so reading and copying them is safe without
//! locks. A copy home runs only on RAID stripes for the same reason; a free stripe's remap
//! is dropped without copying, and a stripe in a pair set or in flight waits for a later
//! pass.

use super::FusionScheme;
use super::jobs::{ColumnJob, ColumnMode, Job, JobId};
use super::vol::Vol;
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::meta::Record;
use crate::space::{Moved, StripeState, Zone};
use crate::types::DiskId;
use std::ops::Not;

/// Tag part bit of a job's writes (reads use the column index).
const WRITE_PART: u32 = 1 << 16;
/// Open donor stripes a placement looks at before taking a new one.
const DONOR_SCAN: usize = 16;

/// What a rebuild could do for one stripe.
#[derive(Debug, PartialEq, Eq)]
pub enum ColumnStart {
    Started,
    /// A column job for the stripe is in flight already.
    Running,
    /// More columns lost than parity covers: nothing can bring them back.
    Lost,
    /// No donor column fits: move the stripe's blocks instead.
    NoDonor,
}

/// May column `c` of free stripe `t` take a rebuilt column that must avoid `forbidden`?
fn fits(z: &Zone, ctx: &Ctx, forbidden: &[DiskId], t: u32, c: usize) -> bool {
    let d = z.home(t, c).disk;
    z.remaps().lent(t) & (1 << c) == 0 && !ctx.is_failed(d) && !forbidden.contains(&d)
}

/// What a donor column is for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum DonorUse {
    /// A RAID stripe's lost column, rebuilt into it. New donor stripes are taken only while
    /// the volume keeps twice its write reserve, so rebuilding never starves user writes of
    /// room (the caller then moves blocks instead, or waits), and may be clear of the failed
    /// members (which writes could use whole).
    Rebuild,
    /// A free stripe's lost column, so writes find stripes clear of the failed members;
    /// new donors under the same condition as for a rebuild.
    FreeStripe,
    /// The same for a move of the rebuild's cleaner, at any fill: each lent column wins
    /// back a whole stripe clear of the failed members, where the cleaner can move blocks
    /// without giving the rebuild more to move (the donor is a stripe touching a failed
    /// member).
    CleanerTarget,
}

/// Reserve a donor column on a healthy member not in `forbidden` (which it joins).
fn pick_donor(
    v: &mut Vol,
    ctx: &Ctx,
    forbidden: &mut Vec<DiskId>,
    using: DonorUse,
) -> Option<(u32, u8)> {
    let clear_ok = using == DonorUse::Rebuild;
    let width = v.zone.width();
    let mut i = v.donor_open.len();
    let mut looked = 0;
    while i > 0 && looked < DONOR_SCAN {
        i -= 1;
        let t = v.donor_open[i];
        if v.stripes.state(t) != StripeState::Donor {
            v.donor_open.swap_remove(i); // gave everything back meanwhile
            continue;
        }
        looked += 1;
        if let Some(c) = (0..width).find(|&c| fits(&v.zone, ctx, forbidden, t, c)) {
            return Some(lend(v, t, c, forbidden));
        }
        if (0..width).all(|c| fits(&v.zone, ctx, &[], t, c).not()) {
            v.donor_open.swap_remove(i); // nothing left to lend
        }
    }
    // A new donor: preferably a free stripe that touches a failed member, which no write
    // could use anyway.
    let ok =
        |z: &Zone, t: u32| !z.remaps().has(t) && (0..width).any(|c| fits(z, ctx, forbidden, t, c));
    let touches_failed = |z: &Zone, t: u32| (0..width).any(|c| ctx.is_failed(z.home(t, c).disk));
    // Even a stripe touching a failed member may take degraded writes when nothing else is
    // left: new donors for rebuilt columns only while the volume keeps twice its write
    // reserve.
    if using != DonorUse::CleanerTarget && v.stripes.available() < 2 * v.reserve_stripes() {
        return None;
    }
    let t = take_donor(v, |z, t| ok(z, t) && touches_failed(z, t))
        .or_else(|| clear_ok.then(|| take_donor(v, ok)).flatten())?;
    v.donor_open.push(t);
    let c = (0..width)
        .find(|&c| fits(&v.zone, ctx, forbidden, t, c))
        .expect("checked when taken");
    Some(lend(v, t, c, forbidden))
}

/// Take a spare stripe `ok` accepts and make it a donor.
fn take_donor(v: &mut Vol, ok: impl Fn(&Zone, u32) -> bool) -> Option<u32> {
    let Vol { zone, stripes, .. } = v;
    let (t, _) = stripes.take_spare(|t| ok(zone, t))?;
    stripes.set_state(t, StripeState::Donor);
    Some(t)
}

fn lend(v: &mut Vol, t: u32, c: usize, forbidden: &mut Vec<DiskId>) -> (u32, u8) {
    v.zone.remaps_mut().lend(t, c);
    forbidden.push(v.zone.home(t, c).disk);
    (t, c as u8)
}

/// Give back a donor column; a donor that lends nothing any more is a free stripe again.
pub(super) fn unlend(v: &mut Vol, donor: u32, dcol: u8) {
    if v.zone.remaps_mut().unlend(donor, dcol as usize) {
        v.stripes.set_state(donor, StripeState::Free);
    }
}

/// The columns of `stripe` that sit on failed members (wherever they live now).
fn lost_columns(z: &Zone, ctx: &Ctx, stripe: u32) -> Vec<usize> {
    (0..z.width())
        .filter(|&c| ctx.is_failed(z.disk(stripe, c)))
        .collect()
}

/// Reserve a donor column for each of `lost` columns of `stripe` (see `pick_donor`), or
/// none at all.
fn reserve_donors(
    v: &mut Vol,
    ctx: &Ctx,
    stripe: u32,
    lost: &[usize],
    using: DonorUse,
) -> Option<Vec<Moved>> {
    let mut forbidden = v.zone.stripe_disks(stripe);
    let mut moves: Vec<Moved> = Vec::with_capacity(lost.len());
    for &col in lost {
        let Some((donor, dcol)) = pick_donor(v, ctx, &mut forbidden, using) else {
            // Nothing was written to the columns reserved: a donor that lends nothing else
            // goes back to the spare list as it was taken, not freed (no hold for a commit,
            // no discard of blocks that hold what they held).
            for m in moves {
                if v.zone.remaps_mut().unlend(m.donor, m.dcol as usize) {
                    v.stripes.untake(m.donor);
                }
            }
            return None;
        };
        moves.push(Moved {
            col: col as u8,
            donor,
            dcol,
        });
    }
    Some(moves)
}

/// Point a column of `stripe` at the donor column reserved for it, and journal that. An
/// earlier remap of the column (its donor's member failed in turn) is replaced: that donor
/// block is dead.
fn install_remap(v: &mut Vol, stripe: u32, m: Moved) {
    if let Some(old) = v.zone.remaps().get(stripe, m.col as usize) {
        v.zone.remaps_mut().remove(stripe, m.col as usize);
        v.donor_open.retain(|&t| t != old.donor);
        unlend(v, old.donor, old.dcol);
    }
    v.zone.remaps_mut().install(stripe, m);
    v.record(|vol| Record::Remap {
        vol,
        stripe,
        col: m.col,
        donor: m.donor,
        dcol: m.dcol,
    });
}

impl FusionScheme {
    /// Rebuild the columns of RAID stripe `stripe` that sit on failed members into donor
    /// blocks.
    pub(super) fn start_column_rebuild(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        stripe: u32,
    ) -> ColumnStart {
        let v = &mut self.vols[vol];
        // Rows still landing in a row stripe would change the columns under the job: it
        // waits until they are done (the stripe was closed when the member failed).
        if v.columns.contains(&stripe) || v.rows.protects(stripe) {
            return ColumnStart::Running;
        }
        debug_assert_eq!(v.stripes.state(stripe), StripeState::Raid);
        let width = v.zone.width();
        let lost = lost_columns(&v.zone, ctx, stripe);
        let stale = v.stripes.stale(stripe);
        let in_place: Vec<u8> = (0..width)
            .filter(|c| stale & (1 << c) != 0 && !lost.contains(c))
            .map(|c| c as u8)
            .collect();
        if lost.len() + in_place.len() > v.zone.nparity() {
            return ColumnStart::Lost;
        }
        assert!(
            !lost.is_empty() || !in_place.is_empty(),
            "column rebuild of a whole stripe {stripe}"
        );
        let Some(moves) = reserve_donors(v, ctx, stripe, &lost, DonorUse::Rebuild) else {
            return ColumnStart::NoDonor;
        };
        let reads: Vec<usize> = (0..width)
            .filter(|&c| !lost.contains(&c) && !in_place.contains(&(c as u8)))
            .collect();
        self.launch_column(
            ctx,
            ColumnJob {
                vol,
                stripe,
                mode: ColumnMode::Rebuild,
                moves,
                in_place,
                cols: vec![None; width],
                pending: 0,
                writing: false,
                failed: false,
            },
            &reads,
        );
        ColumnStart::Started
    }

    /// Copy column `col` of `stripe` from its donor back to its home block (whose member
    /// is healthy again). Returns false when the stripe can not be copied now.
    pub(super) fn start_column_home(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        stripe: u32,
        col: usize,
    ) -> bool {
        let v = &mut self.vols[vol];
        let Some(m) = v.zone.remaps().get(stripe, col) else {
            return true; // dropped meanwhile
        };
        if v.columns.contains(&stripe) {
            return false;
        }
        if v.rows.protects(stripe) {
            // A row stripe: closed now, copied once its last rows have landed.
            if v.rows.open.is_some_and(|(s, _)| s == stripe) {
                self.close_row_stripe(ctx, vol);
            }
            return false;
        }
        match v.stripes.state(stripe) {
            StripeState::Free if !v.stripes.is_pinned(stripe) => {
                // Nothing lives there: the home block takes the column's next writes.
                drop_remap(v, stripe, m);
                true
            }
            // The donor's member failed too (or was replaced, the column stale): the
            // rebuild restores the column first.
            _ if v.column_lost(ctx, stripe, col) => false,
            StripeState::Raid => {
                let width = v.zone.width();
                self.launch_column(
                    ctx,
                    ColumnJob {
                        vol,
                        stripe,
                        mode: ColumnMode::Home,
                        moves: vec![m],
                        in_place: Vec::new(),
                        cols: vec![None; width],
                        pending: 0,
                        writing: false,
                        failed: false,
                    },
                    &[col],
                );
                true
            }
            StripeState::Replica => {
                // Slot writes and conversion change a pair set's columns in place: empty
                // the set instead (no new slots, its blocks moved away), and drop the
                // remap of the free stripe on a later pass.
                let Some(id) = v.pairs.set_of_stripe(stripe) else {
                    return false;
                };
                if v.pairs.set(id).converting || v.close_set(id, ctx.now) {
                    return false;
                }
                let dcols = v.zone.dcols();
                let mut owners: Vec<u64> = (0..v.pairs.set(id).slots.len())
                    .flat_map(|i| {
                        v.slot_owners(super::pairs::SlotRef {
                            set: id,
                            slot: i as u16,
                        })
                    })
                    .filter(|u| !v.relocating.contains(u))
                    .collect();
                owners.sort_unstable();
                owners.dedup();
                owners.truncate(dcols);
                if !owners.is_empty() {
                    self.launch_relocation(ctx, vol, owners, false);
                }
                false
            }
            // A write in flight, or a read pinning a free stripe: a later pass.
            _ => false,
        }
    }

    fn launch_column(&mut self, ctx: &mut Ctx, mut job: ColumnJob, reads: &[usize]) {
        let v = &mut self.vols[job.vol];
        let bs = v.zone.block_size();
        v.stripes.pin(job.stripe);
        v.columns.insert(job.stripe);
        v.rebuild_running += 1;
        job.pending = reads.len() as u32;
        let ios: Vec<_> = reads
            .iter()
            .map(|&c| (c, v.zone.device_offset(job.stripe, c, 0)))
            .collect();
        let h = self.jobs.insert(Job::Column(job));
        for (c, (disk, offset)) in ios {
            ctx.issue(disk, DevOp::Read { offset, len: bs }, h.tag(c as u32), true);
        }
    }

    pub(super) fn column_io_done(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        let Some(Job::Column(j)) = self.jobs.get_mut(JobId::of(tag)) else {
            unreachable!("column job")
        };
        j.pending -= 1;
        match result {
            Err(_) => j.failed = true,
            Ok(Some(d)) if tag.part & WRITE_PART == 0 => {
                j.cols[tag.part as usize] = Some(match d {
                    Data::Size(_) => Vec::new(), // size-only: no content
                    d => d.into_bytes().expect("bytes"),
                })
            }
            Ok(_) => {}
        }
        if j.pending > 0 {
            return;
        }
        if j.failed {
            return self.finish_column(ctx, JobId::of(tag), false);
        }
        if j.writing {
            return self.finish_column(ctx, JobId::of(tag), true);
        }
        self.write_columns_out(ctx, JobId::of(tag));
    }

    /// The reads are in: reconstruct (rebuild) and write the moved columns.
    fn write_columns_out(&mut self, ctx: &mut Ctx, h: JobId) {
        let Some(Job::Column(j)) = self.jobs.get_mut(h) else {
            unreachable!("column job")
        };
        let v = &self.vols[j.vol];
        let bs = v.zone.block_size() as usize;
        let payloads: Vec<Data> = if ctx.size_only {
            (0..j.moves.len() + j.in_place.len())
                .map(|_| Data::Size(bs as u64))
                .collect()
        } else {
            match j.mode {
                ColumnMode::Rebuild => {
                    let mut cols: Vec<Vec<u8>> = j
                        .cols
                        .iter_mut()
                        .map(|c| c.take().unwrap_or_else(|| vec![0; bs]))
                        .collect();
                    let missing: Vec<usize> = j
                        .moves
                        .iter()
                        .map(|m| m.col)
                        .chain(j.in_place.iter().copied())
                        .map(usize::from)
                        .collect();
                    let mut refs: Vec<&mut [u8]> =
                        cols.iter_mut().map(|c| c.as_mut_slice()).collect();
                    crate::parity::reconstruct(&mut refs, v.zone.nparity(), &missing)
                        .expect("columns of one stripe, within its parity");
                    missing
                        .iter()
                        .map(|&c| Data::Bytes(std::mem::take(&mut cols[c])))
                        .collect()
                }
                ColumnMode::Home => {
                    let c = j.moves[0].col as usize;
                    vec![Data::Bytes(j.cols[c].take().expect("column read"))]
                }
            }
        };
        let targets: Vec<(DiskId, u64)> = j
            .moves
            .iter()
            .map(|m| match j.mode {
                ColumnMode::Rebuild => v.zone.home_offset(m.donor, m.dcol as usize),
                ColumnMode::Home => v.zone.home_offset(j.stripe, m.col as usize),
            })
            .chain(
                j.in_place
                    .iter()
                    .map(|&c| v.zone.device_offset(j.stripe, c as usize, 0)),
            )
            .collect();
        if targets.iter().any(|&(d, _)| ctx.is_failed(d)) {
            return self.finish_column(ctx, h, false);
        }
        j.writing = true;
        j.pending = targets.len() as u32;
        for (i, ((disk, offset), data)) in targets.into_iter().zip(payloads).enumerate() {
            ctx.issue(
                disk,
                DevOp::Write {
                    offset,
                    data,
                    fua: false,
                },
                h.tag(WRITE_PART | i as u32),
                true,
            );
        }
    }

    fn finish_column(&mut self, ctx: &mut Ctx, h: JobId, ok: bool) {
        let Some(Job::Column(j)) = self.jobs.remove(h) else {
            unreachable!("column job")
        };
        let v = &mut self.vols[j.vol];
        v.stripes.unpin(j.stripe);
        v.columns.remove(&j.stripe);
        v.rebuild_running -= 1;
        v.next_bg_scan = 0;
        self.bg_quiet_until = 0; // (wake_background, with `v` borrowed)
        match (j.mode, ok) {
            (ColumnMode::Rebuild, true) => {
                for &m in &j.moves {
                    install_remap(v, j.stripe, m);
                }
                // Every rebuilt column holds its contents now, wherever it lives.
                let rebuilt = j
                    .moves
                    .iter()
                    .map(|m| m.col)
                    .chain(j.in_place.iter().copied())
                    .fold(0u32, |mask, c| mask | 1 << c);
                v.restore_columns(j.stripe, rebuilt);
                ctx.stats.rebuilt_columns += j.moves.len() as u64;
                ctx.stats.rebuilt_in_place += j.in_place.len() as u64;
                if let Some(r) = v.rebuild.as_mut() {
                    r.columns += j.moves.len() as u64;
                    r.in_place += j.in_place.len() as u64;
                }
            }
            (ColumnMode::Rebuild, false) => {
                for m in &j.moves {
                    unlend(v, m.donor, m.dcol);
                }
            }
            (ColumnMode::Home, true) => {
                drop_remap(v, j.stripe, j.moves[0]);
                if let Some(r) = v.rebalance.as_mut() {
                    r.copied += 1;
                }
            }
            (ColumnMode::Home, false) => {} // the next pass tries again
        }
    }
}

/// The column is home again (or its stripe holds nothing): drop the remap and give the
/// donor column back. The donor stripe is reused only after the `Unremap` record is
/// durable (a donor lending nothing is freed through the stripe table's hold), and it no
/// longer takes new loans meanwhile: a crash before that commit would bring the remap
/// back and must find its data.
fn drop_remap(v: &mut Vol, stripe: u32, m: Moved) {
    v.zone.remaps_mut().remove(stripe, m.col as usize);
    v.record(|vol| Record::Unremap {
        vol,
        stripe,
        col: m.col,
    });
    v.donor_open.retain(|&t| t != m.donor);
    unlend(v, m.donor, m.dcol);
}

impl FusionScheme {
    /// Make free stripes that touch a failed member usable again by remapping their lost
    /// columns onto donor blocks: no data moves (they hold none), one donor block buys a
    /// whole stripe of free space clear of the failed members. Takes at most `max` stripes
    /// off the spare list (never a held one, so no durable mapping can still name them) and
    /// puts them back at its head. Returns how many it remapped.
    pub(super) fn remap_free_stripes(
        &mut self,
        ctx: &mut Ctx,
        vol: usize,
        max: usize,
        using: DonorUse,
    ) -> usize {
        if !(0..ctx.disk_count() as u32).any(|d| ctx.is_failed(DiskId(d))) {
            return 0;
        }
        let v = &mut self.vols[vol];
        let mut done = 0;
        while done < max {
            let Vol { zone, stripes, .. } = &mut *v;
            let Some((s, _)) = stripes
                .take_spare(|t| !zone.remaps().has(t) && !lost_columns(zone, ctx, t).is_empty())
            else {
                break;
            };
            let lost = lost_columns(&v.zone, ctx, s);
            // Only donors no write could use: a free stripe clear of the failed members is
            // worth as much as the one this would win back.
            let Some(moves) = reserve_donors(v, ctx, s, &lost, using) else {
                v.stripes.untake(s);
                break;
            };
            for m in moves {
                install_remap(v, s, m);
            }
            v.stripes.untake(s);
            if let Some(r) = v.rebuild.as_mut() {
                r.free_remapped += 1;
            }
            done += 1;
        }
        done
    }
}
