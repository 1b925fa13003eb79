//! The FusionRAID scheme (Jiang et al., FAST'21): a declustered shared pool, two-phase writes
//! into stripe-ready replica pairs, in-position conversion to parity stripes, and redirection
//! of reads and writes around disks the spike detector marks unresponsive.
//!
//! Files: `config` (pool and volume settings), `vol` (one volume's metadata), `pairs` (Block
//! Pairing Table and pairing), `write` (both write paths), `gather` (sequential writes
//! gathered into full stripes), `read` (reads, replica choice and
//! reconstruction), `background` (conversion and relocation/compaction), `jobs` (the state of
//! requests in flight), `sizing` (each volume's zone, and the `auto` spare share).

mod avoid_memo;
mod background;
mod bufs;
pub mod column;
pub mod config;
mod convert;
mod degraded;
pub mod durable;
mod durable_state;
mod gather;
mod gather_state;
mod hedge;
mod hedge_budget;
mod in_place;
mod jobs;
pub mod offload;
mod open_set;
mod pack;
pub mod pairs;
pub mod progress;
mod raid_hedge;
mod read;
mod read_done;
pub mod rebuild;
mod reloc_batch;
mod reloc_layout;
mod reloc_plan;
mod reloc_sweep;
mod relocate;
mod restore;
mod row_hedge;
mod rows;
mod rows_state;
pub mod scrub;
pub mod sizing;
mod status;
mod stripe_parity;
mod sweep_state;
mod trim;
mod trim_state;
pub mod vol;
mod vol_check;
mod vol_lost;
mod write;
pub mod write_cost;
mod write_hedge;
mod write_plan;

use crate::engine::api::{IoResult, Op, Request, VolumeId};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::meta::Record;
use crate::policy::{Policies, WearLadder};
use crate::scheme::{Scheme, VolumeStatus};
use crate::slab::Slab;
use crate::space::Zone;
use crate::types::{DiskId, Nanos, PAGE_SIZE};
use crate::volume::Loc;
pub use config::{
    ConfigError, ConversionPolicy, FusionConfig, LayoutKind, Level, PoolGeometry, TrimPolicy,
    VolumeConfig,
};
use jobs::{Job, JobId};
pub use offload::{OffloadConfig, OffloadStats};
use vol::Vol;

pub struct FusionScheme {
    cfg: FusionConfig,
    vols: Vec<Vol>,
    jobs: Slab<Job, JobId>,
    last_user_at: Nanos,
    name: String,
    /// Where writes go, which copy serves a read, when background work may run.
    policy: Policies,
    durable: Option<durable_state::Durable>,
    /// Lists the write path reuses rather than allocating per write (see `bufs`).
    write_bufs: bufs::WriteBufs,
    /// Until then `kick_background` has nothing to do in any volume (see
    /// `background::quiet_until`); 0 when unknown. Whatever makes a volume need a kick
    /// (a write parks for space, a background task finishes, a rebuild, rebalance or scrub
    /// begins) sets it back to 0 through `wake_background`.
    bg_quiet_until: Nanos,
    /// A rebuild, rebalance or scrub was begun in some volume at least once (they are never
    /// dropped again): until then `next_deadline` need not ask for their timers.
    maintenance_begun: bool,
    /// A member seen holding no block any more (`stored_on`), the journal generation that
    /// holds the records which moved its last blocks away, and the volumes' degraded
    /// placements then. Its replacement waits for that generation to be durable.
    cleared: std::cell::Cell<Option<progress::Cleared>>,
    /// Members that failed and were not replaced since, journaled (`Record::MemberFailed`)
    /// and checkpointed: their contents go stale as writes skip them, so a restart must not
    /// take them back as healthy even when they read fine again.
    failed_members: std::collections::BTreeSet<u16>,
    /// Each replaced slot's generation (what the device in it carries in its superblock),
    /// journaled with each `MemberReplaced` and checkpointed: a device that carries another
    /// one was taken out of the slot and is stale (`meta::image`).
    slot_generations: std::collections::BTreeMap<u16, u32>,
    /// Bad copies already counted in `checksum_errors`: (volume, user block, location,
    /// copy). A bad copy is one error however often it is read before its block is moved
    /// off it (the scrub or a read finds it, then the repair's own read meets it again).
    counted_bad: crate::fasthash::FastSet<(usize, u64, crate::volume::Loc, u8)>,
    /// Steering to hand to the engine at its start (see `Scheme::take_steering`).
    steering: Option<crate::steer::Steering>,
    /// Proactive discard's progress (trim.rs).
    trim: trim_state::TrimState,
    /// The HDD logs replica writes are offloaded to (None: offload off).
    offload: Option<offload::Offload>,
    /// Hedged RAID reads the budget allows now (`raid_hedge.rs`).
    raid_hedges: hedge_budget::HedgeBudget,
    /// Sequential writes held while their stripe gathers (`gather.rs`).
    gathering: gather_state::Gathering,
    /// One-page writes held while a parity row fills (`rows.rs`).
    rowing: rows_state::Rowing,
}

