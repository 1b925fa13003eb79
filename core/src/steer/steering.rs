//! [`Steering`]: the per-member weights, modes and rate factors a scheme consults when it
//! chooses members, recomputed on a short period from the members' recent completions
//! (what `engine::Members::recent` gives, passed in as [`Recent`]) and their load-latency
//! curves.
//!
//! Each mechanism has its own switch so experiments can take them apart: profile-guided
//! weights (off: equal shares), read/write segregation (off: every member takes writes) and
//! congestion control (off: every rate factor stays 1).

use super::congestion::{Aimd, AimdParams};
use super::curve::{DeviceCurves, LoadCurve, Percentile};
use super::learn::Learner;
use super::modes::Segregation;
use super::weights::{FillParams, water_fill};
use super::window::{Tally, WINDOW_NS};
use crate::rng::Rng;
use crate::types::{DiskId, Nanos};

/// A member's peak when no curve describes it, for sizing the write set only: a mid-range
/// datacenter NVMe drive under a write-heavy mix (the profiled drives' 1000w peaks are
/// 90-350 K IOPS). An assumption, stated in `status`-facing docs.
pub const UNPROFILED_PEAK_IOPS: f64 = 100_000.0;

#[derive(Clone, Debug, PartialEq)]
pub struct SteerConfig {
    pub profile_weights: bool,
    pub segregation: bool,
    pub congestion: bool,
    /// How often weights, modes and rate factors are recomputed.
    pub recompute_ns: Nanos,
    /// Write-set rotation period.
    pub rotate_ns: Nanos,
    pub fill: FillParams,
    pub aimd: AimdParams,
    /// Learn curves online for members given none ([`super::learn`]).
    pub learn: bool,
}

impl Default for SteerConfig {
    fn default() -> Self {
        SteerConfig {
            profile_weights: true,
            segregation: true,
            congestion: true,
            recompute_ns: WINDOW_NS,
            rotate_ns: 300_000_000,
            fill: FillParams::default(),
            aimd: AimdParams::default(),
            learn: true,
        }
    }
}

impl SteerConfig {
    /// The default settings with only the named mechanisms on: `weights` (profile-guided;
    /// else equal shares), `segregation` (read/write modes), `congestion` (AIMD).
    pub fn with_mechanisms<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut c = SteerConfig {
            profile_weights: false,
            segregation: false,
            congestion: false,
            ..Default::default()
        };
        for name in names {
            match name {
                "weights" => c.profile_weights = true,
                "segregation" => c.segregation = true,
                "congestion" => c.congestion = true,
                other => {
                    return Err(format!(
                        "unknown steering mechanism '{other}' (weights, segregation, congestion)"
                    ));
                }
            }
        }
        Ok(c)
    }
}

/// What the members did in the last window, pool-wide, in 4 KiB units (see
/// [`Tally::pages`]).
#[derive(Clone, Copy, Debug, Default)]
struct Observed {
    read_iops: f64,
    write_iops: f64,
    /// Share of writes in what the write-mode members completed.
    writer_write_share: f64,
    /// Share of user reads that had a copy to choose from (see [`ReadChoices`]).
    choice_share: f64,
}

/// User reads the scheme routed since the last recomputation: with a choice of copy (a
/// replicated block with two readable copies) or without (a RAID column, a lone copy). Only
/// the first kind can be steered off write-mode members.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ReadChoices {
    with_choice: u64,
    without: u64,
}

/// What every member shows now: whether it failed, and its last window of completions (None
/// when idle that long).
pub struct Recent<'a> {
    pub now: Nanos,
    pub failed: Vec<bool>,
    pub windows: Vec<Option<&'a Tally>>,
}

impl Recent<'_> {
    fn count(&self) -> usize {
        self.failed.len()
    }
}

