//! The `Scheme` implementation: requests in, completions and ticks, status and checks.

use super::{Job, RaidM};
use crate::engine::api::{DevOp, IoResult, Op, Request, VolumeId};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::scheme::baselines::sparse::NONE;
use crate::scheme::{Scheme, VolumeStatus};
use crate::types::{DiskId, Nanos, PAGE_SIZE};

impl Scheme for RaidM {
    fn name(&self) -> &str {
        "4-raidm"
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
                let h = self.jobs.insert(Job::Flush {
                    id: req.id,
                    at,
                    pending: 0,
                });
                let mut n = 0;
                for d in self.groups.iter().flat_map(|g| g.disks.iter().copied()) {
                    if !ctx.is_failed(d) {
                        ctx.issue(d, DevOp::Flush, IoTag { job: h, part: n }, false);
                        n += 1;
                    }
                }
                if n == 0 {
                    self.jobs.remove(h);
                    ctx.reply(req.id, at, Ok(None));
                } else if let Some(Job::Flush { pending, .. }) = self.jobs.get_mut(h) {
                    *pending = n;
                }
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
            head: 0,
            placed: 0,
            pieces: Vec::new(),
            ok: Vec::new(),
            left: Vec::new(),
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
        for g in 0..self.groups.len() {
            self.kick(ctx, g);
        }
        self.pump(ctx);
    }

    fn next_deadline(&self, _now: Nanos) -> Option<Nanos> {
        None
    }

    fn on_disk_failed(&mut self, ctx: &mut Ctx, _disk: DiskId) {
        self.pump(ctx);
    }

    fn volume_status(&self, v: VolumeId) -> Option<VolumeStatus> {
        let vol = self.vols.get(v as usize)?;
        let g = &self.groups[vol.grp];
        let mu_bytes = 2 * self.block_size;
        let used = (g.space.segments() as usize - g.space.free_count()) as u64;
        Some(VolumeStatus {
            name: vol.name.clone(),
            size_bytes: vol.size,
            level: format!("mirrored log over {} disks", self.width),
            raid_bytes: 0,
            replicated_bytes: used * mu_bytes,
            free_bytes: g.space.free_count() as u64 * mu_bytes,
            conversion_backlog: 0,
            mapped_bytes: vol.mapped * PAGE_SIZE,
            metadata_bytes: g.map.memory_bytes() + used * self.ppb as u64 * 4,
            rebuild: None,
            scrub: None,
            rebuild_progress: None,
            scrub_progress: None,
        })
    }

    fn is_idle(&self) -> bool {
        self.jobs.is_empty() && self.ready.is_empty()
    }

    fn check_invariants(&self) {
        let ppb = self.ppb;
        for (gi, g) in self.groups.iter().enumerate() {
            let mut live = vec![0u32; g.space.segments() as usize];
            for lpa in 0..g.map.len() {
                let ppa = g.map.get(lpa);
                if ppa == NONE {
                    continue;
                }
                let mu = ppa / ppb;
                live[mu as usize] += 1;
                assert!(
                    !g.space.is_free(mu),
                    "group {gi}: page {lpa} in free MU {mu}"
                );
                assert_eq!(
                    g.space.summary(mu)[(ppa % ppb) as usize],
                    lpa as u32,
                    "group {gi}: summary of MU {mu} disagrees with the mapping"
                );
            }
            g.space.check(&live);
            if self.jobs.is_empty() {
                assert_eq!(g.cleaning, 0);
                assert!(g.waiters.is_empty() && g.gc_waiters.is_empty());
            }
        }
        for v in &self.vols {
            let g = &self.groups[v.grp];
            let n = (v.base..v.base + v.size / PAGE_SIZE)
                .filter(|&l| g.map.get(l) != NONE)
                .count() as u64;
            assert_eq!(n, v.mapped, "mapped-page count of {}", v.name);
        }
    }

    fn debug_state(&self) -> String {
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| {
                format!(
                    "free {}/{} waiters {} gc_waiters {} cleaning {}",
                    g.space.free_count(),
                    g.space.segments(),
                    g.waiters.len(),
                    g.gc_waiters.len(),
                    g.cleaning
                )
            })
            .collect();
        format!("4-raidm: jobs {} groups {:?}", self.jobs.len(), groups)
    }
}
