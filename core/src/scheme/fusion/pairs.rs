//! Block Pairing Table (BPT) and stripe-ready pairing (paper §4.2).
//!
//! A *pair set* is 2 (RAID5) or 3 (RAID6) spare stripes whose data columns are matched into
//! *slots*: one block per stripe, on distinct disks. A replicated write of a block takes one
//! slot and writes the same pages into every block of it. Because each copy already sits in a
//! data column of a real stripe, conversion later only fills the parity of one stripe (which
//! keeps its copies as RAID data) and frees the others: no data moves.
//!
//! A slot is named by its *key*, the FLBN of its copy in the set's first stripe; the BMT
//! stores that key with W = 1. The BPT maps a key back to its set, slot and copies.
//!
//! A mirror volume's set is one stripe named `copies` times, with one slot whose copy `i`
//! is column `i` (`config::Level`): its conversion only changes the mapping.

use std::collections::{BTreeSet, VecDeque};

use crate::fasthash::FastMap;

use crate::space::Zone;
use crate::types::{DiskId, Nanos};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// Not handed out yet (in the spare-pair list).
    Spare,
    /// Handed to a write in flight.
    Writing,
    /// Holds (part of) user block `owner`.
    Live(u64),
    /// An open pack (`pack::Packs`): taking patches of several user blocks, or with
    /// writes into it in flight.
    Packing,
    /// A closed pack holding pages of one or more user blocks (owners in `pack::Packs`).
    Packed,
    /// Superseded, trimmed, or never used: a hole once converted.
    Dead,
}

impl SlotState {
    /// Does the slot hold live pages of some block?
    pub fn holds_data(self) -> bool {
        matches!(
            self,
            SlotState::Live(_) | SlotState::Packing | SlotState::Packed
        )
    }
}

#[derive(Clone, Debug)]
pub struct Slot {
    /// Column of this slot's block in each stripe of the set.
    pub cols: [u8; 3],
    pub state: SlotState,
}

#[derive(Clone, Debug)]
pub struct PairSet {
    pub stripes: [u32; 3],
    pub copies: u8,
    pub slots: Vec<Slot>,
    pub last_access: Nanos,
    pub converting: bool,
    /// No conversion before then: the last one found a bad page in the copy it would keep
    /// (the blocks are being repaired; retrying at once would only find it again).
    pub convert_after: Nanos,
    pub(crate) in_lru: bool,
}

impl PairSet {
    /// The stripe of each copy, in copy order.
    pub fn stripes(&self) -> &[u32] {
        &self.stripes[..self.copies as usize]
    }
    /// The set's stripes, each once (a mirror set names its one stripe for every copy).
    pub fn distinct_stripes(&self) -> &[u32] {
        let n = if self.copies > 1 && self.stripes[1] == self.stripes[0] {
            1
        } else {
            self.copies as usize
        };
        &self.stripes[..n]
    }
    pub fn count(&self, f: impl Fn(SlotState) -> bool) -> usize {
        self.slots.iter().filter(|s| f(s.state)).count()
    }
    /// Every slot settled (live or dead): nothing being written, nothing left to hand out.
    pub fn is_settled(&self) -> bool {
        self.slots.iter().all(|s| {
            matches!(
                s.state,
                SlotState::Live(_) | SlotState::Packed | SlotState::Dead
            )
        })
    }
    pub fn live(&self) -> usize {
        self.count(|s| s.holds_data())
    }
}

/// An entry of the spare-slot list: the slot and, once looked up, its copies' disks
/// (`copies == 0` until then; the static layout never moves them).
#[derive(Clone, Copy, Debug)]
struct SpareSlot {
    r: SlotRef,
    copies: u8,
    disks: [DiskId; 3],
    /// The copies' members as bits (valid with `copies`; members past 63 set bit 63 too,
    /// so a mask test never accepts them: [`PairTable::take_spare_clear`] falls back).
    mask: u64,
}

impl SpareSlot {
    fn new(r: SlotRef) -> Self {
        SpareSlot {
            r,
            copies: 0,
            disks: [DiskId(0); 3],
            mask: 0,
        }
    }

    /// Looks up the copies' members once (the static layout never moves them).
    #[inline]
    fn fill(&mut self, sets: &[Option<PairSet>], zone: &Zone) {
        if self.copies != 0 {
            return;
        }
        let set = sets[self.r.set as usize]
            .as_ref()
            .expect("dangling pair set id");
        let slot = &set.slots[self.r.slot as usize];
        let mut mask = 0u64;
        for (i, &s) in set.stripes().iter().enumerate() {
            let d = zone.disk(s, slot.cols[i] as usize);
            self.disks[i] = d;
            mask |= 1u64 << d.index().min(63);
        }
        self.mask = mask;
        self.copies = set.copies;
    }
}

