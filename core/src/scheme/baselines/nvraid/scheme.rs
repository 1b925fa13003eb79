//! The `Scheme` implementation: requests in, completions and timers, status and checks.

use super::{Job, NvRaid};
use crate::engine::api::{IoResult, Op, Request, VolumeId};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::{Scheme, VolumeStatus};
use crate::types::{DiskId, Nanos, PAGE_SIZE};

impl Scheme for NvRaid {
    /// In place: a never-written block is read from its home (assume-clean members).
    fn members_start_zeroed(&self) -> bool {
        true
    }
    fn name(&self) -> &str {
        "nvraid"
    }
    fn volume_count(&self) -> usize {
        self.vols.len()
    }
    fn volume_size(&self, v: VolumeId) -> Option<u64> {
        self.vols.get(v as usize).map(|m| m.size)
    }
    fn max_request_bytes(&self) -> u64 {
        self.max_request
    }

    fn submit(&mut self, ctx: &mut Ctx, req: Request) {
        let vol = req.volume as usize;
        let at = ctx.now;
        let (offset, len, data, trim) = match req.op {
            Op::Read { offset, len } => {
                self.start_read(ctx, req.id, vol, offset, len);
                self.pump(ctx);
                return;
            }
            Op::Flush => {
                // The buffer is non-volatile: everything acknowledged is durable already.
                ctx.reply(req.id, at, Ok(None));
                return;
            }
            Op::Write { offset, data, .. } => (offset, data.len(), Some(data), false),
            Op::WriteZeroes { offset, len, .. } => (offset, len, None, false),
            Op::Trim { offset, len } => (offset, len, None, true),
        };
        let h = self.jobs.insert(Job::Write {
            id: req.id,
            at,
            vol,
            offset,
            len,
            data,
            trim,
            pending: 0,
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
        while let Some(&(t, h)) = self.timers.first() {
            if t > ctx.now {
                break;
            }
            self.timers.remove(&(t, h));
            match self.jobs.get(h) {
                Some(Job::Read { .. }) => self.read_ready(ctx, h),
                Some(Job::Write { .. }) => self.finish_write(ctx, h),
                _ => unreachable!("timer for a flush"),
            }
        }
        self.kick_flush(ctx);
        self.pump(ctx);
    }

    fn next_deadline(&self, now: Nanos) -> Option<Nanos> {
        let mut best = self.core.next_deadline(now);
        let mut take = |t: Nanos| best = Some(best.map_or(t, |b| b.min(t)));
        if let Some(&(t, _)) = self.timers.first() {
            take(t);
        }
        if let (Some(age), Some(&(since, _))) = (self.cfg.max_age_ns, self.age_q.first())
            && self.flushes < self.cfg.max_flushes
            && since + age > now
        {
            take(since + age);
        }
        best
    }

    fn on_disk_failed(&mut self, ctx: &mut Ctx, _disk: DiskId) {
        self.pump(ctx);
    }

    fn volume_status(&self, v: VolumeId) -> Option<VolumeStatus> {
        let m = self.vols.get(v as usize)?;
        let geo = &self.core.geo;
        Some(VolumeStatus {
            name: m.name.clone(),
            size_bytes: m.size,
            level: format!(
                "nvram {} MiB + raid50 {}+{}",
                (self.cap_pages * PAGE_SIZE) >> 20,
                geo.dcols(),
                geo.nparity
            ),
            raid_bytes: m.stripes(geo) * geo.width as u64 * geo.block_size,
            replicated_bytes: 0,
            free_bytes: (self.cap_pages - self.used_pages()) * PAGE_SIZE,
            conversion_backlog: self.age_q.len() as u64,
            mapped_bytes: m.size,
            metadata_bytes: self.buf.len() as u64 * (64 + 4 * self.core.geo.stripe_pages() as u64),
            rebuild: None,
            scrub: None,
            stale_columns: 0,
            rebuild_phase: None,
            rebuild_progress: None,
            scrub_progress: None,
        })
    }

    fn is_idle(&self) -> bool {
        self.jobs.is_empty() && self.core.is_idle() && self.ready.is_empty()
    }

    fn check_invariants(&self) {
        self.core.check_invariants();
        let mut dirty = 0u64;
        let mut snaps = 0u64;
        for (&s, sb) in &self.buf {
            let d: u32 = sb.dirty.iter().map(|c| c.len() as u32).sum();
            let f: u32 = sb.inflight.iter().map(|&x| x as u32).sum();
            assert_eq!(d, sb.dirty_count, "stripe {s} dirty count");
            assert_eq!(f, sb.inflight_total, "stripe {s} copies in flight");
            assert!(d > 0 || f > 0, "stripe {s} buffered with nothing in it");
            assert_eq!(
                d > 0,
                self.age_q.contains(&(sb.since, s)),
                "stripe {s} in the age queue iff dirty"
            );
            assert_eq!(self.vols[sb.vol].stripe(sb.k), s);
            dirty += d as u64;
            snaps += f as u64;
        }
        assert_eq!(dirty, self.dirty_pages, "dirty page count");
        assert_eq!(snaps, self.snapshots, "copies in flight");
        assert!(self.used_pages() <= self.cap_pages, "buffer over capacity");
        assert_eq!(
            self.age_q.len(),
            self.buf.values().filter(|b| b.dirty_count > 0).count()
        );
    }

    fn debug_state(&self) -> String {
        format!(
            "nvraid: jobs {} used {}/{} dirty stripes {} flushes {} (full {}) admit_q {} waited {} timers {} | {}",
            self.jobs.len(),
            self.used_pages(),
            self.cap_pages,
            self.age_q.len(),
            self.flushes,
            self.full_stripe_flushes,
            self.admit_q.len(),
            self.waited_writes,
            self.timers.len(),
            self.core.debug_state()
        )
    }
}
