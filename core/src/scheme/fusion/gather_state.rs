//! What stripe gathering (gather.rs) keeps between requests: the writes held per volume,
//! where each volume's latest write ended, and each volume's back-off.

use crate::engine::api::Data;
use crate::types::Nanos;

/// A user write held while its stripe gathers.
pub(super) struct Held {
    pub id: u64,
    pub at: Nanos,
    pub offset: u64,
    pub data: Data,
    pub fua: bool,
}

/// The writes held for one logical stripe of a volume.
pub(super) struct Gather {
    /// Logical stripe: user block / data columns.
    pub lstripe: u64,
    /// In offset order, none overlapping.
    pub held: Vec<Held>,
    /// The logical stripe's blocks they cover (bit = block within the stripe).
    pub covered: u64,
    /// When they are started whatever they cover.
    pub deadline: Nanos,
}

/// Every volume's gather, where its latest write ended, and its back-off.
#[derive(Default)]
pub(super) struct Gathering {
    pub open: Vec<Option<Gather>>,
    pub last_end: Vec<u64>,
    pub backoff: Vec<Backoff>,
}

/// A stream that keeps fewer writes in flight than a stripe holds (two, say) sends the
/// rest of a stripe only once the held writes are answered: each hold then runs out its
/// time. After such a hold no new one begins for `pause`, doubled at each one in a row up
/// to [`MAX_PAUSE_NS`] and reset by a hold that filled its stripe, so such a stream loses
/// at most one hold's time per pause.
#[derive(Clone, Copy, Default)]
pub(super) struct Backoff {
    pub until: Nanos,
    pub pause: Nanos,
    /// The last hold filled its stripe: the stream is deep enough to hold its next stripe
    /// from its first write, even when every earlier write is answered already (members as
    /// fast as memory answer before the next request is read).
    pub deep: bool,
}

pub(super) const MIN_PAUSE_NS: Nanos = 1_000_000;
pub(super) const MAX_PAUSE_NS: Nanos = 128_000_000;

impl Gathering {
    pub fn new(volumes: usize) -> Self {
        Gathering {
            open: (0..volumes).map(|_| None).collect(),
            last_end: vec![u64::MAX; volumes],
            backoff: vec![Backoff::default(); volumes],
        }
    }

    /// The earliest time some held write must be started.
    pub fn deadline(&self) -> Option<Nanos> {
        self.open.iter().flatten().map(|g| g.deadline).min()
    }
}

/// Bits `first..end` of a block mask.
pub(super) fn mask(first: u64, end: u64) -> u64 {
    debug_assert!(first < end && end <= 64);
    (u64::MAX >> (64 - (end - first))) << first
}