/// Where a key lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SlotRef {
    pub set: u32,
    pub slot: u16,
}

/// How many of the least recently accessed sets [`PairTable::oldest`] looks at.
pub const OLDEST_SCAN: usize = 64;

#[derive(Default)]
pub struct PairTable {
    sets: Vec<Option<PairSet>>,
    free_ids: Vec<u32>,
    /// stripe -> (set, index of the stripe in the set).
    by_stripe: FastMap<u32, (u32, u8)>,
    /// Slots ready for replicated writes, in hand-out order, with their copies' disks once a
    /// scan has looked them up (a write that must avoid slow disks may look at hundreds).
    spare: VecDeque<SpareSlot>,
    /// Settled sets by last access, oldest first: conversion candidates.
    lru: BTreeSet<(Nanos, u32)>,
}

impl PairTable {
    pub fn set(&self, id: u32) -> &PairSet {
        self.sets[id as usize]
            .as_ref()
            .expect("dangling pair set id")
    }
    pub fn get(&self, id: u32) -> Option<&PairSet> {
        self.sets.get(id as usize).and_then(|s| s.as_ref())
    }
    pub fn set_mut(&mut self, id: u32) -> &mut PairSet {
        self.sets[id as usize]
            .as_mut()
            .expect("dangling pair set id")
    }
    pub fn set_count(&self) -> usize {
        self.sets.len() - self.free_ids.len()
    }
    pub fn spare_slots(&self) -> usize {
        self.spare.len()
    }
    pub fn lru_len(&self) -> usize {
        self.lru.len()
    }

    /// Register a new set (stripes already marked Replica by the caller); its slots become spare.
    pub fn insert(&mut self, set: PairSet, now: Nanos) -> u32 {
        let mut set = set;
        set.last_access = now;
        self.insert_inner(set, true)
    }

    fn insert_inner(&mut self, set: PairSet, spare: bool) -> u32 {
        let id = match self.free_ids.pop() {
            Some(i) => i,
            None => {
                self.sets.push(None);
                (self.sets.len() - 1) as u32
            }
        };
        for (i, &s) in set.distinct_stripes().iter().enumerate() {
            let prev = self.by_stripe.insert(s, (id, i as u8));
            assert!(prev.is_none(), "stripe {s} already in a pair set");
        }
        for slot in 0..set.slots.len() * spare as usize {
            self.spare.push_back(SpareSlot::new(SlotRef {
                set: id,
                slot: slot as u16,
            }));
        }
        self.sets[id as usize] = Some(set);
        id
    }

    /// Register a recovered set: its slots start dead (the caller marks the live ones), none
    /// is handed out again.
    pub fn insert_recovered(&mut self, set: PairSet) -> u32 {
        self.insert_inner(set, false)
    }

    /// Every set's stripes and slot columns (checkpoints).
    pub fn structures(&self) -> impl Iterator<Item = (&[u32], Vec<[u8; 3]>)> {
        self.sets
            .iter()
            .flatten()
            .map(|s| (s.stripes(), s.slots.iter().map(|sl| sl.cols).collect()))
    }

    /// Ids of every set.
    pub fn ids(&self) -> Vec<u32> {
        (0..self.sets.len() as u32)
            .filter(|&i| self.sets[i as usize].is_some())
            .collect()
    }

    /// Remove a set entirely (after conversion or when all its slots died).
    pub fn remove(&mut self, id: u32) -> PairSet {
        let set = self.sets[id as usize]
            .take()
            .expect("removing a missing set");
        if set.in_lru {
            self.lru.remove(&(set.last_access, id));
        }
        for &s in set.distinct_stripes() {
            self.by_stripe.remove(&s);
        }
        if set.slots.iter().any(|s| s.state == SlotState::Spare) {
            self.spare.retain(|e| e.r.set != id);
        }
        self.free_ids.push(id);
        set
    }

    pub fn key(&self, zone: &Zone, r: SlotRef) -> u64 {
        let set = self.set(r.set);
        zone.flbn(set.stripes[0], set.slots[r.slot as usize].cols[0] as usize)
    }

