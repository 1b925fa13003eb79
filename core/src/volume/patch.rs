//! Patch lists: sub-block updates of a user block (paper §4.4, Fig. 9).
//!
//! A write that covers only some pages of a block is not merged into the old block (that would
//! be a read-modify-write); the pages are written out of place, at the same page positions,
//! into a new block, and a *patch node* records "pages [first, first+count) now live at loc".
//! Nodes of one list never overlap (a newer node trims older ones), so a list can never hold
//! more nodes than the block has pages: that is the compaction bound the paper asks for, kept
//! by construction and asserted.

use crate::fasthash::FastMap;

use super::loc::Loc;

/// One patch: pages `[first, first + count)` live at `loc`. Packed in 8 bytes: bits 0..39
/// the location (as in a BMT entry), bits 40..48 the first page, bits 48..56 count - 1
/// (so blocks of up to 256 pages, 1 MiB, fit).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PatchNode(u64);

impl PatchNode {
    pub fn new(first: u16, count: u16, loc: Loc) -> Self {
        assert!(
            first < 256 && (1..=256).contains(&count) && first + count <= 256,
            "patch {first}+{count} does not fit"
        );
        PatchNode(loc.pack() | (first as u64) << 40 | ((count - 1) as u64) << 48)
    }
    pub fn first(self) -> u16 {
        ((self.0 >> 40) & 0xff) as u16
    }
    pub fn count(self) -> u16 {
        ((self.0 >> 48) & 0xff) as u16 + 1
    }
    pub fn loc(self) -> Loc {
        Loc::unpack(self.0 & ((1 << 40) - 1))
    }
    fn end(self) -> u16 {
        self.first() + self.count()
    }
    /// The packed form (checkpoints).
    pub fn raw(self) -> u64 {
        self.0
    }
    /// A node from its packed form, if every field is in range.
    pub fn from_raw(v: u64) -> Option<PatchNode> {
        let n = PatchNode(v);
        (v >> 56 == 0 && (v >> 39) & 1 == 0 && n.end() <= 256).then_some(n)
    }
}

impl std::fmt::Debug for PatchNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PatchNode({}+{} at {:?})",
            self.first(),
            self.count(),
            self.loc()
        )
    }
}

/// A block's patch list. Most patched blocks carry one patch, kept inline (no allocation).
#[derive(Clone, Debug)]
enum List {
    One(PatchNode),
    Many(Box<[PatchNode]>),
}

impl List {
    fn as_slice(&self) -> &[PatchNode] {
        match self {
            List::One(n) => std::slice::from_ref(n),
            List::Many(v) => v,
        }
    }
    fn from_vec(v: Vec<PatchNode>) -> Option<List> {
        match v.len() {
            0 => None,
            1 => Some(List::One(v[0])),
            _ => Some(List::Many(v.into_boxed_slice())),
        }
    }
}

/// Lists up to this long are rebuilt on the stack by `insert` (longer ones are rare: a
/// block's list holds one node per distinct run of pages written since it was last whole).
const SMALL_LIST: usize = 30;

/// The patch lists of one volume, keyed by user block. Only patched blocks have an entry.
pub struct PatchTable {
    lists: FastMap<u64, List>,
    pages_per_block: u16,
}

impl PatchTable {
    pub fn new(pages_per_block: u16) -> Self {
        assert!(
            pages_per_block > 0 && pages_per_block <= 256,
            "blocks of 1 to 256 pages"
        );
        PatchTable {
            lists: FastMap::default(),
            pages_per_block,
        }
    }

    pub fn get(&self, ub: u64) -> &[PatchNode] {
        self.lists.get(&ub).map(|l| l.as_slice()).unwrap_or(&[])
    }

    /// Pages `[first, first + count)` of `ub` now live at `loc`. Returns the locations that no
    /// node of this list references any more (the caller decides whether they are dead: the
    /// base may still reference them).
    pub fn insert(&mut self, ub: u64, first: u16, count: u16, loc: Loc) -> Vec<Loc> {
        assert!(
            count > 0 && first + count <= self.pages_per_block,
            "patch {first}+{count} out of block"
        );
        let list = self.get(ub);
        if list.is_empty() {
            // The first patch of a block (the common case): nothing to trim, merge or
            // give back, and no list to build.
            self.lists
                .insert(ub, List::One(PatchNode::new(first, count, loc)));
            return Vec::new();
        }
        if list.len() <= SMALL_LIST {
            return self.insert_small(ub, first, count, loc);
        }
        self.insert_general(ub, first, count, loc)
    }

