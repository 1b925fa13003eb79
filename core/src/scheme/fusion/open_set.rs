//! Opening pair sets (paper §4.2): the replicated area grows a set at a time, from spare
//! stripes drawn at random, the cheapest few for the placement policy kept and their
//! columns matched into replica slots on distinct members. Runs every few small writes:
//! candidates, their members and the combinations live in fixed arrays (a stripe has at
//! most 32 columns), not in `Vec`s per draw.

use super::avoid_memo::AvoidMemo;
use super::degraded::take_random_least_degraded;
use super::pairs::{PairSet, Slot, SlotState, match_columns};
use super::vol::Vol;
use crate::engine::ctx::Ctx;
use crate::policy::{Members, PlacementPolicy, WritePlacement};
use crate::space::StripeState;
use crate::types::DiskId;

/// Random spare stripes drawn per new pair set, at most (`WritePlacement::candidates`; the
/// paper's power of two choices draws twice the copies it keeps).
const CANDIDATES: usize = 8;

/// Make sure `needed` spare replica slots exist, opening new pair sets while the replicated
/// area is below its configured size. Returns false when the area is full.
pub(super) fn ensure_slots(
    ctx: &mut Ctx,
    v: &mut Vol,
    needed: usize,
    placement: &PlacementPolicy,
) -> bool {
    while v.pairs.spare_slots() < needed {
        if !open_pair_set_if_room(ctx, v, placement) {
            return false;
        }
    }
    true
}

/// Does the replicated area's cap (or the spare-stripe reserve) keep new pair sets out?
pub(super) fn replicated_area_full(v: &Vol) -> bool {
    let n = v.set_stripes();
    v.stripes.count(StripeState::Replica) + n > v.max_replica_stripes || !v.user_may_take(n)
}

/// Open one more pair set if the replicated area and the reserve allow it.
pub(super) fn open_pair_set_if_room(
    ctx: &mut Ctx,
    v: &mut Vol,
    placement: &PlacementPolicy,
) -> bool {
    !replicated_area_full(v) && open_pair_set(ctx, v, placement)
}

/// Spare stripes taken as candidates for one pair set.
struct Candidates {
    stripes: [u32; CANDIDATES],
    /// Drawn away from a member the policy steers clear of (a stripe on it was turned
    /// down): the writes of a set made of them are steered around it.
    steered: [bool; CANDIDATES],
    /// Each candidate's members, data columns first.
    disks: [[DiskId; 32]; CANDIDATES],
    len: usize,
}

impl Candidates {
    fn untake_all(&self, v: &mut Vol) {
        for &s in &self.stripes[..self.len] {
            v.stripes.untake(s);
        }
    }
}

/// Open a new pair set: draw random spare stripes, keep the `copies` the placement policy
/// finds cheapest, and match their columns into slots.
fn open_pair_set(ctx: &mut Ctx, v: &mut Vol, placement: &PlacementPolicy) -> bool {
    let copies = v.copies();
    let cand = draw_candidates(ctx, v, placement);
    if v.cfg.level.is_mirror() {
        return open_mirror_set(ctx, v, placement, &cand);
    }
    if cand.len < copies {
        cand.untake_all(v);
        return false;
    }
    let members = Members::new(&*ctx.disks, ctx.now);
    let shape = (v.zone.width(), v.zone.dcols());
    let chosen = cheapest(&cand, copies, shape, &members, placement);
    let chosen = &chosen[..copies];
    let chosen_disks = [
        cand.disks[chosen[0]],
        cand.disks[chosen[1]],
        cand.disks[chosen[2 % copies]],
    ];
    let Some(matching) = match_columns(&chosen_disks[..copies], v.zone.dcols()) else {
        cand.untake_all(v);
        return false;
    };
    let mut stripes = [0u32; 3];
    for (i, &c) in chosen.iter().enumerate() {
        stripes[i] = cand.stripes[c];
    }
    for (i, &s) in cand.stripes[..cand.len].iter().enumerate() {
        if chosen.contains(&i) {
            v.stripes.set_state(s, StripeState::Replica);
        } else {
            v.stripes.untake(s);
        }
    }
    install(ctx, v, stripes, copies, matching);
    if chosen.iter().any(|&c| cand.steered[c]) {
        ctx.stats.steered_pair_sets += 1;
    }
    true
}

