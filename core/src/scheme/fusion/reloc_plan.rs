//! What the cleaner moves: a sweep of the BMT cut into relocation batches, and the exact
//! effect of a batch on the stripes it touches.
//!
//! Cleaning is page-granular. The unit is an *item*: the pages one user block has in one
//! RAID data column (its base's live pages, or patches packed there by a conversion or an
//! earlier cleaning). A batch fills one target stripe with items, densely: a block moved
//! whole keeps a column of its own, every other item's pages go wherever the next free
//! pages are and become patches placed there (`PatchNode::at`). So a stripe costs its live
//! pages to empty, not its live columns, and dead pages anywhere (overwritten, trimmed)
//! come back the same way holes do.
//!
//! Victims are the stripes with the fewest live pages (greedy). A plan empties victims in
//! order into as few targets as their live pages need, and is made only when it gives back
//! more stripes than it takes (ARCHITECTURE.md, "The space invariant"): a victim holds less
//! than a stripe of live pages, so it always fits in one target together with the tail of
//! the victim before it, and each batch empties at least one victim.

pub use super::reloc_batch::{Item, RelocBatch};
use super::vol::Vol;
use crate::fasthash::FastMap;
use crate::volume::Loc;

/// Items after the next one a batch looks through for some that fill its last pages.
const FILL_LOOKAHEAD: usize = 64;

/// Sweep part of `v`'s BMT (`reloc_sweep`) and cut what is worth moving into at most
/// `max_batches` relocation batches, to run in order (they are popped from the end: the
/// first last). `min_yield`: the stripes a plan gives back per stripe it fills, at least (0
/// when space is needed now: any gain will do).
pub fn plan(v: &mut Vol, max_batches: usize, min_yield: f64) -> Vec<RelocBatch> {
    let capacity = v.zone.dcols() * v.pages_per_block as usize;
    let mut sweep = std::mem::take(&mut v.sweep);
    sweep.run(v, capacity);
    let victims = sweep.candidates();
    // Items in victim order, each with the victim it belongs to (enough for the batches):
    // a victim's valid data columns in order, each block's owners in sweep order.
    let mut planned = 0;
    let mut items: Vec<(Item, usize)> = Vec::new();
    for (k, victim) in victims.iter().enumerate() {
        if planned >= capacity * (max_batches + 1) {
            break;
        }
        planned += victim.live;
        let valid = v.stripes.valid(victim.stripe);
        for o in &sweep.owners()[victim.first..victim.end] {
            let (_, c) = v.zone.split(o.f);
            if c < v.zone.dcols() && valid & (1 << c) != 0 {
                let item = Item {
                    ub: o.ub,
                    from: o.f,
                    pages: o.pages,
                    head: false,
                };
                items.push((item, k));
            }
        }
    }
    let nvictims = victims.len();
    v.sweep = sweep;
    // A mirror stripe holds one block: items of most of a block each would leave most of
    // every target unfilled and the plan would give nothing back, so its items split.
    let split = v.cfg.level.is_mirror();
    fill(items, nvictims, capacity, max_batches, min_yield, split)
}

