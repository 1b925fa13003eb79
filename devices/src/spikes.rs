//! A controlled spike process: a member that now and then stops answering for a fixed length
//! of time, at a set rate, whatever its load. It is the knob of the spike-sensitivity study
//! (`eval --only sensitivity`, `sim --spikes RATE/min:LENGTH`), not a calibrated device
//! behaviour: the calibrated spikes of a preset come from its own model ([`crate::events`],
//! buffer flushes, GC); this process is laid on top to ask what a scheme does at a given
//! spike rate and length.
//!
//! **The process.** Unresponsive periods of `length` each; after a period ends the next one
//! starts after a responsive gap drawn from an exponential distribution of mean
//! `60 s / rate - length` (a Poisson process with a dead time: no period starts inside
//! another). So a member has `rate` periods per minute on average and is unresponsive
//! `rate x length` of the time, and the periods do not depend on the load or on any other
//! member. Each member draws its own periods from its own seed.
//!
//! **Unresponsive.** The member's clock stops: a request in service when a period starts
//! finishes that much later, and one that arrives during a period starts when the period
//! ends, behind the work queued before it. [`Spiking`] keeps the wrapped model in its own
//! *device time*, wall time minus the time spent unresponsive so far: a request arriving at
//! wall time `t` reaches the model at device time `t - frozen(t)`, and the model's
//! completion `c` is mapped back to the wall time at which the member, paused by every
//! period that starts before it gets there, has run for `c`. The model sees non-decreasing
//! times, so every model can be wrapped; anything the model does by its own clock (buffer
//! flushes, GC) pauses with it.
//!
//! Deterministic: the periods are a function of the spec and the seed only (the same seed
//! gives the same periods under any load), never of a clock.

use std::collections::VecDeque;

use fusionraid_core::Nanos;
use fusionraid_core::rng::Rng;

use crate::fail_slow::parse_duration;
use crate::{AgeSpec, DeviceModel, DeviceStats, OpKind};

/// Nanoseconds in a minute, the unit of the rate (spikes per SSD-minute, as the paper counts).
const MINUTE_NS: f64 = 60e9;

/// Largest share of time a member may spend unresponsive: beyond it the member is a failed
/// drive, not a spiking one, and gaps would be shorter than the periods.
pub const MAX_UNRESPONSIVE_SHARE: f64 = 0.5;

/// Spikes at `per_min` per member-minute on average, each `length_ns` long.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpikeSpec {
    pub per_min: f64,
    pub length_ns: Nanos,
}

impl SpikeSpec {
    /// Parses `RATE/min:LENGTH` (or `RATE/s:LENGTH`), e.g. `20/min:10ms`: RATE periods per
    /// minute (second) on average, each LENGTH long (`us`, `ms`, `s`). A rate of 0 is no
    /// spikes.
    pub fn parse(s: &str) -> Result<Self, String> {
        let err = |m: &str| format!("spikes '{s}': {m} (RATE/min:LENGTH, e.g. 20/min:10ms)");
        let (rate, length) = s.trim().split_once(':').ok_or_else(|| err("no ':'"))?;
        let (num, per) = rate.split_once('/').ok_or_else(|| err("no '/min'"))?;
        let v: f64 = num.trim().parse().map_err(|_| err("bad rate"))?;
        let per_min = match per.trim() {
            "min" | "m" => v,
            "s" => v * 60.0,
            _ => return Err(err("the rate is per 'min' or per 's'")),
        };
        let length_ns = parse_duration(length).map_err(|e| err(&e))?;
        let spec = SpikeSpec { per_min, length_ns };
        spec.validate().map_err(|e| err(&e))?;
        Ok(spec)
    }

    pub fn validate(&self) -> Result<(), String> {
        if !(self.per_min.is_finite() && self.per_min >= 0.0) {
            return Err("the rate must be a finite number >= 0".into());
        }
        if self.length_ns == 0 {
            return Err("the length must be positive".into());
        }
        if self.unresponsive_share() > MAX_UNRESPONSIVE_SHARE {
            return Err(format!(
                "rate x length is {:.1}% of the time, above {:.0}%",
                self.unresponsive_share() * 100.0,
                MAX_UNRESPONSIVE_SHARE * 100.0
            ));
        }
        Ok(())
    }

    /// Long-run share of the time a member is unresponsive: rate x length.
    pub fn unresponsive_share(&self) -> f64 {
        self.per_min * self.length_ns as f64 / MINUTE_NS
    }

    /// Whether the process has any period at all.
    pub fn is_active(&self) -> bool {
        self.per_min > 0.0
    }

    /// Mean responsive gap between two periods.
    fn mean_gap_ns(&self) -> f64 {
        MINUTE_NS / self.per_min - self.length_ns as f64
    }
}