/// The fewest members segregation may leave in write mode: the members one pair set spans
/// (its stripes, `copies` of `width` columns each or one mirror stripe, on distinct members), so a new pair set
/// can be opened on writers alone and its replica slots fill. Sandook's own floor, one
/// member per replica, fits its mirrored units; with it a FusionRAID pool of 29 kept a
/// handful of writers, the pair sets fell mostly on read-mode members whose slots stay
/// empty, and every write queued on the few writers (docs/EVALUATION.md, "The combined
/// system").
fn min_writers(cfg: &FusionConfig) -> usize {
    let spans = cfg
        .volumes
        .iter()
        .map(|v| v.level.set_stripes() * v.width)
        .max()
        .unwrap_or(2);
    spans.min(cfg.pool.disks)
}

/// Every volume's zone, laid out one after the other on the members; refused when a
/// volume is malformed or the members can not hold them all.
fn build_volumes(cfg: &FusionConfig) -> Result<Vec<Vol>, ConfigError> {
    let pool = &cfg.pool;
    let bs = pool.block_size;
    let have = pool.disk_bytes.saturating_sub(pool.data_offset) / bs;
    let mut first_block = 0u64;
    let mut vols = Vec::new();
    for v in &cfg.volumes {
        check_volume_config(v, bs)?;
        let np = v.level.nparity();
        let layout = pool
            .build_layout(v.width, np)
            .map_err(|reason| ConfigError::Geometry {
                volume: v.name.clone(),
                reason,
            })?;
        let stripes = sizing::zone_stripes(v, layout.template_stripes(), bs, cfg.max_request_bytes);
        let zone = Zone::new(layout, np, stripes, first_block, bs, pool.data_offset);
        first_block += zone.blocks_per_disk();
        vols.push(Vol::new(vols.len() as u8, v.clone(), zone));
    }
    if first_block > have {
        return Err(ConfigError::TooSmall {
            need: first_block,
            have,
            min_member_bytes: pool.data_offset + first_block * bs,
            largest_last: sizing::largest_last_volume(cfg),
        });
    }
    Ok(vols)
}

/// A volume's own settings: size, shares and width in range.
fn check_volume_config(v: &VolumeConfig, bs: u64) -> Result<(), ConfigError> {
    let verr = |m: String| ConfigError::Volume(v.name.clone(), m);
    if v.size_bytes == 0 || !v.size_bytes.is_multiple_of(bs) {
        return Err(verr(format!(
            "size {} must be a positive multiple of the block size {bs}",
            v.size_bytes
        )));
    }
    if !(0.0..=1.0).contains(&v.replicated_fraction) || !(0.0..=4.0).contains(&v.spare_fraction) {
        return Err(verr(
            "replicated_fraction must be in [0,1] and spare_fraction in [0,4]".into(),
        ));
    }
    if let Level::Mirror { copies } = v.level {
        if !(2..=3).contains(&copies) || v.width != copies as usize {
            return Err(verr(format!(
                "a mirror keeps 2 or 3 copies in stripes as wide as its copies (copies {copies}, \
                 width {})",
                v.width
            )));
        }
        return Ok(());
    }
    let np = v.level.nparity();
    if v.width < np + 2 || v.width > 32 {
        return Err(verr(format!(
            "width {} must be between {} and 32",
            v.width,
            np + 2
        )));
    }
    Ok(())
}