#[derive(Debug)]
pub struct Steering {
    cfg: SteerConfig,
    curves: Vec<Option<DeviceCurves>>,
    read_share: Vec<f64>,
    write_share: Vec<f64>,
    seg: Segregation,
    aimd: Vec<Aimd>,
    next_at: Nanos,
    seen: Observed,
    epoch: u64,
    /// Per member without given curves: what it has shown so far (empty when not learning).
    learners: Vec<Option<Learner>>,
    updates: u64,
    /// Keep the write set at least at the writes' share of the pool's device I/O
    /// ([`Steering::with_fair_write_set`]).
    fair_write_set: bool,
    /// User reads routed since the last recomputation ([`Steering::note_read`]).
    reads: ReadChoices,
}

/// Learnt curves are rebuilt every this many recomputations (a second at the default 10 ms).
const RELEARN_EVERY: u64 = 100;

impl Steering {
    /// Steering over members described by `curves` (None: no profile), each write going to
    /// `replicas` distinct members.
    pub fn new(cfg: SteerConfig, curves: Vec<Option<DeviceCurves>>, replicas: usize) -> Self {
        let n = curves.len();
        Steering {
            seg: Segregation::new(n, replicas, cfg.rotate_ns),
            read_share: vec![1.0 / n.max(1) as f64; n],
            write_share: vec![1.0 / n.max(1) as f64; n],
            aimd: vec![Aimd::default(); n],
            next_at: 0,
            seen: Observed {
                writer_write_share: 1.0,
                choice_share: 1.0,
                ..Default::default()
            },
            learners: curves
                .iter()
                .map(|c| (cfg.learn && c.is_none()).then(Learner::default))
                .collect(),
            updates: 0,
            curves,
            cfg,
            epoch: 0,
            fair_write_set: false,
            reads: ReadChoices::default(),
        }
    }

    /// A user read was routed, with a choice of copy (two or more readable copies) or
    /// without (a RAID column, a lone copy): the fair write set weighs only the first kind.
    pub fn note_read(&mut self, with_choice: bool) {
        let c = &mut self.reads;
        *if with_choice {
            &mut c.with_choice
        } else {
            &mut c.without
        } += 1;
    }

    /// Segregation never leaves fewer writers than the writes' share of the pool's device
    /// I/O times the healthy members, so no writer is busier than a member would be without
    /// it. Reads that had no choice of copy ([`Steering::note_read`]) are left out of that share:
    /// they land on writers and readers alike, so balancing writers (writes plus their part
    /// of those reads) against readers (the steerable reads plus theirs) gives writers the
    /// share `writes / (writes + steerable reads)`; a pool whose reads are mostly of RAID
    /// columns keeps every member writing, and segregation steps aside. Sandook sizes the set as the fewest members whose peaks (its 1 ms rule) cover the
    /// write rate: writers run near their peak, which suits its P90 target on read-mostly
    /// loads. A scheme aiming at the tail under write-heavy loads asks for this floor
    /// (FusionRAID's combined system: docs/EVALUATION.md, "The combined system").
    pub fn with_fair_write_set(mut self) -> Self {
        self.fair_write_set = true;
        self
    }

    /// The curves steering uses for member `d`: given, or learnt so far.
    pub fn curves(&self, d: DiskId) -> Option<&DeviceCurves> {
        self.curves[d.index()].as_ref()
    }
    pub fn members(&self) -> usize {
        self.curves.len()
    }
    /// Bumped whenever the write set changes, so a scheme can close what it had open on
    /// members that left it.
    pub fn modes_epoch(&self) -> u64 {
        self.epoch
    }
    pub fn config(&self) -> &SteerConfig {
        &self.cfg
    }
    pub fn next_deadline(&self) -> Nanos {
        self.next_at
    }
    pub fn is_writer(&self, d: DiskId) -> bool {
        self.seg.is_writer(d.index())
    }
    pub fn rate_factor(&self, d: DiskId) -> f64 {
        self.aimd[d.index()].factor
    }
    /// Share of reads member `d` should get, scaled by its rate factor (not normalised).
    pub fn read_weight(&self, d: DiskId) -> f64 {
        self.read_share[d.index()] * self.rate_factor(d)
    }
    pub fn write_weight(&self, d: DiskId) -> f64 {
        self.write_share[d.index()] * self.rate_factor(d)
    }

