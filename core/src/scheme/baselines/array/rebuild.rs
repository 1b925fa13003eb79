//! Reads rebuilt from the rest of the stripe (failed or avoided member), and their retries.

use super::{COp, FALLBACK_PART, MAX_TRIES, PS, RaidCore, issue, read_bytes};
use crate::engine::api::{DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::parity;

impl RaidCore {
    // ---------------------------------------------------------------- rebuilt reads

    pub(super) fn start_rebuild(&mut self, ctx: &mut Ctx, h: u64) {
        let (stripe, col) = match self.ops.get(h) {
            Some(COp::Rebuild(r)) => (r.stripe, r.col),
            _ => unreachable!(),
        };
        let failed = self.failed_cols(ctx, stripe);
        let geo = &self.geo;
        let Some(COp::Rebuild(r)) = self.ops.get_mut(h) else {
            unreachable!()
        };
        let mut missing = failed.clone();
        if !missing.contains(&col) {
            missing.push(col);
        }
        if missing.len() > geo.nparity {
            if failed.contains(&col) {
                let (t, s) = (r.token, r.stripe);
                self.ops.remove(h);
                self.done.push_back((
                    t,
                    Err("more members of the stripe failed than its parity covers".into()),
                ));
                self.release_stripe(ctx, s);
                return;
            }
            // Another member failed meanwhile: read the (slow but healthy) column itself.
            let (disk, off) = geo.offset(stripe, col, r.first);
            r.pending = 1;
            r.missing.clear();
            issue(
                &mut self.io_meta,
                ctx,
                disk,
                DevOp::Read {
                    offset: off,
                    len: (r.count * PS) as u64,
                },
                IoTag {
                    job: h,
                    part: FALLBACK_PART,
                },
                r.bg,
            );
            return;
        }
        if r.tries == 0 {
            ctx.stats.reconstructed_reads += 1;
            self.counters.rebuilt_reads += 1;
        }
        r.cols = vec![None; geo.width];
        r.failed = false;
        r.pending = 0;
        for c in (0..geo.width).filter(|c| !missing.contains(c)) {
            let (disk, off) = geo.offset(stripe, c, r.first);
            r.pending += 1;
            issue(
                &mut self.io_meta,
                ctx,
                disk,
                DevOp::Read {
                    offset: off,
                    len: (r.count * PS) as u64,
                },
                IoTag {
                    job: h,
                    part: c as u32,
                },
                r.bg,
            );
        }
        r.missing = missing;
    }

    pub(super) fn rebuild_io_done(&mut self, ctx: &mut Ctx, h: u64, part: u32, result: IoResult) {
        let np = self.geo.nparity;
        let Some(COp::Rebuild(r)) = self.ops.get_mut(h) else {
            unreachable!()
        };
        r.pending -= 1;
        if part == FALLBACK_PART {
            if result.is_ok() {
                let data = read_bytes(&result).map(|b| b.to_vec());
                let (t, s) = (r.token, r.stripe);
                self.ops.remove(h);
                self.done.push_back((t, Ok(data)));
                self.release_stripe(ctx, s);
            } else {
                self.retry_rebuild(ctx, h);
            }
            return;
        }
        match &result {
            Ok(_) => r.cols[part as usize] = Some(read_bytes(&result).unwrap_or(&[]).to_vec()),
            Err(_) => r.failed = true,
        }
        if r.pending > 0 {
            return;
        }
        if r.failed {
            self.retry_rebuild(ctx, h);
            return;
        }
        let out = if ctx.size_only {
            None
        } else {
            let len = r.count * PS;
            let mut cols: Vec<Vec<u8>> = r
                .cols
                .iter_mut()
                .map(|c| c.take().unwrap_or_else(|| vec![0u8; len]))
                .collect();
            let mut refs: Vec<&mut [u8]> = cols.iter_mut().map(|v| v.as_mut_slice()).collect();
            parity::reconstruct(&mut refs, np, &r.missing).expect("rebuild within parity");
            Some(std::mem::take(&mut cols[r.col]))
        };
        let (t, s) = (r.token, r.stripe);
        self.ops.remove(h);
        self.done.push_back((t, Ok(out)));
        self.release_stripe(ctx, s);
    }

    /// A member failed under a rebuilt read: plan it again (the stripe stays held).
    fn retry_rebuild(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(COp::Rebuild(r)) = self.ops.get_mut(h) else {
            unreachable!()
        };
        r.tries += 1;
        if r.tries >= MAX_TRIES {
            let (t, s) = (r.token, r.stripe);
            self.ops.remove(h);
            self.done
                .push_back((t, Err("reads failed on every member tried".into())));
            self.release_stripe(ctx, s);
        } else {
            self.start_rebuild(ctx, h);
        }
    }
}
