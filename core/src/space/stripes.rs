//! The stripe table of a zone: each stripe's state and which data columns hold live data,
//! plus the spare-stripe list and read pins.
//!
//! A *spare* stripe is free for a new full-stripe write or a new pair set. A *pin* is a read
//! in flight on a stripe: a pinned stripe is never handed out again, so a slow read can not
//! see its block overwritten by a later write after the block was freed.

use std::collections::VecDeque;

use super::StaleColumns;

use crate::rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum StripeState {
    Free = 0,
    /// Allocated to a write or a compaction that has not completed.
    Busy = 1,
    /// RAID area: parity valid; `valid` marks data columns that hold live blocks.
    Raid = 2,
    /// One of the stripes of a replica pair set (replicated area).
    Replica = 3,
    /// Lends some of its columns to stripes rebuilt after a member failure (remap.rs); not
    /// usable as a stripe until it lends nothing.
    Donor = 4,
}

/// Most spare-list entries one allocation looks at.
pub const MAX_SPARE_SCAN: usize = 256;

pub struct StripeTable {
    state: Vec<StripeState>,
    valid: Vec<u32>,
    spare: VecDeque<u32>,
    /// Pins per stripe: reads, scrubs, moves and discards in flight on it, which keep it
    /// from being handed out. A count per stripe, not a map of the pinned ones: a move pins
    /// every stripe its blocks have pages in, hundreds once blocks are fragmented.
    pins: Vec<u32>,
    /// Stripes both free and pinned (`pinned_free`), kept as pins and states change.
    pinned_free: u64,
    counts: [u64; 5],
    /// Durable-metadata mode: the journal commit generation that will record frees made now.
    /// A stripe freed while this is set is *held* (state Free, not in the spare list) until
    /// that generation is durable, so a crash can never find a durable mapping pointing into
    /// a stripe that was already handed out and overwritten.
    hold_gen: Option<u64>,
    held: VecDeque<(u64, u32)>,
    /// Proactive discard (None: off): spare stripes whose blocks the members have not been
    /// told are free.
    trim: Option<TrimBacklog>,
    /// Columns a rebuild in place has not restored yet (stale.rs): cleared when their
    /// stripe is freed.
    stale: StaleColumns,
}

/// Spare stripes waiting to be discarded on their members, oldest first. A stripe is queued
/// when it becomes spare, which in durable-metadata mode is only once the commit that freed
/// it is durable (a crash can not bring back a mapping into a discarded block), and leaves
/// the queue when it is taken again (its blocks are about to be rewritten anyway). The
/// `pending` flags keep each stripe in the queue at most once, so it is bounded by the
/// zone's stripe count.
struct TrimBacklog {
    queue: VecDeque<u32>,
    pending: Vec<bool>,
}

impl StripeTable {
    pub fn new(stripes: u64) -> Self {
        let n = stripes as usize;
        StripeTable {
            state: vec![StripeState::Free; n],
            valid: vec![0; n],
            spare: (0..stripes as u32).collect(),
            pins: vec![0; n],
            pinned_free: 0,
            counts: [stripes, 0, 0, 0, 0],
            hold_gen: None,
            held: VecDeque::new(),
            trim: None,
            stale: StaleColumns::default(),
        }
    }

    /// Rebuild from recovered states and valid masks: every Free stripe is spare.
    pub fn restore(states: Vec<StripeState>, valid: Vec<u32>) -> Self {
        assert_eq!(states.len(), valid.len());
        let mut counts = [0u64; 5];
        for &st in &states {
            counts[st as usize] += 1;
        }
        let spare = (0..states.len() as u32)
            .filter(|&s| states[s as usize] == StripeState::Free)
            .collect();
        StripeTable {
            pins: vec![0; states.len()],
            pinned_free: 0,
            state: states,
            valid,
            spare,
            counts,
            hold_gen: None,
            held: VecDeque::new(),
            trim: None,
            stale: StaleColumns::default(),
        }
    }

    /// Hold stripes freed from now on until generation `gen` is released (None: free at once).
    pub fn set_hold(&mut self, gen_: Option<u64>) {
        self.hold_gen = gen_;
    }
    /// Generation `upto` and all before it are durable: held stripes become spare.
    pub fn release_held(&mut self, upto: u64) -> usize {
        let mut n = 0;
        while let Some(&(g, s)) = self.held.front() {
            if g > upto {
                break;
            }
            self.held.pop_front();
            debug_assert_eq!(self.state[s as usize], StripeState::Free);
            self.spare.push_back(s);
            self.queue_trim(s);
            n += 1;
        }
        n
    }
    /// Free stripes waiting for a journal commit before they may be reused.
    pub fn held(&self) -> u64 {
        self.held.len() as u64
    }
    /// Free stripes that may be handed out now.
    pub fn available(&self) -> u64 {
        self.counts[StripeState::Free as usize] - self.held.len() as u64
    }