    /// Recompute if the period is up. Returns whether the write set changed (open placement
    /// on members that left it should close).
    pub fn update(&mut self, m: &Recent) -> bool {
        let now = m.now;
        if now < self.next_at {
            return false;
        }
        self.next_at = now + self.cfg.recompute_ns;
        self.observe(m);
        self.learn(m);
        let healthy: Vec<bool> = m.failed.iter().map(|f| !f).collect();
        let changed = self.update_modes(now, &healthy);
        self.epoch += changed as u64;
        self.update_shares(&healthy);
        if self.cfg.congestion {
            self.update_rates(m);
        }
        changed
    }

    fn observe(&mut self, m: &Recent) {
        let (mut reads, mut writes, mut wr_reads, mut wr_writes) = (0u64, 0u64, 0u64, 0u64);
        for i in 0..m.count() {
            let Some(t) = m.windows[i] else {
                continue;
            };
            let (r, w) = t.pages();
            reads += r;
            writes += w;
            if self.seg.is_writer(i) {
                wr_reads += r;
                wr_writes += w;
            }
        }
        let per_sec = 1e9 / WINDOW_NS as f64;
        // Smoothed over two windows: a single 10 ms window of a bursty load is noisy.
        let blend = |old: f64, new: f64| 0.5 * old + 0.5 * new;
        self.seen.read_iops = blend(self.seen.read_iops, reads as f64 * per_sec);
        self.seen.write_iops = blend(self.seen.write_iops, writes as f64 * per_sec);
        if wr_reads + wr_writes > 0 {
            self.seen.writer_write_share = wr_writes as f64 / (wr_reads + wr_writes) as f64;
        }
        let reads = std::mem::take(&mut self.reads);
        let routed = reads.with_choice + reads.without;
        if routed > 0 {
            let share = reads.with_choice as f64 / routed as f64;
            self.seen.choice_share = blend(self.seen.choice_share, share);
        }
    }

    /// Feed the members without given curves their last window; now and then, take what they
    /// taught as their curves.
    fn learn(&mut self, m: &Recent) {
        self.updates += 1;
        let relearn = self.updates.is_multiple_of(RELEARN_EVERY);
        for (i, l) in self.learners.iter_mut().enumerate() {
            let Some(l) = l else { continue };
            if let Some(t) = m.windows[i] {
                l.observe(t);
            }
            if relearn {
                self.curves[i] = l.curves(&format!("member {i}"));
            }
        }
    }

    fn peak(&self, i: usize, write_share: f64) -> f64 {
        self.curves[i].as_ref().map_or(UNPROFILED_PEAK_IOPS, |c| {
            c.peak_iops(write_share, self.cfg.fill.percentile)
        })
    }

    fn update_modes(&mut self, now: Nanos, healthy: &[bool]) -> bool {
        if !self.cfg.segregation {
            let before: Vec<bool> = (0..healthy.len()).map(|i| self.seg.is_writer(i)).collect();
            self.seg.all_write(healthy);
            return before != healthy;
        }
        let share = self.seen.writer_write_share;
        let peaks: Vec<Option<f64>> = (0..healthy.len())
            .map(|i| healthy[i].then(|| self.peak(i, share)))
            .collect();
        if self.fair_write_set {
            // Reads without a choice of copy land where their data is, writers included, so
            // they load every member alike and only the steerable ones count against the
            // writes: with few of them the floor reaches the whole pool and segregation
            // steps aside. Before any I/O is seen nothing says a few writers would do.
            let r = self.seen.read_iops * self.seen.choice_share;
            let w = self.seen.write_iops;
            self.seg
                .set_floor_share(if r + w > 0.0 { w / (r + w) } else { 1.0 });
        }
        self.seg.update(now, self.seen.write_iops, &peaks)
    }

