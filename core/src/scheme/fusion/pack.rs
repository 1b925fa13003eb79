//! Page packing of the replicated area.
//!
//! A sub-block write (a *patch*, paper §4.4) needs only as many pages as it writes, not a
//! whole block of its own: without packing every 4 KiB write took a 64 KiB replica slot, the
//! replicated area filled after a few thousand scattered small writes and every further one
//! cost a stripe. A *pack* is a replica slot that collects the patches of several user
//! blocks, each in the next free run of pages (its patch node records where,
//! `PatchNode::at`), until its pages run out or it is closed. So packs fill up whatever
//! pages the writes touch, and a conversion turns full blocks into RAID. Its owners are
//! listed here; after conversion the block becomes a RAID data block shared the same way
//! (see `Vol::raid_extra`).
//!
//! A page position once handed out is never handed out again in the same slot (its old
//! contents may still be what a not-yet-durable mapping points at); only conversion, which
//! frees or recycles whole stripes, reclaims it.

use super::pairs::SlotRef;
use crate::fasthash::FastMap;

/// Open packs at once per volume: enough that writes on members to avoid (a spiking one)
/// find a pack elsewhere, and that a piece longer than the pages left in one pack finds
/// another, few enough that the pair sets they keep unsettled do not hold back conversion.
pub const MAX_OPEN: usize = 8;

/// Page bitmap of one block (blocks have at most 256 pages).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Pages([u64; 4]);

impl Pages {
    pub(super) fn range(first: u16, count: u16) -> Pages {
        /// The bits of word `w` below page `x`.
        fn below(x: usize, w: usize) -> u64 {
            let base = w * 64;
            if x <= base {
                0
            } else if x >= base + 64 {
                u64::MAX
            } else {
                (1 << (x - base)) - 1
            }
        }
        let mut p = Pages::default();
        let (lo, hi) = (first as usize, first as usize + count as usize);
        if hi <= 64 {
            // Blocks of up to 64 pages (256 KiB) use the first word only.
            p.0[0] = below(hi, 0) & !below(lo, 0);
            return p;
        }
        for (w, word) in p.0.iter_mut().enumerate() {
            *word = below(hi, w) & !below(lo, w);
        }
        p
    }
    pub(super) fn add(&mut self, o: &Pages) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a |= b;
        }
    }
    pub(super) fn remove(&mut self, o: &Pages) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a &= !b;
        }
    }
    /// The first page of the lowest run of `count` unused pages among the first `pages`.
    pub(super) fn free_run(&self, count: u16, pages: u16) -> Option<u16> {
        if count == 0 || count > pages {
            return None;
        }
        if pages <= 64 {
            // Blocks of up to 64 pages: starts of free runs by shifting and masking.
            let mask = if pages == 64 {
                u64::MAX
            } else {
                (1 << pages) - 1
            };
            let mut starts = !self.0[0] & mask;
            for _ in 1..count {
                starts &= starts >> 1;
            }
            // A start must leave room for the run inside the block.
            starts &= u64::MAX >> (64 - (pages - count + 1));
            return (starts != 0).then(|| starts.trailing_zeros() as u16);
        }
        let mut run = 0;
        for p in 0..pages {
            if self.contains(p) {
                run = 0;
            } else {
                run += 1;
                if run == count {
                    return Some(p + 1 - count);
                }
            }
        }
        None
    }
    pub(super) fn contains(&self, page: u16) -> bool {
        self.0[page as usize / 64] & (1 << (page % 64)) != 0
    }
    pub(super) fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
    pub(super) fn count(&self) -> u32 {
        // Bit counts are a software routine on baseline x86-64: skip the empty words (all
        // but the first for blocks of up to 64 pages).
        self.0
            .iter()
            .filter(|&&w| w != 0)
            .map(|w| w.count_ones())
            .sum()
    }
}

/// A replica slot open for patches.
#[derive(Debug)]
struct Open {
    r: SlotRef,
    /// Pages handed out.
    used: Pages,
    /// Writes with pages in flight into this slot.
    writing: u16,
    /// Still taking new pieces.
    open: bool,
}

/// The open packs and the owners of every packed slot of one volume.
pub struct Packs {
    open: Vec<Open>,
    owners: FastMap<SlotRef, Vec<u64>>,
    pages_per_block: u16,
}

