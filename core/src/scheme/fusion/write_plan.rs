//! Where the pieces of one write go (paper §4.2). A write is cut at logical-stripe
//! boundaries into chunks; each chunk takes the RAID path (a fresh full stripe) when it
//! covers more than `threshold` whole blocks, else the replicated path (a replica slot per
//! whole block, the next free pages of a pack per partial block). Every choice offers the
//! placement policy's preferred members first and falls back to any healthy member, then to
//! stripes whose parity covers the failed ones. What a plan takes is given back as a whole
//! when the write must wait for space.

use super::avoid_memo::AvoidMemo;
use super::degraded::take_least_degraded;
use super::jobs::{Dest, Piece};
use super::open_set::{ensure_slots, open_pair_set_if_room, replicated_area_full};
use super::pack;
use super::pairs::{SlotRef, SlotState};
use super::vol::Vol;
use crate::engine::ctx::Ctx;
use crate::policy::{PlacementPolicy, WritePlacement};
use crate::types::{DiskId, PAGE_SIZE};

/// The pages of one user block a write covers.
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    pub ub: u64,
    pub first: u16,
    pub count: u16,
}

/// Pages reserved in a pack: `count` pages from page `at` of replica slot `slot`.
#[derive(Clone, Copy, Debug)]
pub(super) struct PackRun {
    pub slot: SlotRef,
    pub at: u16,
    pub count: u16,
}

/// Whether a member is passed over while other room exists: failed always, and whatever
/// the placement policy steers clear of.
#[inline]
pub(super) fn avoid(ctx: &Ctx, placement: &PlacementPolicy, d: DiskId) -> bool {
    ctx.is_failed(d) || placement.steer_clear(&ctx.members(), d)
}

/// None of `disks` is to be avoided.
fn clear_of(ctx: &Ctx, placement: &PlacementPolicy, disks: &[DiskId]) -> bool {
    disks.iter().all(|&d| !avoid(ctx, placement, d))
}

/// The first spare slot with no copy on a member to avoid (`PairTable::take_spare`), the
/// policy asked once per member: with segregation a write may pass over hundreds of slots
/// on read-mode members.
fn take_clear(ctx: &Ctx, v: &mut Vol, placement: &PlacementPolicy) -> Option<(SlotRef, usize)> {
    let members = ctx.disk_count();
    match v
        .pairs
        .take_spare_clear(&v.zone, members, |d| avoid(ctx, placement, d))
    {
        Some(got) => got,
        None => {
            let mut memo = AvoidMemo::default();
            v.pairs.take_spare(&v.zone, |ds| {
                ds.iter()
                    .all(|&d| !memo.get(d, || avoid(ctx, placement, d)))
            })
        }
    }
}

/// The byte range of a write: which volume, where, and what kind.
#[derive(Clone, Copy)]
pub(super) struct Extent {
    pub offset: u64,
    pub len: u64,
    pub trim: bool,
    pub zeroes: bool,
}

/// What a plan has taken so far. `pieces` and `stripes` go to the write job; `slots` and
/// `packed` are kept only to give them back if the write must wait.
pub(super) struct Taken {
    pub pieces: Vec<Piece>,
    pub stripes: Vec<u32>,
    pub slots: Vec<SlotRef>,
    pub packed: Vec<PackRun>,
}

impl Taken {
    /// Gives back every stripe, slot and pack page taken; the lists are left empty.
    pub fn undo(&mut self, v: &mut Vol) {
        for s in self.stripes.drain(..) {
            v.stripes.untake(s);
        }
        self.undo_since(v, Mark::default());
    }

    /// How far the plan has got: what `undo_since` goes back to.
    fn mark(&self) -> Mark {
        Mark {
            pieces: self.pieces.len(),
            slots: self.slots.len(),
            packed: self.packed.len(),
        }
    }

    /// Gives back the slots and pack pages taken since `m`, and drops the pieces placed
    /// since (stripes are not given back: a chunk that takes one is placed).
    fn undo_since(&mut self, v: &mut Vol, m: Mark) {
        self.pieces.truncate(m.pieces);
        for r in self.slots.drain(m.slots..) {
            v.pairs.untake(r);
        }
        for run in self.packed.drain(m.packed..) {
            v.packs.unreserve(run.slot, run.at, run.count);
        }
    }
}

/// The lengths of a plan's lists at some point (see `Taken::mark`).
#[derive(Clone, Copy, Default)]
struct Mark {
    pieces: usize,
    slots: usize,
    packed: usize,
}

/// The path a chunk takes.
enum Path {
    Replicated,
    Stripe,
    /// The replicated area is full: wait for conversion to make room.
    Wait,
}

/// One write's planning: the volume, the policy and the settings it plans with.
pub(super) struct Planner<'a> {
    pub v: &'a mut Vol,
    pub placement: &'a PlacementPolicy,
    /// Whole blocks a chunk must cover in full to take the RAID path.
    pub threshold: usize,
    /// The write may wait for room (background work can make some).
    pub may_wait: bool,
}

