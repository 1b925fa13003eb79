//! What parity-row writes (rows.rs) keep between requests: the small writes held per
//! volume while a row fills, and each volume's row stripes.
//!
//! A *row* is page `r` of every column of a stripe: RAID parity is computed byte by byte
//! down the columns, so the parity pages of a row protect its data pages alone, whatever
//! the other rows hold. A *row stripe* is a spare stripe filled one row at a time.

use super::gather_state::Backoff;
use crate::engine::api::Data;
use crate::fasthash::FastMap;
use crate::types::Nanos;

/// The largest write a row carries, in pages (a quarter of a 128 KiB block): beyond that,
/// writes of one size arriving together are rarer, and a stripe takes few such rows.
pub(super) const MAX_ROW_PAGES: u16 = 8;

/// A small user write held while its row fills. It holds its block's write lock from the
/// moment it is held, so what arrives later for the block waits behind it.
pub(super) struct HeldWrite {
    pub id: u64,
    pub at: Nanos,
    pub offset: u64,
    pub data: Data,
    pub fua: bool,
}

/// The writes one volume holds for its next row of one height, in arrival order.
pub(super) struct RowFill {
    pub held: Vec<HeldWrite>,
    /// When they go down the replicated path if the row has not filled.
    pub deadline: Nanos,
}

/// The time between writes of one size assumed before any has been seen.
const UNKNOWN_GAP_NS: Nanos = 10_000_000;

/// What holding writes of one size in one volume keeps: the row filling, and the pause
/// after rows that did not fill (each size on its own, so that a rare size that never
/// fills a row does not stop the others).
#[derive(Default)]
pub(super) struct Height {
    pub fill: Option<RowFill>,
    pub backoff: Backoff,
    /// When the latest write of this size arrived, and the mean time between such writes
    /// (moving average, 1/8 weight to the newest): a row of them is held for only when it
    /// can be expected to fill well within the hold.
    pub last_at: Nanos,
    pub gap: Nanos,
}

impl Height {
    /// A write of this size arrives at `now`.
    pub fn arrival(&mut self, now: Nanos) {
        self.gap = if self.last_at == 0 && self.gap == 0 {
            // No pace known yet: taken as slow, until a few dozen writes say otherwise.
            UNKNOWN_GAP_NS
        } else {
            let gap = now.saturating_sub(self.last_at);
            self.gap - self.gap / 8 + gap / 8
        };
        self.last_at = now;
    }

    /// Do `more` further writes of this size come within half of `hold`, at the recent
    /// pace?
    pub fn fills_within(&self, more: u64, hold: Nanos) -> bool {
        self.gap.saturating_mul(more) <= hold / 2
    }
}

/// Every volume's held writes and back-offs, by row height (`pages - 1`).
pub(super) struct Rowing {
    pub vols: Vec<Vec<Height>>,
}

impl Rowing {
    pub fn new(volumes: usize, heights: usize) -> Self {
        Rowing {
            vols: (0..volumes)
                .map(|_| (0..heights).map(|_| Height::default()).collect())
                .collect(),
        }
    }

    /// The earliest time some held write must be started.
    pub fn deadline(&self) -> Option<Nanos> {
        self.vols
            .iter()
            .flatten()
            .filter_map(|h| h.fill.as_ref())
            .map(|f| f.deadline)
            .min()
    }
}

/// The stripe a volume fills with rows, and which stripes still have rows in flight.
///
/// A stripe is protected from being freed while it is open or has rows in flight: its
/// rows go where nothing is mapped yet, and a stripe freed under them could be handed out
/// again. When every page mapped into a protected stripe has been overwritten it goes back
/// to busy (allocated, nothing live) instead of free, and is freed once no longer protected.
#[derive(Default)]
pub struct RowStripes {
    /// The stripe taking the next row, and that row's page.
    pub open: Option<(u32, u16)>,
    /// Rows (and the padding of a stripe closed early) in flight, by stripe.
    pub inflight: FastMap<u32, u32>,
}

impl RowStripes {
    /// Must `s` stay allocated even with nothing live in it?
    pub fn protects(&self, s: u32) -> bool {
        self.open.is_some_and(|(o, _)| o == s)
            || (!self.inflight.is_empty() && self.inflight.contains_key(&s))
    }

    pub fn issued(&mut self, s: u32) {
        *self.inflight.entry(s).or_insert(0) += 1;
    }

    /// A row of `s` is done; true when that was its last one in flight.
    pub fn landed(&mut self, s: u32) -> bool {
        let n = self
            .inflight
            .get_mut(&s)
            .expect("row of a stripe with none in flight");
        *n -= 1;
        if *n == 0 {
            self.inflight.remove(&s);
            return true;
        }
        false
    }
}
