//! Reads: each page from the buffer when it is there, the rest from RAID50; the reply leaves
//! no earlier than the buffer's read cost.

use super::{Job, NvRaid, PS};
use crate::engine::ctx::Ctx;
use crate::scheme::baselines::gather::Gather;
use crate::scheme::baselines::geom::pieces;
use crate::types::PAGE_SIZE;

/// A read of pages the buffer does not hold: pages `first..first+count` of column `col` of
/// `stripe`, landing at `off` of the result.
struct RaidRead {
    stripe: u64,
    col: usize,
    first: usize,
    count: usize,
    off: u64,
}

impl NvRaid {
    pub(super) fn start_read(&mut self, ctx: &mut Ctx, id: u64, vol: usize, offset: u64, len: u64) {
        let ppb = self.core.geo.ppb;
        // The number of device reads is known only after the buffer hits are copied.
        let mut g = Gather::new(ctx, id, len, 0);
        let mut raid: Vec<RaidRead> = Vec::new();
        let mut hits = 0u64;
        for pc in pieces(&self.core.geo, offset, len) {
            let stripe = self.vols[vol].stripe(pc.vstripe);
            let sb = self.buf.get(&stripe);
            for i in 0..pc.count {
                let pg = pc.first + i;
                let boff = pc.buf_off + (i * PS) as u64;
                if let Some(sb) = sb
                    && sb.present(pc.col, pg, ppb)
                {
                    hits += 1;
                    if let Some(d) = sb.data.as_ref() {
                        let src = (pc.col * ppb + pg) * PS;
                        g.put(boff, &d[src..src + PS]);
                    }
                    continue;
                }
                match raid.last_mut() {
                    Some(r) if r.stripe == stripe && r.col == pc.col && r.first + r.count == pg => {
                        r.count += 1
                    }
                    _ => raid.push(RaidRead {
                        stripe,
                        col: pc.col,
                        first: pg,
                        count: 1,
                        off: boff,
                    }),
                }
            }
        }
        self.buffer_read_pages += hits;
        let not_before = ctx.now + self.cost(hits * PAGE_SIZE, self.cfg.read_ns_per_line);
        g.pending = raid.len() as u32;
        let h = self.jobs.insert(Job::Read {
            g,
            offs: raid.iter().map(|r| r.off).collect(),
            not_before,
        });
        for (i, r) in raid.iter().enumerate() {
            let token = (h, i as u32);
            self.core
                .read(ctx, token, r.stripe, r.col, r.first, r.count, false);
        }
        if raid.is_empty() {
            self.read_ready(ctx, h);
        }
    }

    pub(super) fn read_ready(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Read { not_before, .. }) = self.jobs.get(h) else {
            unreachable!()
        };
        if *not_before > ctx.now {
            self.timers.insert((*not_before, h));
            return;
        }
        let Some(Job::Read { g, .. }) = self.jobs.remove(h) else {
            unreachable!()
        };
        g.reply(ctx);
    }
}
