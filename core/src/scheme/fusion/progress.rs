//! The progress of the maintenance a volume runs (rebuild, rebalance, scrub), kept in the
//! volume and shown by status. The work itself is in `rebuild.rs`, `column.rs` and
//! `scrub.rs`.

use crate::engine::scheme::RebuildPhase;
use crate::fasthash::FastMap;
use crate::types::{DiskId, Nanos};

/// Progress of one volume's rebuild.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rebuild {
    pub started_at: Nanos,
    pub done_at: Option<Nanos>,
    /// User blocks moved off failed members so far.
    pub moved: u64,
    /// Stripe columns rebuilt into donor blocks so far.
    pub columns: u64,
    /// Stale columns rebuilt in place (onto a replacement) so far.
    pub in_place: u64,
    /// Free stripes touching a failed member made usable by remapping (no data moved).
    pub free_remapped: u64,
    /// `Vol::degraded_placements` when last looked at.
    pub(super) degraded_seen: u64,
    /// Blocks beyond their parity's reach (more members of their stripe failed than it
    /// covers) seen in the last complete sweep, and in the current one.
    pub(super) lost: u64,
    pub(super) lost_now: u64,
    /// BMT entries swept since the last candidate was found.
    pub(super) clean_scan: u64,
    pub(super) cursor: u64,
    pub(super) next_at: Nanos,
    /// The last move found no free stripe clear of the failed members.
    pub(super) stalled: bool,
    /// Why, as found when it stalled (`FusionScheme::rebuild_stall_reason`).
    pub(super) stall_reason: String,
    /// How long the next look waits after one that started nothing (0 while looks start
    /// work): doubled by each idle look up to a cap, so a rebuild that can not progress
    /// does not sweep, reserve and give back donors every millisecond.
    pub(super) backoff_ns: Nanos,
    /// Journal generation holding the rebuild's last records (journaled pools): the
    /// failed member may be replaced once it is durable, not before, or a crash could bring
    /// back a mapping into the replaced device.
    pub done_generation: u64,
}

impl Rebuild {
    /// `durable_generation`: the journal generation on disk (`u64::MAX` without a
    /// journal). A finished rebuild reads "done" only once its last records are durable,
    /// when the failed member may be replaced; before, "committing".
    pub fn phase(&self, durable_generation: u64) -> RebuildPhase {
        match self.done_at {
            Some(_) if self.done_generation > durable_generation => RebuildPhase::Committing,
            Some(_) => RebuildPhase::Done,
            None if self.stalled => RebuildPhase::Stalled,
            None => RebuildPhase::Rebuilding,
        }
    }

    /// The rebuild in words, starting with its phase's name (`phase`).
    pub fn describe(&self, blocks: u64, durable_generation: u64) -> String {
        let lost = self.lost.max(self.lost_now);
        let lost = if lost > 0 {
            format!(" ({lost} blocks lost: more members failed than their parity covers)")
        } else {
            String::new()
        };
        // Columns rebuilt in place onto a replacement (rebuild.rs), when there were any.
        let in_place = if self.in_place > 0 {
            format!(", {} stale columns rebuilt in place", self.in_place)
        } else {
            String::new()
        };
        let done_at = self.done_at.unwrap_or(0);
        match self.phase(durable_generation) {
            RebuildPhase::Committing => format!(
                "committing: {} blocks moved, {} columns rebuilt into spare space{in_place}; \
                 once this is on disk the failed member's replacement needs no rebuild in \
                 place{lost}",
                self.moved, self.columns
            ),
            RebuildPhase::Done => format!(
                "done: {} blocks moved, {} columns rebuilt into spare space{in_place} in \
                 {:.3} s, {} free stripes remapped{lost}",
                self.moved,
                self.columns,
                (done_at - self.started_at) as f64 / 1e9,
                self.free_remapped
            ),
            RebuildPhase::Stalled => format!(
                "stalled after {} blocks moved, {} columns rebuilt{in_place}: {}{lost}",
                self.moved, self.columns, self.stall_reason
            ),
            RebuildPhase::Rebuilding => format!(
                "rebuilding: {} blocks moved, {} columns rebuilt{in_place}, clean sweep \
                 {}%{lost}",
                self.moved,
                self.columns,
                (self.clean_scan * 100 / blocks.max(1)).min(100)
            ),
        }
    }
}

impl Rebuild {
    /// `describe`'s progress as a fraction: the clean sweep's share of the volume, 1 once
    /// the rebuild is done (committing included).
    pub fn progress(&self, blocks: u64) -> f64 {
        if self.done_at.is_some() {
            return 1.0;
        }
        (self.clean_scan as f64 / blocks.max(1) as f64).min(1.0)
    }
}

