//! The `Scheme` implementation: requests in, completions and ticks, status and checks.

use super::{Job, RaidM};
use crate::engine::api::{DevOp, IoResult, Request, VolumeId};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::baselines::logbase::{Copies, Sorted};
use crate::scheme::{Scheme, VolumeStatus};
use crate::types::{DiskId, Nanos, PAGE_SIZE};

impl Scheme for RaidM {
    fn name(&self) -> &str {
        self.name
    }
    fn volume_count(&self) -> usize {
        self.vols.len()
    }
    fn volume_size(&self, v: VolumeId) -> Option<u64> {
        self.vols
            .get(v as usize)
            .map(|at| self.groups[at.grp].log.vols[at.idx].size)
    }
    fn max_request_bytes(&self) -> u64 {
        self.max_request
    }

    fn submit(&mut self, ctx: &mut Ctx, req: Request) {
        let (id, vol, at) = (req.id, req.volume as usize, ctx.now);
        match Sorted::new(req, at) {
            Sorted::Read { offset, len } => {
                self.start_read(ctx, id, vol, offset, len);
                self.pump(ctx);
            }
            Sorted::Flush => self.flush(ctx, id, at),
            Sorted::Write(w) => {
                let job = |w| Job::Write {
                    w,
                    head: 0,
                    placed: 0,
                    copies: Copies::default(),
                };
                if let Some(h) = w.admit(&mut self.jobs, &mut self.locks, job) {
                    self.start_write(ctx, h);
                }
                self.pump(ctx);
            }
        }
    }

    fn on_io_complete(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        match self.jobs.get_mut(tag.job) {
            Some(Job::Read { .. }) => self.read_done(ctx, tag.job, tag.part as usize, result),
            Some(Job::Write { .. }) => self.write_io_done(ctx, tag.job, tag.part, result),
            Some(Job::Clean { .. }) => self.clean_io_done(ctx, tag.job, tag.part, result),
            Some(Job::Flush { id, at, pending }) => {
                *pending -= 1;
                if *pending == 0 {
                    let (id, at) = (*id, *at);
                    self.jobs.remove(tag.job);
                    ctx.reply(id, at, Ok(None));
                }
            }
            None => unreachable!("completion for a finished job"),
        }
        self.pump(ctx);
    }

    fn on_tick(&mut self, ctx: &mut Ctx) {
        self.steer_tick(ctx);
        for g in 0..self.groups.len() {
            self.kick(ctx, g);
        }
        self.pump(ctx);
    }

    fn next_deadline(&self, _now: Nanos) -> Option<Nanos> {
        None
    }

    fn take_steering(&mut self) -> Option<crate::steer::Steering> {
        RaidM::take_steering(self)
    }

    fn on_disk_failed(&mut self, ctx: &mut Ctx, _disk: DiskId) {
        self.reclaim(ctx);
        for g in 0..self.groups.len() {
            self.kick(ctx, g);
        }
        self.pump(ctx);
    }

    fn volume_status(&self, v: VolumeId) -> Option<VolumeStatus> {
        let at = self.vols.get(v as usize)?;
        let log = &self.groups[at.grp].log;
        let vol = &log.vols[at.idx];
        let mu_bytes = 2 * self.block_size;
        Some(VolumeStatus {
            name: vol.name.clone(),
            size_bytes: vol.size,
            level: self.level_name(),
            raid_bytes: 0,
            replicated_bytes: log.used_segments() * mu_bytes,
            free_bytes: log.space.free_count() as u64 * mu_bytes,
            conversion_backlog: 0,
            mapped_bytes: vol.mapped * PAGE_SIZE,
            metadata_bytes: log.metadata_bytes(),
            rebuild: None,
            scrub: None,
            stale_columns: 0,
            rebuild_phase: None,
            rebuild_progress: None,
            scrub_progress: None,
        })
    }

    fn is_idle(&self) -> bool {
        self.jobs.is_empty() && self.ready.is_empty()
    }

    fn check_invariants(&self) {
        self.check_extents();
        for g in &self.groups {
            g.log.check();
            if self.jobs.is_empty() {
                g.log.check_quiet();
            }
        }
    }

    fn debug_state(&self) -> String {
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| {
                format!(
                    "free {}/{} waiters {} gc_waiters {} cleaning {}",
                    g.log.space.free_count(),
                    g.log.space.segments(),
                    g.log.waiters.len(),
                    g.log.gc_waiters.len(),
                    g.log.cleaning
                )
            })
            .collect();
        format!(
            "{}: jobs {:?} groups {:?}",
            self.name,
            self.job_states(),
            groups
        )
    }
}

impl RaidM {
    /// One line per job in flight, for debugging a stuck log.
    fn job_states(&self) -> Vec<String> {
        let state = |job: &Job| match job {
            Job::Read { g, .. } => format!("read pending {}", g.pending),
            Job::Write { placed, copies, .. } => {
                format!("write placed {placed} copies pending {}", copies.pending)
            }
            Job::Clean {
                victim,
                reading,
                copies,
                ..
            } => format!(
                "clean {} reading {reading} pending {} moved {}/{} copies {} failed {}",
                victim.seg,
                victim.pending,
                victim.moved,
                victim.pages.len(),
                copies.pending,
                victim.failed
            ),
            Job::Flush { pending, .. } => format!("flush pending {pending}"),
        };
        self.jobs
            .handles()
            .into_iter()
            .filter_map(|h| self.jobs.get(h).map(state))
            .collect()
    }
}

impl RaidM {
    /// Flush every healthy member's cache: acknowledged writes are on the members already.
    fn flush(&mut self, ctx: &mut Ctx, id: u64, at: Nanos) {
        let h = self.jobs.insert(Job::Flush { id, at, pending: 0 });
        let mut n = 0;
        for d in self.groups.iter().flat_map(|g| g.disks.iter().copied()) {
            if !ctx.is_failed(d) {
                ctx.issue(d, DevOp::Flush, IoTag { job: h, part: n }, false);
                n += 1;
            }
        }
        if n == 0 {
            self.jobs.remove(h);
            ctx.reply(id, at, Ok(None));
        } else if let Some(Job::Flush { pending, .. }) = self.jobs.get_mut(h) {
            *pending = n;
        }
    }
}