/// The offload state `cfg` asks for: HDD members needed.
fn offload_for(cfg: &FusionConfig) -> Result<Option<offload::Offload>, ConfigError> {
    let Some(oc) = cfg.offload.clone() else {
        return Ok(None);
    };
    let err = |m: &str| ConfigError::Volume("offload".into(), m.into());
    if cfg.pool.hdds.is_empty() {
        return Err(err("write offload needs HDD members to log to"));
    }
    Ok(Some(offload::Offload::new(oc, &cfg.pool)))
}

/// The metadata journal and checkpoints fit in front of the data.
fn check_metadata_room(
    cfg: &FusionConfig,
    layout: Option<&crate::meta::MetaLayout>,
) -> Result<(), ConfigError> {
    let offset = cfg.pool.data_offset;
    match layout {
        Some(l) if l.end() > offset => Err(ConfigError::Volume(
            "metadata".into(),
            format!(
                "data_offset {offset} leaves no room for the metadata journal and checkpoints: {} bytes needed",
                l.end()
            ),
        )),
        _ => Ok(()),
    }
}

impl FusionScheme {
    pub fn new(cfg: FusionConfig) -> Result<Self, ConfigError> {
        let pool = &cfg.pool;
        let bs = pool.block_size;
        if !bs.is_power_of_two() || !(PAGE_SIZE..=(1 << 20)).contains(&bs) {
            return Err(ConfigError::BlockSize(bs));
        }
        if cfg.volumes.is_empty() {
            return Err(ConfigError::NoVolumes);
        }
        if cfg.volumes.len() > 255 {
            return Err(ConfigError::Volume(
                cfg.volumes[255].name.clone(),
                "a pool holds at most 255 volumes".into(),
            ));
        }
        let vols = build_volumes(&cfg)?;
        let nvols = vols.len();
        let pause = cfg.conversion.pause_fg_bytes_per_sec;
        let (name, mut policy) = match (cfg.redirect, &cfg.steer) {
            (true, Some(_)) => ("fusionraid", Policies::steered(pause)),
            (true, None) => ("fusionraid", Policies::redirecting(pause)),
            (false, _) => ("fusion-nd", Policies::non_redirecting(pause)),
        };
        if let Some(gap) = cfg.wear_gap {
            policy.skew_for_wear(WearLadder::for_pool(gap, cfg.pool.disks, &cfg.pool.hdds));
        }
        let steering = cfg.steer.clone().filter(|_| cfg.redirect).map(|sc| {
            let mut curves = cfg.curves.clone();
            curves.resize(cfg.pool.disks, None);
            crate::steer::Steering::new(sc, curves, min_writers(&cfg)).with_fair_write_set()
        });
        let name = name.to_string();
        let layout = durable_state::meta_layout(&cfg);
        check_metadata_room(&cfg, layout.as_ref())?;
        let journal_cfg = cfg.journal.clone();
        let offload = offload_for(&cfg)?;
        let mut s = FusionScheme {
            cfg,
            vols,
            jobs: Slab::default(),
            last_user_at: 0,
            name,
            policy,
            durable: None,
            write_bufs: bufs::WriteBufs::default(),
            bg_quiet_until: 0,
            maintenance_begun: false,
            cleared: std::cell::Cell::new(None),
            failed_members: Default::default(),
            slot_generations: Default::default(),
            counted_bad: Default::default(),
            steering,
            trim: Default::default(),
            offload,
            raid_hedges: Default::default(),
            gathering: gather_state::Gathering::new(nvols),
            rowing: rows_state::Rowing::new(nvols, rows_state::MAX_ROW_PAGES as usize),
        };
        if let (Some(jc), Some(layout)) = (journal_cfg, layout) {
            // A fresh history: its first commit is a checkpoint.
            s.enable_journal(crate::meta::Journal::new(jc, layout, 0, 0, 0, true));
        }
        s.enable_trim();
        Ok(s)
    }

