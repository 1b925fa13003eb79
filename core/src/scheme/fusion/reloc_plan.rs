//! What the cleaner moves: a sweep of the BMT cut into relocation batches, and the exact
//! effect of a batch on the stripes it touches.
//!
//! The unit of cleaning is a RAID data column. A column with one owner is moved by moving
//! that user block whole (its patches merged into it on the way). A column shared by several
//! blocks (a converted pack) is moved as it is: its owners' pages are read at their own
//! positions into one target column and their references retargeted. Either way one live
//! column costs one target column, so emptying the stripes with the most holes always gives
//! space back once the volume holds a stripe's worth of holes (ARCHITECTURE.md, "The space
//! invariant"), however many blocks share a column.

use super::pack::Pages;
use super::vol::Vol;
use crate::fasthash::{FastMap, FastSet};
use crate::volume::Loc;

/// One relocation's worth of moves, planned by a sweep.
pub struct RelocBatch {
    /// User blocks moved whole (merged).
    pub blocks: Vec<u64>,
    /// Shared RAID blocks moved as they are, one target column per group. The blocks of a
    /// group have their live pages at different positions, so one column holds them all.
    pub shared: Vec<Group>,
    /// The sweep saw this batch empty more stripes than it takes.
    pub frees: bool,
}

impl RelocBatch {
    pub fn len(&self) -> usize {
        self.blocks.len() + self.shared.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A shared RAID block and the owners the sweep saw: (FLBN, user blocks).
pub type Shared = (u64, Vec<u64>);
/// Shared blocks that go into one target column.
pub type Group = Vec<Shared>;

/// A column to move, in sweep order.
enum Unit {
    Block(u64),
    Shared(Group),
}

/// Blocks of the BMT one sweep looks at, at most.
const SWEEP_BLOCKS: u64 = 65_536;
/// Shared blocks one sweep considers packing together (the sparsest), and the targets
/// each is tried against (the newest): bounds a sweep's cost, as first fit is quadratic.
const COMBINE_CANDIDATES: usize = 4096;
const COMBINE_OPEN_BINS: usize = 32;

/// Sweep part of `v`'s BMT and cut what is worth moving into at most `max_batches`
/// relocation batches, the best last (they are popped from the end).
pub fn plan(v: &mut Vol, max_batches: usize) -> Vec<RelocBatch> {
    let dcols = v.zone.dcols();
    // Owners of every column of a candidate stripe (one with holes, or with shared blocks).
    let mut owners: FastMap<u64, Vec<u64>> = FastMap::default();
    let mut candidate: FastMap<u32, bool> = FastMap::default();
    let mut locs: Vec<Loc> = Vec::new();
    for _ in 0..v.blocks.min(SWEEP_BLOCKS) {
        let ub = v.sweep_cursor;
        v.sweep_cursor = (v.sweep_cursor + 1) % v.blocks;
        if v.relocating.contains(&ub) {
            continue;
        }
        let e = v.bmt.get(ub);
        locs.clear();
        locs.push(e.base);
        if e.patched {
            locs.extend(v.patches.get(ub).iter().map(|n| n.loc()));
            locs.sort_by_key(|l| l.pack());
            locs.dedup();
        }
        for &loc in &locs {
            let Loc::Raid(f) = loc else { continue };
            let s = v.zone.split(f).0;
            let is = *candidate.entry(s).or_insert_with(|| {
                let holes = (v.stripes.valid(s).count_ones() as usize) < dcols;
                holes || v.stripe_refs(s) as usize > dcols
            });
            if is {
                owners.entry(f).or_default().push(ub);
            }
        }
    }
    // Victims: stripes with holes, fewest live columns first (their columns empty the most
    // stripes per target); then full stripes with shared blocks, whose owners merge.
    let mut victims: Vec<(u32, usize)> = candidate
        .iter()
        .filter(|&(_, &is)| is)
        .map(|(&s, _)| (s, v.stripes.valid(s).count_ones() as usize))
        .collect();
    victims.sort_by_key(|&(s, live)| (live >= dcols, live, s));
    // Units in order, each marked when it is the last move of a stripe the sweep saw whole.
    let mut order: Vec<(Unit, bool)> = Vec::new();
    let mut seen: FastSet<u64> = FastSet::default();
    for &(s, live) in &victims {
        if order.len() >= dcols * max_batches {
            break;
        }
        let valid = v.stripes.valid(s);
        let mut complete = true;
        let mut units = Vec::new();
        for c in 0..dcols {
            if valid & (1 << c) == 0 {
                continue;
            }
            let f = v.zone.flbn(s, c);
            let refs = 1 + v.raid_extra.get(&f).copied().unwrap_or(0) as usize;
            let Some(o) = owners.get(&f) else {
                complete = false;
                continue;
            };
            complete &= o.len() == refs;
            if live >= dcols {
                // No holes: only merging the owners (patches into their blocks) helps.
                units.extend(o.iter().map(|&u| Unit::Block(u)));
            } else if refs == 1 {
                units.push(Unit::Block(o[0]));
            } else {
                units.push(Unit::Shared(vec![(f, o.clone())]));
            }
        }
        units.retain(|u| match u {
            Unit::Block(b) => seen.insert(*b),
            Unit::Shared(..) => true,
        });
        let n = units.len();
        for (k, u) in units.into_iter().enumerate() {
            order.push((u, complete && live < dcols && k + 1 == n));
        }
    }
    let mut batches = Vec::new();
    for chunk in order.chunks(dcols).take(max_batches) {
        let emptied = chunk.iter().filter(|u| u.1).count();
        let full = chunk.len() == dcols;
        let merges = full
            && chunk
                .iter()
                .all(|(u, _)| matches!(u, Unit::Block(b) if v.bmt.get(*b).patched));
        let frees = emptied >= 2 || (emptied >= 1 && full);
        if !(frees || merges) {
            break;
        }
        let mut b = RelocBatch {
            blocks: Vec::new(),
            shared: Vec::new(),
            frees,
        };
        for (u, _) in chunk {
            match u {
                Unit::Block(x) => b.blocks.push(*x),
                Unit::Shared(g) => b.shared.push(g.clone()),
            }
        }
        batches.push(b);
    }
    if batches.len() < max_batches {
        combine(v, &owners, dcols, max_batches - batches.len(), &mut batches);
    }
    batches.reverse();
    batches
}

/// Batches that pack the live pages of sparse shared blocks together: blocks whose live
/// pages sit at different positions share one target column (first fit, sparsest first).
/// Each target replaces two blocks or more, so a batch frees at least a stripe's worth of
/// columns while writing only live pages: page-granular cleaning, for when the volume's
/// free room is dead pages inside shared blocks rather than holes.
fn combine(
    v: &Vol,
    owners: &FastMap<u64, Vec<u64>>,
    dcols: usize,
    max_batches: usize,
    out: &mut Vec<RelocBatch>,
) {
    let mut sparse: Vec<(u32, u64, Pages)> = Vec::new();
    for (&f, o) in owners {
        let refs = 1 + v.raid_extra.get(&f).copied().unwrap_or(0) as usize;
        if refs < 2 || o.len() != refs {
            continue;
        }
        let mut live = Pages::default();
        for &u in o {
            for n in v.patches.get(u) {
                if n.loc() == Loc::Raid(f) {
                    live.add(&Pages::range(n.first(), n.count()));
                }
            }
        }
        sparse.push((live.count(), f, live));
    }
    sparse.sort_unstable_by_key(|&(n, f, _)| (n, f));
    sparse.truncate(COMBINE_CANDIDATES);
    let mut bins: Vec<(Pages, Group)> = Vec::new();
    for (_, f, live) in sparse {
        let o = owners[&f].clone();
        let open = bins.len().saturating_sub(COMBINE_OPEN_BINS);
        match bins[open..].iter_mut().find(|(m, _)| !m.overlaps(&live)) {
            Some((m, g)) => {
                m.add(&live);
                g.push((f, o));
            }
            None => bins.push((live, vec![(f, o)])),
        }
    }
    let groups: Vec<Group> = bins
        .into_iter()
        .filter(|(_, g)| g.len() >= 2)
        .map(|(_, g)| g)
        .collect();
    for chunk in groups.chunks(dcols).take(max_batches) {
        let freed: usize = chunk.iter().map(|g| g.len() - 1).sum();
        if freed < dcols {
            break;
        }
        out.push(RelocBatch {
            blocks: Vec::new(),
            shared: chunk.to_vec(),
            frees: false,
        });
    }
}

/// What moving `b` now would free, exactly, as the mappings stand: (stripes emptied,
/// RAID data columns left with no reference).
pub fn effect(v: &Vol, b: &RelocBatch) -> (usize, usize) {
    let mut removed: FastMap<u64, u32> = FastMap::default();
    let whole: FastSet<u64> = b.blocks.iter().copied().collect();
    let mut locs: Vec<Loc> = Vec::new();
    for &ub in &b.blocks {
        let e = v.bmt.get(ub);
        locs.clear();
        locs.push(e.base);
        locs.extend(v.patches.get(ub).iter().map(|n| n.loc()));
        locs.sort_by_key(|l| l.pack());
        locs.dedup();
        for &l in &locs {
            if let Loc::Raid(f) = l {
                *removed.entry(f).or_default() += 1;
            }
        }
    }
    for (f, owners) in b.shared.iter().flatten() {
        for &o in owners {
            if !whole.contains(&o) && v.patches.references(o, Loc::Raid(*f)) {
                *removed.entry(*f).or_default() += 1;
            }
        }
    }
    let freed = |f: u64| {
        let refs = 1 + v.raid_extra.get(&f).copied().unwrap_or(0) as u32;
        removed.get(&f).copied().unwrap_or(0) >= refs
    };
    let columns = removed.keys().filter(|&&f| freed(f)).count();
    let mut stripes: Vec<u32> = removed.keys().map(|&f| v.zone.split(f).0).collect();
    stripes.sort_unstable();
    stripes.dedup();
    let emptied = stripes
        .into_iter()
        .filter(|&s| {
            let valid = v.stripes.valid(s);
            valid != 0
                && (0..v.zone.dcols()).all(|c| valid & (1 << c) == 0 || freed(v.zone.flbn(s, c)))
        })
        .count();
    (emptied, columns)
}
