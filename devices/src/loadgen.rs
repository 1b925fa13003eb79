//! Minimal drivers for one device: open loop at a fixed offered rate (how the load-latency
//! profiles were measured) and closed loop at a fixed queue depth (how fio-style spike and
//! over-provisioning studies run). Used by the fitting routine and the calibration tests;
//! full workloads live in the simulator (`fusionraid_sim::workload`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fusionraid_core::Nanos;
use fusionraid_core::rng::Rng;

use crate::{DeviceModel, OpKind, PAGE};

/// Inter-arrival process of an open-loop run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrivals {
    /// Fixed gap 1/rate: the profiles' `constant` distribution.
    Constant,
    /// Exponential gaps.
    Poisson,
}

impl Arrivals {
    /// From a profile's `Distribution` column.
    pub fn from_profile_name(name: &str) -> Result<Self, String> {
        match name.to_ascii_lowercase().as_str() {
            "constant" => Ok(Arrivals::Constant),
            "exponential" | "poisson" => Ok(Arrivals::Poisson),
            other => Err(format!("unknown arrival distribution '{other}'")),
        }
    }
}

/// Open-loop random I/O of one size over `[0, span_bytes)`.
#[derive(Clone, Copy, Debug)]
pub struct OpenLoop {
    pub iops: f64,
    pub write_fraction: f64,
    pub io_bytes: u64,
    pub span_bytes: u64,
    /// Requests measured, after `warmup` unmeasured ones.
    pub requests: usize,
    pub warmup: usize,
    pub arrivals: Arrivals,
    pub seed: u64,
}

/// Runs `spec` and returns the measured latencies (ns), in submission order.
pub fn run_open_loop(dev: &mut dyn DeviceModel, spec: &OpenLoop) -> Vec<Nanos> {
    let mut out = Vec::with_capacity(spec.requests);
    drive_open_loop(dev, spec, |now, done| out.push(done - now));
    out
}

/// Like [`run_open_loop`], keeping each measured request's arrival and completion (for the
/// throughput a run achieved, not only its latencies).
pub fn run_open_loop_samples(dev: &mut dyn DeviceModel, spec: &OpenLoop) -> Vec<Sample> {
    let mut out = Vec::with_capacity(spec.requests);
    drive_open_loop(dev, spec, |submit, done| out.push(Sample { submit, done }));
    out
}

/// Submits `spec`'s requests; `measured(arrival, completion)` sees each one after the warm-up.
fn drive_open_loop(
    dev: &mut dyn DeviceModel,
    spec: &OpenLoop,
    mut measured: impl FnMut(Nanos, Nanos),
) {
    let mut rng = Rng::new(spec.seed);
    let pages = (spec.span_bytes / PAGE).max(1);
    let gap = 1e9 / spec.iops;
    let mut t = 0.0f64;
    for i in 0..spec.warmup + spec.requests {
        t += match spec.arrivals {
            Arrivals::Constant => gap,
            Arrivals::Poisson => -gap * (1.0 - rng.unit()).ln(),
        };
        let now = t as Nanos;
        let kind = if rng.unit() < spec.write_fraction {
            OpKind::Write
        } else {
            OpKind::Read
        };
        let off = rng.below(pages) * PAGE;
        let done = dev.submit(now, kind, off, spec.io_bytes);
        if i >= spec.warmup {
            measured(now, done);
        }
    }
}

/// Access pattern of a closed-loop run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// Consecutive requests from `start`, wrapping inside `[start, start + span)`.
    Sequential { start: u64, span: u64 },
    /// Uniform random, request-aligned, inside `[start, start + span)`.
    Random { start: u64, span: u64 },
}

#[derive(Clone, Copy, Debug)]
pub struct ClosedLoop {
    pub queue_depth: usize,
    pub kind: OpKind,
    pub io_bytes: u64,
    pub pattern: Pattern,
    /// Stop submitting after this much virtual time.
    pub duration_ns: Nanos,
    pub seed: u64,
}

/// One completed request of a closed-loop run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub submit: Nanos,
    pub done: Nanos,
}

impl Sample {
    pub fn latency(&self) -> Nanos {
        self.done - self.submit
    }
}

/// Keeps `queue_depth` requests outstanding from time `start` for `duration_ns`; returns
/// every request in submission order.
pub fn run_closed_loop(dev: &mut dyn DeviceModel, start: Nanos, spec: &ClosedLoop) -> Vec<Sample> {
    let mut rng = Rng::new(spec.seed);
    let mut next_seq = 0u64;
    let mut offset = |rng: &mut Rng| match spec.pattern {
        Pattern::Sequential { start, span } => {
            let slots = (span / spec.io_bytes).max(1);
            let o = start + (next_seq % slots) * spec.io_bytes;
            next_seq += 1;
            o
        }
        Pattern::Random { start, span } => {
            start + rng.below((span / spec.io_bytes).max(1)) * spec.io_bytes
        }
    };
    let mut out = Vec::new();
    let mut inflight: BinaryHeap<Reverse<Nanos>> = BinaryHeap::new();
    for _ in 0..spec.queue_depth.max(1) {
        let off = offset(&mut rng);
        let done = dev.submit(start, spec.kind, off, spec.io_bytes);
        out.push(Sample {
            submit: start,
            done,
        });
        inflight.push(Reverse(done));
    }
    let end = start + spec.duration_ns;
    while let Some(Reverse(t)) = inflight.pop() {
        if t >= end {
            continue;
        }
        let off = offset(&mut rng);
        let done = dev.submit(t, spec.kind, off, spec.io_bytes);
        out.push(Sample { submit: t, done });
        inflight.push(Reverse(done));
    }
    out
}