/// What happened to a pack that stopped taking pieces and has no write in flight.
#[derive(Debug, PartialEq, Eq)]
pub enum Settled {
    /// Still busy or still open.
    No,
    /// Closed and idle, with live pages of at least one block.
    Live,
    /// Closed and idle, nothing live in it: the slot is dead.
    Empty,
}

impl Packs {
    pub fn new(pages_per_block: u16) -> Self {
        Packs {
            open: Vec::new(),
            owners: FastMap::default(),
            pages_per_block,
        }
    }

    pub fn open_count(&self) -> usize {
        self.open.len()
    }

    /// Reserve `count` pages in an open pack whose slot `ok` accepts: the slot and the first
    /// of the pages there. Also says whether `ok` turned down a pack that had the room: the
    /// piece was steered away from it (a redirected write when `ok` avoids slow members).
    pub fn reserve(
        &mut self,
        count: u16,
        mut ok: impl FnMut(SlotRef) -> bool,
    ) -> (Option<(SlotRef, u16)>, bool) {
        let mut refused = false;
        for p in self.open.iter_mut() {
            let Some(at) = p
                .used
                .free_run(count, self.pages_per_block)
                .filter(|_| p.open)
            else {
                continue;
            };
            if !ok(p.r) {
                refused = true;
                continue;
            }
            p.used.add(&Pages::range(at, count));
            p.writing += 1;
            return (Some((p.r, at)), refused);
        }
        (None, refused)
    }

    /// How many new slots would sub-block pieces of these page counts need, the open packs
    /// taking what they can (first fit, as `reserve` hands out)?
    /// Asked for every chunk of every write, most of which have no sub-block piece: those
    /// return at once, and the others work on the stack (the open packs plus one new slot
    /// per piece), not on a `Vec` per call.
    pub fn slots_needed(&self, pieces: impl Iterator<Item = u16>) -> usize {
        let mut pieces = pieces.peekable();
        if pieces.peek().is_none() {
            return 0;
        }
        // Room for the open packs and a chunk of a 6+1 or 8+2 stripe (zeroing a larger
        // array showed up in profiles); wider chunks take the Vec path.
        const CAP: usize = MAX_OPEN + 8;
        let most = self.open.len() + pieces.size_hint().1.unwrap_or(usize::MAX);
        if most > CAP {
            return self.slots_needed_vec(pieces);
        }
        self.first_fit(&mut [Pages::default(); CAP], pieces)
    }

    /// `slots_needed` for more packs and pieces than its array holds.
    fn slots_needed_vec(&self, pieces: impl Iterator<Item = u16>) -> usize {
        let pieces: Vec<u16> = pieces.collect();
        let mut used = vec![Pages::default(); self.open.len() + pieces.len()];
        self.first_fit(&mut used, pieces.into_iter())
    }

    /// The open packs' pages into `used`, then each piece into the first that has room,
    /// else a new slot; returns how many new slots. `used` has room for every open pack and
    /// one slot per piece.
    fn first_fit(&self, used: &mut [Pages], pieces: impl Iterator<Item = u16>) -> usize {
        let ppb = self.pages_per_block;
        let mut n = 0;
        for p in self.open.iter().filter(|p| p.open) {
            used[n] = p.used;
            n += 1;
        }
        let fresh = n;
        for count in pieces {
            let found = used[..n]
                .iter_mut()
                .find_map(|u| u.free_run(count, ppb).map(|at| (u, at)));
            match found {
                Some((u, at)) => u.add(&Pages::range(at, count)),
                None => {
                    used[n] = Pages::range(0, count);
                    n += 1;
                }
            }
        }
        n - fresh
    }

    /// Start a pack in slot `r` (just taken from the spare list) with a first reservation,
    /// of its first `count` pages.
    pub fn start(&mut self, r: SlotRef, count: u16) {
        assert!(self.open.iter().all(|p| p.r != r), "slot packed twice");
        self.open.push(Open {
            r,
            used: Pages::range(0, count),
            writing: 1,
            open: true,
        });
        self.owners.entry(r).or_default();
    }

    /// Give back a reservation (pages `[at, at+count)` of `r`) whose write was never issued.
    pub fn unreserve(&mut self, r: SlotRef, at: u16, count: u16) {
        let p = self.find_mut(r).expect("unreserve of a pack not open");
        assert!(p.writing > 0);
        p.used.remove(&Pages::range(at, count));
        p.writing -= 1;
    }

