//! What the scheme keeps about its durable metadata (the journal, the commit in flight, the
//! FLUSH and FUA writes waiting for one, counters, the clean-stop state) and where that
//! metadata sits on the members. The commits themselves are in `durable.rs`.

use std::collections::VecDeque;

use super::config::{FusionConfig, VolumeConfig};
use super::jobs::JobId;
use super::sizing;
use crate::engine::api::ReqError;
use crate::engine::ctx::Ctx;
use crate::meta::{ImageBound, Journal, MetaLayout, RecoveryReport};
use crate::types::Nanos;

/// Counters `status` shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DurableStats {
    pub commits: u64,
    pub checkpoints: u64,
    pub failed_commits: u64,
    pub journal_blocks_written: u64,
    pub records: u64,
    pub last_checkpoint_bytes: u64,
    /// Time from the start to the end of every successful commit, summed (with `commits`,
    /// the mean commit latency).
    pub commit_ns: u64,
}

/// A clean shutdown's progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stopping {
    #[default]
    No,
    /// Asked for: no new background work; the clean checkpoint is taken once no job is
    /// left that could add records.
    Wanted,
    /// The clean checkpoint is durable and nothing was recorded since.
    Done,
}

pub(super) struct Waiter {
    pub(super) generation: u64,
    pub(super) id: u64,
    pub(super) at: Nanos,
}

pub struct Durable {
    pub journal: Journal,
    pub(super) commit: Option<JobId>,
    pub(super) waiters: VecDeque<Waiter>,
    pub(super) last_commit_at: Nanos,
    /// When the commit in flight started (`last_commit_at` may be reset meanwhile).
    pub(super) commit_started: Nanos,
    pub(super) failures: u32,
    pub stats: DurableStats,
    pub recovery: Option<RecoveryReport>,
    pub stopping: Stopping,
    /// The last durable commit is a checkpoint flagged clean.
    pub(super) clean_durable: bool,
}

/// The metadata layout a configuration implies (None when it is not journaled).
pub fn meta_layout(cfg: &FusionConfig) -> Option<MetaLayout> {
    let j = cfg.journal.as_ref()?;
    let copies = cfg
        .volumes
        .iter()
        .map(|v| v.level.nparity() + 1)
        .max()
        .unwrap_or(2);
    Some(MetaLayout::new(
        cfg.pool.disks,
        copies,
        j.journal_bytes,
        max_image_bytes(cfg, j.image_bound),
    ))
}

/// The largest checkpoint image the volumes can produce: every block mapped and patched as
/// finely as its pages allow, every stripe in a pair set, a checksum for every page.
fn max_image_bytes(cfg: &FusionConfig, bound: ImageBound) -> u64 {
    let bs = cfg.pool.block_size;
    let mut total = 12u64;
    for v in &cfg.volumes {
        let blocks = v.size_bytes.div_ceil(bs);
        let ppb = bs / crate::types::PAGE_SIZE;
        let patches = if ppb > 1 {
            blocks.saturating_mul(10 + 8 * ppb)
        } else {
            0
        };
        let dcols = (v.width.saturating_sub(v.level.nparity())).max(1) as u64;
        let stripes = match bound {
            ImageBound::ThreeStripes => blocks
                .div_ceil(dcols)
                .saturating_mul(3)
                .saturating_add(4096),
            ImageBound::Zone => zone_stripe_bound(cfg, v),
        };
        let copies = v.level.copies() as u64;
        let sets = (stripes / v.level.set_stripes() as u64)
            .saturating_mul(3 + 4 * copies + dcols * copies);
        total = total
            .saturating_add(10 + 8 + 4)
            .saturating_add(blocks.saturating_mul(5))
            .saturating_add(patches)
            .saturating_add(sets)
            .saturating_add(crate::volume::PageSums::max_encoded_len(blocks, ppb))
            // Column remaps: at most the parity count per stripe, 10 bytes each.
            .saturating_add(4 + stripes.saturating_mul(v.level.nparity() as u64 * 10));
        if !cfg.pool.hdds.is_empty() {
            // Copies in HDD logs: at most one extent per block of the volume
            // (`Offloaded::has_room`), each counted at its journal record's size (the
            // image's 29 bytes plus 2).
            let extent = 2 + crate::meta::record::LogExtent::ENCODED_LEN as u64;
            total = total.saturating_add(4 + blocks.saturating_mul(extent));
        }
    }
    total
}

