//! Reads: runs of mapped pages read through the RAID core, unmapped pages as zeros.

use super::{Job, LogRaid, PinnedRead};
use crate::engine::ctx::Ctx;
use crate::scheme::baselines::gather::Gather;
use crate::types::PAGE_SIZE;

impl LogRaid {
    pub(super) fn start_read(&mut self, ctx: &mut Ctx, id: u64, vol: usize, offset: u64, len: u64) {
        let sp = self.seg_pages();
        let ppb = self.core.geo.ppb as u32;
        // Runs of pages that are consecutive on one column of one segment.
        let runs = self
            .log
            .read_runs(vol, offset / PAGE_SIZE, len / PAGE_SIZE, ppb);
        let h = self.jobs.insert(Job::Read {
            g: Gather::new(ctx, id, len, runs.len() as u32),
            reads: runs
                .iter()
                .map(|r| PinnedRead {
                    off: r.page * PAGE_SIZE,
                    seg: r.ppa / sp,
                })
                .collect(),
        });
        if runs.is_empty() {
            self.finish_read(ctx, h);
            return;
        }
        for (k, r) in runs.iter().enumerate() {
            let seg = r.ppa / sp;
            let slot = r.ppa % sp;
            self.log.space.pin(seg);
            self.core.read(
                ctx,
                (h, k as u32),
                seg as u64,
                (slot / ppb) as usize,
                (slot % ppb) as usize,
                r.count as usize,
                false,
            );
        }
    }

    pub(super) fn finish_read(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Read { g, .. }) = self.jobs.remove(h) else {
            unreachable!()
        };
        g.reply(ctx);
    }
}