    /// Find the slot a key names.
    pub fn lookup(&self, zone: &Zone, key: u64) -> Option<SlotRef> {
        let (stripe, col) = zone.split(key);
        let &(set, idx) = self.by_stripe.get(&stripe)?;
        if idx != 0 {
            return None;
        }
        let s = self.set(set);
        let slot = s.slots.iter().position(|sl| sl.cols[0] as usize == col)?;
        Some(SlotRef {
            set,
            slot: slot as u16,
        })
    }

    pub fn set_of_stripe(&self, stripe: u32) -> Option<u32> {
        self.by_stripe.get(&stripe).map(|&(s, _)| s)
    }

    /// The copies of a slot: (stripe, column) per copy.
    pub fn copies(&self, r: SlotRef) -> Vec<(u32, usize)> {
        let (copies, n) = self.copies_array(r);
        copies[..n].to_vec()
    }

    /// The copies of a slot without allocating: (stripe, column) per copy, and how many.
    pub fn copies_array(&self, r: SlotRef) -> ([(u32, usize); 3], usize) {
        let set = self.set(r.set);
        let slot = &set.slots[r.slot as usize];
        let mut out = [(0u32, 0usize); 3];
        for (i, &s) in set.stripes().iter().enumerate() {
            out[i] = (s, slot.cols[i] as usize);
        }
        (out, set.copies as usize)
    }

    /// Hand out the first spare slot whose disks `ok` accepts; skipped slots go to the tail.
    /// Returns the slot and how many were skipped (redirections). The walk reads the list in
    /// place and then rotates the skipped entries to the tail at once (a move of the shorter
    /// side) rather than popping and pushing each: with segregation most slots touch a
    /// read-mode member and a write may pass over hundreds.
    pub fn take_spare(
        &mut self,
        zone: &Zone,
        mut ok: impl FnMut(&[DiskId]) -> bool,
    ) -> Option<(SlotRef, usize)> {
        let n = self.spare.len().min(crate::space::stripes::MAX_SPARE_SCAN);
        let sets = &self.sets;
        let found = self.spare.iter_mut().take(n).position(|e| {
            e.fill(sets, zone);
            ok(&e.disks[..e.copies as usize])
        });
        self.hand_out(n, found)
    }

    /// [`Self::take_spare`] for the common question, "no copy on a member `avoid` names",
    /// with the same choice: `avoid` is asked once per member, the first time a slot on it
    /// is looked at, and each slot is then one mask test. `None` for pools past 63 members
    /// (the caller asks `take_spare`).
    pub fn take_spare_clear(
        &mut self,
        zone: &Zone,
        members: usize,
        mut avoid: impl FnMut(DiskId) -> bool,
    ) -> Option<Option<(SlotRef, usize)>> {
        if members > 63 {
            return None;
        }
        let (mut known, mut avoided) = (0u64, 0u64);
        let n = self.spare.len().min(crate::space::stripes::MAX_SPARE_SCAN);
        let sets = &self.sets;
        let found = self.spare.iter_mut().take(n).position(|e| {
            e.fill(sets, zone);
            let mut new = e.mask & !known;
            while new != 0 {
                let d = new.trailing_zeros();
                new &= new - 1;
                known |= 1 << d;
                if avoid(DiskId(d)) {
                    avoided |= 1 << d;
                }
            }
            e.mask & avoided == 0
        });
        Some(self.hand_out(n, found))
    }

    /// The end of a walk of `n` entries: the one `found` (after that many skipped) is
    /// handed out and the skipped go to the tail; or, none found, all `n` go there.
    fn hand_out(&mut self, n: usize, found: Option<usize>) -> Option<(SlotRef, usize)> {
        let Some(skipped) = found else {
            self.spare.rotate_left(n);
            return None;
        };
        self.spare.rotate_left(skipped);
        let r = self.spare.pop_front().expect("the slot found").r;
        let set = self.set_mut(r.set);
        assert_eq!(set.slots[r.slot as usize].state, SlotState::Spare);
        set.slots[r.slot as usize].state = SlotState::Writing;
        Some((r, skipped))
    }

    /// Give back a slot taken by `take_spare` but not written: it returns to the list's head.
    pub fn untake(&mut self, r: SlotRef) {
        let set = self.set_mut(r.set);
        assert_eq!(set.slots[r.slot as usize].state, SlotState::Writing);
        set.slots[r.slot as usize].state = SlotState::Spare;
        self.spare.push_front(SpareSlot::new(r));
    }

    /// Record an access for least-recently-accessed conversion order.
    pub fn touch(&mut self, id: u32, now: Nanos) {
        let set = self.sets[id as usize]
            .as_mut()
            .expect("touch of a missing set");
        if set.in_lru {
            self.lru.remove(&(set.last_access, id));
            self.lru.insert((now, id));
        }
        set.last_access = now;
    }