impl std::fmt::Display for SpikeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = self.length_ns;
        let len = if l.is_multiple_of(1_000_000) {
            format!("{}ms", l / 1_000_000)
        } else if l.is_multiple_of(1_000) {
            format!("{}us", l / 1_000)
        } else {
            format!("{l}ns")
        };
        write!(f, "{}/min:{len}", self.per_min)
    }
}

/// Periods a [`Spiking`] member has been through, up to its last request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpikeStats {
    /// Periods that ended at or before the last request's arrival.
    pub spikes: u64,
    /// Their total length.
    pub unresponsive_ns: u64,
}

/// One unresponsive period in wall time, and where it starts in device time.
#[derive(Clone, Copy, Debug)]
struct Period {
    start: Nanos,
    end: Nanos,
    dev_start: Nanos,
}

/// A model wrapped in a [`SpikeSpec`] process.
pub struct Spiking {
    inner: Box<dyn DeviceModel>,
    spec: SpikeSpec,
    rng: Rng,
    /// Periods drawn that had not ended at the last request, in order.
    ahead: VecDeque<Period>,
    /// Unresponsive time of the periods already dropped from `ahead`.
    frozen_past: Nanos,
    /// Unresponsive time of every period drawn so far.
    frozen_drawn: Nanos,
    /// Wall start of the next period not drawn yet.
    next_start: Nanos,
    stats: SpikeStats,
}

impl Spiking {
    pub fn new(inner: Box<dyn DeviceModel>, spec: SpikeSpec, seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0x5b1c_e5b1_c3e5_u64.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let next_start = if spec.is_active() {
            exp(&mut rng, spec.mean_gap_ns())
        } else {
            Nanos::MAX
        };
        Spiking {
            inner,
            spec,
            rng,
            ahead: VecDeque::new(),
            frozen_past: 0,
            frozen_drawn: 0,
            next_start,
            stats: SpikeStats::default(),
        }
    }

    pub fn spike_stats(&self) -> SpikeStats {
        self.stats
    }

    pub fn spec(&self) -> SpikeSpec {
        self.spec
    }

    /// Draws the next period.
    fn draw(&mut self) {
        let start = self.next_start;
        let end = start.saturating_add(self.spec.length_ns);
        self.ahead.push_back(Period {
            start,
            end,
            dev_start: start - self.frozen_drawn,
        });
        self.frozen_drawn += self.spec.length_ns;
        self.next_start = end.saturating_add(exp(&mut self.rng, self.spec.mean_gap_ns()));
    }

    /// Device time of wall time `now` (the requests arrive in non-decreasing `now`): drops
    /// the periods over by then.
    fn device_time(&mut self, now: Nanos) -> Nanos {
        while self.next_start <= now {
            self.draw();
        }
        while let Some(p) = self.ahead.front().copied() {
            if p.end > now {
                break;
            }
            self.ahead.pop_front();
            self.frozen_past += p.end - p.start;
            self.stats.spikes += 1;
            self.stats.unresponsive_ns += p.end - p.start;
        }
        let inside = self
            .ahead
            .front()
            .filter(|p| p.start <= now)
            .map_or(0, |p| now - p.start);
        now - self.frozen_past - inside
    }

    /// Wall time at which the member has run for device time `c`: every period that starts
    /// before the member gets there pushes it out by its length.
    fn wall_time(&mut self, c: Nanos) -> Nanos {
        while self.next_start != Nanos::MAX && self.next_start - self.frozen_drawn < c {
            self.draw();
        }
        let pushed: Nanos = self
            .ahead
            .iter()
            .take_while(|p| p.dev_start < c)
            .map(|p| p.end - p.start)
            .sum();
        c.saturating_add(self.frozen_past + pushed)
    }
}

/// An exponential duration of mean `mean` ns (at least 1 ns).
fn exp(rng: &mut Rng, mean: f64) -> Nanos {
    let u = 1.0 - rng.unit(); // (0, 1]
    ((-u.ln() * mean).round() as Nanos).max(1)
}