    fn update_shares(&mut self, healthy: &[bool]) {
        let n = healthy.len();
        let any_reader = (0..n).any(|i| healthy[i] && !self.seg.is_writer(i));
        let readers: Vec<bool> = (0..n)
            .map(|i| healthy[i] && (!self.seg.is_writer(i) || !any_reader))
            .collect();
        let writers: Vec<bool> = (0..n)
            .map(|i| healthy[i] && self.seg.is_writer(i))
            .collect();
        let (ri, wi) = (self.seen.read_iops, self.seen.write_iops);
        let share = self.seen.writer_write_share;
        self.read_share = self.shares(&readers, 0.0, ri, &self.read_share);
        self.write_share = self.shares(&writers, share, wi, &self.write_share);
    }

    /// Shares of `iops` for the `eligible` members under `write_share`: water filling when
    /// every eligible member has a curve and profile weights are on, else equal.
    fn shares(&self, eligible: &[bool], write_share: f64, iops: f64, prev: &[f64]) -> Vec<f64> {
        let count = eligible.iter().filter(|&&e| e).count();
        let equal = || {
            eligible
                .iter()
                .map(|&e| if e { 1.0 / count.max(1) as f64 } else { 0.0 })
                .collect()
        };
        let profiled = (0..eligible.len()).all(|i| !eligible[i] || self.curves[i].is_some());
        if !self.cfg.profile_weights || !profiled {
            return equal();
        }
        let curves: Vec<Option<&LoadCurve>> = (0..eligible.len())
            .map(|i| {
                self.curves[i]
                    .as_ref()
                    .filter(|_| eligible[i])
                    .map(|c| c.curve_for(write_share))
            })
            .collect();
        water_fill(&curves, iops, prev, &self.cfg.fill)
    }

    fn update_rates(&mut self, m: &Recent) {
        let per_sec = 1e9 / WINDOW_NS as f64;
        for i in 0..m.count() {
            let t = m.windows[i];
            let tail = t.and_then(|t| t.quantile_ns(0.99));
            let predicted = match (t, &self.curves[i]) {
                (Some(t), Some(c)) if t.completed() > 0 => {
                    let (r, w) = t.pages();
                    let load = (r + w) as f64 * per_sec;
                    let ws = w as f64 / (r + w) as f64;
                    Some(c.predict_us(load, ws, Percentile::P99) * 1000.0)
                }
                _ => None,
            };
            self.aimd[i].observe(m.now, tail, predicted, &self.cfg.aimd);
        }
    }

    /// Up to `k` distinct members for a write, drawn by write weight without replacement
    /// among write-mode members `allowed` accepts, then (when too few) among the other
    /// allowed members with equal chances.
    pub fn pick_writers(
        &self,
        rng: &mut Rng,
        k: usize,
        allowed: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        let n = self.read_share.len();
        let mut out = Vec::with_capacity(k);
        let mut pool: Vec<(usize, f64)> = (0..n)
            .filter(|&i| allowed(i) && self.seg.is_writer(i))
            .map(|i| (i, self.write_weight(DiskId(i as u32))))
            .collect();
        draw(rng, &mut pool, k, &mut out);
        if out.len() < k {
            let mut rest: Vec<(usize, f64)> = (0..n)
                .filter(|&i| allowed(i) && !out.contains(&i))
                .map(|i| (i, 1.0))
                .collect();
            draw(rng, &mut rest, k - out.len(), &mut out);
        }
        out
    }

