//! Patch lists: inserts, trims, merges and page lookups.

use super::*;

/// The paper's Fig. 9: block 0x02 lives in RAID block 3; a write of pages 7-12 goes to the
/// replica pair keyed 11 (copies in 11 and 17). Reads of pages 7-12 come from the pair,
/// the rest from block 3.
#[test]
fn figure_9_patch() {
    let mut t = PatchTable::new(16);
    let gone = t.insert(0x02, PatchNode::new(7, 6, Loc::Rep(11)));
    assert!(gone.is_empty());
    assert_eq!(t.get(0x02), &[PatchNode::new(7, 6, Loc::Rep(11))]);
    let segs = segments(Loc::Raid(3), t.get(0x02), 0, 16);
    assert_eq!(
        segs,
        [
            (0, 7, Loc::Raid(3)),
            (7, 6, Loc::Rep(11)),
            (13, 3, Loc::Raid(3))
        ]
        .map(|(first, count, loc)| Seg {
            first,
            count,
            loc,
            at: first
        })
    );
}

/// `segments` gives, page by page, the covering node's place or the base's, in maximal
/// runs, for any range of any list a table builds (placed nodes included).
#[test]
fn segments_match_a_page_by_page_lookup() {
    for ppb in [32u16, 256] {
        segments_match_lookup(ppb);
    }
}

/// In a block of 256 pages (1 MiB), a node ending at the block's last page and one
/// placed at its page 0 have the same shift modulo 256 yet are not adjacent there: they
/// stay two nodes. Merged, they made a run past the block's end, and the engine panicked
/// under 128 KiB random writes to a volume of 1 MiB blocks.
#[test]
fn runs_wrapping_around_a_block_of_256_pages_stay_apart() {
    let mut t = PatchTable::new(256);
    let loc = Loc::Rep(3);
    let (a, b) = (
        PatchNode::placed(200, 24, loc, 232),
        PatchNode::placed(224, 32, loc, 0),
    );
    t.insert(7, a);
    t.insert(7, b);
    assert_eq!(t.get(7), &[a, b]);
    // Adjacent in the block too: one run.
    t.insert(8, PatchNode::placed(0, 8, loc, 100));
    t.insert(8, PatchNode::placed(8, 8, loc, 108));
    assert_eq!(t.get(8), &[PatchNode::placed(0, 16, loc, 100)]);
}

fn segments_match_lookup(ppb: u16) {
    let mut rng = crate::rng::Rng::new(5);
    let mut t = PatchTable::new(ppb);
    let base = Loc::Raid(99);
    for _ in 0..5_000 {
        let ub = rng.below(4);
        let first = rng.below(ppb as u64) as u16;
        let count = 1 + rng.below((ppb - first).min(9) as u64) as u16;
        let at = rng.below((ppb - count + 1) as u64) as u16;
        let loc = Loc::Rep(rng.below(5));
        t.insert(ub, PatchNode::placed(first, count, loc, at));
        let nodes = t.get(ub);
        let a = rng.below(ppb as u64) as u16;
        let n = 1 + rng.below((ppb - a) as u64) as u16;
        let segs = segments(base, nodes, a, n);
        let mut p = a;
        for (k, g) in segs.iter().enumerate() {
            assert_eq!(g.first, p, "runs are contiguous");
            for q in g.first..g.first + g.count {
                let want = match nodes.iter().find(|x| x.first() <= q && q < x.end()) {
                    Some(x) => (x.loc(), x.at() + (q - x.first())),
                    None => (base, q),
                };
                assert_eq!((g.loc, g.at + (q - g.first)), want, "page {q} of {nodes:?}");
            }
            if let Some(h) = segs.get(k + 1) {
                assert!(
                    h.loc != g.loc || h.at != g.at + g.count,
                    "runs {g:?} {h:?} not maximal"
                );
            }
            p += g.count;
        }
        assert_eq!(p, a + n);
    }
}