    pub fn state(&self, s: u32) -> StripeState {
        self.state[s as usize]
    }
    pub fn count(&self, st: StripeState) -> u64 {
        self.counts[st as usize]
    }
    pub fn len(&self) -> u64 {
        self.state.len() as u64
    }
    pub fn is_empty(&self) -> bool {
        self.state.is_empty()
    }
    pub fn spare_len(&self) -> usize {
        self.spare.len()
    }

    pub fn set_state(&mut self, s: u32, st: StripeState) {
        let old = self.state[s as usize];
        assert!(
            old != StripeState::Free || st != StripeState::Free,
            "stripe {s} freed twice"
        );
        self.counts[old as usize] -= 1;
        self.counts[st as usize] += 1;
        self.state[s as usize] = st;
        if self.pins[s as usize] > 0 {
            if old == StripeState::Free {
                self.pinned_free -= 1;
            }
            if st == StripeState::Free {
                self.pinned_free += 1;
            }
        }
        if old == StripeState::Free
            && let Some(t) = self.trim.as_mut()
        {
            t.pending[s as usize] = false;
        }
        if st == StripeState::Free {
            self.valid[s as usize] = 0;
            self.stale.on_freed(s);
            match self.hold_gen {
                Some(g) => self.held.push_back((g, s)),
                None => {
                    self.spare.push_back(s);
                    self.queue_trim(s);
                }
            }
        }
    }

    /// Start proactive discard: every stripe spare now is queued (a fresh or just recovered
    /// zone tells its members once that its free space holds nothing), the end of the
    /// spare list first (the stripes taken last), and every stripe that becomes spare from
    /// now on.
    pub fn enable_trim(&mut self) {
        let n = self.state.len();
        self.trim = Some(TrimBacklog {
            queue: VecDeque::new(),
            pending: vec![false; n],
        });
        let spare: Vec<u32> = self.spare.iter().rev().copied().collect();
        for s in spare {
            if self.state[s as usize] == StripeState::Free {
                self.queue_trim(s);
            }
        }
    }

    fn queue_trim(&mut self, s: u32) {
        if let Some(t) = self.trim.as_mut()
            && !t.pending[s as usize]
        {
            t.pending[s as usize] = true;
            t.queue.push_back(s);
        }
    }

    /// Spare stripes waiting for their discard.
    pub fn trim_backlog(&self) -> usize {
        self.trim.as_ref().map_or(0, |t| t.queue.len())
    }

    /// The oldest spare stripe still waiting for its discard that may be discarded now (free
    /// and spare since it was queued, no read in flight on it), taken off the queue. The
    /// caller pins it until its discards complete, so it is not handed out meanwhile. A
    /// pinned stripe waits at the tail; the look is bounded by the backlog.
    pub fn next_trim(&mut self) -> Option<u32> {
        let t = self.trim.as_mut()?;
        for _ in 0..t.queue.len() {
            let s = t.queue.pop_front()?;
            if !t.pending[s as usize] {
                continue; // taken since it was queued
            }
            debug_assert_eq!(self.state[s as usize], StripeState::Free);
            if self.pins[s as usize] > 0 {
                t.queue.push_back(s);
                continue;
            }
            t.pending[s as usize] = false;
            return Some(s);
        }
        None
    }

    /// Forget the backlog (the stripes stay spare, undiscarded): space is short, and
    /// stripes taken out of circulation for their discard would make writes wait.
    pub fn drop_trim_backlog(&mut self) -> usize {
        let Some(t) = self.trim.as_mut() else {
            return 0;
        };
        let n = t.queue.len();
        for s in t.queue.drain(..) {
            t.pending[s as usize] = false;
        }
        n
    }

    pub fn valid(&self, s: u32) -> u32 {
        self.valid[s as usize]
    }
    pub fn set_valid(&mut self, s: u32, col: usize, on: bool) {
        let v = &mut self.valid[s as usize];
        if on {
            *v |= 1 << col;
        } else {
            *v &= !(1 << col);
        }
    }
    pub fn set_valid_mask(&mut self, s: u32, mask: u32) {
        self.valid[s as usize] = mask;
    }

