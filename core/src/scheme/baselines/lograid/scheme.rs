//! The `Scheme` implementation: requests in, completions and ticks, status and checks.

use super::{Job, LogRaid};
use crate::engine::api::{IoResult, Request, VolumeId};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::baselines::logbase::Sorted;
use crate::scheme::{Scheme, VolumeStatus};
use crate::types::{DiskId, Nanos, PAGE_SIZE};

impl Scheme for LogRaid {
    fn name(&self) -> &str {
        "lograid"
    }
    fn volume_count(&self) -> usize {
        self.log.vols.len()
    }
    fn volume_size(&self, v: VolumeId) -> Option<u64> {
        self.log.vols.get(v as usize).map(|v| v.size)
    }
    fn max_request_bytes(&self) -> u64 {
        self.max_request
    }

    fn submit(&mut self, ctx: &mut Ctx, req: Request) {
        let (id, vol, at) = (req.id, req.volume as usize, ctx.now);
        match Sorted::new(req, at) {
            Sorted::Read { offset, len } => self.start_read(ctx, id, vol, offset, len),
            Sorted::Flush => {
                let h = self.jobs.insert(Job::Flush { id, at });
                let disks: Vec<DiskId> = self.core.geo.used_disks().collect();
                self.core.flush(ctx, (h, 0), disks.into_iter());
            }
            Sorted::Write(w) => {
                let job = |w| Job::Write {
                    w,
                    appended: 0,
                    outstanding: 0,
                };
                if let Some(h) = w.admit(&mut self.jobs, &mut self.locks, job) {
                    self.start_write(ctx, h);
                }
            }
        }
        self.pump(ctx);
    }

    fn on_io_complete(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        self.core.on_io(ctx, tag, result);
        self.pump(ctx);
    }

    fn on_tick(&mut self, ctx: &mut Ctx) {
        self.core.on_tick(ctx);
        if let Some(t) = self.seal_deadline()
            && t <= ctx.now
        {
            self.seal(ctx);
        }
        self.pump(ctx);
        self.kick(ctx);
        self.pump(ctx);
    }

    fn next_deadline(&self, now: Nanos) -> Option<Nanos> {
        let a = self.seal_deadline().map(|t| t.max(now));
        let b = self.core.next_deadline(now);
        match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        }
    }

    fn on_disk_failed(&mut self, ctx: &mut Ctx, _disk: DiskId) {
        self.pump(ctx);
    }

    fn volume_status(&self, v: VolumeId) -> Option<VolumeStatus> {
        let vol = self.log.vols.get(v as usize)?;
        let geo = &self.core.geo;
        let seg_bytes = geo.width as u64 * geo.block_size;
        let lvl = if geo.nparity == 1 { "raid50" } else { "raid60" };
        Some(VolumeStatus {
            name: vol.name.clone(),
            size_bytes: vol.size,
            level: format!("log-structured {lvl} {}+{}", geo.dcols(), geo.nparity),
            raid_bytes: self.log.used_segments() * seg_bytes,
            replicated_bytes: 0,
            free_bytes: self.log.space.free_count() as u64 * seg_bytes,
            conversion_backlog: 0,
            mapped_bytes: vol.mapped * PAGE_SIZE,
            metadata_bytes: self.log.metadata_bytes(),
            rebuild: None,
            scrub: None,
            stale_columns: 0,
            rebuild_phase: None,
            rebuild_progress: None,
            scrub_progress: None,
        })
    }

    fn is_idle(&self) -> bool {
        self.jobs.is_empty()
            && self.core.is_idle()
            && self.ready.is_empty()
            && self.open.as_ref().is_none_or(|o| o.fill == 0)
            && self.sealed.is_empty()
    }

    fn check_invariants(&self) {
        self.core.check_invariants();
        self.log.check();
        if self.jobs.is_empty() {
            self.log.check_quiet();
            assert_eq!(self.inflight_segs, 0);
        }
    }

    fn debug_state(&self) -> String {
        format!(
            "lograid: jobs {} free {} / {} (reserve {} low {} cleanable {}) open {:?} sealed {} inflight {} waiters {} gc_waiters {} cleaning {} written {} padded {} cleaned {} | {}",
            self.jobs.len(),
            self.log.space.free_count(),
            self.log.space.segments(),
            self.log.reserve,
            self.log.low_water,
            self.log.space.cleanable(),
            self.open.as_ref().map(|o| (
                o.seg,
                o.fill,
                o.writers
                    .iter()
                    .map(|w| (w.job, w.pages))
                    .collect::<Vec<_>>()
            )),
            self.sealed.len(),
            self.inflight_segs,
            self.log.waiters.len(),
            self.log.gc_waiters.len(),
            self.log.cleaning,
            self.segments_written,
            self.padded_pages,
            self.cleaned_pages,
            self.core.debug_state()
        )
    }
}