impl Planner<'_> {
    /// Places every chunk of `e` into `t`. False: the write must wait for space (what `t`
    /// holds is then still taken: the caller gives it back).
    pub fn place(&mut self, ctx: &mut Ctx, e: Extent, t: &mut Taken, raw: &mut Vec<Span>) -> bool {
        let bs = self.v.zone.block_size();
        let ppb = self.v.pages_per_block;
        let dcols = self.v.zone.dcols() as u64;
        let end = e.offset + e.len;
        let mut ub = e.offset / bs;
        while ub * bs < end {
            let chunk_end = ((ub / dcols + 1) * dcols).min(end.div_ceil(bs));
            raw.clear();
            raw.extend((ub..chunk_end).map(|b| {
                let lo = e.offset.max(b * bs);
                let hi = end.min((b + 1) * bs);
                Span {
                    ub: b,
                    first: ((lo - b * bs) / PAGE_SIZE) as u16,
                    count: ((hi - lo) / PAGE_SIZE) as u16,
                }
            }));
            ub = chunk_end;
            if e.trim || e.zeroes {
                // Whole blocks are unmapped (zeroes read back from unmapped blocks); partial
                // ones of a write-zeroes are written as data.
                t.pieces
                    .extend(raw.iter().filter(|r| r.count == ppb).map(|r| Piece {
                        ub: r.ub,
                        first: r.first,
                        count: r.count,
                        at: r.first,
                        dest: Dest::Unmap,
                    }));
                if e.trim {
                    continue;
                }
                raw.retain(|r| r.count != ppb);
                if raw.is_empty() {
                    continue;
                }
            }
            let placed = match self.path(ctx, raw, t) {
                Path::Wait => false,
                Path::Replicated => self.replicated(ctx, raw, t) || self.stripe(ctx, raw, t),
                Path::Stripe => self.stripe(ctx, raw, t),
            };
            if !placed {
                return false;
            }
        }
        true
    }

    /// The RAID path past the threshold; else the replicated path if its slots exist or can
    /// be opened. When the replicated area is at its configured size (or spare stripes are
    /// short), the write waits for conversion rather than spend a zero-padded stripe on a
    /// few blocks or pages, which relocation would have to compact again. The stripe is the
    /// fallback when waiting can not help: no pair set could be formed from the spare
    /// stripes there are (their members could not be matched), or earlier chunks of this
    /// write hold slots (giving them back and waiting could wait forever if the replicated
    /// area is too small to hold them all at once).
    fn path(&mut self, ctx: &mut Ctx, raw: &[Span], t: &Taken) -> Path {
        let ppb = self.v.pages_per_block;
        let full = raw.iter().filter(|r| r.count == ppb).count();
        if full > self.threshold {
            return Path::Stripe;
        }
        let partial = raw.iter().filter(|r| r.count < ppb).map(|r| r.count);
        let needed = full + self.v.packs.slots_needed(partial);
        if ensure_slots(ctx, self.v, needed, self.placement) {
            return Path::Replicated;
        }
        let holds_slots = !t.slots.is_empty() || !t.packed.is_empty();
        if self.may_wait && !holds_slots && replicated_area_full(self.v) {
            Path::Wait
        } else {
            Path::Stripe
        }
    }

    /// Each piece into a pack or a slot of its own. If some piece finds no room after all
    /// (the slots counted by `path` sit on members to avoid), this chunk is undone and false
    /// returned: a fresh stripe away from them is then the redirection target (waiting would
    /// wait out the stall).
    fn replicated(&mut self, ctx: &mut Ctx, raw: &[Span], t: &mut Taken) -> bool {
        let mark = t.mark();
        for &span in raw {
            if !self.replicated_piece(ctx, span, t) {
                t.undo_since(self.v, mark);
                return false;
            }
        }
        true
    }

    /// One piece: a partial block into the next free pages of an open pack if one has room
    /// away from members to avoid, else into a new pack; a whole block into a slot.
    fn replicated_piece(&mut self, ctx: &mut Ctx, span: Span, t: &mut Taken) -> bool {
        let partial = span.count < self.v.pages_per_block;
        let steers = self.placement.steers();
        // Whether this piece was steered away from a member to avoid: an open pack with
        // room, or spare slots, passed over for it (counted once).
        let mut redirected = false;
        if partial {
            let (got, refused) = self.reserve_in_pack(ctx, span.count);
            redirected = refused && steers;
            if let Some((slot, at)) = got {
                ctx.stats.redirected_writes += u64::from(redirected);
                t.packed.push(PackRun {
                    slot,
                    at,
                    count: span.count,
                });
                t.pieces.push(piece(span, at, Dest::Slot(slot)));
                return true;
            }
        }
        let Some(r) = self.take_slot(ctx, &mut redirected) else {
            return false;
        };
        if partial {
            self.start_pack(ctx, r, span.count);
            t.packed.push(PackRun {
                slot: r,
                at: 0,
                count: span.count,
            });
            // A new pack's first pages.
            t.pieces.push(piece(span, 0, Dest::Slot(r)));
        } else {
            t.slots.push(r);
            t.pieces.push(piece(span, span.first, Dest::Slot(r)));
        }
        true
    }

    /// `count` pages in an open pack whose copies avoid members to avoid; also whether some
    /// pack with room was refused for that.
    fn reserve_in_pack(&mut self, ctx: &Ctx, count: u16) -> (Option<(SlotRef, u16)>, bool) {
        let v = &mut *self.v;
        let (pairs, zone, placement) = (&v.pairs, &v.zone, self.placement);
        v.packs.reserve(count, |r| {
            let (cp, n) = pairs.copies_array(r);
            cp[..n]
                .iter()
                .all(|&(s, c)| !avoid(ctx, placement, zone.disk(s, c)))
        })
    }

    /// A spare replica slot: away from members to avoid (opening a pair set away from them
    /// if every spare slot touches one), else on healthy members, else with at least one
    /// healthy copy. Counts a redirection when room was passed over for the policy.
    fn take_slot(&mut self, ctx: &mut Ctx, redirected: &mut bool) -> Option<SlotRef> {
        let placement = self.placement;
        let steers = placement.steers();
        let v = &mut *self.v;
        let mut strict = take_clear(ctx, v, placement);
        if strict.is_none() && open_pair_set_if_room(ctx, v, placement) {
            // Every spare slot touches a member to avoid: a fresh pair set, drawn from
            // stripes away from it, is the redirection target.
            *redirected = true;
            strict = take_clear(ctx, v, placement).map(|(r, _)| (r, 0));
        }
        match strict {
            Some((r, skipped)) => {
                *redirected |= skipped > 0 && steers;
                ctx.stats.redirected_writes += u64::from(*redirected);
                Some(r)
            }
            None => v
                .pairs
                .take_spare(&v.zone, |ds| ds.iter().all(|&d| !ctx.is_failed(d)))
                .or_else(|| {
                    v.pairs
                        .take_spare(&v.zone, |ds| ds.iter().any(|&d| !ctx.is_failed(d)))
                })
                .map(|x| x.0),
        }
    }

    /// Slot `r` becomes a new pack for this piece and the patches that follow it; the
    /// fullest open pack closes if too many are open.
    fn start_pack(&mut self, ctx: &Ctx, r: SlotRef, count: u16) {
        let v = &mut *self.v;
        if v.packs.open_count() >= pack::MAX_OPEN
            && let Some(old) = v.packs.fullest()
        {
            let st = v.packs.close(old);
            v.pack_changed(old, st, ctx.now);
        }
        v.pairs.set_mut(r.set).slots[r.slot as usize].state = SlotState::Packing;
        v.packs.start(r, count);
    }

    /// The chunk into a fresh full stripe, each piece at its own column and pages. False
    /// when no stripe may be taken.
    fn stripe(&mut self, ctx: &mut Ctx, raw: &[Span], t: &mut Taken) -> bool {
        if !self.v.user_may_take(1) {
            return false;
        }
        let Some(s) = self.take_stripe(ctx) else {
            return false;
        };
        t.stripes.push(s);
        let dcols = self.v.zone.dcols() as u64;
        t.pieces.extend(raw.iter().map(|&span| {
            let col = (span.ub % dcols) as usize;
            piece(span, span.first, Dest::Stripe { stripe: s, col })
        }));
        true
    }

    /// A spare stripe away from members to avoid, else on healthy members, else (degraded:
    /// every spare stripe touches a failed member) one whose parity covers the failed
    /// members: writing the surviving columns keeps the data recoverable, as a degraded md
    /// array does.
    fn take_stripe(&mut self, ctx: &mut Ctx) -> Option<u32> {
        let placement = self.placement;
        let v = &mut *self.v;
        let zone = &v.zone;
        // The stripe's members from the layout table in one lookup, not one per column
        // (each a division by the layout's period).
        let preferred = v
            .stripes
            .take_spare(|s| clear_of(ctx, placement, &zone.stripe_disk_list(s)));
        if let Some((s, skipped)) = preferred {
            if skipped > 0 && placement.steers() {
                ctx.stats.redirected_writes += 1;
            }
            return Some(s);
        }
        // Clear of the failed members, else the least degraded.
        take_least_degraded(
            &mut v.stripes,
            zone,
            |d| ctx.is_failed(d),
            0..=zone.nparity(),
        )
    }
}

fn piece(span: Span, at: u16, dest: Dest) -> Piece {
    Piece {
        ub: span.ub,
        first: span.first,
        count: span.count,
        at,
        dest,
    }
}
