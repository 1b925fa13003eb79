//! Patch lists: sub-block updates of a user block (paper §4.4, Fig. 9).
//!
//! A write that covers only some pages of a block is not merged into the old block (that would
//! be a read-modify-write); the pages are written out of place into a new block, and a *patch
//! node* records "pages [first, first+count) now live at loc, from page `at` on".
//! Nodes of one list never overlap (a newer node trims older ones), so a list can never hold
//! more nodes than the block has pages: that is the compaction bound the paper asks for, kept
//! by construction and asserted.

use crate::fasthash::FastMap;

use super::loc::{FLBN_BITS, Loc};

/// One patch: pages `[first, first + count)` of a block live at `loc`, from page `at` of the
/// block there on. A sub-block write into a pack takes the pack's next free pages; a write
/// into a stripe or a slot of its own keeps its pages at their own positions (`at == first`);
/// the cleaner packs live pages of many blocks densely wherever they fit.
///
/// Packed in 8 bytes: bits 0..39 the location (as in a BMT entry), bits 40..48 the first
/// page, bits 48..56 count - 1 (so blocks of up to 256 pages, 1 MiB, fit), bits 56..64 the
/// shift `at - first` modulo 256 (0 in lists written before pages could move, which means
/// what it meant then). A node split in two keeps its shift, so trimming never recomputes it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PatchNode(u64);

/// The bits of a `PatchNode` that hold its location.
const LOC_MASK: u64 = (1 << 40) - 1;
/// `Loc::Unmapped` packed.
const UNMAPPED_BITS: u64 = (1 << FLBN_BITS) - 1;

impl PatchNode {
    /// Pages at their own positions in `loc`'s block.
    pub fn new(first: u16, count: u16, loc: Loc) -> Self {
        Self::placed(first, count, loc, first)
    }
    /// Pages `[first, first + count)` at pages `[at, at + count)` of `loc`'s block.
    pub fn placed(first: u16, count: u16, loc: Loc, at: u16) -> Self {
        assert!(
            first < 256 && (1..=256).contains(&count) && first + count <= 256,
            "patch {first}+{count} does not fit"
        );
        assert!(
            at + count <= 256,
            "patch placed at {at}+{count} does not fit"
        );
        let shift = at.wrapping_sub(first) as u64 & 0xff;
        PatchNode(loc.pack() | (first as u64) << 40 | ((count - 1) as u64) << 48 | shift << 56)
    }
    /// A piece `[first, first + count)` of this node (same location and shift).
    fn piece(self, first: u16, count: u16) -> Self {
        let at = (first + self.shift()) & 0xff;
        Self::placed(first, count, self.loc(), at)
    }
    pub fn first(self) -> u16 {
        ((self.0 >> 40) & 0xff) as u16
    }
    pub fn count(self) -> u16 {
        ((self.0 >> 48) & 0xff) as u16 + 1
    }
    pub fn loc(self) -> Loc {
        Loc::unpack(self.loc_bits())
    }
    /// The location in its packed form. Nodes only ever hold the canonical packing
    /// (`Loc::pack`; `from_raw` canonicalises), so comparing these bits compares
    /// locations without unpacking either side: the lists' hot loops do little else.
    fn loc_bits(self) -> u64 {
        self.0 & LOC_MASK
    }
    /// Is this node's location `packed` (a `Loc::pack` value)?
    fn at_loc(self, packed: u64) -> bool {
        self.loc_bits() == packed
    }
    /// The page of `loc`'s block that holds page `first`.
    pub fn at(self) -> u16 {
        (self.first() + self.shift()) & 0xff
    }
    fn shift(self) -> u16 {
        (self.0 >> 56) as u16
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
        ((v >> 39) & 1 == 0 && n.end() <= 256 && n.at() + n.count() <= 256)
            .then(|| PatchNode(v & !LOC_MASK | n.loc().pack()))
    }
    /// Can `n` follow this node as one run (same location, next pages at the next places)?
    /// The same shift is not enough: it is kept modulo 256, so in a block of 256 pages a
    /// node ending at the last page and one placed at page 0 share it without being
    /// adjacent, and their merge would run past the block's end.
    fn continued_by(self, n: PatchNode) -> bool {
        self.loc_bits() == n.loc_bits()
            && self.end() == n.first()
            && self.shift() == n.shift()
            && self.at() + self.count() == n.at()
    }
}

