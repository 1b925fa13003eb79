//! Writes copied into the buffer (or waiting for room), trims, and their answers.

use super::{Job, NvRaid, PS, PagePos, SBuf};
use crate::engine::api::{Data, ReqError};
use crate::engine::ctx::Ctx;
use crate::scheme::baselines::pageset::PageSet;
use crate::types::PAGE_SIZE;

impl NvRaid {
    pub(super) fn start_write(&mut self, ctx: &mut Ctx, h: u64) {
        let trim = matches!(self.jobs.get(h), Some(Job::Write { trim: true, .. }));
        if trim {
            self.do_trim(ctx, h);
            return;
        }
        if !self.admit_q.is_empty() || !self.admit(ctx, h) {
            self.waited_writes += 1;
            self.admit_q.push_back(h);
            self.kick_flush(ctx);
        }
    }

    /// Copy the write into the buffer if it fits. The reply leaves after the copy cost.
    pub(super) fn admit(&mut self, ctx: &mut Ctx, h: u64) -> bool {
        let Some(Job::Write {
            vol, offset, len, ..
        }) = self.jobs.get(h)
        else {
            unreachable!()
        };
        let (vol, offset, len) = (*vol, *offset, *len);
        let p0 = offset / PAGE_SIZE;
        let n = len / PAGE_SIZE;
        let need = (0..n)
            .filter(|&i| {
                let PagePos {
                    stripe, col, pg, ..
                } = self.locate(vol, p0 + i);
                !self
                    .buf
                    .get(&stripe)
                    .is_some_and(|sb| sb.dirty[col].contains(pg))
            })
            .count() as u64;
        if self.used_pages() + need > self.cap_pages {
            return false;
        }
        let bytes = match self.jobs.get_mut(h) {
            Some(Job::Write { data, .. }) => data.take(),
            _ => unreachable!(),
        };
        let geo = &self.core.geo;
        let (ppb, dcols, spages) = (geo.ppb, geo.dcols(), geo.stripe_pages() as u32);
        for i in 0..n {
            let PagePos { stripe, k, col, pg } = self.locate(vol, p0 + i);
            let sb = self.buf.entry(stripe).or_insert_with(|| SBuf {
                vol,
                k,
                dirty: vec![PageSet::default(); dcols],
                dirty_count: 0,
                inflight: vec![0; dcols * ppb],
                inflight_total: 0,
                data: None,
                since: ctx.now,
            });
            if !ctx.size_only {
                let d = sb.data.get_or_insert_with(|| vec![0u8; dcols * ppb * PS]);
                let dst = (col * ppb + pg) * PS;
                match &bytes {
                    Some(Data::Bytes(b)) => {
                        d[dst..dst + PS].copy_from_slice(&b[i as usize * PS..(i as usize + 1) * PS])
                    }
                    _ => d[dst..dst + PS].fill(0),
                }
            }
            if !sb.dirty[col].contains(pg) {
                sb.dirty[col].insert(pg);
                if sb.dirty_count == 0 {
                    sb.since = ctx.now;
                    self.age_q.insert((ctx.now, stripe));
                }
                sb.dirty_count += 1;
                self.dirty_pages += 1;
                if sb.dirty_count == spages {
                    self.full_q.push_back(stripe);
                }
            }
        }
        let when = ctx.now + self.cost(len, self.cfg.write_ns_per_line);
        if when > ctx.now {
            self.timers.insert((when, h));
        } else {
            self.finish_write(ctx, h);
        }
        self.kick_flush(ctx);
        true
    }

    pub(super) fn do_trim(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Write {
            vol, offset, len, ..
        }) = self.jobs.get(h)
        else {
            unreachable!()
        };
        let (vol, offset, len) = (*vol, *offset, *len);
        for page in offset / PAGE_SIZE..(offset + len) / PAGE_SIZE {
            let PagePos {
                stripe, col, pg, ..
            } = self.locate(vol, page);
            let Some(sb) = self.buf.get_mut(&stripe) else {
                continue;
            };
            if !sb.dirty[col].contains(pg) {
                continue;
            }
            sb.dirty[col].remove(pg);
            sb.dirty_count -= 1;
            self.dirty_pages -= 1;
            if sb.dirty_count == 0 {
                self.age_q.remove(&(sb.since, stripe));
                if sb.inflight_total == 0 {
                    self.buf.remove(&stripe);
                }
            }
        }
        let sp = self.core.geo.stripe_data_bytes();
        let first = offset.div_ceil(sp);
        let end = ((offset + len) / sp).min(self.vols[vol].size / sp);
        let stripes: Vec<u64> = (first..end).map(|k| self.vols[vol].stripe(k)).collect();
        let n = stripes.len() as u32;
        if let Some(Job::Write { pending, .. }) = self.jobs.get_mut(h) {
            *pending = n;
        }
        for (i, s) in stripes.into_iter().enumerate() {
            self.core.trim(ctx, (h, i as u32), s);
        }
        if n == 0 {
            self.finish_write(ctx, h);
        }
        self.admit_waiting(ctx);
    }

    pub(super) fn finish_write(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(Job::Write {
            id,
            at,
            vol,
            offset,
            len,
            err,
            ..
        }) = self.jobs.remove(h)
        else {
            unreachable!()
        };
        self.ready
            .extend(self.locks[vol].release(offset / PAGE_SIZE, (offset + len) / PAGE_SIZE));
        ctx.reply(id, at, err.map_or(Ok(None), |e| Err(ReqError::Io(e))));
    }

    pub(super) fn admit_waiting(&mut self, ctx: &mut Ctx) {
        while let Some(&h) = self.admit_q.front() {
            if self.admit(ctx, h) {
                self.admit_q.pop_front();
            } else {
                break;
            }
        }
    }
}