/// The stripes of `v`'s zone with its spare share raised to at least `AUTO_SPARE_MAX`, so
/// the bound is the same before and after `auto` is resolved. It depends only on what the
/// pool stores (sizes, shares, layout, block size), never on the members' capacity.
fn zone_stripe_bound(cfg: &FusionConfig, v: &VolumeConfig) -> u64 {
    let mut v = v.clone();
    v.spare_fraction = v.spare_fraction.max(sizing::AUTO_SPARE_MAX);
    // A layout that does not build fails `FusionScheme::new` anyway; the bound then only
    // needs to be some number.
    let tpl = cfg
        .pool
        .build_layout(v.width, v.level.nparity())
        .map_or(1, |l| l.template_stripes());
    sizing::zone_stripes(&v, tpl, cfg.pool.block_size, cfg.max_request_bytes)
}

impl Durable {
    pub fn new(journal: Journal) -> Self {
        Durable {
            journal,
            commit: None,
            waiters: VecDeque::new(),
            last_commit_at: 0,
            commit_started: 0,
            failures: 0,
            stats: DurableStats::default(),
            recovery: None,
            stopping: Stopping::No,
            clean_durable: false,
        }
    }
    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }

    /// Nothing can be made durable: answer every waiting FLUSH and FUA write with `why`.
    pub(super) fn fail_waiters(&mut self, ctx: &mut Ctx, why: &str) {
        for w in self.waiters.drain(..) {
            ctx.reply(w.id, w.at, Err(ReqError::Io(why.to_string())));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::JournalConfig;
    use crate::scheme::fusion::{LayoutKind, Level, PoolGeometry, VolumeConfig};

    fn cfg(spare: f64, bound: ImageBound) -> FusionConfig {
        let pool = PoolGeometry {
            disks: 7,
            disk_bytes: 1 << 30,
            block_size: 64 << 10,
            data_offset: 1 << 20,
            layout: LayoutKind::Mols,
            hdds: Vec::new(),
        };
        let mut v = VolumeConfig::new("v", Level::Raid5, 5, 1 << 30);
        v.spare_fraction = spare;
        let mut c = FusionConfig::new(pool, vec![v]);
        c.journal = Some(JournalConfig {
            image_bound: bound,
            ..Default::default()
        });
        c
    }

    fn zone(c: &FusionConfig) -> u64 {
        let v = &c.volumes[0];
        let l = c.pool.layout.build(7, v.width, v.level.nparity()).unwrap();
        sizing::zone_stripes(
            v,
            l.template_stripes(),
            c.pool.block_size,
            c.max_request_bytes,
        )
    }

    #[test]
    fn the_zone_bound_holds_every_share_auto_can_give_and_does_not_move_with_it() {
        // The area is sized before `auto` is resolved (from the share it may reach) and
        // again at every start (from the share it did reach): both must give one layout.
        let at_cap = meta_layout(&cfg(sizing::AUTO_SPARE_MAX, ImageBound::Zone)).unwrap();
        for spare in [0.0, 0.25, 1.8, 3.999] {
            let c = cfg(spare, ImageBound::Zone);
            assert_eq!(meta_layout(&c).unwrap(), at_cap, "spare {spare}");
        }
        // Its stripe count is the zone's at the cap, which an old-style bound falls short of.
        let c = cfg(sizing::AUTO_SPARE_MAX, ImageBound::Zone);
        assert_eq!(zone_stripe_bound(&c, &c.volumes[0]), zone(&c));
        let three = (c.volumes[0].size_bytes / c.pool.block_size).div_ceil(4) * 3 + 4096;
        assert!(zone(&c) > three, "{} vs {three}", zone(&c));
        // An explicit share above the cap is counted as it is.
        let big = cfg(6.0, ImageBound::Zone);
        assert_eq!(zone_stripe_bound(&big, &big.volumes[0]), zone(&big));
        assert!(meta_layout(&big).unwrap().max_chunks > at_cap.max_chunks);
    }

    #[test]
    fn pools_sized_by_three_stripes_keep_their_layout() {
        // Superblocks of version 1: the checkpoint slots must stay where that rule put them
        // (the numbers are what builds before the zone bound computed for this pool).
        for spare in [0.25, 1.8, 4.0] {
            let l = meta_layout(&cfg(spare, ImageBound::ThreeStripes)).unwrap();
            assert_eq!(
                (l.max_chunks, l.slot_chunks, l.end()),
                LEGACY,
                "spare {spare}"
            );
        }
    }
    const LEGACY: (u64, u64, u64) = (15, 6, 7_405_568);
}
