//! The [`Scheme`] trait: what a placement and redundancy policy (FusionRAID, each baseline)
//! implements for the engine to drive it, and what it reports. It lives with the engine,
//! which calls it; the schemes themselves are in the `scheme` module.

use crate::engine::api::IoResult;
use crate::engine::api::{Request, VolumeId};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::types::{DiskId, Nanos};

/// Where a volume's rebuild after a member failure stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RebuildPhase {
    /// Moving data off the failed members (or restoring stale columns in place).
    Rebuilding,
    /// Nothing can move now; the status text says why.
    Stalled,
    /// Finished, its last records not durable yet: the failed member's data is not safe
    /// elsewhere until they are.
    Committing,
    /// Finished and durable.
    Done,
}

impl RebuildPhase {
    /// The word `status` starts the rebuild's description with.
    pub fn name(self) -> &'static str {
        match self {
            RebuildPhase::Rebuilding => "rebuilding",
            RebuildPhase::Stalled => "stalled",
            RebuildPhase::Committing => "committing",
            RebuildPhase::Done => "done",
        }
    }
}

/// What `status` shows about one volume.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VolumeStatus {
    pub name: String,
    pub size_bytes: u64,
    pub level: String,
    /// Bytes of physical space holding RAID-area stripes (data + parity + holes).
    pub raid_bytes: u64,
    /// Bytes of physical space holding replicated-area stripes.
    pub replicated_bytes: u64,
    pub free_bytes: u64,
    /// Replica sets waiting for conversion.
    pub conversion_backlog: u64,
    /// Bytes of user data mapped (written and not trimmed).
    pub mapped_bytes: u64,
    /// Metadata held in memory for this volume (mapping, pairing, patch lists, stripe table).
    pub metadata_bytes: u64,
    /// Rebuild after a member failure, in words (None: none ran).
    pub rebuild: Option<String>,
    /// Where that rebuild stands, for tools that act on it (None: none ran).
    pub rebuild_phase: Option<RebuildPhase>,
    /// Stripe columns left stale by a replacement in place and not rebuilt yet: until then
    /// the replaced member counts as failed for those stripes.
    pub stale_columns: u64,
    /// The last scrub, in words (None: none ran).
    pub scrub: Option<String>,
    /// The same two as fractions from 0 to 1 (1 once done), for gauges and progress bars:
    /// the rebuild or the rebalance after it, and the scrub.
    pub rebuild_progress: Option<f64>,
    pub scrub_progress: Option<f64>,
}

/// What `status` shows about a scheme's durable metadata (schemes that journal it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetadataStatus {
    pub commits: u64,
    pub checkpoints: u64,
    pub failed_commits: u64,
    pub journal_blocks_written: u64,
    pub records: u64,
    pub last_checkpoint_bytes: u64,
    /// Freed stripes waiting for a commit before reuse.
    pub held_stripes: u64,
    /// What recovery found when the pool came up, if it recovered.
    pub recovery: Option<String>,
    /// Time spent in successful commits, summed.
    pub commit_ns: u64,
    /// Whether that recovery found a clean shutdown (else a crash), if it recovered.
    pub clean_shutdown: Option<bool>,
}

/// A placement and redundancy policy. See the module documentation.
pub trait Scheme {
    fn name(&self) -> &str;
    fn volume_count(&self) -> usize;
    fn volume_size(&self, v: VolumeId) -> Option<u64>;
    /// Largest request (bytes) the scheme accepts; the engine rejects larger ones up front.
    fn max_request_bytes(&self) -> u64 {
        32 << 20
    }
    /// A validated user request (aligned, in range, payload size right) for this scheme.
    fn submit(&mut self, ctx: &mut Ctx, req: Request);
    /// A device I/O this scheme issued has completed (successfully or not).
    fn on_io_complete(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult);
    /// Time passed: run timers and background work.
    fn on_tick(&mut self, ctx: &mut Ctx);
    /// The earliest time the scheme wants `on_tick`, if any.
    fn next_deadline(&self, now: Nanos) -> Option<Nanos>;
    /// A member was marked failed (by an I/O error or by the operator).
    fn on_disk_failed(&mut self, ctx: &mut Ctx, disk: DiskId);
    /// Does the scheme still need anything stored on `disk` (a failed member)? A member can
    /// be replaced by an empty device only when not. Schemes that can not rebuild onto
    /// spare space always need it.
    fn disk_in_use(&self, _disk: DiskId) -> bool {
        true
    }
    /// Can an empty device take failed member `disk`'s slot while the scheme still needs
    /// what was stored there (`disk_in_use`), the scheme rebuilding it onto the new device?
    fn replaces_in_place(&self, _disk: DiskId) -> bool {
        false
    }
    /// Start checking everything stored against its checksums and parity, in the
    /// background. Schemes that keep no checksums refuse.
    fn start_scrub(&mut self, _ctx: &mut Ctx) -> Result<(), String> {
        Err(format!(
            "scheme {} keeps no checksums to scrub against (scrub is a FusionRAID feature)",
            self.name()
        ))
    }
    /// An empty device, whose superblock carries slot generation `generation` (0: none),
    /// took the slot of failed member `disk`.
    fn on_disk_replaced(&mut self, _ctx: &mut Ctx, _disk: DiskId, _generation: u32) {}
    /// The scheme reads member space it never wrote as user data (unwritten blocks of an
    /// in-place array, and the parity over them), so it relies on members that read zeros
    /// until written, like md `--assume-clean` on erased SSDs. A driver that models member
    /// contents must then start them zeroed.
    fn members_start_zeroed(&self) -> bool {
        false
    }
    /// Whether member `disk` is an HDD of a hybrid pool (holds no volume stripes; issue
    /// 21). Schemes without tiers have SSDs only.
    fn is_hdd(&self, _disk: DiskId) -> bool {
        false
    }
    /// The gap of wear-aware placement's ladder (`policy::WearLadder`), when the scheme
    /// skews its writes for wear: drivers then feed it the members' wear
    /// ([`crate::Engine::set_wear`]) and show which members it holds back.
    fn wear_gap(&self) -> Option<f64> {
        None
    }
    fn volume_status(&self, v: VolumeId) -> Option<VolumeStatus>;

    /// Steering the scheme runs (see [`crate::steer`]), handed to the engine once at its
    /// start: the engine keeps it current from every member's completions, and the scheme and
    /// its policies read it through [`crate::engine::Members::steering`].
    fn take_steering(&mut self) -> Option<crate::steer::Steering> {
        None
    }
    /// Quiescent: no scheme-internal work in flight or waiting (used by tests and shutdown).
    fn is_idle(&self) -> bool;
    /// The driver stops cleanly; every user request has been answered. Start no new
    /// background work and make the state durable (FusionRAID: a last checkpoint flagged
    /// clean, so the next start knows it was no crash). The driver keeps delivering
    /// completions and timers until `shutdown_done`.
    fn begin_shutdown(&mut self, _ctx: &mut Ctx) {}
    /// Has what `begin_shutdown` asked for finished? (Schemes with nothing durable: at once.)
    fn shutdown_done(&self) -> bool {
        true
    }
    /// The durable-metadata journal's state, for schemes that keep one.
    fn metadata_status(&self) -> Option<MetadataStatus> {
        None
    }
    /// Check internal metadata for consistency; panics on a violation (tests, debugging).
    fn check_invariants(&self) {}
    /// One line per volume of internal queue state, for diagnostics.
    fn debug_state(&self) -> String {
        String::new()
    }
}