    /// What write offload did (None: off).
    pub fn offload_stats(&self) -> Option<OffloadStats> {
        self.offload.as_ref().map(|o| o.stats)
    }

    /// Log extents whose pair set left the table are freed in their HDD's log: at once
    /// without a journal (nothing can bring the set back), else once the records that
    /// removed the set are durable. They go to the journal's open generation after this
    /// event (`after_event`), so that generation is the one to wait for.
    fn reap_log_extents(&mut self) {
        let Some(o) = self.offload.as_mut() else {
            return;
        };
        let generations = self
            .durable
            .as_ref()
            .map(|d| (d.journal.open_generation(), d.journal.durable_generation()));
        for v in &mut self.vols {
            if !v.offloaded.has_dead() {
                continue;
            }
            for (hdd, pos) in v.offloaded.take_dead() {
                match generations {
                    None => o.kill(hdd, pos),
                    Some((open, _)) => o.kill_after(open, hdd, pos),
                }
            }
        }
        if let Some((_, durable)) = generations {
            o.release(durable);
        }
    }

    /// Whether member `d` is one of the pool's HDDs (no stripes; issue 21).
    pub fn is_hdd_member(&self, d: DiskId) -> bool {
        self.cfg.pool.is_hdd(d)
    }

    /// Blocks per disk the configured volumes use (for sizing members).
    pub fn blocks_per_disk(&self) -> u64 {
        self.vols.iter().map(|v| v.zone.blocks_per_disk()).sum()
    }

    pub fn config(&self) -> &FusionConfig {
        &self.cfg
    }

    /// Internal consistency check for tests: every mapped location is accounted for exactly
    /// as the stripe table and the pairing table say. Panics on the first violation.
    pub fn check_invariants(&self) {
        for v in &self.vols {
            vol_check::check_volume(v);
        }
    }

    /// A copy of user block `ub` at `loc` (copy `copy` of a replicated location) failed its
    /// checksum: count it in `checksum_errors` unless it was counted already.
    fn count_bad_copy(&mut self, ctx: &mut Ctx, vol: usize, ub: u64, loc: Loc, copy: u8) {
        if self.counted_bad.len() >= 4096 {
            // Forget the copies their blocks have left (repaired, rewritten, trimmed).
            let vols = &self.vols;
            self.counted_bad
                .retain(|&(v, b, l, _)| vols[v].references(b, l));
        }
        if self.counted_bad.insert((vol, ub, loc, copy)) {
            ctx.stats.checksum_errors += 1;
        }
    }

    fn threshold(&self, v: &Vol) -> usize {
        if v.cfg.level.is_mirror() {
            // A whole block is a whole mirror stripe: the same device writes as a replica
            // slot, without the conversion.
            return 0;
        }
        self.cfg
            .raid_threshold
            .unwrap_or(v.zone.width() / v.copies())
    }
}

impl Scheme for FusionScheme {
    fn name(&self) -> &str {
        &self.name
    }
    fn volume_count(&self) -> usize {
        self.vols.len()
    }
    fn volume_size(&self, v: VolumeId) -> Option<u64> {
        self.vols.get(v as usize).map(|v| v.cfg.size_bytes)
    }
    fn max_request_bytes(&self) -> u64 {
        self.cfg.max_request_bytes
    }

    fn submit(&mut self, ctx: &mut Ctx, req: Request) {
        self.last_user_at = ctx.now;
        let at = ctx.now;
        match &req.op {
            Op::Read { offset, len }
            | Op::Trim { offset, len }
            | Op::WriteZeroes { offset, len, .. } => {
                self.release_overlapping(ctx, req.volume as usize, *offset, *len)
            }
            Op::Flush => {
                self.release_all_gathers(ctx);
                self.release_all_rows(ctx);
            }
            Op::Write { .. } => {}
        }
        match req.op {
            Op::Read { offset, len } => {
                self.start_read(
                    ctx,
                    req.volume as usize,
                    jobs::ReadPurpose::User { id: req.id, at },
                    offset,
                    len,
                );
            }
            Op::Write { offset, data, fua } => {
                self.submit_write(ctx, req.volume as usize, req.id, offset, data, fua)
            }
            Op::WriteZeroes { offset, len, fua } => self.start_write(
                ctx,
                req.volume as usize,
                req.id,
                offset,
                jobs::WriteKind::Zeroes(len),
                fua,
            ),
            Op::Trim { offset, len } => self.start_write(
                ctx,
                req.volume as usize,
                req.id,
                offset,
                jobs::WriteKind::Trim(len),
                false,
            ),
            Op::Flush => self.start_flush(ctx, req.id),
        }
        self.after_event(ctx);
    }

