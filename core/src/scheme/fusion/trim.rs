//! Proactive discard (`TrimPolicy`): spare stripes are discarded on their members in
//! batches, so the members' garbage collection stops copying data the pool no longer uses.
//!
//! What may be discarded is decided by the stripe table's backlog (`StripeTable::next_trim`):
//! only whole stripes that are spare, and in durable-metadata mode only once the commit
//! that freed them is durable. Here a batch of them becomes device discards: each stripe's
//! blocks (remapped columns at their donor block), merged into one range per run of
//! adjacent blocks on a member, skipping failed members and those the admission policy
//! keeps discards off. The stripes stay pinned until every discard is answered, so none is
//! handed out while a discard could still land after a new write.
//!
//! Discards never make writes wait for room: no batch starts while writes wait for space
//! or while the zone has little beyond the writers' reserve (the backlog is dropped then,
//! its stripes spare and undiscarded), and a batch pins at most half of that margin.
//!
//! When discards are turned on (a new pool, or one just recovered), the members' space
//! beyond every volume's zone, which no volume uses, is discarded too, one chunk per member
//! per look (as `mkfs` discards a new device).

use super::FusionScheme;
use super::jobs::{Job, JobId, TrimJob};
use super::trim_state::TailSweep;
use crate::engine::api::{DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::policy::BackgroundAdmission;
use crate::types::{DiskId, Nanos};

/// The longest range one discard covers (NBD members take at most 4 GiB per request).
const MAX_RANGE_BYTES: u64 = 1 << 31;

impl FusionScheme {
    /// Queue every spare stripe of every volume for its discard (a new or just recovered
    /// pool tells its members once what is free), when discards are on.
    pub(super) fn enable_trim(&mut self) {
        if !self.cfg.trim.enabled {
            return;
        }
        for v in &mut self.vols {
            v.stripes.enable_trim();
        }
        let pool = &self.cfg.pool;
        let start = pool.data_offset + self.blocks_per_disk() * pool.block_size;
        self.trim.tail = (pool.disk_bytes > start).then_some(TailSweep {
            cursor: start,
            end: pool.disk_bytes,
            running: false,
        });
    }

    /// Start a batch of discards in each volume that has a backlog and none in flight, at
    /// most once per `interval_ns`.
    pub(super) fn kick_trims(&mut self, ctx: &mut Ctx) {
        if !self.cfg.trim.enabled || ctx.now < self.trim.next_at || self.stopping() {
            return;
        }
        self.trim.next_at = ctx.now + self.cfg.trim.interval_ns;
        self.sweep_tail(ctx);
        for vol in 0..self.vols.len() {
            self.start_trim_batch(ctx, vol);
        }
    }

    /// Discard the next chunk of every member's space beyond the zones.
    fn sweep_tail(&mut self, ctx: &mut Ctx) {
        let Some(t) = self.trim.tail.as_mut() else {
            return;
        };
        if t.running {
            return;
        }
        if t.cursor >= t.end {
            self.trim.tail = None;
            return;
        }
        let (offset, len) = (t.cursor, (t.end - t.cursor).min(MAX_RANGE_BYTES));
        t.cursor += len;
        let disks: Vec<DiskId> = (0..ctx.disk_count() as u32)
            .map(DiskId)
            // An HDD's space beyond the metadata is its write log (issue 21), not spare.
            .filter(|&d| !ctx.is_failed(d) && !self.cfg.pool.is_hdd(d))
            .collect();
        if disks.is_empty() {
            return;
        }
        t.running = true;
        let h = self.jobs.insert(Job::Trim(TrimJob {
            vol: None,
            stripes: Vec::new(),
            pending: disks.len() as u32,
        }));
        for (i, d) in disks.into_iter().enumerate() {
            ctx.issue(d, DevOp::Trim { offset, len }, h.tag(i as u32), true);
        }
    }

    /// When `kick_trims` wants to look again (None: nothing waits for a discard).
    pub(super) fn trim_deadline(&self, now: Nanos) -> Option<Nanos> {
        if !self.cfg.trim.enabled || self.stopping() {
            return None;
        }
        let tail = self.trim.tail.as_ref().is_some_and(|t| !t.running);
        (tail
            || self
                .vols
                .iter()
                .any(|v| !v.trim_running && v.stripes.trim_backlog() > 0))
        .then(|| self.trim.next_at.max(now + 1))
    }

    fn start_trim_batch(&mut self, ctx: &mut Ctx, vol: usize) {
        let v = &mut self.vols[vol];
        if v.trim_running || v.stripes.trim_backlog() == 0 {
            return;
        }
        let margin = v
            .stripes
            .available()
            .saturating_sub(v.reserve_stripes() + v.spare_stripes / 16);
        if !v.space_waiters.is_empty() || margin < 2 {
            ctx.stats.trims_dropped += v.stripes.drop_trim_backlog() as u64;
            return;
        }
        let n = self.cfg.trim.batch_stripes.min(margin as usize / 2).max(1);
        let mut stripes = Vec::with_capacity(n);
        while stripes.len() < n {
            let Some(s) = v.stripes.next_trim() else {
                break;
            };
            stripes.push(s);
        }
        let ranges = self.trim_ranges(ctx, vol, &stripes);
        ctx.stats.stripes_trimmed += stripes.len() as u64;
        if ranges.is_empty() {
            return; // every block sits on a member that takes no discard now
        }
        let v = &mut self.vols[vol];
        for &s in &stripes {
            v.stripes.pin(s);
        }
        v.trim_running = true;
        let h = self.jobs.insert(Job::Trim(TrimJob {
            vol: Some(vol),
            stripes,
            pending: ranges.len() as u32,
        }));
        for (i, (disk, offset, len)) in ranges.into_iter().enumerate() {
            ctx.issue(disk, DevOp::Trim { offset, len }, h.tag(i as u32), true);
        }
    }

    /// The device ranges of `stripes`' blocks that may be discarded now, sorted and merged
    /// per member.
    fn trim_ranges(&self, ctx: &Ctx, vol: usize, stripes: &[u32]) -> Vec<(DiskId, u64, u64)> {
        let v = &self.vols[vol];
        let bs = v.zone.block_size();
        let members = ctx.members();
        let admission = &self.policy.admission;
        let mut blocks: Vec<(DiskId, u64)> = stripes
            .iter()
            .flat_map(|&s| (0..v.zone.width()).map(move |c| (s, c)))
            .map(|(s, c)| v.zone.device_offset(s, c, 0))
            .filter(|&(d, _)| !ctx.is_failed(d) && admission.may_trim_on(&members, d))
            .collect();
        blocks.sort_unstable();
        let mut ranges: Vec<(DiskId, u64, u64)> = Vec::new();
        for (d, off) in blocks {
            match ranges.last_mut() {
                Some((ld, lo, ll)) if *ld == d && *lo + *ll == off && *ll < MAX_RANGE_BYTES => {
                    *ll += bs
                }
                _ => ranges.push((d, off, bs)),
            }
        }
        ranges
    }

    /// A discard of a batch is answered (an error only means that range stays as it was).
    pub(super) fn trim_io_done(&mut self, ctx: &mut Ctx, tag: IoTag, _result: IoResult) {
        let h = JobId::of(tag);
        let Some(Job::Trim(t)) = self.jobs.get_mut(h) else {
            unreachable!("trim job")
        };
        t.pending -= 1;
        if t.pending > 0 {
            return;
        }
        let Some(Job::Trim(t)) = self.jobs.remove(h) else {
            unreachable!("trim job")
        };
        let Some(vol) = t.vol else {
            if let Some(tail) = self.trim.tail.as_mut() {
                tail.running = false;
            }
            return;
        };
        let v = &mut self.vols[vol];
        for s in t.stripes {
            v.stripes.unpin(s);
        }
        v.trim_running = false;
        if !v.space_waiters.is_empty() {
            // Writes that parked meanwhile may use the stripes just unpinned.
            self.retry_space_waiters(ctx, vol);
        }
    }
}
