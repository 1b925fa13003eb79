//! Stripe writes: queued writes merged into one job, each row's mode, pre-reads, parity, writes.

use super::{
    COp, CoreCounters, MAX_TRIES, Mode, Outcome, PS, PreRead, RaidCore, StripeJob, issue,
    read_bytes,
};
use crate::engine::api::{Data, DevOp, IoResult};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::parity;
use crate::scheme::baselines::pageset::PageSet;

impl RaidCore {
    pub(super) fn start_stripe_job(&mut self, ctx: &mut Ctx, stripe: u64, hs: Vec<u64>) {
        let geo = &self.geo;
        let bs = geo.block_size as usize;
        let mut job = StripeJob {
            stripe,
            parts: Vec::with_capacity(hs.len()),
            fua: false,
            bg: true,
            wmask: vec![PageSet::default(); geo.dcols()],
            new: vec![Vec::new(); geo.dcols()],
            rows: PageSet::default(),
            mode: vec![Mode::Untouched; geo.ppb],
            old: vec![Vec::new(); geo.width],
            reads: Vec::new(),
            missing: Vec::new(),
            pending: 0,
            read_failed: false,
            writing: false,
            tries: 0,
        };
        self.counters.stripe_jobs += 1;
        self.counters.merged_parts += hs.len() as u64 - 1;
        for h in hs {
            let Some(COp::Part(p)) = self.ops.remove(h) else {
                unreachable!()
            };
            job.parts.push(p.token);
            job.fua |= p.fua;
            job.bg &= p.bg;
            for w in p.writes {
                job.wmask[w.col].insert_range(w.first, w.count);
                if let Some(d) = w.data {
                    let buf = &mut job.new[w.col];
                    if buf.is_empty() {
                        *buf = vec![0u8; bs];
                    }
                    buf[w.first * PS..(w.first + w.count) * PS].copy_from_slice(&d);
                }
            }
        }
        for m in &job.wmask {
            job.rows.union(m);
        }
        let h = self.ops.insert(COp::Stripe(job));
        self.plan_stripe(ctx, h);
    }

    /// Decide each row's mode from the members' state now and issue the pre-reads.
    fn plan_stripe(&mut self, ctx: &mut Ctx, h: u64) {
        let failed = {
            let Some(COp::Stripe(job)) = self.ops.get(h) else {
                unreachable!()
            };
            self.failed_cols(ctx, job.stripe)
        };
        if failed.len() > self.geo.nparity {
            self.finish_stripe(
                ctx,
                h,
                Err("more members of the stripe failed than its parity covers".into()),
            );
            return;
        }
        let rmask = self.plan_rows(ctx, h, &failed);
        self.issue_pre_reads(ctx, h, failed, &rmask);
    }

    /// Each row's mode, counted; returns the pages to pre-read per column.
    fn plan_rows(&mut self, ctx: &mut Ctx, h: u64, failed: &[usize]) -> Vec<PageSet> {
        let geo = &self.geo;
        let (width, dcols) = (geo.width, geo.dcols());
        let health = Health {
            failed,
            failed_data: failed.iter().copied().filter(|&c| c < dcols).collect(),
            parity_alive: (dcols..width).any(|c| !failed.contains(&c)),
            dcols,
            nparity: geo.nparity,
        };
        let Some(COp::Stripe(job)) = self.ops.get_mut(h) else {
            unreachable!()
        };
        let mut rmask = vec![PageSet::default(); width];
        for r in job.rows.iter() {
            let modc: Vec<usize> = (0..dcols).filter(|&c| job.wmask[c].contains(r)).collect();
            let mode = health.row_mode(&modc);
            health.pre_reads(mode, r, &modc, &mut rmask);
            self.counters.count_row(mode, failed.is_empty());
            job.mode[r] = mode;
        }
        if job.rows.is_full(geo.ppb) && job.mode.iter().all(|&m| m == Mode::Full) {
            ctx.stats.full_stripe_writes += 1;
        }
        rmask
    }

    /// Issue the pre-reads of `rmask`; with none, write at once.
    fn issue_pre_reads(&mut self, ctx: &mut Ctx, h: u64, failed: Vec<usize>, rmask: &[PageSet]) {
        let geo = &self.geo;
        let Some(COp::Stripe(job)) = self.ops.get_mut(h) else {
            unreachable!()
        };
        job.missing = failed;
        job.reads.clear();
        job.read_failed = false;
        job.writing = false;
        let bs = geo.block_size as usize;
        for (c, m) in rmask.iter().enumerate() {
            if m.is_empty() {
                continue;
            }
            if !ctx.size_only && job.old[c].is_empty() {
                job.old[c] = vec![0u8; bs];
            }
            for (f, n) in m.runs() {
                let (disk, off) = geo.offset(job.stripe, c, f);
                let part = job.reads.len() as u32;
                job.reads.push(PreRead { col: c, first: f });
                self.counters.pre_read_pages += n as u64;
                let op = DevOp::Read {
                    offset: off,
                    len: (n * PS) as u64,
                };
                issue(
                    &mut self.io_meta,
                    ctx,
                    disk,
                    op,
                    IoTag { job: h, part },
                    job.bg,
                );
            }
        }
        job.pending = job.reads.len() as u32;
        if job.pending == 0 {
            self.write_stripe(ctx, h);
        }
    }