    /// Re-evaluate whether a set is a conversion candidate (settled, not converting).
    pub fn refresh(&mut self, id: u32) {
        let set = self.sets[id as usize]
            .as_mut()
            .expect("refresh of a missing set");
        let want = set.is_settled() && !set.converting;
        if want != set.in_lru {
            if want {
                self.lru.insert((set.last_access, id));
            } else {
                self.lru.remove(&(set.last_access, id));
            }
            set.in_lru = want;
        }
    }

    /// The least recently accessed settled set that `ok` accepts (bounded scan: the
    /// `OLDEST_SCAN` least recent).
    pub fn oldest(&self, mut ok: impl FnMut(u32, &PairSet) -> bool) -> Option<u32> {
        self.lru
            .iter()
            .take(OLDEST_SCAN)
            .map(|&(_, id)| id)
            .find(|&id| ok(id, self.set(id)))
    }

    /// Sets that are not settled but have no write in flight: candidates to close early
    /// when space is short and no settled set exists.
    pub fn closable(&self) -> Option<u32> {
        self.sets.iter().enumerate().find_map(|(i, s)| {
            let s = s.as_ref()?;
            let writing = s.slots.iter().any(|sl| sl.state == SlotState::Writing);
            (!s.converting && !writing && !s.is_settled()).then_some(i as u32)
        })
    }

    /// Mark the remaining spare slots of a set dead so it can be converted now.
    pub fn close(&mut self, id: u32) {
        self.spare.retain(|e| e.r.set != id);
        let set = self.set_mut(id);
        for sl in set.slots.iter_mut() {
            if sl.state == SlotState::Spare {
                sl.state = SlotState::Dead;
            }
        }
        self.refresh(id);
    }

    pub fn memory_bytes(&self) -> u64 {
        let per_set: u64 = self
            .sets
            .iter()
            .flatten()
            .map(|s| {
                std::mem::size_of::<PairSet>() as u64
                    + s.slots.capacity() as u64 * std::mem::size_of::<Slot>() as u64
            })
            .sum();
        per_set
            + self.by_stripe.len() as u64 * 16
            + self.spare.len() as u64 * std::mem::size_of::<SpareSlot>() as u64
            + self.lru.len() as u64 * 16
    }
}

/// Match the data columns of 2 or 3 stripes into slots with every copy on a distinct disk.
/// First choice is the paper's diagonal: with common disks listed first, copy i of column j
/// goes one step further along the list (A-B, B-C, C-A), which never collides when a stripe
/// has at least two data columns; a bounded backtracking search covers the rest.
///
/// Runs once per pair set opened (every few small writes), so it works on fixed-size arrays
/// (a stripe has at most 32 columns) rather than allocating per candidate.
pub fn match_columns<D: AsRef<[DiskId]>>(disks: &[D], dcols: usize) -> Option<Vec<[u8; 3]>> {
    let copies = disks.len();
    assert!((2..=3).contains(&copies));
    assert!(dcols < 32 && disks.iter().all(|d| d.as_ref().len() >= dcols));
    let mut m = Matcher {
        disks: [[DiskId(0); 32]; 3],
        order: [[0u8; 32]; 3],
        used: [0u32; 3],
        out: Vec::with_capacity(dcols),
        budget: 100_000,
        copies,
        dcols,
    };
    for (i, ds) in disks.iter().enumerate() {
        m.disks[i][..dcols].copy_from_slice(&ds.as_ref()[..dcols]);
    }
    // Order each stripe's data columns: disks shared with another stripe first (then by disk;
    // a stripe never uses a disk twice, so the order is total).
    for i in 0..copies {
        let shared = |d: DiskId| (0..copies).any(|o| o != i && m.disks[o][..dcols].contains(&d));
        let mut keys = [(true, DiskId(0), 0u8); 32];
        for (c, k) in keys[..dcols].iter_mut().enumerate() {
            let d = m.disks[i][c];
            *k = (!shared(d), d, c as u8);
        }
        keys[..dcols].sort_unstable();
        for (c, k) in keys[..dcols].iter().enumerate() {
            m.order[i][c] = k.2;
        }
    }
    m.search(0).then_some(m.out)
}

/// Backtracking state of [`match_columns`]; `used` are column bitmaps per stripe.
struct Matcher {
    disks: [[DiskId; 32]; 3],
    order: [[u8; 32]; 3],
    used: [u32; 3],
    out: Vec<[u8; 3]>,
    budget: u32,
    copies: usize,
    dcols: usize,
}