    /// A write into pack `r` is over (`ok` false: it failed). The block whose pages it now
    /// holds was made an owner first (`add_owner`, before its mapping could release older
    /// pages in the same pack). Closes the pack when its pages are used up.
    pub fn write_done(&mut self, r: SlotRef, ok: bool) -> Settled {
        let ppb = self.pages_per_block as u32;
        let p = self.find_mut(r).expect("write into a pack not open");
        assert!(p.writing > 0);
        p.writing -= 1;
        if !ok || p.used.count() >= ppb {
            // Full, or a copy failed under it: take no more pieces.
            p.open = false;
        }
        self.settle(r)
    }

    /// Take no more pieces into `r`.
    pub fn close(&mut self, r: SlotRef) -> Settled {
        if let Some(p) = self.find_mut(r) {
            p.open = false;
        }
        self.settle(r)
    }

    /// Open packs of pair set `set`.
    pub fn of_set(&self, set: u32) -> Vec<SlotRef> {
        self.open
            .iter()
            .filter(|p| p.r.set == set)
            .map(|p| p.r)
            .collect()
    }

    /// The open pack to close to make room for a new one: the fullest.
    pub fn fullest(&self) -> Option<SlotRef> {
        self.open
            .iter()
            .filter(|p| p.open)
            .max_by_key(|p| p.used.count())
            .map(|p| p.r)
    }

    /// Is `r` a pack still open or with writes in flight?
    pub fn is_active(&self, r: SlotRef) -> bool {
        self.open.iter().any(|p| p.r == r)
    }

    /// Note that block `ub` has pages in packed slot `r`.
    pub fn add_owner(&mut self, r: SlotRef, ub: u64) {
        // Room for a few owners at once: a pack of 4 KiB pieces gets up to a block's worth,
        // and growing from empty reallocated at 1, 2 and 4.
        let o = self
            .owners
            .entry(r)
            .or_insert_with(|| Vec::with_capacity(8));
        if !o.contains(&ub) {
            o.push(ub);
        }
    }

    /// Block `ub` has no pages in `r` any more. Returns what that leaves of the slot.
    pub fn remove_owner(&mut self, r: SlotRef, ub: u64) -> Settled {
        let o = self
            .owners
            .get_mut(&r)
            .expect("owner removed from a slot that is not packed");
        let i = o
            .iter()
            .position(|&x| x == ub)
            .expect("block is not an owner of the packed slot");
        o.swap_remove(i);
        self.settle(r)
    }