    /// `insert` for any list, on `Vec`s.
    fn insert_general(&mut self, ub: u64, first: u16, count: u16, loc: Loc) -> Vec<Loc> {
        let end = first + count;
        let list = self.get(ub);
        let before: Vec<Loc> = list.iter().map(|n| n.loc()).collect();
        let mut out: Vec<PatchNode> = Vec::with_capacity(list.len() + 2);
        for &n in list {
            if n.end() <= first || n.first() >= end {
                out.push(n);
                continue;
            }
            // Keep the parts of the older node outside the new range.
            if n.first() < first {
                out.push(PatchNode::new(n.first(), first - n.first(), n.loc()));
            }
            if n.end() > end {
                out.push(PatchNode::new(end, n.end() - end, n.loc()));
            }
        }
        out.push(PatchNode::new(first, count, loc));
        out.sort_by_key(|n| n.first());
        // Merge neighbours that point at the same block: pages sit at the same positions in
        // every block, so adjacent runs of one block are one run.
        let mut merged: Vec<PatchNode> = Vec::with_capacity(out.len());
        for n in out {
            match merged.last_mut() {
                Some(m) if m.loc() == n.loc() && m.end() == n.first() => {
                    *m = PatchNode::new(m.first(), m.count() + n.count(), m.loc())
                }
                _ => merged.push(n),
            }
        }
        self.store(ub, before.into_iter(), &merged)
    }

    /// `insert` for a list of at most `SMALL_LIST` nodes, on stack arrays (the same steps
    /// and the same stable sort, without the four `Vec`s per call: sub-block writes into
    /// already patched blocks are frequent).
    fn insert_small(&mut self, ub: u64, first: u16, count: u16, loc: Loc) -> Vec<Loc> {
        let end = first + count;
        let mut before = [PatchNode(0); SMALL_LIST];
        let list = self.get(ub);
        let nb = list.len();
        before[..nb].copy_from_slice(list);
        // Each old node leaves at most two pieces, one on each side of the new range, and
        // only one old node can straddle the whole range.
        let mut out = [PatchNode(0); SMALL_LIST + 2];
        let mut n = 0;
        for &node in &before[..nb] {
            if node.end() <= first || node.first() >= end {
                out[n] = node;
                n += 1;
                continue;
            }
            if node.first() < first {
                out[n] = PatchNode::new(node.first(), first - node.first(), node.loc());
                n += 1;
            }
            if node.end() > end {
                out[n] = PatchNode::new(end, node.end() - end, node.loc());
                n += 1;
            }
        }
        out[n] = PatchNode::new(first, count, loc);
        n += 1;
        out[..n].sort_by_key(|node| node.first());
        let mut merged = [PatchNode(0); SMALL_LIST + 2];
        let mut m = 0;
        for &node in &out[..n] {
            match merged[..m].last_mut() {
                Some(last) if last.loc() == node.loc() && last.end() == node.first() => {
                    *last = PatchNode::new(last.first(), last.count() + node.count(), last.loc())
                }
                _ => {
                    merged[m] = node;
                    m += 1;
                }
            }
        }
        self.store(ub, before[..nb].iter().map(|node| node.loc()), &merged[..m])
    }

    /// The last step of `insert`: checks the new list `merged` (sorted, merged), stores it as
    /// `ub`'s, and returns the locations of the old list (`before`) it no longer references.
    fn store(
        &mut self,
        ub: u64,
        before: impl Iterator<Item = Loc>,
        merged: &[PatchNode],
    ) -> Vec<Loc> {
        assert!(
            merged.len() <= self.pages_per_block as usize,
            "patch list longer than a block has pages"
        );
        for w in merged.windows(2) {
            assert!(w[0].end() <= w[1].first(), "patch nodes overlap");
        }
        let mut gone: Vec<Loc> = Vec::new();
        for l in before {
            if !merged.iter().any(|n| n.loc() == l) && !gone.contains(&l) {
                gone.push(l);
            }
        }
        let list = match merged {
            [] => unreachable!("the new node is in the list"),
            [one] => List::One(*one),
            _ => List::Many(merged.into()),
        };
        self.lists.insert(ub, list);
        gone
    }

    /// Drop the whole list; returns the distinct locations it referenced.
    pub fn clear(&mut self, ub: u64) -> Vec<Loc> {
        let mut locs: Vec<Loc> = Vec::new();
        if let Some(list) = self.lists.remove(&ub) {
            for n in list.as_slice() {
                if !locs.contains(&n.loc()) {
                    locs.push(n.loc());
                }
            }
        }
        locs
    }

    /// Re-point every node at `from` to `to` (replicated -> RAID at conversion). Returns
    /// whether any node changed.
    pub fn replace_loc(&mut self, ub: u64, from: Loc, to: Loc) -> bool {
        let Some(list) = self.lists.get_mut(&ub) else {
            return false;
        };
        let nodes: &mut [PatchNode] = match list {
            List::One(n) => std::slice::from_mut(n),
            List::Many(v) => v,
        };
        let mut changed = false;
        for n in nodes.iter_mut() {
            if n.loc() == from {
                *n = PatchNode::new(n.first(), n.count(), to);
                changed = true;
            }
        }
        changed
    }

    /// Every patched block and its list, in block order (checkpoints must not depend on
    /// hash order).
    pub fn sorted(&self) -> Vec<(u64, &[PatchNode])> {
        let mut v: Vec<(u64, &[PatchNode])> = self
            .lists
            .iter()
            .map(|(&ub, l)| (ub, l.as_slice()))
            .collect();
        v.sort_unstable_by_key(|e| e.0);
        v
    }