/// The stack version of `insert` gives the lists and dead locations of the `Vec` one.
#[test]
fn small_insert_matches_the_general_one() {
    let mut rng = crate::rng::Rng::new(17);
    for ppb in [16u16, 64, 256] {
        let (mut a, mut b) = (PatchTable::new(ppb), PatchTable::new(ppb));
        for _ in 0..20_000 {
            let ub = rng.below(8);
            let first = rng.below(ppb as u64) as u16;
            let count = 1 + rng.below((ppb - first).min(8) as u64) as u16;
            // Now and then a trim (an unmapped node), which counts no pages.
            let loc = match rng.below(12) {
                0 => Loc::Unmapped,
                k => Loc::Rep(k),
            };
            // Mostly at their own positions (so neighbours merge), sometimes moved.
            let node = if rng.below(4) == 0 {
                let at = rng.below((ppb - count + 1) as u64) as u16;
                PatchNode::placed(first, count, loc, at)
            } else {
                PatchNode::new(first, count, loc)
            };
            let pages_before = List::pages_of(a.get(ub));
            let list_before = a.get(ub).to_vec();
            let small = if a.get(ub).is_empty() || a.get(ub).len() > SMALL_LIST {
                a.insert(ub, node)
            } else {
                a.insert_small(ub, node)
            };
            let general = if b.get(ub).is_empty() {
                b.insert(ub, node)
            } else {
                b.insert_general(ub, node)
            };
            assert_eq!(small, general);
            // Gone: each location of the old list the new one no longer has, once, in
            // the old list's order.
            let mut want: Vec<Loc> = Vec::new();
            for n in &list_before {
                if !a.get(ub).iter().any(|m| m.loc() == n.loc()) && !want.contains(&n.loc()) {
                    want.push(n.loc());
                }
            }
            assert_eq!(small, want);
            assert_eq!(a.get(ub), b.get(ub));
            // The counts kept on the side (lists changed in place or replaced) match a
            // count from the lists themselves.
            assert_eq!(a.last_pages(), (pages_before, List::pages_of(a.get(ub))));
            // So is whether the list covers its block, for both paths.
            assert_eq!(a.last_covers(), a.covers_block(ub));
            assert_eq!(b.last_covers(), b.covers_block(ub));
            let nodes: u64 = a
                .iter()
                .map(|(_, l)| l.len() as u64)
                .filter(|&n| n > 1)
                .sum();
            assert_eq!(
                a.memory_bytes(),
                a.patched_blocks() as u64 * (8 + std::mem::size_of::<List>() as u64) + nodes * 8
            );
            if rng.below(50) == 0 {
                assert_eq!(a.clear(ub), b.clear(ub));
            }
        }
    }
}

#[test]
fn newer_patch_trims_and_reports_dead_locations() {
    let mut t = PatchTable::new(16);
    t.insert(1, PatchNode::new(0, 4, Loc::Rep(100)));
    t.insert(1, PatchNode::new(8, 4, Loc::Rep(200)));
    // Covers all of the first node and half of the second.
    let gone = t.insert(1, PatchNode::new(0, 10, Loc::Rep(300)));
    assert_eq!(gone, vec![Loc::Rep(100)]);
    assert_eq!(
        t.get(1),
        &[
            PatchNode::new(0, 10, Loc::Rep(300)),
            PatchNode::new(10, 2, Loc::Rep(200))
        ]
    );
    assert!(t.references(1, Loc::Rep(200)));
    assert_eq!(t.clear(1), vec![Loc::Rep(300), Loc::Rep(200)]);
    assert_eq!(t.patched_blocks(), 0);
}

#[test]
fn list_never_exceeds_pages_per_block() {
    let mut t = PatchTable::new(16);
    let mut rng = crate::rng::Rng::new(5);
    for i in 0..10_000u64 {
        let first = rng.below(16) as u16;
        let count = 1 + rng.below(16 - first as u64) as u16;
        t.insert(9, PatchNode::new(first, count, Loc::Rep(i)));
        assert!(t.get(9).len() <= 16);
    }
}

#[test]
fn nodes_pack_into_8_bytes() {
    assert_eq!(std::mem::size_of::<PatchNode>(), 8);
    let n = PatchNode::new(255, 1, Loc::Rep((1 << 38) - 2));
    assert_eq!(
        (n.first(), n.count(), n.loc()),
        (255, 1, Loc::Rep((1 << 38) - 2))
    );
    let n = PatchNode::new(0, 256, Loc::Unmapped);
    assert_eq!((n.first(), n.count(), n.loc()), (0, 256, Loc::Unmapped));
}

#[test]
fn adjacent_runs_of_one_block_merge() {
    let mut t = PatchTable::new(16);
    t.insert(2, PatchNode::new(0, 2, Loc::Rep(5)));
    t.insert(2, PatchNode::new(2, 2, Loc::Rep(5)));
    assert_eq!(t.get(2), &[PatchNode::new(0, 4, Loc::Rep(5))]);
}