/// A mirror volume's pair set: the cheapest candidate stripe alone, its one slot a copy in
/// each column (the layout puts a stripe's columns on distinct members). Written to the
/// same pages of every column, it is a mirror stripe from the start.
fn open_mirror_set(
    ctx: &mut Ctx,
    v: &mut Vol,
    placement: &PlacementPolicy,
    cand: &Candidates,
) -> bool {
    if cand.len == 0 {
        return false;
    }
    let copies = v.copies();
    let members = Members::new(&*ctx.disks, ctx.now);
    let chosen = (0..cand.len)
        .min_by_key(|&i| placement.pair_set_cost(&members, &[&cand.disks[i][..copies]], copies))
        .expect("a candidate");
    for (i, &s) in cand.stripes[..cand.len].iter().enumerate() {
        if i == chosen {
            v.stripes.set_state(s, StripeState::Replica);
        } else {
            v.stripes.untake(s);
        }
    }
    let s = cand.stripes[chosen];
    install(ctx, v, [s; 3], copies, vec![[0, 1, 2]]);
    if cand.steered[chosen] {
        ctx.stats.steered_pair_sets += 1;
    }
    true
}

/// Draws up to `placement.candidates()` spare stripes: each away from members to avoid if
/// one is, else on healthy members, else one whose parity covers the failed members.
fn draw_candidates(ctx: &mut Ctx, v: &mut Vol, placement: &PlacementPolicy) -> Candidates {
    let mut cand = Candidates {
        stripes: [0; CANDIDATES],
        steered: [false; CANDIDATES],
        disks: [[DiskId(0); 32]; CANDIDATES],
        len: 0,
    };
    // The member states, borrowed apart from the RNG the draws use.
    let (members, rng) = ctx.members_and_rng();
    let failed = |d: DiskId| members.failed(d);
    let avoided = std::cell::Cell::new(false);
    // Most random draws touch a member to avoid when segregation leaves few writers: the
    // policy is asked once per member (avoid_memo.rs).
    let memo = std::cell::RefCell::new(AvoidMemo::default());
    let bad = |d: DiskId| {
        if members.failed(d) {
            return true;
        }
        let steered = memo
            .borrow_mut()
            .get(d, || placement.steer_clear(&members, d));
        if steered {
            avoided.set(true);
        }
        steered
    };
    let passes: &[bool] = if placement.has_preferences() {
        &[true, false]
    } else {
        &[false]
    };
    for _ in 0..placement.candidates().min(CANDIDATES) {
        let zone = &v.zone;
        avoided.set(false);
        // Off members the policy would rather not write either, when it has such members
        // and such a stripe is found; else off those it steers clear of.
        let pick = passes.iter().find_map(|&prefer| {
            v.stripes.take_random_spare(rng, |s| {
                zone.stripe_disk_list(s)
                    .iter()
                    .all(|&d| !(bad(d) || prefer && placement.rather_not(&members, d)))
            })
        });
        cand.steered[cand.len] = pick.is_some() && avoided.get();
        // Clear of the failed members, else the least degraded.
        let pick = pick.or_else(|| {
            take_random_least_degraded(&mut v.stripes, rng, zone, failed, 0..=zone.nparity())
        });
        let Some(s) = pick else { break };
        let list = zone.stripe_disk_list(s);
        cand.disks[cand.len][..list.len()].copy_from_slice(&list);
        cand.stripes[cand.len] = s;
        cand.len += 1;
    }
    cand
}

/// The combination of `copies` candidates (indices, ascending) the placement policy finds
/// cheapest; the first of equals, in the order a, b (, c) ascending. `shape`: the stripes'
/// width and data columns.
fn cheapest(
    cand: &Candidates,
    copies: usize,
    (width, dcols): (usize, usize),
    members: &Members,
    placement: &PlacementPolicy,
) -> [usize; 3] {
    let mut best: Option<(usize, [usize; 3])> = None;
    let n = cand.len;
    for a in 0..n {
        for b in a + 1..n {
            let thirds = if copies == 2 { a..a + 1 } else { b + 1..n };
            for c in thirds {
                let d = &cand.disks;
                let lists = [&d[a][..width], &d[b][..width], &d[c][..width]];
                let cost = placement.pair_set_cost(members, &lists[..copies], dcols);
                if best.as_ref().is_none_or(|(s, _)| cost < *s) {
                    best = Some((cost, [a, b, c]));
                }
            }
        }
    }
    best.expect("at least one combination").1
}

/// Journals and installs the pair set of `stripes` with slots `matching`, every slot spare.
fn install(ctx: &Ctx, v: &mut Vol, stripes: [u32; 3], copies: usize, matching: Vec<[u8; 3]>) {
    v.record(|vol| crate::meta::Record::SetCreate {
        vol,
        stripes: stripes[..copies].to_vec(),
        cols: matching.clone(),
    });
    let set = PairSet {
        stripes,
        copies: copies as u8,
        slots: matching
            .into_iter()
            .map(|cols| Slot {
                cols,
                state: SlotState::Spare,
            })
            .collect(),
        last_access: ctx.now,
        converting: false,
        convert_after: 0,
        in_lru: false,
    };
    v.pairs.insert(set, ctx.now);
}