/// Cut `items` (in victim order) into batches of at most `capacity` pages, the first
/// last, keeping the longest run of batches that gives back the most stripes, at least
/// `min_yield` per batch (none when no run gives back any). Pages a batch has left are
/// filled from later items that fit; `split`: when none does, the first item left moves its
/// first pages there (a head) and the rest in the next batch, so every batch is full.
/// Split or not, a batch after the first starts where the one before it stopped, and the
/// victim it finishes holds less than a stripe of live pages, so each empties a victim.
fn fill(
    mut items: Vec<(Item, usize)>,
    nvictims: usize,
    capacity: usize,
    max_batches: usize,
    min_yield: f64,
    split: bool,
) -> Vec<RelocBatch> {
    // Items of each victim not yet in a batch.
    let mut left = vec![0usize; nvictims];
    for &(_, k) in &items {
        left[k] += 1;
    }
    let mut batches: Vec<RelocBatch> = Vec::new();
    let (mut net, mut best, mut best_len) = (0i64, 0i64, 0usize);
    let mut next = 0; // items before this one are placed (or taken)
    let mut taken = vec![false; items.len()];
    while next < items.len() && batches.len() < max_batches {
        let mut b = RelocBatch { items: Vec::new() };
        let mut pages = 0usize;
        let mut emptied = 0i64;
        let mut i = next;
        let mut skipped = 0;
        while i < items.len() && skipped <= FILL_LOOKAHEAD {
            if taken[i] {
                i += 1;
                continue;
            }
            let (it, k) = items[i];
            if pages + it.pages as usize <= capacity {
                pages += it.pages as usize;
                b.items.push(it);
                taken[i] = true;
                left[k] -= 1;
                emptied += i64::from(left[k] == 0);
            } else {
                skipped += 1;
            }
            if pages == capacity {
                break;
            }
            i += 1;
        }
        while next < items.len() && taken[next] {
            next += 1;
        }
        if split && pages < capacity && next < items.len() {
            // No later item fills the last pages: the first item left moves its first
            // pages here and the rest first thing in the next batch. Only then: a split
            // item chains the two batches (the tail waits for its head), and a plan of
            // chained batches runs one move at a time.
            let room = (capacity - pages) as u16;
            b.items.push(Item {
                pages: room,
                head: true,
                ..items[next].0
            });
            items[next].0.pages -= room;
        }
        batches.push(b);
        net += emptied - 1;
        if net > best && net as f64 >= min_yield * batches.len() as f64 {
            (best, best_len) = (net, batches.len());
        }
    }
    items.clear();
    batches.truncate(best_len);
    batches.reverse();
    batches
}