    /// Which of `copies` (members holding the data, healthy ones only) serves a read: those
    /// in read mode first, by read weight; write-mode members only when no copy is in read
    /// mode.
    pub fn pick_reader(&self, rng: &mut Rng, copies: &[DiskId]) -> Option<DiskId> {
        let readers: Vec<(usize, f64)> = copies
            .iter()
            .filter(|d| !self.is_writer(**d))
            .map(|&d| (d.index(), self.read_weight(d)))
            .collect();
        let mut pool = if readers.is_empty() {
            copies
                .iter()
                .map(|&d| (d.index(), self.read_weight(d)))
                .collect()
        } else {
            readers
        };
        let mut out = Vec::with_capacity(1);
        draw(rng, &mut pool, 1, &mut out);
        out.first().map(|&i| DiskId(i as u32))
    }
}

/// Weighted sampling without replacement of `k` entries of `pool` into `out`; when every
/// remaining weight is zero, uniform.
fn draw(rng: &mut Rng, pool: &mut Vec<(usize, f64)>, k: usize, out: &mut Vec<usize>) {
    for _ in 0..k {
        if pool.is_empty() {
            return;
        }
        let total: f64 = pool.iter().map(|p| p.1.max(0.0)).sum();
        let pick = if total > 0.0 {
            let mut x = rng.unit() * total;
            pool.iter()
                .position(|p| {
                    x -= p.1.max(0.0);
                    x < 0.0
                })
                .unwrap_or(pool.len() - 1)
        } else {
            rng.below(pool.len() as u64) as usize
        };
        out.push(pool.swap_remove(pick).0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steer::curve::CurvePoint;
    use crate::steer::window::IoWindow;

    fn curves(peak: f64) -> DeviceCurves {
        let curve = |write_permille, peak: f64| LoadCurve {
            write_permille,
            points: (1..=10)
                .map(|k| {
                    let us = 50.0 + 1000.0 * (k as f64 / 10.0).powi(2);
                    CurvePoint {
                        iops: peak * k as f64 / 10.0,
                        p50_us: us / 2.0,
                        p90_us: us,
                        p99_us: us * 2.0,
                    }
                })
                .collect(),
        };
        DeviceCurves::new("t", vec![curve(0, peak), curve(1000, peak / 4.0)]).unwrap()
    }

    /// Windows in which every member completed `reads` and `writes` 4 KiB I/Os at 100 us.
    fn busy(n: usize, reads: u32, writes: u32, now: Nanos) -> Vec<IoWindow> {
        (0..n)
            .map(|_| {
                let mut w = IoWindow::new(0);
                for k in 0..reads + writes {
                    w.record(now - WINDOW_NS + 1 + k as u64, 100_000, k >= reads, 4096);
                }
                w
            })
            .collect()
    }

    fn recent(ws: &[IoWindow], now: Nanos) -> Recent<'_> {
        Recent {
            now,
            failed: vec![false; ws.len()],
            windows: ws.iter().map(|w| w.last(now)).collect(),
        }
    }

    #[test]
    fn writes_go_to_the_write_set_and_reads_to_read_mode_copies() {
        let n = 8;
        let mut s = Steering::new(SteerConfig::default(), vec![Some(curves(400_000.0)); n], 2);
        let now = 2 * WINDOW_NS;
        let ws = busy(n, 500, 50, now);
        s.update(&recent(&ws, now));
        let writers: Vec<usize> = (0..n).filter(|&i| s.is_writer(DiskId(i as u32))).collect();
        assert!(writers.len() >= 2 && writers.len() < n, "{writers:?}");
        let mut rng = Rng::new(1);
        for _ in 0..200 {
            let pick = s.pick_writers(&mut rng, 2, |_| true);
            assert_eq!(pick.len(), 2);
            assert_ne!(pick[0], pick[1]);
            assert!(pick.iter().all(|p| writers.contains(p)), "{pick:?}");
        }
        let reader = (0..n).find(|i| !writers.contains(i)).unwrap();
        let copies = [DiskId(writers[0] as u32), DiskId(reader as u32)];
        for _ in 0..50 {
            assert_eq!(
                s.pick_reader(&mut rng, &copies),
                Some(DiskId(reader as u32))
            );
        }
        // Both copies in write mode: one of them serves.
        let both = [DiskId(writers[0] as u32), DiskId(writers[1] as u32)];
        assert!(s.pick_reader(&mut rng, &both).is_some());
        // Too few writers allowed: the rest come from other members.
        let only = writers[0];
        let pick = s.pick_writers(&mut rng, 2, |i| i == only || !writers.contains(&i));
        assert_eq!(pick.len(), 2);
        assert!(pick.contains(&only));
    }

    #[test]
    fn a_faster_member_gets_more_reads_and_a_congested_one_less() {
        let cfg = SteerConfig {
            segregation: false,
            ..SteerConfig::default()
        };
        let mut fleet = vec![Some(curves(100_000.0)); 3];
        fleet[0] = Some(curves(400_000.0));
        let mut s = Steering::new(cfg, fleet, 2);
        let now = 100 * WINDOW_NS;
        let ws = busy(3, 800, 0, now);
        s.update(&recent(&ws, now));
        let w: Vec<f64> = (0..3).map(|i| s.read_weight(DiskId(i))).collect();
        assert!(w[0] > 1.5 * w[1] && w[0] > 1.5 * w[2], "{w:?}");
        // Member 2's tail at 5 ms: congested, its factor halves.
        let mut slow = busy(3, 800, 0, now + WINDOW_NS);
        slow[2] = IoWindow::new(0);
        for k in 0..100 {
            slow[2].record(now + 1 + k, 5_000_000, false, 4096);
        }
        s.update(&recent(&slow, now + WINDOW_NS));
        assert!(s.rate_factor(DiskId(2)) < 1.0);
        assert_eq!(s.rate_factor(DiskId(1)), 1.0);
    }

    #[test]
    fn members_without_curves_learn_them_from_their_windows() {
        let cfg = SteerConfig::default();
        let mut given = vec![None; 3];
        given[0] = Some(curves(400_000.0));
        let mut s = Steering::new(cfg, given, 2);
        assert!(s.curves(DiskId(1)).is_none());
        let mut now = 2 * WINDOW_NS;
        for k in 0..3 * RELEARN_EVERY {
            // Loads move between three levels, as a real load does.
            let reads = [100, 600, 2500][(k % 3) as usize];
            let ws = busy(3, reads, 0, now);
            s.update(&recent(&ws, now));
            now += WINDOW_NS;
        }
        let learnt = s.curves(DiskId(1)).expect("learnt");
        assert!(learnt.name.contains("learnt"), "{}", learnt.name);
        assert!(learnt.curve_for(0.0).points.len() >= 3);
        assert_eq!(s.curves(DiskId(0)).unwrap().name, "t", "given curves stay");
    }

    /// With the fair floor, only reads that had a choice of copy count against the writes:
    /// when most reads had none (RAID columns), the write set spans the pool; when every
    /// read had one, it shrinks to the writes' share of the I/O.
    #[test]
    fn reads_without_a_choice_keep_the_fair_write_set_wide() {
        let n = 10;
        // Fast members: Sandook's own sizing would need only its minimum.
        let fleet = vec![Some(curves(4_000_000.0)); n];
        let writers_after = |with_choice: u64, without: u64| {
            let mut s =
                Steering::new(SteerConfig::default(), fleet.clone(), 2).with_fair_write_set();
            let mut now = 2 * WINDOW_NS;
            for _ in 0..20 {
                let ws = busy(n, 600, 400, now);
                for k in 0..with_choice + without {
                    s.note_read(k < with_choice);
                }
                s.update(&recent(&ws, now));
                now += WINDOW_NS;
            }
            (0..n).filter(|&i| s.is_writer(DiskId(i as u32))).count()
        };
        let all = writers_after(1000, 0);
        let half = writers_after(500, 500);
        assert_eq!(all, 4, "40% of the I/O is writes");
        assert_eq!(
            half, 6,
            "writes against the half of the reads that can be steered"
        );
        assert_eq!(writers_after(0, 1000), n, "no read can be steered");
    }
}