    fn on_io_complete(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        let kind = match self.jobs.get(JobId::of(tag)) {
            Some(j) => j.kind(),
            None => return, // a hedged read's loser, or a retried part: nobody waits for it
        };
        match kind {
            jobs::Kind::Read => self.read_io_done(ctx, tag, result),
            jobs::Kind::Write => self.write_io_done(ctx, tag, result),
            jobs::Kind::Flush => self.flush_io_done(ctx, tag, result),
            jobs::Kind::Convert => self.convert_io_done(ctx, tag, result),
            jobs::Kind::Reloc => self.reloc_io_done(ctx, tag, result),
            jobs::Kind::Commit => self.commit_io_done(ctx, tag, result),
            jobs::Kind::Scrub => self.scrub_io_done(ctx, tag, result),
            jobs::Kind::Column => self.column_io_done(ctx, tag, result),
            jobs::Kind::Trim => self.trim_io_done(ctx, tag, result),
            jobs::Kind::Row => self.row_io_done(ctx, tag, result),
        }
        self.kick_background(ctx);
        self.kick_trims(ctx);
        self.after_event(ctx);
    }

    fn on_tick(&mut self, ctx: &mut Ctx) {
        self.release_due_gathers(ctx);
        self.release_due_rows(ctx);
        self.hedge_reads(ctx);
        self.hedge_writes(ctx);
        self.hedge_rows(ctx);
        self.kick_background(ctx);
        self.kick_trims(ctx);
        self.after_event(ctx);
    }

    fn next_deadline(&self, now: Nanos) -> Option<Nanos> {
        // Asked after every input: one pass over the volumes, and the rebuild and scrub
        // timers only once one of them was begun (they find nothing in volumes without
        // one; the minimum does not depend on the order the candidates are looked at).
        let mut d = self.hedge_deadline(now);
        let mut add = |t: Nanos| d = Some(d.map_or(t, |x: Nanos| x.min(t)));
        if let Some(g) = self.gathering.deadline() {
            add(g);
        }
        if let Some(r) = self.rowing.deadline() {
            add(r);
        }
        let maintenance = self.maintenance_begun;
        let mut background = false;
        let idle_at = self.cfg.conversion.idle_ns.map(|i| self.last_user_at + i);
        for v in &self.vols {
            background |= v.pairs.set_count() > 0 || !v.space_waiters.is_empty();
            if let Some(i) = idle_at
                && self.cfg.conversion.enabled
                && v.idle_clean_wanted()
            {
                // Idle compaction's next look (never sooner than a millisecond from now:
                // a look that starts nothing sets a later time or a mark).
                add(i.max(v.idle_clean_after).max(now + 1_000_000));
            }
            if (!v.space_waiters.is_empty() || !v.repair.is_empty()) && v.next_bg_scan > now {
                // Writes wait (or blocks await repair) and the last scan found nothing: scan
                // again then.
                add(v.next_bg_scan);
            }
        }
        if maintenance {
            if let Some(r) = self.rebuild_deadline(now) {
                add(r);
            }
            if let Some(r) = self.scrub_deadline(now) {
                add(r);
            }
        }
        if let Some(c) = self.durable_deadline() {
            add(c);
        }
        if let Some(t) = self.trim_deadline(now) {
            add(t);
        }
        if self.cfg.conversion.enabled && background {
            // Background work is possible: come back when the idle trigger would fire, and
            // at least every 10 ms to re-check the foreground-throughput pause.
            let idle = self.cfg.conversion.idle_ns.map(|i| self.last_user_at + i);
            let poll = now + 10_000_000;
            add(idle.map_or(poll, |i| if i > now { i.min(poll) } else { poll }));
        }
        d
    }

