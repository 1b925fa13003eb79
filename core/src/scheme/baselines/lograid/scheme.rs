//! The `Scheme` implementation: requests in, completions and ticks, status and checks.

use super::{Job, LogRaid};
use crate::engine::api::{IoResult, Op, Request, VolumeId};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::baselines::sparse::NONE;
use crate::scheme::{Scheme, VolumeStatus};
use crate::types::{DiskId, Nanos, PAGE_SIZE};

impl Scheme for LogRaid {
    fn name(&self) -> &str {
        "lograid"
    }
    fn volume_count(&self) -> usize {
        self.vols.len()
    }
    fn volume_size(&self, v: VolumeId) -> Option<u64> {
        self.vols.get(v as usize).map(|v| v.size)
    }
    fn max_request_bytes(&self) -> u64 {
        self.max_request
    }

    fn submit(&mut self, ctx: &mut Ctx, req: Request) {
        let vol = req.volume as usize;
        let at = ctx.now;
        let (offset, len, data, unmap, fua) = match req.op {
            Op::Read { offset, len } => {
                self.start_read(ctx, req.id, vol, offset, len);
                self.pump(ctx);
                return;
            }
            Op::Flush => {
                let h = self.jobs.insert(Job::Flush { id: req.id, at });
                let disks: Vec<DiskId> = self.core.geo.used_disks().collect();
                self.core.flush(ctx, (h, 0), disks.into_iter());
                self.pump(ctx);
                return;
            }
            Op::Write { offset, data, fua } => (offset, data.len(), Some(data), false, fua),
            Op::WriteZeroes { offset, len, .. } | Op::Trim { offset, len } => {
                (offset, len, None, true, false)
            }
        };
        let h = self.jobs.insert(Job::Write {
            id: req.id,
            at,
            vol,
            offset,
            len,
            data,
            unmap,
            fua,
            appended: 0,
            outstanding: 0,
            err: None,
        });
        if self.locks[vol]
            .acquire(offset / PAGE_SIZE, (offset + len) / PAGE_SIZE, h)
            .is_some()
        {
            self.start_write(ctx, h);
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
        let vol = self.vols.get(v as usize)?;
        let geo = &self.core.geo;
        let seg_bytes = geo.width as u64 * geo.block_size;
        let used = (self.space.segments() as usize - self.space.free_count()) as u64;
        Some(VolumeStatus {
            name: vol.name.clone(),
            size_bytes: vol.size,
            level: format!("log-structured {}", {
                let lvl = if geo.nparity == 1 { "raid50" } else { "raid60" };
                format!("{lvl} {}+{}", geo.dcols(), geo.nparity)
            }),
            raid_bytes: used * seg_bytes,
            replicated_bytes: 0,
            free_bytes: self.space.free_count() as u64 * seg_bytes,
            conversion_backlog: 0,
            mapped_bytes: vol.mapped * PAGE_SIZE,
            metadata_bytes: self.map.memory_bytes() + used * self.space.seg_pages() as u64 * 4,
            rebuild: None,
            scrub: None,
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
        let sp = self.seg_pages();
        let mut live = vec![0u32; self.space.segments() as usize];
        let mut per_vol = vec![0u64; self.vols.len()];
        for lpa in 0..self.map.len() {
            let ppa = self.map.get(lpa);
            if ppa == NONE {
                continue;
            }
            let seg = ppa / sp;
            live[seg as usize] += 1;
            per_vol[self.vol_of(lpa)] += 1;
            assert!(
                !self.space.is_free(seg),
                "page {lpa} mapped into free segment {seg}"
            );
            assert_eq!(
                self.space.summary(seg)[(ppa % sp) as usize],
                lpa as u32,
                "summary of segment {seg} disagrees with the mapping"
            );
        }
        self.space.check(&live);
        for (v, n) in self.vols.iter().zip(per_vol) {
            assert_eq!(v.mapped, n, "mapped-page count of {}", v.name);
        }
        if self.jobs.is_empty() {
            assert_eq!(self.cleaning, 0);
            assert_eq!(self.inflight_segs, 0);
        }
    }

    fn debug_state(&self) -> String {
        format!(
            "lograid: jobs {} free {} / {} (reserve {} low {} cleanable {}) open {:?} sealed {} inflight {} waiters {} gc_waiters {} cleaning {} written {} padded {} cleaned {} | {}",
            self.jobs.len(),
            self.space.free_count(),
            self.space.segments(),
            self.reserve,
            self.low_water,
            self.space.cleanable(),
            self.open
                .as_ref()
                .map(|o| (o.seg, o.fill, o.writers.clone())),
            self.sealed.len(),
            self.inflight_segs,
            self.waiters.len(),
            self.gc_waiters.len(),
            self.cleaning,
            self.segments_written,
            self.padded_pages,
            self.cleaned_pages,
            self.core.debug_state()
        )
    }
}