/// Pages moved elsewhere in a block keep their place through trims and merges: a piece
/// of a node keeps its shift, and only runs that continue each other merge.
#[test]
fn moved_pages_keep_their_places() {
    let mut t = PatchTable::new(16);
    t.insert(3, PatchNode::placed(4, 8, Loc::Raid(7), 0));
    // A write into the middle leaves two pieces, each still where its pages are.
    t.insert(3, PatchNode::new(6, 2, Loc::Rep(1)));
    assert_eq!(
        t.get(3),
        &[
            PatchNode::placed(4, 2, Loc::Raid(7), 0),
            PatchNode::new(6, 2, Loc::Rep(1)),
            PatchNode::placed(8, 4, Loc::Raid(7), 4)
        ]
    );
    let segs = segments(Loc::Raid(2), t.get(3), 0, 16);
    let at: Vec<(u16, u16, Loc, u16)> = segs
        .iter()
        .map(|s| (s.first, s.count, s.loc, s.at))
        .collect();
    assert_eq!(
        at,
        vec![
            (0, 4, Loc::Raid(2), 0),
            (4, 2, Loc::Raid(7), 0),
            (6, 2, Loc::Rep(1), 6),
            (8, 4, Loc::Raid(7), 4),
            (12, 4, Loc::Raid(2), 12)
        ]
    );
    // The same location at a place that does not continue the run stays apart.
    t.insert(3, PatchNode::placed(12, 2, Loc::Raid(7), 9));
    assert_eq!(t.get(3).len(), 4);
    t.insert(3, PatchNode::placed(12, 2, Loc::Raid(7), 8));
    assert_eq!(
        t.get(3).last(),
        Some(&PatchNode::placed(8, 6, Loc::Raid(7), 4))
    );
    assert!(!t.covers_block(3));
    t.insert(3, PatchNode::placed(0, 4, Loc::Raid(9), 12));
    t.insert(3, PatchNode::new(14, 2, Loc::Unmapped));
    assert!(t.covers_block(3));
}

/// The packed form keeps the place, and a node written before pages could move (shift
/// bits 0) still means its pages' own positions.
#[test]
fn places_survive_the_packed_form() {
    let n = PatchNode::placed(200, 40, Loc::Raid(5), 3);
    assert_eq!(PatchNode::from_raw(n.raw()), Some(n));
    assert_eq!((n.first(), n.count(), n.at()), (200, 40, 3));
    let old = PatchNode::new(9, 2, Loc::Rep(4)).raw();
    assert_eq!(old >> 56, 0);
    assert_eq!(PatchNode::from_raw(old).map(|n| n.at()), Some(9));
    // A place that would run off the block is refused.
    let bad = (PatchNode::new(0, 16, Loc::Raid(1)).raw() & !(0xff << 56)) | 250 << 56;
    assert_eq!(PatchNode::from_raw(bad), None);
    // "Unmapped" with the replicated bit set unpacks as unmapped too; read back, it takes
    // the one packing the lists compare by.
    let trimmed = PatchNode::new(4, 2, Loc::Unmapped);
    let odd = PatchNode::from_raw(trimmed.raw() | 1 << FLBN_BITS).expect("in range");
    assert_eq!(odd, trimmed);
    let mut t = PatchTable::new(16);
    t.set_list(1, vec![odd]).expect("valid list");
    assert!(t.references(1, Loc::Unmapped));
}

/// `segments_at` gives exactly the runs of the whole block that `segments` gives for that
/// location: the base's gaps, nodes at it (merged where they continue each other), nodes
/// elsewhere and trimmed pages left out.
#[test]
fn segments_at_is_segments_of_one_location() {
    let mut rng = crate::rng::Rng::new(23);
    for ppb in [1u16, 16, 64] {
        let mut t = PatchTable::new(ppb);
        for _ in 0..5_000 {
            let ub = rng.below(4);
            let first = rng.below(ppb as u64) as u16;
            let count = 1 + rng.below((ppb - first).min(9) as u64) as u16;
            // Often at its own positions, so runs can continue the base's.
            let at = if rng.below(2) == 0 {
                first
            } else {
                rng.below((ppb - count + 1) as u64) as u16
            };
            let loc = match rng.below(4) {
                0 => Loc::Unmapped,
                1 => Loc::Rep(rng.below(3)),
                _ => Loc::Raid(rng.below(3)),
            };
            t.insert(ub, PatchNode::placed(first, count, loc, at));
            let nodes = t.get(ub);
            let base = Loc::Raid(rng.below(3));
            for want_loc in [Loc::Raid(0), Loc::Raid(1), Loc::Raid(2), Loc::Rep(1)] {
                let want: Vec<Seg> = segments(base, nodes, 0, ppb)
                    .into_iter()
                    .filter(|g| g.loc == want_loc)
                    .collect();
                assert_eq!(
                    segments_at(base, nodes, ppb, want_loc),
                    want,
                    "{want_loc:?} in {nodes:?} over {base:?}"
                );
            }
        }
    }
}