impl Matcher {
    /// Candidate `j` for copy `k` at depth `i`: diagonal first.
    fn cand(&self, k: usize, i: usize, j: usize) -> usize {
        self.order[k][(i + k + j) % self.dcols] as usize
    }

    fn search(&mut self, i: usize) -> bool {
        if i == self.dcols {
            return true;
        }
        let three = self.copies == 3;
        let a = self.order[0][i] as usize;
        let da = self.disks[0][a];
        for jb in 0..self.dcols {
            let b = self.cand(1, i, jb);
            let db = self.disks[1][b];
            if self.used[1] & (1 << b) != 0 || db == da {
                continue;
            }
            for jc in 0..if three { self.dcols } else { 1 } {
                if self.budget == 0 {
                    return false;
                }
                self.budget -= 1;
                let c = if three { self.cand(2, i, jc) } else { 0 };
                if three {
                    let dc = self.disks[2][c];
                    if self.used[2] & (1 << c) != 0 || dc == da || dc == db {
                        continue;
                    }
                }
                self.used[0] |= 1 << a;
                self.used[1] |= 1 << b;
                if three {
                    self.used[2] |= 1 << c;
                }
                self.out.push([a as u8, b as u8, c as u8]);
                if self.search(i + 1) {
                    return true;
                }
                self.out.pop();
                self.used[0] &= !(1 << a);
                self.used[1] &= !(1 << b);
                if three {
                    self.used[2] &= !(1 << c);
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(v: &[u32]) -> Vec<DiskId> {
        v.iter().map(|&x| DiskId(x)).collect()
    }

    #[test]
    fn diagonal_pairing_of_three_common_disks() {
        // Both stripes use disks A=1, B=2, C=3 (plus others): pairs must never share a disk.
        let s1 = d(&[1, 2, 3, 10, 99]);
        let s2 = d(&[3, 1, 2, 20, 98]);
        let m = match_columns(&[s1.clone(), s2.clone()], 4).unwrap();
        assert_eq!(m.len(), 4);
        let mut seen_a = vec![];
        let mut seen_b = vec![];
        for p in &m {
            assert_ne!(s1[p[0] as usize], s2[p[1] as usize]);
            seen_a.push(p[0]);
            seen_b.push(p[1]);
        }
        seen_a.sort();
        seen_b.sort();
        assert_eq!(seen_a, vec![0, 1, 2, 3]);
        assert_eq!(seen_b, vec![0, 1, 2, 3]);
    }

    #[test]
    fn triples_on_distinct_disks_even_when_all_common() {
        let s = [
            d(&[1, 2, 3, 4, 50, 51]),
            d(&[2, 3, 4, 1, 52, 53]),
            d(&[4, 1, 2, 3, 54, 55]),
        ];
        let m = match_columns(&s, 4).unwrap();
        for p in &m {
            let (a, b, c) = (
                s[0][p[0] as usize],
                s[1][p[1] as usize],
                s[2][p[2] as usize],
            );
            assert!(a != b && b != c && a != c);
        }
    }

    #[test]
    fn random_stripes_always_match() {
        let mut rng = crate::rng::Rng::new(3);
        let mut misses = 0;
        for _ in 0..500 {
            let n = 8 + rng.below(24) as u32;
            let k = 3 + rng.below((n - 3).min(10) as u64) as usize;
            let copies = 2 + rng.below(2) as usize;
            let stripes: Vec<Vec<DiskId>> = (0..copies)
                .map(|_| {
                    let mut all: Vec<u32> = (0..n).collect();
                    for i in 0..k {
                        let j = i + rng.below((n as usize - i) as u64) as usize;
                        all.swap(i, j);
                    }
                    d(&all[..k])
                })
                .collect();
            let dcols = k - (copies - 1);
            // Pairs always exist with two or more data columns (the diagonal shift); triples
            // and one-column stripes may have none, which the caller handles by drawing again.
            let Some(m) = match_columns(&stripes, dcols) else {
                assert!(copies == 3 || dcols < 2, "no pairing for {stripes:?}");
                misses += 1;
                continue;
            };
            for p in m {
                let ds: Vec<DiskId> = (0..copies).map(|i| stripes[i][p[i] as usize]).collect();
                for x in 0..copies {
                    for y in x + 1..copies {
                        assert_ne!(ds[x], ds[y]);
                    }
                }
            }
        }
        assert!(misses < 25, "{misses} of 500 draws found no matching");
    }
}
