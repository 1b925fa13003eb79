//! Reads: runs of mapped pages read through the RAID core, unmapped pages as zeros.

use super::{Job, LogRaid};
use crate::engine::ctx::Ctx;
use crate::scheme::baselines::gather::Gather;
use crate::scheme::baselines::sparse::NONE;
use crate::types::PAGE_SIZE;

impl LogRaid {
    // ------------------------------------------------------------------ reads

    pub(super) fn start_read(&mut self, ctx: &mut Ctx, id: u64, vol: usize, offset: u64, len: u64) {
        let sp = self.seg_pages();
        let ppb = self.core.geo.ppb as u32;
        let base = self.vols[vol].base + offset / PAGE_SIZE;
        let n = len / PAGE_SIZE;
        // Runs of pages that are consecutive on one column of one segment.
        let mut runs: Vec<(u64, u32, u32)> = Vec::new(); // (first page index, ppa, count)
        for i in 0..n {
            let ppa = self.map.get(base + i);
            if ppa == NONE {
                continue;
            }
            if let Some(last) = runs.last_mut() {
                let (fi, fp, c) = *last;
                let same_col = (fp / sp == ppa / sp) && ((fp % sp) / ppb == (ppa % sp) / ppb);
                if fi + c as u64 == i && fp + c == ppa && same_col {
                    last.2 += 1;
                    continue;
                }
            }
            runs.push((i, ppa, 1));
        }
        let h = self.jobs.insert(Job::Read {
            g: Gather::new(ctx, id, len, runs.len() as u32),
            runs: runs.iter().map(|r| (r.0 * PAGE_SIZE, r.1 / sp)).collect(),
        });
        if runs.is_empty() {
            self.finish_read(ctx, h);
            return;
        }
        for (k, &(_, ppa, count)) in runs.iter().enumerate() {
            let seg = ppa / sp;
            let slot = ppa % sp;
            self.space.pin(seg);
            self.core.read(
                ctx,
                (h, k as u32),
                seg as u64,
                (slot / ppb) as usize,
                (slot % ppb) as usize,
                count as usize,
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