    /// Owners of packed slot `r`.
    pub fn owners(&self, r: SlotRef) -> &[u64] {
        self.owners.get(&r).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// Forget packed slot `r` (its set is converted or freed), returning its owners.
    pub fn take_owners(&mut self, r: SlotRef) -> Vec<u64> {
        assert!(!self.is_active(r), "taking the owners of an active pack");
        self.owners.remove(&r).unwrap_or_default()
    }

    /// Closed and idle packs leave the open list; a packed slot without owners is forgotten.
    fn settle(&mut self, r: SlotRef) -> Settled {
        if let Some(i) = self.open.iter().position(|p| p.r == r) {
            let p = &self.open[i];
            if p.open || p.writing > 0 {
                return Settled::No;
            }
            self.open.swap_remove(i);
        }
        if self.owners.get(&r).is_some_and(|o| !o.is_empty()) {
            Settled::Live
        } else {
            self.owners.remove(&r);
            Settled::Empty
        }
    }

    fn find_mut(&mut self, r: SlotRef) -> Option<&mut Open> {
        self.open.iter_mut().find(|p| p.r == r)
    }

    pub fn memory_bytes(&self) -> u64 {
        self.owners
            .values()
            .map(|o| 32 + o.capacity() as u64 * 8)
            .sum::<u64>()
            + self.open.len() as u64 * std::mem::size_of::<Open>() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(set: u32, slot: u16) -> SlotRef {
        SlotRef { set, slot }
    }

    #[test]
    fn page_ranges_match_a_page_by_page_fill() {
        for first in 0..=256u16 {
            for count in 0..=256 - first {
                let mut want = Pages::default();
                for i in first..first + count {
                    want.0[i as usize / 64] |= 1 << (i % 64);
                }
                assert_eq!(Pages::range(first, count), want, "{first}+{count}");
            }
        }
    }

    #[test]
    fn slots_needed_matches_with_and_without_the_array() {
        let mut p = Packs::new(16);
        p.start(r(0, 0), 4);
        p.start(r(0, 1), 8);
        // 2, 4 and 2 go into the first pack's 12 free pages, the whole block needs a slot
        // of its own, the last page fits in the first pack's rest.
        let pieces = [2u16, 4, 2, 16, 1];
        assert_eq!(p.slots_needed(pieces.iter().copied()), 1);
        assert_eq!(p.slots_needed_vec(pieces.iter().copied()), 1);
        assert_eq!(p.slots_needed([12u16, 12].into_iter()), 1);
        assert_eq!(p.slots_needed(std::iter::empty()), 0);
    }

    #[test]
    fn free_runs_are_found_first_fit() {
        let mut used = Pages::range(3, 2);
        assert_eq!(used.free_run(3, 16), Some(0));
        assert_eq!(used.free_run(4, 16), Some(5));
        assert_eq!(used.free_run(11, 16), Some(5));
        assert_eq!(used.free_run(12, 16), None);
        used.add(&Pages::range(5, 11));
        assert_eq!(used.free_run(1, 16), Some(0));
        assert_eq!(used.free_run(4, 16), None);
        // Blocks of more than 64 pages take the page-by-page path.
        let big = Pages::range(0, 100);
        assert_eq!(big.free_run(156, 256), Some(100));
        assert_eq!(big.free_run(157, 256), None);
        assert_eq!(Pages::default().free_run(64, 64), Some(0));
        assert_eq!(Pages::range(63, 1).free_run(1, 64), Some(0));
        assert_eq!(Pages::range(0, 63).free_run(1, 64), Some(63));
        assert_eq!(Pages::range(0, 63).free_run(2, 64), None);
    }

    #[test]
    fn pieces_take_the_next_free_pages() {
        let mut p = Packs::new(16);
        p.start(r(0, 0), 2);
        assert_eq!(p.reserve(15, |_| true), (None, false), "14 pages left");
        assert_eq!(p.reserve(11, |_| true), (Some((r(0, 0), 2)), false));
        assert_eq!(p.reserve(3, |_| false), (None, true), "slot refused");
        assert_eq!(p.reserve(3, |_| true), (Some((r(0, 0), 13)), false));
        assert_eq!(
            p.reserve(1, |_| true),
            (None, false),
            "all 16 pages handed out"
        );
        p.add_owner(r(0, 0), 7);
        assert_eq!(p.write_done(r(0, 0), true), Settled::No);
        p.add_owner(r(0, 0), 8);
        assert_eq!(p.write_done(r(0, 0), true), Settled::No);
        // The last write finds the slot full: it closes and settles with two owners (a
        // block is an owner once however many of its pieces it holds).
        p.add_owner(r(0, 0), 7);
        assert_eq!(p.write_done(r(0, 0), true), Settled::Live);
        assert_eq!(p.owners(r(0, 0)), &[7, 8]);
        assert_eq!(p.remove_owner(r(0, 0), 7), Settled::Live);
        assert_eq!(p.remove_owner(r(0, 0), 8), Settled::Empty);
        assert_eq!(p.open_count(), 0);
    }

    #[test]
    fn unreserved_pages_are_free_again_and_a_failed_write_closes() {
        let mut p = Packs::new(16);
        p.start(r(1, 2), 8);
        p.unreserve(r(1, 2), 0, 8);
        assert_eq!(p.reserve(16, |_| true), (Some((r(1, 2), 0)), false));
        assert_eq!(p.write_done(r(1, 2), false), Settled::Empty);
        assert!(!p.is_active(r(1, 2)));
    }

    #[test]
    fn a_closed_pack_settles_when_its_last_write_lands() {
        let mut p = Packs::new(16);
        p.start(r(0, 1), 1);
        assert_eq!(p.close(r(0, 1)), Settled::No, "a write is in flight");
        assert_eq!(
            p.reserve(1, |_| true),
            (None, false),
            "closed packs take nothing"
        );
        p.add_owner(r(0, 1), 3);
        assert_eq!(p.write_done(r(0, 1), true), Settled::Live);
    }
}