impl std::fmt::Debug for PatchNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PatchNode({}+{} at {:?} page {})",
            self.first(),
            self.count(),
            self.loc(),
            self.at()
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
    /// Pages the list maps (its nodes at a location).
    fn mapped_pages(&self) -> u32 {
        List::pages_of(self.as_slice())
    }
    /// Pages `nodes` map (their nodes at a location).
    fn pages_of(nodes: &[PatchNode]) -> u32 {
        nodes
            .iter()
            .filter(|n| !n.at_loc(UNMAPPED_BITS))
            .map(|n| n.count() as u32)
            .sum()
    }
    /// Pages `nodes` cover, trimmed ones (at no location) included.
    fn covered_pages(nodes: &[PatchNode]) -> u32 {
        nodes.iter().map(|n| n.count() as u32).sum()
    }
    /// Nodes held in an allocated array (none for an inline list).
    fn array_len(&self) -> u64 {
        match self {
            List::One(_) => 0,
            List::Many(v) => v.len() as u64,
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

/// What `settle` changed: the locations the old list had and the new one has not, the
/// pages mapped before and after, and whether the new list covers its whole block.
struct Settled {
    gone: Vec<Loc>,
    pages: (u32, u32),
    covers: bool,
}

/// The last step of an insert: checks the new list `merged` (sorted, merged, `node` in it)
/// and installs it in place of `list` in one pass over each, keeping `array_nodes`.
fn settle(
    list: &mut List,
    node: PatchNode,
    merged: &[PatchNode],
    pages_per_block: u16,
    array_nodes: &mut u64,
) -> Settled {
    assert!(
        merged.len() <= pages_per_block as usize,
        "patch list longer than a block has pages"
    );
    let (mut after, mut covered, mut prev_end) = (0u32, 0u32, 0u16);
    for n in merged {
        assert!(prev_end <= n.first(), "patch nodes overlap");
        prev_end = n.end();
        covered += n.count() as u32;
        if !n.at_loc(UNMAPPED_BITS) {
            after += n.count() as u32;
        }
    }
    let old = list.as_slice();
    // Only a node the new one covers whole can leave its location unreferenced: every
    // other keeps a piece, under its location, in `merged`.
    let mut gone: Vec<Loc> = Vec::new();
    for o in old {
        if o.first() < node.first() || o.end() > node.end() {
            continue;
        }
        let (bits, loc) = (o.loc_bits(), o.loc());
        if !merged.iter().any(|n| n.at_loc(bits)) && !gone.contains(&loc) {
            gone.push(loc);
        }
    }
    let before = List::pages_of(old);
    match list {
        // As many nodes as before (a page rewritten in a fragmented block, the cleaner's
        // usual case): in place, without a new array.
        List::Many(nodes) if nodes.len() == merged.len() => nodes.copy_from_slice(merged),
        _ => {
            let new = match merged {
                [] => unreachable!("the new node is in the list"),
                [one] => List::One(*one),
                _ => List::Many(merged.into()),
            };
            *array_nodes = *array_nodes - list.array_len() + new.array_len();
            *list = new;
        }
    }
    Settled {
        gone,
        pages: (before, after),
        covers: covered == pages_per_block as u32,
    }
}

/// Lists up to this long are rebuilt on the stack by `insert` (longer ones are rare: a
/// block's list holds one node per distinct run of pages written since it was last whole).
const SMALL_LIST: usize = 30;

/// The patch lists of one volume, keyed by user block. Only patched blocks have an entry.
pub struct PatchTable {
    lists: FastMap<u64, List>,
    pages_per_block: u16,
    /// Nodes of all multi-node lists, kept by `put` and `take` for `memory_bytes` (which
    /// `serve` asks for every quarter second: a walk of the table would be O(volume)).
    array_nodes: u64,
    /// The pages the list that the last `insert` or `clear` changed mapped before and after
    /// (`last_pages`).
    last_pages: (u32, u32),
    /// Whether the list the last `insert` changed covers its whole block (`last_covers`).
    last_covers: bool,
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
            array_nodes: 0,
            last_pages: (0, 0),
            last_covers: false,
        }
    }

    /// Install `list` as `ub`'s, keeping `array_nodes`, `last_pages` and `last_covers`.
    fn put(&mut self, ub: u64, list: List) {
        self.array_nodes += list.array_len();
        let after = list.mapped_pages();
        self.last_covers = List::covered_pages(list.as_slice()) == self.pages_per_block as u32;
        let before = match self.lists.insert(ub, list) {
            Some(old) => {
                self.array_nodes -= old.array_len();
                old.mapped_pages()
            }
            None => 0,
        };
        self.last_pages = (before, after);
    }

    /// Remove `ub`'s list, keeping `array_nodes` and `last_pages`.
    fn take(&mut self, ub: u64) -> Option<List> {
        self.last_pages = (0, 0);
        self.last_covers = false;
        let old = self.lists.remove(&ub)?;
        self.array_nodes -= old.array_len();
        self.last_pages = (old.mapped_pages(), 0);
        Some(old)
    }

    /// The pages (at a location) of the list the last `insert` or `clear` changed, before
    /// and after it: what a count of mapped data needs without looking the list up again.
    pub fn last_pages(&self) -> (u32, u32) {
        self.last_pages
    }

    pub fn get(&self, ub: u64) -> &[PatchNode] {
        self.lists.get(&ub).map(|l| l.as_slice()).unwrap_or(&[])
    }

    /// The pages of `node` now live where it says. Returns the locations that no node of
    /// this list references any more (the caller decides whether they are dead: the base may
    /// still reference them). `last_pages` and `last_covers` then describe the change.
    pub fn insert(&mut self, ub: u64, node: PatchNode) -> Vec<Loc> {
        assert!(
            node.end() <= self.pages_per_block && node.at() + node.count() <= self.pages_per_block,
            "{node:?} out of block"
        );
        match self.lists.get(&ub).map(|l| l.as_slice().len()) {
            // The first patch of a block (the common case): nothing to trim, merge or
            // give back, and no list to build.
            None => {
                self.put(ub, List::One(node));
                Vec::new()
            }
            Some(n) if n <= SMALL_LIST => self.insert_small(ub, node),
            Some(_) => self.insert_general(ub, node),
        }
    }

    /// `insert` for any list, on `Vec`s.
    fn insert_general(&mut self, ub: u64, node: PatchNode) -> Vec<Loc> {
        let (first, end) = (node.first(), node.end());
        let list = self.lists.get_mut(&ub).expect("a list to insert into");
        let old = list.as_slice();
        let mut out: Vec<PatchNode> = Vec::with_capacity(old.len() + 2);
        for &n in old {
            if n.end() <= first || n.first() >= end {
                out.push(n);
                continue;
            }
            // Keep the parts of the older node outside the new range.
            if n.first() < first {
                out.push(n.piece(n.first(), first - n.first()));
            }
            if n.end() > end {
                out.push(n.piece(end, n.end() - end));
            }
        }
        out.push(node);
        out.sort_by_key(|n| n.first());
        // Merge neighbours that continue each other: one run of one block.
        let mut merged: Vec<PatchNode> = Vec::with_capacity(out.len());
        for n in out {
            match merged.last_mut() {
                Some(m) if m.continued_by(n) => *m = m.piece(m.first(), m.count() + n.count()),
                _ => merged.push(n),
            }
        }
        let settled = settle(
            list,
            node,
            &merged,
            self.pages_per_block,
            &mut self.array_nodes,
        );
        self.note(settled)
    }

    /// `insert` for a list of at most `SMALL_LIST` nodes, on a stack array and without a
    /// sort: the list is sorted and its nodes do not overlap, so the ones the new node
    /// overlaps are one run, found by two binary searches; the nodes before and after it
    /// stay as they are, and only the run's first and last node can leave a piece. The
    /// same list as `insert_general` (sub-block writes into patched blocks are frequent,
    /// and the cleaner's moves are all of them).
    fn insert_small(&mut self, ub: u64, node: PatchNode) -> Vec<Loc> {
        let (first, end) = (node.first(), node.end());
        let list = self.lists.get_mut(&ub).expect("a list to insert into");
        let old = list.as_slice();
        // Ends are sorted too, since the nodes do not overlap.
        let lo = old.partition_point(|n| n.end() <= first);
        let hi = old.partition_point(|n| n.first() < end);
        let mut merged = [PatchNode(0); SMALL_LIST + 2];
        merged[..lo].copy_from_slice(&old[..lo]);
        let mut m = lo;
        let mut push = |merged: &mut [PatchNode], n: PatchNode| match m.checked_sub(1) {
            Some(l) if merged[l].continued_by(n) => {
                merged[l] = merged[l].piece(merged[l].first(), merged[l].count() + n.count())
            }
            _ => {
                merged[m] = n;
                m += 1;
            }
        };
        if lo < hi && old[lo].first() < first {
            push(
                &mut merged,
                old[lo].piece(old[lo].first(), first - old[lo].first()),
            );
        }
        push(&mut merged, node);
        if lo < hi && old[hi - 1].end() > end {
            push(&mut merged, old[hi - 1].piece(end, old[hi - 1].end() - end));
        }
        for &n in &old[hi..] {
            push(&mut merged, n);
        }
        let settled = settle(
            list,
            node,
            &merged[..m],
            self.pages_per_block,
            &mut self.array_nodes,
        );
        self.note(settled)
    }

    /// Keep what `settle` found about the list it changed; returns the locations gone.
    fn note(&mut self, settled: Settled) -> Vec<Loc> {
        self.last_pages = settled.pages;
        self.last_covers = settled.covers;
        settled.gone
    }

    /// Do the nodes of `ub` cover every page of the block (its base serves nothing)?
    pub fn covers_block(&self, ub: u64) -> bool {
        List::covered_pages(self.get(ub)) == self.pages_per_block as u32
    }

    /// Whether the list the last `insert` changed covers every page of its block (what
    /// `covers_block` would say of it, without looking it up again).
    pub fn last_covers(&self) -> bool {
        self.last_covers
    }

    /// Drop the whole list; returns the distinct locations it referenced.
    pub fn clear(&mut self, ub: u64) -> Vec<Loc> {
        let mut locs: Vec<Loc> = Vec::new();
        if let Some(list) = self.take(ub) {
            let nodes = list.as_slice();
            for (i, n) in nodes.iter().enumerate() {
                if !nodes[..i].iter().any(|o| o.at_loc(n.loc_bits())) {
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
        let (mut changed, from) = (false, from.pack());
        for n in nodes.iter_mut() {
            if n.at_loc(from) {
                *n = PatchNode::placed(n.first(), n.count(), to, n.at());
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
            || nodes
                .iter()
                .any(|n| n.at() + n.count() > self.pages_per_block)
            || nodes.windows(2).any(|w| w[0].end() > w[1].first())
        {
            return Err("patch list overlaps or leaves the block");
        }
        self.put(ub, List::from_vec(nodes).expect("non-empty"));
        Ok(())
    }

    pub fn pages_per_block(&self) -> u16 {
        self.pages_per_block
    }

    pub fn references(&self, ub: u64, loc: Loc) -> bool {
        let bits = loc.pack();
        self.get(ub).iter().any(|n| n.at_loc(bits))
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
        self.lists.len() as u64 * slot + self.array_nodes * 8
    }

    /// Does the count `memory_bytes` keeps match the lists? (For invariant checks: a walk
    /// of the whole table.)
    pub fn counts_hold(&self) -> bool {
        self.array_nodes == self.lists.values().map(List::array_len).sum::<u64>()
    }
}

/// A run of pages of one block served by one location: pages `[first, first + count)` of
/// the block, at pages `[at, at + count)` of the block at `loc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seg {
    pub first: u16,
    pub count: u16,
    pub loc: Loc,
    pub at: u16,
}

/// Split pages `[first, first+count)` of a block into maximal runs served by one location:
/// the patch node covering them, else the base. `nodes` is a block's list, sorted and
/// non-overlapping (as `PatchTable` keeps it), so one pass over it does.
pub fn segments(base: Loc, nodes: &[PatchNode], first: u16, count: u16) -> Vec<Seg> {
    let end = first + count;
    // At most a run per node and one between each two: one allocation.
    let mut out: Vec<Seg> = Vec::with_capacity(2 * nodes.len() + 1);
    // Nodes are sorted by first page and do not overlap, so their ends are sorted too.
    let mut i = nodes.partition_point(|n| n.end() <= first);
    let mut p = first;
    while p < end {
        let (loc, at, run_end) = match nodes.get(i) {
            Some(n) if n.first() <= p => {
                i += 1;
                (n.loc(), n.at() + (p - n.first()), n.end().min(end))
            }
            Some(n) => (base, p, n.first().min(end)),
            None => (base, p, end),
        };
        match out.last_mut() {
            Some(last)
                if last.loc == loc
                    && last.first + last.count == p
                    && last.at + last.count == at =>
            {
                last.count += run_end - p
            }
            _ => out.push(Seg {
                first: p,
                count: run_end - p,
                loc,
                at,
            }),
        }
        p = run_end;
    }
    out
}

/// The runs of a whole block (`ppb` pages) that `loc` serves: what `segments(base, nodes,
/// 0, ppb)` gives for `loc`, in the same order, without building the other locations'
/// runs (the cleaner asks this of every block it moves, and blocks it cleans are the most
/// fragmented ones).
pub fn segments_at(base: Loc, nodes: &[PatchNode], ppb: u16, loc: Loc) -> Vec<Seg> {
    let bits = loc.pack();
    let from_base = base == loc;
    let mut out: Vec<Seg> = Vec::new();
    let push = |out: &mut Vec<Seg>, first: u16, count: u16, at: u16| match out.last_mut() {
        Some(last) if last.first + last.count == first && last.at + last.count == at => {
            last.count += count
        }
        _ => out.push(Seg {
            first,
            count,
            loc,
            at,
        }),
    };
    let mut p = 0;
    for n in nodes {
        if from_base && n.first() > p {
            push(&mut out, p, n.first() - p, p);
        }
        if n.at_loc(bits) {
            push(&mut out, n.first(), n.count(), n.at());
        }
        p = n.end();
    }
    if from_base && p < ppb {
        push(&mut out, p, ppb - p, p);
    }
    out
}

#[cfg(test)]
mod tests;
