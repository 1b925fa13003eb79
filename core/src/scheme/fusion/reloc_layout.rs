//! Where a relocation's pages go: the layout of moved pages in the target stripe, the
//! pins that hold their sources while the move is out, the copies into the new columns,
//! and the remapping of every owner nobody rewrote meanwhile (`relocate.rs` runs the move).

use super::jobs::{RelocJob, Segment};
use super::reloc_plan;
use super::vol::Vol;
use crate::types::{Nanos, PAGE_SIZE};
use crate::volume::patch::{Seg, segments_at};
use crate::volume::{Entry, Loc, PatchNode};

/// What a relocation reads and moves, laid out in its target stripe.
pub(super) struct Layout {
    /// The page runs to read, and where each goes.
    pub segments: Vec<Segment>,
    /// The blocks they belong to, with their mappings now.
    pub owners: Vec<Owner>,
    /// The RAID block each moved item leaves (one entry per item).
    pub leaving: Vec<u64>,
}

/// A block whose pages a relocation moves, with its mapping when read.
pub(super) type Owner = (u64, Entry, Vec<PatchNode>);

/// Moved pages where the layout placed them: segment `i` (`data[i]`) goes to pages
/// `[at, at + count)` of column `col` (`cols[col - first_col]`). Columns are built in page
/// order, so only gaps are zeroed, not pages a copy overwrites next (a relocation's
/// columns are mostly full: zeroing them first cost as much as the copies).
pub(super) fn place_segments(
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
pub(super) fn pin_sources(
    v: &mut Vol,
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
pub(super) fn lay_out(v: &Vol, whole: usize, items: &[reloc_plan::Item]) -> Layout {
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
pub(super) fn item_runs(
    v: &Vol,
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
pub(super) fn moves_anything(v: &Vol, items: &[reloc_plan::Item]) -> bool {
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
pub(super) fn map_moved(v: &mut Vol, j: &RelocJob, now: Nanos) -> u64 {
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