/// A latency spike seen in a closed-loop run: consecutive requests slower than a threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spike {
    /// Submission of the first slow request and completion of the last one.
    pub start: Nanos,
    pub end: Nanos,
    /// Highest latency inside.
    pub height: Nanos,
    pub requests: usize,
}

impl Spike {
    pub fn duration(&self) -> Nanos {
        self.end - self.start
    }
}

/// Groups requests slower than `threshold` into spikes; two slow requests belong to the same
/// spike when the second was submitted before the first completed plus `merge_gap`.
pub fn find_spikes(samples: &[Sample], threshold: Nanos, merge_gap: Nanos) -> Vec<Spike> {
    let mut slow: Vec<&Sample> = samples.iter().filter(|s| s.latency() > threshold).collect();
    slow.sort_by_key(|s| s.submit);
    let mut out: Vec<Spike> = Vec::new();
    for s in slow {
        match out.last_mut() {
            Some(sp) if s.submit <= sp.end + merge_gap => {
                sp.end = sp.end.max(s.done);
                sp.height = sp.height.max(s.latency());
                sp.requests += 1;
            }
            _ => out.push(Spike {
                start: s.submit,
                end: s.done,
                height: s.latency(),
                requests: 1,
            }),
        }
    }
    out
}

/// The `q` quantile (0..=1) of `xs`, nearest-rank; `xs` need not be sorted.
pub fn quantile(xs: &[Nanos], q: f64) -> Nanos {
    if xs.is_empty() {
        return 0;
    }
    let mut v = xs.to_vec();
    let k = ((q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    let (_, x, _) = v.select_nth_unstable(k);
    *x
}

pub fn mean(xs: &[Nanos]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DeviceStats;

    /// A device that takes exactly 10 us per request, one at a time.
    struct Fixed {
        free: Nanos,
        stats: DeviceStats,
    }

    impl DeviceModel for Fixed {
        fn submit(&mut self, now: Nanos, _: OpKind, _: u64, _: u64) -> Nanos {
            self.free = self.free.max(now) + 10_000;
            self.free
        }
        fn capacity_bytes(&self) -> u64 {
            1 << 30
        }
        fn stats(&self) -> DeviceStats {
            self.stats
        }
        fn name(&self) -> &str {
            "fixed"
        }
    }

    #[test]
    fn closed_loop_keeps_queue_depth() {
        let mut d = Fixed {
            free: 0,
            stats: DeviceStats::default(),
        };
        let spec = ClosedLoop {
            queue_depth: 4,
            kind: OpKind::Read,
            io_bytes: 4096,
            pattern: Pattern::Sequential {
                start: 0,
                span: 1 << 20,
            },
            duration_ns: 1_000_000,
            seed: 1,
        };
        let s = run_closed_loop(&mut d, 0, &spec);
        // 100 services fit in 1 ms; every steady-state request waits behind 3 others.
        assert!((100..=104).contains(&s.len()), "{}", s.len());
        assert_eq!(s[50].latency(), 40_000);
    }

    #[test]
    fn open_loop_constant_rate_below_capacity_never_queues() {
        let mut d = Fixed {
            free: 0,
            stats: DeviceStats::default(),
        };
        let spec = OpenLoop {
            iops: 50_000.0,
            write_fraction: 0.5,
            io_bytes: 4096,
            span_bytes: 1 << 30,
            requests: 1000,
            warmup: 10,
            arrivals: Arrivals::Constant,
            seed: 1,
        };
        let l = run_open_loop(&mut d, &spec);
        assert_eq!(l.len(), 1000);
        assert!(l.iter().all(|&x| x == 10_000));
        assert_eq!(quantile(&[5, 1, 3, 2, 4], 0.5), 3);
        assert_eq!(quantile(&[5, 1, 3, 2, 4], 1.0), 5);
    }

    #[test]
    fn spikes_group_consecutive_slow_requests() {
        let s = |submit, done| Sample { submit, done };
        let samples = [
            s(0, 10),
            s(10, 100),
            s(20, 100),
            s(100, 110),
            s(500, 700),
            s(110, 120),
        ];
        let sp = find_spikes(&samples, 50, 5);
        assert_eq!(sp.len(), 2);
        assert_eq!(
            (sp[0].start, sp[0].end, sp[0].height, sp[0].requests),
            (10, 100, 90, 2)
        );
        assert_eq!((sp[1].duration(), sp[1].height), (200, 200));
    }
}