    fn on_disk_failed(&mut self, ctx: &mut Ctx, disk: DiskId) {
        self.record_member(Record::MemberFailed {
            member: disk.0 as u16,
        });
        // Rows go only to stripes on working members: the held pages go on their own
        // (they may need the replicated path's fallbacks) and the open stripes close.
        self.release_all_rows(ctx);
        self.close_row_stripes(ctx);
        // Reads reconstruct or use the surviving copies and new writes avoid the failed
        // member at once; the rebuild restores redundancy in the background (rebuild.rs).
        self.begin_rebuild(ctx.now);
        self.kick_background(ctx);
        self.after_event(ctx);
    }

    fn start_scrub(&mut self, ctx: &mut Ctx) -> Result<(), String> {
        self.begin_scrub(ctx.now)?;
        self.kick_background(ctx);
        self.after_event(ctx);
        Ok(())
    }

    fn disk_in_use(&self, disk: DiskId) -> bool {
        self.stored_on(disk)
    }

    fn is_hdd(&self, disk: DiskId) -> bool {
        self.cfg.pool.is_hdd(disk)
    }

    /// An SSD's stripe columns are rebuilt in place (rebuild.rs); an HDD's log extents are
    /// only moved off.
    fn replaces_in_place(&self, disk: DiskId) -> bool {
        !self.cfg.pool.is_hdd(disk)
    }

    fn wear_gap(&self) -> Option<f64> {
        self.cfg.wear_gap
    }

    fn on_disk_replaced(&mut self, ctx: &mut Ctx, disk: DiskId, generation: u32) {
        if self.stored_on(disk) {
            self.replace_in_place(ctx, disk, generation);
        } else {
            self.record_member(Record::MemberReplaced {
                member: disk.0 as u16,
                generation,
            });
        }
        // Metadata copies that lived on the old device are gone: write a full set again.
        self.force_checkpoint();
        // Columns rebuilt into spare space go back to their home blocks on the new device.
        self.begin_rebalance(ctx.now);
        self.kick_background(ctx);
        self.after_event(ctx);
    }

    fn take_steering(&mut self) -> Option<crate::steer::Steering> {
        self.steering.take()
    }

    fn volume_status(&self, v: VolumeId) -> Option<VolumeStatus> {
        self.status_of(v)
    }

    fn is_idle(&self) -> bool {
        self.jobs.is_empty()
            && self.durable.as_ref().is_none_or(|d| d.waiting() == 0)
            && self.vols.iter().all(|v| {
                v.repair.is_empty() && v.scrub.as_ref().is_none_or(|s| s.done_at.is_some())
            })
    }

    fn check_invariants(&self) {
        FusionScheme::check_invariants(self)
    }

    fn begin_shutdown(&mut self, ctx: &mut Ctx) {
        self.release_all_gathers(ctx);
        self.release_all_rows(ctx);
        self.close_row_stripes(ctx);
        self.request_clean_stop(ctx);
    }

    fn shutdown_done(&self) -> bool {
        self.clean_stop_done()
    }

    fn metadata_status(&self) -> Option<crate::scheme::MetadataStatus> {
        let d = self.durable.as_ref()?;
        Some(crate::scheme::MetadataStatus {
            commits: d.stats.commits,
            checkpoints: d.stats.checkpoints,
            failed_commits: d.stats.failed_commits,
            journal_blocks_written: d.stats.journal_blocks_written,
            records: d.stats.records,
            last_checkpoint_bytes: d.stats.last_checkpoint_bytes,
            held_stripes: self.vols.iter().map(|v| v.stripes.held()).sum(),
            recovery: d.recovery.as_ref().map(|r| r.to_string()),
            commit_ns: d.stats.commit_ns,
            clean_shutdown: d.recovery.as_ref().map(|r| r.clean_shutdown()),
        })
    }

    fn debug_state(&self) -> String {
        self.debug_text()
    }
}