    /// Compute parity for every touched row (data mode) and issue the writes.
    fn write_stripe(&mut self, ctx: &mut Ctx, h: u64) {
        let Some(COp::Stripe(job)) = self.ops.get(h) else {
            unreachable!()
        };
        let failed_now = self.failed_cols(ctx, job.stripe);
        let par = if ctx.size_only {
            Vec::new()
        } else {
            stripe_parity(
                job,
                self.geo.width,
                self.geo.dcols(),
                self.geo.nparity,
                self.geo.block_size as usize,
            )
        };
        self.issue_stripe_writes(ctx, h, &failed_now, &par);
    }

    /// Write the written pages of the data columns and the parity of every row with parity,
    /// on every member still there.
    fn issue_stripe_writes(
        &mut self,
        ctx: &mut Ctx,
        h: u64,
        failed_now: &[usize],
        par: &[Vec<u8>],
    ) {
        let geo = &self.geo;
        let (width, dcols) = (geo.width, geo.dcols());
        let Some(COp::Stripe(job)) = self.ops.get_mut(h) else {
            unreachable!()
        };
        let mut n = 0u32;
        let size_only = ctx.size_only;
        for c in 0..width {
            if failed_now.contains(&c) {
                continue;
            }
            let (runs, src): (Vec<(usize, usize)>, &[u8]) = if c < dcols {
                (job.wmask[c].runs(), &job.new[c])
            } else {
                let mut rows = PageSet::default();
                for r in job.rows.iter() {
                    if job.mode[r] != Mode::NoParity {
                        rows.insert(r);
                    }
                }
                (rows.runs(), par.get(c - dcols).map_or(&[][..], |v| v))
            };
            for (f, cnt) in runs {
                let (disk, off) = geo.offset(job.stripe, c, f);
                let data = if size_only {
                    Data::Size((cnt * PS) as u64)
                } else {
                    Data::Bytes(src[f * PS..(f + cnt) * PS].to_vec())
                };
                let op = DevOp::Write {
                    offset: off,
                    data,
                    fua: job.fua,
                };
                issue(
                    &mut self.io_meta,
                    ctx,
                    disk,
                    op,
                    IoTag { job: h, part: n },
                    job.bg,
                );
                n += 1;
            }
        }
        job.writing = true;
        job.pending = n;
        if n == 0 {
            self.end_stripe_writes(ctx, h);
        }
    }

    fn end_stripe_writes(&mut self, ctx: &mut Ctx, h: u64) {
        let stripe = match self.ops.get(h) {
            Some(COp::Stripe(j)) => j.stripe,
            _ => unreachable!(),
        };
        let lost = self.failed_cols(ctx, stripe).len() > self.geo.nparity;
        let r = if lost {
            Err("more members of the stripe failed than its parity covers".to_string())
        } else {
            Ok(None)
        };
        self.finish_stripe(ctx, h, r);
    }

    fn finish_stripe(&mut self, ctx: &mut Ctx, h: u64, r: Outcome) {
        let Some(COp::Stripe(job)) = self.ops.remove(h) else {
            unreachable!()
        };
        for t in job.parts {
            self.done.push_back((t, r.clone()));
        }
        self.release_stripe(ctx, job.stripe);
    }

    pub(super) fn stripe_io_done(&mut self, ctx: &mut Ctx, h: u64, part: u32, result: IoResult) {
        let Some(COp::Stripe(job)) = self.ops.get_mut(h) else {
            unreachable!()
        };
        job.pending -= 1;
        if job.writing {
            // A failed write fails its member (the engine saw to that); whether the stripe is
            // still recoverable is judged once every write is back.
            if job.pending == 0 {
                self.end_stripe_writes(ctx, h);
            }
            return;
        }
        match read_bytes(&result) {
            Some(b) => {
                let PreRead { col, first } = job.reads[part as usize];
                if !job.old[col].is_empty() {
                    job.old[col][first * PS..first * PS + b.len()].copy_from_slice(b);
                }
            }
            None if result.is_err() => job.read_failed = true,
            None => {}
        }
        if job.pending > 0 {
            return;
        }
        if job.read_failed {
            job.tries += 1;
            if job.tries >= MAX_TRIES {
                self.finish_stripe(ctx, h, Err("pre-reads failed on every try".into()));
            } else {
                self.plan_stripe(ctx, h);
            }
        } else {
            self.write_stripe(ctx, h);
        }
    }
}

fn gen_parity(data: &[&[u8]], par: &mut [Vec<u8>], range: std::ops::Range<usize>) {
    match par {
        [p] => parity::gen_p(data, &mut p[range]),
        [p, q] => parity::gen_pq(data, &mut p[range.clone()], &mut q[range]),
        _ => unreachable!("one or two parity columns"),
    }
}