/// Copying remapped columns home after a failed member's slot got a new device.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rebalance {
    pub started_at: Nanos,
    pub done_at: Option<Nanos>,
    /// Columns copied back (or dropped, when their stripe held nothing).
    pub copied: u64,
    /// The current pass: (stripe, column) to bring home, last first.
    pub(super) queue: Vec<(u32, u8)>,
    /// Columns the current pass could not copy yet (their stripe in a pair set or busy).
    pub(super) deferred: u64,
    pub(super) next_at: Nanos,
}

impl Rebalance {
    /// Columns brought home out of those that were away (`left` still are).
    pub fn progress(&self, left: usize) -> f64 {
        if self.done_at.is_some() {
            return 1.0;
        }
        self.copied as f64 / (self.copied + left as u64).max(1) as f64
    }

    pub fn describe(&self, left: usize) -> String {
        match self.done_at {
            Some(t) => format!(
                "rebalance done: {} columns back home in {:.3} s",
                self.copied,
                (t - self.started_at) as f64 / 1e9
            ),
            None => format!(
                "rebalancing: {} columns back home, {left} still on spare space",
                self.copied
            ),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Pass {
    #[default]
    Blocks,
    Parity,
    Done,
}

/// Progress and findings of one volume's scrub.
#[derive(Clone, Debug, Default)]
pub struct Scrub {
    pub started_at: Nanos,
    pub done_at: Option<Nanos>,
    pub(super) pass: Pass,
    pub(super) cursor: u64,
    pub(super) next_at: Nanos,
    pub(super) running: usize,
    /// Mapped pages checked (each copy counts).
    pub pages_checked: u64,
    /// Copies that failed their checksum (their blocks were queued for repair).
    pub bad_copies: u64,
    /// Pages left out of the check because they are known lost (`Vol::lost`): nothing
    /// could repair them, and a repair would only move them again.
    pub known_lost_pages: u64,
    /// RAID stripes whose parity was checked, and of those rewritten.
    pub stripes_checked: u64,
    pub parity_rewritten: u64,
    /// Stripes whose parity check was skipped: a member failed, or a live block of the
    /// stripe was bad and not moved yet.
    pub stripes_skipped: u64,
    /// RAID blocks found bad: (user block, FLBN), by stripe. Their stripe's parity is kept
    /// while the block still lives there.
    pub(super) bad_raid: FastMap<u32, Vec<(u64, u64)>>,
    /// Progress, in pages: everything the scrub will look at when it starts (every copy of
    /// every mapped page, and each RAID stripe's pages for its parity check), and how much
    /// of it the passes went past so far (read, or skipped: lost, or on a failed member).
    pub(super) total_pages: u64,
    pub(super) passed_pages: u64,
}

impl Scrub {
    /// How far the scrub is, as a fraction of everything it checks (`percent` as 0..1).
    pub fn progress(&self) -> f64 {
        if self.done_at.is_some() || self.pass == Pass::Done {
            return 1.0;
        }
        (self.passed_pages as f64 / self.total_pages.max(1) as f64).min(0.99)
    }

    pub fn describe(&self, stripes: u64) -> String {
        let mut found = format!(
            "{} pages checked, {} bad copies (queued for repair), {} of {} stripes' parity \
             checked, {} rewritten, {} skipped",
            self.pages_checked,
            self.bad_copies,
            self.stripes_checked,
            stripes,
            self.parity_rewritten,
            self.stripes_skipped
        );
        if self.known_lost_pages > 0 {
            found += &format!(", {} pages known lost", self.known_lost_pages);
        }
        match (self.done_at, self.pass) {
            (Some(t), _) => format!(
                "done in {:.3} s: {found}",
                (t - self.started_at) as f64 / 1e9
            ),
            (None, pass) => format!(
                "scrubbing {}% ({}): {found}",
                self.percent(),
                if pass == Pass::Blocks {
                    "checking every copy of every page, then parity"
                } else {
                    "checking parity"
                }
            ),
        }
    }

    /// How far the scrub is, as a share of everything it checks (both passes), in pages;
    /// below 100 until it is done (the mapping may change while it runs).
    pub fn percent(&self) -> u64 {
        if self.done_at.is_some() {
            return 100;
        }
        (self.passed_pages * 100 / self.total_pages.max(1)).min(99)
    }
}

/// See `FusionScheme::stored_on`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Cleared {
    pub(super) disk: DiskId,
    pub(super) generation: u64,
    pub(super) placements: u64,
}