    /// The columns of stripe `s` that are stale (see `StaleColumns`).
    pub fn stale(&self, s: u32) -> u32 {
        self.stale.mask(s)
    }
    pub fn stale_columns(&self) -> &StaleColumns {
        &self.stale
    }
    pub fn stale_columns_mut(&mut self) -> &mut StaleColumns {
        &mut self.stale
    }

    pub fn pin(&mut self, s: u32) {
        let c = &mut self.pins[s as usize];
        *c += 1;
        if *c == 1 && self.state[s as usize] == StripeState::Free {
            self.pinned_free += 1;
        }
    }
    pub fn unpin(&mut self, s: u32) {
        let c = &mut self.pins[s as usize];
        assert!(*c > 0, "unpin of a stripe that is not pinned");
        *c -= 1;
        if *c == 0 && self.state[s as usize] == StripeState::Free {
            self.pinned_free -= 1;
        }
    }
    pub fn is_pinned(&self, s: u32) -> bool {
        self.pins[s as usize] > 0
    }
    /// Is a free stripe pinned (a read or scrub in flight on a stripe freed since)? It
    /// becomes spare again when that I/O completes, so writes waiting for room need not
    /// give up yet.
    pub fn pinned_free(&self) -> bool {
        self.pinned_free > 0
    }

    /// Take the first spare stripe that `ok` accepts, walking the list in order; skipped
    /// stripes go to the tail (paper §4.3). Returns the stripe and how many were skipped.
    /// The walk is bounded: when many disks are slow at once, the caller's fallback (any
    /// healthy stripe) is better than scanning a list of millions.
    pub fn take_spare(&mut self, mut ok: impl FnMut(u32) -> bool) -> Option<(u32, usize)> {
        let n = self.spare.len().min(MAX_SPARE_SCAN);
        for skipped in 0..n {
            let s = self.spare.pop_front()?;
            if self.state[s as usize] == StripeState::Free && !self.is_pinned(s) && ok(s) {
                self.set_state(s, StripeState::Busy);
                return Some((s, skipped));
            }
            self.spare.push_back(s);
        }
        None
    }

    /// Take a uniformly random spare stripe that `ok` accepts (tries a bounded number).
    pub fn take_random_spare(
        &mut self,
        rng: &mut Rng,
        mut ok: impl FnMut(u32) -> bool,
    ) -> Option<u32> {
        for _ in 0..64 {
            if self.spare.is_empty() {
                return None;
            }
            let i = rng.below(self.spare.len() as u64) as usize;
            let s = self.spare[i];
            if self.state[s as usize] == StripeState::Free && !self.is_pinned(s) && ok(s) {
                self.spare.swap_remove_back(i);
                self.set_state(s, StripeState::Busy);
                return Some(s);
            }
        }
        None
    }

    /// Give back a stripe taken by `take_*` but not used (still busy, or a donor whose
    /// reserved columns were never written or journaled): it returns to the list's head,
    /// with no hold for a commit and no discard (its blocks hold what they held).
    pub fn untake(&mut self, s: u32) {
        let old = self.state[s as usize];
        assert!(
            matches!(old, StripeState::Busy | StripeState::Donor),
            "stripe {s} given back from {old:?}"
        );
        self.counts[old as usize] -= 1;
        self.counts[StripeState::Free as usize] += 1;
        self.state[s as usize] = StripeState::Free;
        if self.pins[s as usize] > 0 {
            self.pinned_free += 1;
        }
        self.valid[s as usize] = 0;
        self.stale.on_freed(s);
        self.spare.push_front(s);
    }