    /// Install a list read from a checkpoint; it must be sorted, non-overlapping and inside
    /// the block.
    pub fn set_list(&mut self, ub: u64, nodes: Vec<PatchNode>) -> Result<(), &'static str> {
        if nodes.is_empty() || nodes.len() > self.pages_per_block as usize {
            return Err("patch list length out of range");
        }
        if nodes.last().expect("non-empty").end() > self.pages_per_block
            || nodes.windows(2).any(|w| w[0].end() > w[1].first())
        {
            return Err("patch list overlaps or leaves the block");
        }
        self.lists
            .insert(ub, List::from_vec(nodes).expect("non-empty"));
        Ok(())
    }

    pub fn pages_per_block(&self) -> u16 {
        self.pages_per_block
    }

    pub fn references(&self, ub: u64, loc: Loc) -> bool {
        self.get(ub).iter().any(|n| n.loc() == loc)
    }

    /// Every patched block and its list (in no particular order).
    pub fn iter(&self) -> impl Iterator<Item = (u64, &[PatchNode])> {
        self.lists.iter().map(|(&ub, l)| (ub, l.as_slice()))
    }

    pub fn patched_blocks(&self) -> usize {
        self.lists.len()
    }

    /// Bytes of the patch metadata: per patched block its key and inline list (what a
    /// compact table needs), plus the node arrays of multi-node lists. Counted from lengths,
    /// not the hash map's capacity, so reports do not depend on its growth history.
    pub fn memory_bytes(&self) -> u64 {
        let slot = (std::mem::size_of::<u64>() + std::mem::size_of::<List>()) as u64;
        let arrays: u64 = self
            .lists
            .values()
            .map(|l| match l {
                List::One(_) => 0,
                List::Many(v) => v.len() as u64 * 8,
            })
            .sum();
        self.lists.len() as u64 * slot + arrays
    }
}

/// Split pages `[first, first+count)` of a block into maximal runs served by one location:
/// the patch node covering them, else the base.
pub fn segments(base: Loc, nodes: &[PatchNode], first: u16, count: u16) -> Vec<(u16, u16, Loc)> {
    let end = first + count;
    let mut out: Vec<(u16, u16, Loc)> = Vec::new();
    let mut p = first;
    while p < end {
        let covering = nodes.iter().find(|n| n.first() <= p && p < n.end());
        let (loc, run_end) = match covering {
            Some(n) => (n.loc(), n.end().min(end)),
            None => {
                let next = nodes
                    .iter()
                    .filter(|n| n.first() > p)
                    .map(|n| n.first())
                    .min()
                    .unwrap_or(end);
                (base, next.min(end))
            }
        };
        match out.last_mut() {
            Some(last) if last.2 == loc && last.0 + last.1 == p => last.1 += run_end - p,
            _ => out.push((p, run_end - p, loc)),
        }
        p = run_end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's Fig. 9: block 0x02 lives in RAID block 3; a write of pages 7-12 goes to the
    /// replica pair keyed 11 (copies in 11 and 17). Reads of pages 7-12 come from the pair,
    /// the rest from block 3.
    #[test]
    fn figure_9_patch() {
        let mut t = PatchTable::new(16);
        let gone = t.insert(0x02, 7, 6, Loc::Rep(11));
        assert!(gone.is_empty());
        assert_eq!(t.get(0x02), &[PatchNode::new(7, 6, Loc::Rep(11))]);
        let segs = segments(Loc::Raid(3), t.get(0x02), 0, 16);
        assert_eq!(
            segs,
            vec![
                (0, 7, Loc::Raid(3)),
                (7, 6, Loc::Rep(11)),
                (13, 3, Loc::Raid(3))
            ]
        );
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
                let loc = Loc::Rep(rng.below(12));
                let small = if a.get(ub).is_empty() || a.get(ub).len() > SMALL_LIST {
                    a.insert(ub, first, count, loc)
                } else {
                    a.insert_small(ub, first, count, loc)
                };
                let general = if b.get(ub).is_empty() {
                    b.insert(ub, first, count, loc)
                } else {
                    b.insert_general(ub, first, count, loc)
                };
                assert_eq!(small, general);
                assert_eq!(a.get(ub), b.get(ub));
                if rng.below(50) == 0 {
                    assert_eq!(a.clear(ub), b.clear(ub));
                }
            }
        }
    }

    #[test]
    fn newer_patch_trims_and_reports_dead_locations() {
        let mut t = PatchTable::new(16);
        t.insert(1, 0, 4, Loc::Rep(100));
        t.insert(1, 8, 4, Loc::Rep(200));
        // Covers all of the first node and half of the second.
        let gone = t.insert(1, 0, 10, Loc::Rep(300));
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
            t.insert(9, first, count, Loc::Rep(i));
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
        t.insert(2, 0, 2, Loc::Rep(5));
        t.insert(2, 2, 2, Loc::Rep(5));
        assert_eq!(t.get(2), &[PatchNode::new(0, 4, Loc::Rep(5))]);
    }
}