/// What the members' state says about a stripe's rows.
struct Health<'a> {
    failed: &'a [usize],
    failed_data: Vec<usize>,
    parity_alive: bool,
    dcols: usize,
    nparity: usize,
}

impl Health<'_> {
    /// How a row whose data columns `modc` are written is written (md's choice, per row).
    fn row_mode(&self, modc: &[usize]) -> Mode {
        if modc.len() == self.dcols {
            Mode::Full
        } else if !self.parity_alive {
            Mode::NoParity
        } else if self.failed.is_empty() {
            let rmw = modc.len() + self.nparity;
            let rcw = self.dcols - modc.len();
            if rmw < rcw { Mode::Rmw } else { Mode::Rcw }
        } else if self.failed_data.iter().all(|c| modc.contains(c)) {
            Mode::Rcw
        } else {
            Mode::Rebuild
        }
    }

    /// Marks in `rmask` the columns row `r` pre-reads in `mode`.
    fn pre_reads(&self, mode: Mode, r: usize, modc: &[usize], rmask: &mut [PageSet]) {
        match mode {
            Mode::Rmw => {
                for &c in modc {
                    rmask[c].insert(r);
                }
                for m in rmask.iter_mut().skip(self.dcols) {
                    m.insert(r);
                }
            }
            Mode::Rcw => {
                for (c, m) in rmask.iter_mut().enumerate().take(self.dcols) {
                    if !modc.contains(&c) {
                        m.insert(r);
                    }
                }
            }
            Mode::Rebuild => {
                for (c, m) in rmask.iter_mut().enumerate() {
                    if !self.failed.contains(&c) {
                        m.insert(r);
                    }
                }
            }
            Mode::Full | Mode::NoParity => {}
            Mode::Untouched => unreachable!(),
        }
    }
}

impl CoreCounters {
    /// Counts a row written in `mode` (`healthy`: no member of the stripe failed).
    fn count_row(&mut self, mode: Mode, healthy: bool) {
        match mode {
            Mode::Rmw => self.rmw_rows += 1,
            Mode::Rcw if healthy => self.rcw_rows += 1,
            Mode::Rcw | Mode::Rebuild | Mode::NoParity => self.degraded_rows += 1,
            Mode::Full => self.full_rows += 1,
            Mode::Untouched => unreachable!(),
        }
    }
}

/// The parity columns of a stripe job, computed for every touched row from the new data and
/// the pre-read columns.
fn stripe_parity(
    job: &StripeJob,
    width: usize,
    dcols: usize,
    np: usize,
    bs: usize,
) -> Vec<Vec<u8>> {
    let mut par = vec![vec![0u8; bs]; np];
    for r in job.rows.iter() {
        let range = r * PS..(r + 1) * PS;
        let written = |c: usize| job.wmask[c].contains(r);
        match job.mode[r] {
            Mode::NoParity | Mode::Untouched => {}
            Mode::Full | Mode::Rcw => {
                let data: Vec<&[u8]> = (0..dcols)
                    .map(|c| {
                        if written(c) {
                            &job.new[c][range.clone()]
                        } else {
                            &job.old[c][range.clone()]
                        }
                    })
                    .collect();
                gen_parity(&data, &mut par, range.clone());
            }
            Mode::Rmw => {
                for (j, p) in par.iter_mut().enumerate() {
                    p[range.clone()].copy_from_slice(&job.old[dcols + j][range.clone()]);
                }
                let (p0, rest) = par.split_at_mut(1);
                for c in (0..dcols).filter(|&c| written(c)) {
                    parity::update_parity_delta(
                        c,
                        &job.old[c][range.clone()],
                        &job.new[c][range.clone()],
                        &mut p0[0][range.clone()],
                        rest.first_mut().map(|q| &mut q[range.clone()]),
                    );
                }
            }
            Mode::Rebuild => rebuild_row_parity(job, r, width, dcols, np, &mut par),
        }
    }
    par
}

/// Parity of a degraded row some of whose unwritten data is lost: the lost columns rebuilt
/// from what survives, the new data applied, the parity recomputed.
fn rebuild_row_parity(
    job: &StripeJob,
    r: usize,
    width: usize,
    dcols: usize,
    np: usize,
    par: &mut [Vec<u8>],
) {
    let range = r * PS..(r + 1) * PS;
    let mut row: Vec<Vec<u8>> = (0..width)
        .map(|c| {
            if job.missing.contains(&c) {
                vec![0u8; PS]
            } else {
                job.old[c][range.clone()].to_vec()
            }
        })
        .collect();
    let mut refs: Vec<&mut [u8]> = row.iter_mut().map(|v| v.as_mut_slice()).collect();
    parity::reconstruct(&mut refs, np, &job.missing).expect("rebuild within the parity's reach");
    for c in (0..dcols).filter(|&c| job.wmask[c].contains(r)) {
        row[c].copy_from_slice(&job.new[c][range.clone()]);
    }
    let data: Vec<&[u8]> = row[..dcols].iter().map(|v| v.as_slice()).collect();
    gen_parity(&data, par, range);
}