    pub fn memory_bytes(&self) -> u64 {
        let trim = self
            .trim
            .as_ref()
            .map_or(0, |t| t.pending.len() + t.queue.capacity() * 4);
        (self.state.len()
            + self.valid.len() * 4
            + self.spare.capacity() * 4
            + self.pins.len() * 4
            + trim) as u64
            + self.stale.memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spare_list_skips_to_tail_and_counts() {
        let mut t = StripeTable::new(4);
        let (s, skipped) = t.take_spare(|s| s != 0).unwrap();
        assert_eq!((s, skipped), (1, 1));
        assert_eq!(t.count(StripeState::Busy), 1);
        assert_eq!(t.count(StripeState::Free), 3);
        // 0 went to the tail: order is now 2, 3, 0.
        assert_eq!(t.take_spare(|_| true).unwrap().0, 2);
        t.pin(3);
        assert_eq!(t.take_spare(|_| true).unwrap().0, 0);
        assert!(
            t.take_spare(|_| true).is_none(),
            "pinned stripe must not be handed out"
        );
        t.unpin(3);
        assert_eq!(t.take_spare(|_| true).unwrap().0, 3);
        t.set_state(1, StripeState::Raid);
        t.set_valid(1, 3, true);
        assert_eq!(t.valid(1), 8);
        t.set_state(1, StripeState::Free);
        assert_eq!(t.valid(1), 0);
        assert_eq!(t.spare_len(), 1);
    }

    #[test]
    fn held_stripes_wait_for_their_generation() {
        let mut t = StripeTable::new(3);
        let a = t.take_spare(|_| true).unwrap().0;
        let b = t.take_spare(|_| true).unwrap().0;
        t.set_hold(Some(7));
        t.set_state(a, StripeState::Free);
        t.set_hold(Some(8));
        t.set_state(b, StripeState::Free);
        assert_eq!(
            (t.available(), t.held(), t.count(StripeState::Free)),
            (1, 2, 3)
        );
        // Only the third stripe may be handed out while the others are held.
        let c = t.take_spare(|_| true).unwrap().0;
        assert!(c != a && c != b);
        assert!(t.take_spare(|_| true).is_none());
        assert_eq!(t.release_held(7), 1);
        assert_eq!(t.take_spare(|_| true).unwrap().0, a);
        assert!(t.take_spare(|_| true).is_none());
        assert_eq!(t.release_held(8), 1);
        assert_eq!(t.take_spare(|_| true).unwrap().0, b);
    }

    #[test]
    fn trims_only_durably_spare_stripes_not_taken_since() {
        let mut t = StripeTable::new(4);
        let a = t.take_spare(|_| true).unwrap().0;
        let b = t.take_spare(|_| true).unwrap().0;
        t.enable_trim();
        // The two stripes spare at the start are queued; the taken ones are not.
        assert_eq!(t.trim_backlog(), 2);
        t.set_hold(Some(5));
        t.set_state(a, StripeState::Free);
        t.set_state(b, StripeState::Free);
        assert_eq!(t.trim_backlog(), 2, "held stripes are not durably free yet");
        t.release_held(5);
        assert_eq!(t.trim_backlog(), 4);
        let first = t.next_trim().unwrap();
        assert!(first != a && first != b);
        // A stripe taken again before its discard leaves the queue.
        let (c, _) = t.take_spare(|s| s != first).unwrap();
        t.pin(a);
        let mut got = Vec::new();
        while let Some(s) = t.next_trim() {
            got.push(s);
        }
        assert!(
            !got.contains(&c),
            "a stripe taken since must not be discarded"
        );
        assert!(!got.contains(&a), "a stripe with a read in flight waits");
        assert_eq!(t.trim_backlog(), 1, "the pinned stripe waits at the tail");
        t.unpin(a);
        assert_eq!(t.next_trim(), Some(a));
        // Freed again after being taken: queued again.
        t.set_state(c, StripeState::Raid);
        t.set_hold(Some(6));
        t.set_state(c, StripeState::Free);
        t.release_held(5);
        assert_eq!(t.trim_backlog(), 0, "held until its generation");
        t.release_held(6);
        assert_eq!(t.drop_trim_backlog(), 1);
        assert_eq!(t.next_trim(), None);
    }

    /// `pinned_free` follows pins, unpins, state changes and untakes: after every step it
    /// says what a look at every stripe says.
    #[test]
    fn pinned_free_is_kept_as_pins_and_states_change() {
        let mut rng = Rng::new(3);
        let mut t = StripeTable::new(6);
        let mut pins: Vec<u32> = Vec::new();
        for _ in 0..20_000 {
            let s = rng.below(6) as u32;
            match rng.below(5) {
                0 => {
                    t.pin(s);
                    pins.push(s);
                }
                1 if !pins.is_empty() => {
                    let i = rng.below(pins.len() as u64) as usize;
                    t.unpin(pins.swap_remove(i));
                }
                2 if t.state(s) == StripeState::Free => t.set_state(s, StripeState::Raid),
                3 if t.state(s) != StripeState::Free => t.set_state(s, StripeState::Free),
                4 => {
                    if let Some((b, _)) = t.take_spare(|_| true) {
                        assert!(!t.is_pinned(b), "a pinned stripe handed out");
                        if rng.below(2) == 0 {
                            // A read of it started meanwhile.
                            t.pin(b);
                            pins.push(b);
                        }
                        t.untake(b);
                    }
                }
                _ => {}
            }
            let want = (0..6).any(|x| t.state(x) == StripeState::Free && t.is_pinned(x));
            assert_eq!(t.pinned_free(), want);
        }
    }
}