impl DeviceModel for Spiking {
    fn submit(&mut self, now: Nanos, kind: OpKind, offset: u64, len: u64) -> Nanos {
        if !self.spec.is_active() {
            return self.inner.submit(now, kind, offset, len);
        }
        let dev_now = self.device_time(now);
        let done = self.inner.submit(dev_now, kind, offset, len);
        self.wall_time(done).max(now)
    }

    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }

    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn wear(&self) -> Option<f64> {
        self.inner.wear()
    }

    fn age(&mut self, spec: &AgeSpec) {
        self.inner.age(spec);
    }

    fn set_speed_factor(&mut self, factor: f64) {
        self.inner.set_speed_factor(factor);
    }

    fn clone_box(&self) -> Option<Box<dyn DeviceModel>> {
        let inner = self.inner.clone_box()?;
        Some(Box::new(Spiking {
            inner,
            spec: self.spec,
            rng: self.rng.clone(),
            ahead: self.ahead.clone(),
            frozen_past: self.frozen_past,
            frozen_drawn: self.frozen_drawn,
            next_start: self.next_start,
            stats: self.stats,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::dc;
    use crate::{LatencyDist, SsdModel};

    const MSN: Nanos = 1_000_000;
    const READ_NS: Nanos = 36_000;

    fn exact_dc() -> Box<dyn DeviceModel> {
        let mut c = dc();
        c.read_latency = LatencyDist::constant(READ_NS as f64);
        c.write_latency = LatencyDist::constant(37_000.0);
        Box::new(SsdModel::new(c))
    }

    #[test]
    fn parses_and_refuses_nonsense() {
        let s = SpikeSpec::parse("20/min:10ms").unwrap();
        assert_eq!(s.per_min, 20.0);
        assert_eq!(s.length_ns, 10 * MSN);
        assert!((s.unresponsive_share() - 20.0 * 0.01 / 60.0).abs() < 1e-12);
        assert_eq!(SpikeSpec::parse(&s.to_string()).unwrap(), s);
        assert_eq!(SpikeSpec::parse("1/s:500us").unwrap().per_min, 60.0);
        assert!(!SpikeSpec::parse("0/min:1ms").unwrap().is_active());
        for bad in [
            "",
            "20/min",
            "20:10ms",
            "x/min:1ms",
            "-1/min:1ms",
            "20/h:1ms",
            "20/min:0ms",
            "20/min:10",
            "600/min:100ms", // unresponsive all the time
        ] {
            assert!(SpikeSpec::parse(bad).is_err(), "{bad}");
        }
    }

    /// One read a millisecond for 20 minutes on one member at 60 spikes a minute of 10 ms:
    /// about 1,200 periods (a renewal process: within 10%) of exactly 10 ms, so the member
    /// is unresponsive 1% of the time; a read arriving inside a period waits out the rest
    /// of it (about 9 of the 10 arriving in a period wait more than a millisecond), and no
    /// read waits longer than a period plus the burst queued behind it. The same seed gives
    /// the same latencies, another seed other ones.
    #[test]
    fn rate_and_length_are_what_is_asked_and_a_seed_repeats() {
        let spec = SpikeSpec::parse("60/min:10ms").unwrap();
        let run = |seed: u64| {
            let mut m = Spiking::new(exact_dc(), spec, seed);
            let (mut held, mut worst) = (0u64, 0u64);
            let mut lat = Vec::new();
            for i in 0..1_200_000u64 {
                let t = i * MSN;
                let l = m.submit(t, OpKind::Read, (i % 4096) * 65_536, 4096) - t;
                assert!(l >= READ_NS, "{l} at {t}");
                held += u64::from(l > MSN);
                worst = worst.max(l);
                if i < 100_000 {
                    lat.push(l);
                }
            }
            (m.spike_stats(), held, worst, lat)
        };
        let (stats, held, worst, lat) = run(3);
        assert!((1_080..=1_320).contains(&stats.spikes), "{}", stats.spikes);
        assert_eq!(stats.unresponsive_ns, stats.spikes * 10 * MSN);
        let per_period = held as f64 / stats.spikes as f64;
        assert!((8.5..=10.0).contains(&per_period), "{per_period}");
        assert!((10 * MSN..11 * MSN).contains(&worst), "{worst}");
        let again = run(3);
        assert_eq!(again.0, stats);
        assert_eq!(again.3, lat);
        assert_ne!(run(4).3, lat);
    }

    /// A request in service when a period starts finishes the period's length later; with
    /// no spikes the wrapper changes nothing.
    #[test]
    fn work_in_flight_is_paused_and_a_zero_rate_is_transparent() {
        let spec = SpikeSpec::parse("30/min:50ms").unwrap();
        let mut m = Spiking::new(exact_dc(), spec, 1);
        let first = m.next_start;
        // Arrives just before the first period: its service straddles the start.
        let t = first - READ_NS / 2;
        assert_eq!(m.submit(t, OpKind::Read, 0, 4096), t + READ_NS + 50 * MSN);
        let off = SpikeSpec::parse("0/min:50ms").unwrap();
        let mut a = Spiking::new(exact_dc(), off, 1);
        let mut b = exact_dc();
        for i in 0..1000u64 {
            let t = i * 20_000;
            let k = if i % 3 == 0 {
                OpKind::Write
            } else {
                OpKind::Read
            };
            assert_eq!(
                a.submit(t, k, i * 65_536, 65_536),
                b.submit(t, k, i * 65_536, 65_536)
            );
        }
    }
}