/// The stripes moving `b` now would empty, exactly, as the mappings stand and once the
/// cleaning relocations in flight are done.
pub fn stripes_emptied(v: &Vol, b: &RelocBatch) -> usize {
    let mut removed: FastMap<u64, u32> = FastMap::default();
    for it in b.items.iter().filter(|it| !it.head) {
        if v.references(it.ub, Loc::Raid(it.from)) {
            *removed.entry(it.from).or_default() += 1;
        }
    }
    let freed = |f: u64| {
        let refs = 1 + v.raid_extra.get(&f).copied().unwrap_or(0) as u32;
        let gone = removed.get(&f).copied().unwrap_or(0) + v.leaving.get(&f).copied().unwrap_or(0);
        gone >= refs
    };
    let mut stripes: Vec<u32> = removed.keys().map(|&f| v.zone.split(f).0).collect();
    stripes.sort_unstable();
    stripes.dedup();
    stripes
        .into_iter()
        .filter(|&s| {
            let valid = v.stripes.valid(s);
            valid != 0
                && (0..v.zone.dcols()).all(|c| valid & (1 << c) == 0 || freed(v.zone.flbn(s, c)))
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn it(ub: u64, pages: u16) -> Item {
        Item {
            ub,
            from: ub,
            pages,
            head: false,
        }
    }

    /// Victims of 40 live pages out of 64: three of them go into two targets, so the plan
    /// keeps the batches up to the one that empties the third, and the pages of each batch
    /// fit a stripe.
    #[test]
    fn a_plan_gives_back_more_stripes_than_it_takes() {
        let mut items = Vec::new();
        for k in 0..4u64 {
            for j in 0..5 {
                items.push((it(k * 10 + j, 8), k as usize));
            }
        }
        let batches = fill(items, 4, 64, 16, 0.0, false);
        assert!(!batches.is_empty());
        for b in &batches {
            assert!(b.items.iter().map(|i| i.pages as usize).sum::<usize>() <= 64);
        }
        let placed: usize = batches.iter().map(|b| b.len()).sum();
        // 3 victims (120 pages) and a part of the fourth into 2 full targets: net 1; the
        // rest of the fourth would need a third target and give nothing more.
        assert_eq!(batches.len(), 2);
        assert_eq!(placed, 16);
    }

    /// Full victims give nothing back: no plan.
    #[test]
    fn no_plan_without_dead_pages_to_win() {
        let items: Vec<(Item, usize)> = (0..8).map(|k| (it(k, 16), k as usize / 4)).collect();
        assert!(fill(items, 2, 64, 16, 0.0, false).is_empty());
    }

    /// A batch takes later, smaller items to fill its last pages.
    #[test]
    fn batches_fill_their_last_pages_from_later_items() {
        let items = vec![
            (it(1, 16), 0),
            (it(2, 16), 0),
            (it(3, 16), 0),
            (it(4, 10), 1),
            (it(5, 16), 1),
            (it(6, 6), 1),
            (it(7, 8), 2),
        ];
        let mut batches = fill(items, 3, 64, 16, 0.0, false);
        assert_eq!(batches.len(), 2);
        let first = batches.pop().unwrap();
        let pages: usize = first.items.iter().map(|i| i.pages as usize).sum();
        assert_eq!(pages, 64);
        assert!(first.items.iter().any(|i| i.ub == 6));
    }

    /// A plan held to a minimum yield stops where its victims get too full. Victims of 24,
    /// 32, 40, 48 and then 56 live pages (of 64): the first batch empties two (gain 1), the
    /// best gain (2) takes four batches; at a yield of 0.6 only the first batch is kept.
    #[test]
    fn a_minimum_yield_cuts_the_plan_short() {
        let mut items = Vec::new();
        for k in 0..12u64 {
            // Victims fuller and fuller: 24, 32, ... live pages of 8-page items.
            let live = (3 + k.min(4)) as u16;
            for j in 0..live {
                items.push((it(k * 100 + j as u64, 8), k as usize));
            }
        }
        let all = fill(items.clone(), 12, 64, 64, 0.0, false);
        let lean = fill(items, 12, 64, 64, 0.6, false);
        assert_eq!((all.len(), lean.len()), (4, 1));
    }

    /// Mirror plans: victims of 12 live pages in one item each, targets of 16. Whole items
    /// fill a target to 12 only (each batch empties one victim and takes a target: nothing
    /// gained, no plan); split, every target is full, six take all eight victims, and the
    /// parts of an item add up to it.
    #[test]
    fn split_items_fill_one_block_targets() {
        let items: Vec<(Item, usize)> = (0..8).map(|k| (it(k, 12), k as usize)).collect();
        assert!(fill(items.clone(), 8, 16, 16, 0.0, false).is_empty());
        let batches = fill(items, 8, 16, 16, 0.0, true);
        assert_eq!(batches.len(), 6, "6 targets take the 8 victims' 96 pages");
        for b in &batches {
            assert_eq!(b.items.iter().map(|i| i.pages).sum::<u16>(), 16);
        }
        for k in 0..8 {
            let parts: Vec<&Item> = batches
                .iter()
                .flat_map(|b| &b.items)
                .filter(|i| i.ub == k)
                .collect();
            assert_eq!(parts.iter().map(|i| i.pages).sum::<u16>(), 12);
            assert!(
                parts.iter().filter(|i| !i.head).count() == 1,
                "one tail per item"
            );
        }
    }

    /// A mirror plan splits an item only when no later item fills a target's last pages:
    /// victims alternately of one 12-page item and of eight 1-page ones, targets of 16. The
    /// small items fill what the large ones leave, so no batch holds a head, none waits for
    /// another (`relocate::start_relocation` runs them side by side), and every target is
    /// full: 16 victims (160 pages) in 10.
    #[test]
    fn mirror_plans_split_only_what_later_items_cannot_fill() {
        let mut items = Vec::new();
        for k in 0..16u64 {
            if k % 2 == 0 {
                items.push((it(k * 10, 12), k as usize));
            } else {
                for j in 0..8 {
                    items.push((it(k * 10 + j, 1), k as usize));
                }
            }
        }
        let batches = fill(items, 16, 16, 64, 0.0, true);
        assert_eq!(batches.len(), 10);
        assert!(batches.iter().all(|b| b.items.iter().all(|i| !i.head)));
        let mut seen = crate::fasthash::FastSet::default();
        for b in &batches {
            assert!(
                b.items.iter().all(|i| seen.insert(i.ub)),
                "a block in two batches"
            );
        }
        let full = batches
            .iter()
            .all(|b| b.items.iter().map(|i| i.pages).sum::<u16>() == 16);
        assert!(full, "every batch fills its target");
    }
}
