//! Fail-slow drives: a member that keeps working but, in episodes of seconds to minutes, runs
//! slower than its peers by a factor (firmware retries, thermal throttling, a failing
//! channel), then recovers.
//!
//! Field rates (docs/DEVICE_MODELS.md, "Fail-slow members"): Tail at Store (Hao et al.,
//! FAST'16, 4,000 SSDs, 7 M drive-hours) finds an SSD more than 2x slower than its RAID-group
//! peers 0.6% of the time; Perseus (Lu et al., FAST'23, about 248K drives at Alibaba) finds
//! about 0.12% of drives fail-slow over ten months. A study sets which members are fail-slow
//! and when; [`FailSlow`] wraps any [`DeviceModel`] and applies the factor through the
//! model's speed factor (every service time and stall of a request submitted during an
//! episode is that much longer; work booked before an episode keeps its speed).
//!
//! Deterministic: the episodes follow from the [`FailSlowSpec`] and its seed, never a clock.

use fusionraid_core::Nanos;
use fusionraid_core::rng::Rng;

use crate::{AgeSpec, DeviceModel, DeviceStats, OpKind};

/// When the slow episodes happen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SlowSchedule {
    /// Normal for `off_ns`, then slow for `on_ns`, repeating (the first episode starts at
    /// `off_ns`).
    Periodic { on_ns: Nanos, off_ns: Nanos },
    /// Episodes and the gaps between them last exponentially distributed times of these
    /// means (starting in a gap).
    Random {
        mean_on_ns: Nanos,
        mean_off_ns: Nanos,
    },
}

/// A fail-slow behaviour: `factor` (2.0 = twice as slow) during the episodes of `schedule`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FailSlowSpec {
    pub factor: f64,
    pub schedule: SlowSchedule,
}

impl FailSlowSpec {
    /// Parses `FACTORx/ON/OFF` (periodic), `FACTORx/ON/OFF/random` (exponential episodes and
    /// gaps of those means) or `FACTORx/ON/P%` (random episodes of mean ON, slow P% of the
    /// time: Tail at Store's SSDs are 0.6%). Durations take `us`, `ms`, `s`, `m` or `h`; the `x`
    /// is optional. Example: `4x/10s/50s`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let err =
            |m: &str| format!("fail-slow '{s}': {m} (FACTORx/ON/OFF[/random] or FACTORx/ON/P%)");
        let parts: Vec<&str> = s.trim().split('/').collect();
        if !(3..=4).contains(&parts.len()) {
            return Err(err("expected three or four '/'-separated fields"));
        }
        let factor: f64 = parts[0]
            .trim_end_matches(['x', 'X'])
            .parse()
            .map_err(|_| err("bad factor"))?;
        if !(factor.is_finite() && (1.0..=1000.0).contains(&factor)) {
            return Err(err("factor must be in [1, 1000]"));
        }
        let on = parse_duration(parts[1]).map_err(|e| err(&e))?;
        if on == 0 {
            return Err(err("ON must be positive"));
        }
        let schedule = if let Some(p) = parts[2].strip_suffix('%') {
            let share: f64 = p.parse().map_err(|_| err("bad percentage"))?;
            if parts.len() == 4 || !(share > 0.0 && share < 100.0) {
                return Err(err("the share must be in (0, 100)% and stands last"));
            }
            let off = on as f64 * (100.0 - share) / share;
            SlowSchedule::Random {
                mean_on_ns: on,
                mean_off_ns: off.round() as Nanos,
            }
        } else {
            let off = parse_duration(parts[2]).map_err(|e| err(&e))?;
            match parts.get(3) {
                None => SlowSchedule::Periodic {
                    on_ns: on,
                    off_ns: off,
                },
                Some(&"random") => SlowSchedule::Random {
                    mean_on_ns: on,
                    mean_off_ns: off,
                },
                Some(_) => return Err(err("the fourth field can only be 'random'")),
            }
        };
        Ok(FailSlowSpec { factor, schedule })
    }

    /// Long-run share of the time spent slow.
    pub fn slow_share(&self) -> f64 {
        let (on, off) = match self.schedule {
            SlowSchedule::Periodic { on_ns, off_ns } => (on_ns, off_ns),
            SlowSchedule::Random {
                mean_on_ns,
                mean_off_ns,
            } => (mean_on_ns, mean_off_ns),
        };
        on as f64 / (on + off).max(1) as f64
    }
}

impl std::fmt::Display for FailSlowSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |ns: Nanos| show_duration(ns);
        match self.schedule {
            SlowSchedule::Periodic { on_ns, off_ns } => {
                write!(f, "{}x/{}/{}", self.factor, ms(on_ns), ms(off_ns))
            }
            SlowSchedule::Random {
                mean_on_ns,
                mean_off_ns,
            } => write!(
                f,
                "{}x/{}/{}/random",
                self.factor,
                ms(mean_on_ns),
                ms(mean_off_ns)
            ),
        }
    }
}

/// `ns` in the largest unit that shows it exactly (parses back to the same value).
fn show_duration(ns: Nanos) -> String {
    for (unit, per) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns.is_multiple_of(per) {
            return format!("{}{unit}", ns / per);
        }
    }
    format!("{ns}ns")
}

/// `N` + unit (`ns`, `us`, `ms`, `s`, `m` or `min`, `h`), N a decimal number.
pub fn parse_duration(s: &str) -> Result<Nanos, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("duration '{s}' needs a unit (us, ms, s, min)"))?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().map_err(|_| format!("bad duration '{s}'"))?;
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(format!("duration '{s}': unknown unit '{unit}'")),
    };
    let ns = v * scale;
    if !(ns.is_finite() && ns < 1e18) {
        return Err(format!("duration '{s}' out of range"));
    }
    Ok(ns.round() as Nanos)
}

/// Episodes seen by a [`FailSlow`] model so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FailSlowStats {
    pub episodes: u64,
    /// Time spent slow, up to the last request.
    pub slow_ns: u64,
}

/// A model wrapped in a fail-slow behaviour.
pub struct FailSlow {
    inner: Box<dyn DeviceModel>,
    spec: FailSlowSpec,
    /// The speed factor set from outside (`--slow`, heterogeneous fleets); episodes
    /// multiply it.
    base: f64,
    slow: bool,
    /// When `slow` next flips.
    next_change: Nanos,
    /// Time up to which `stats.slow_ns` is counted.
    counted_to: Nanos,
    rng: Rng,
    stats: FailSlowStats,
}

impl FailSlow {
    pub fn new(inner: Box<dyn DeviceModel>, spec: FailSlowSpec, seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0xfa11_5105_u64.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let first = match spec.schedule {
            SlowSchedule::Periodic { off_ns, .. } => off_ns,
            SlowSchedule::Random { mean_off_ns, .. } => exp(&mut rng, mean_off_ns),
        };
        FailSlow {
            inner,
            spec,
            base: 1.0,
            slow: false,
            next_change: first,
            counted_to: 0,
            rng,
            stats: FailSlowStats::default(),
        }
    }

    pub fn fail_slow_stats(&self) -> FailSlowStats {
        self.stats
    }

    pub fn is_slow(&self) -> bool {
        self.slow
    }

    /// Flips through every episode boundary up to `now` and sets the inner speed.
    fn advance(&mut self, now: Nanos) {
        let before = self.slow;
        while self.next_change <= now {
            let at = self.next_change;
            if self.slow {
                self.stats.slow_ns += at.saturating_sub(self.counted_to);
            }
            self.counted_to = at;
            self.slow = !self.slow;
            self.stats.episodes += u64::from(self.slow);
            let len = match self.spec.schedule {
                SlowSchedule::Periodic { on_ns, off_ns } => {
                    if self.slow {
                        on_ns
                    } else {
                        off_ns
                    }
                }
                SlowSchedule::Random {
                    mean_on_ns,
                    mean_off_ns,
                } => exp(
                    &mut self.rng,
                    if self.slow { mean_on_ns } else { mean_off_ns },
                ),
            };
            self.next_change = at.saturating_add(len.max(1));
        }
        if self.slow {
            self.stats.slow_ns += now.saturating_sub(self.counted_to);
        }
        self.counted_to = self.counted_to.max(now);
        if self.slow != before {
            self.apply();
        }
    }

    fn apply(&mut self) {
        let f = if self.slow {
            self.base * self.spec.factor
        } else {
            self.base
        };
        self.inner.set_speed_factor(f);
    }
}

/// An exponential duration of mean `mean` (at least 1 ns).
fn exp(rng: &mut Rng, mean: Nanos) -> Nanos {
    let u = 1.0 - rng.unit(); // (0, 1]
    ((-u.ln() * mean as f64).round() as Nanos).max(1)
}

impl DeviceModel for FailSlow {
    fn submit(&mut self, now: Nanos, kind: OpKind, offset: u64, len: u64) -> Nanos {
        self.advance(now);
        self.inner.submit(now, kind, offset, len)
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
        self.base = factor;
        self.apply();
    }

    fn clone_box(&self) -> Option<Box<dyn DeviceModel>> {
        let inner = self.inner.clone_box()?;
        Some(Box::new(FailSlow {
            inner,
            spec: self.spec,
            base: self.base,
            slow: self.slow,
            next_change: self.next_change,
            counted_to: self.counted_to,
            rng: self.rng.clone(),
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

    fn exact_dc() -> Box<dyn DeviceModel> {
        let mut c = dc();
        c.read_latency = LatencyDist::constant(36_000.0);
        c.write_latency = LatencyDist::constant(37_000.0);
        Box::new(SsdModel::new(c))
    }

    #[test]
    fn parses_the_three_forms_and_refuses_nonsense() {
        let p = FailSlowSpec::parse("4x/10s/50s").unwrap();
        assert_eq!(p.factor, 4.0);
        assert_eq!(
            p.schedule,
            SlowSchedule::Periodic {
                on_ns: 10_000 * MSN,
                off_ns: 50_000 * MSN
            }
        );
        assert!((p.slow_share() - 1.0 / 6.0).abs() < 1e-12);
        let r = FailSlowSpec::parse("2.5/500ms/2s/random").unwrap();
        assert!(
            matches!(r.schedule, SlowSchedule::Random { mean_on_ns, .. } if mean_on_ns == 500 * MSN)
        );
        let share = FailSlowSpec::parse("3x/1min/0.6%").unwrap();
        assert!((share.slow_share() - 0.006).abs() < 1e-9);
        assert_eq!(FailSlowSpec::parse(&p.to_string()).unwrap(), p);
        for bad in [
            "",
            "4x",
            "4x/1s",
            "0.5x/1s/1s",
            "4x/0s/1s",
            "4x/1s/1q",
            "4x/1s/1s/sometimes",
            "4x/1s/100%",
            "4x/1s/5%/random",
            "4x/1/1s",
        ] {
            assert!(FailSlowSpec::parse(bad).is_err(), "{bad}");
        }
    }

    /// Periodic 4x episodes of 10 ms every 30 ms: a read submitted inside an episode takes
    /// exactly four times the unloaded read, one outside it the unloaded read, and the
    /// episodes and slow time are counted as scheduled. Same spec, same seed: same answers.
    #[test]
    fn slows_the_member_by_the_factor_during_episodes_only() {
        let spec = FailSlowSpec::parse("4x/10ms/20ms").unwrap();
        let run = || {
            let mut m = FailSlow::new(exact_dc(), spec, 1);
            let lat: Vec<Nanos> = (0..90u64)
                .map(|i| {
                    let t = i * MSN;
                    m.submit(t, OpKind::Read, i * 4096 * 64, 4096) - t
                })
                .collect();
            (lat, m.fail_slow_stats())
        };
        let (lat, stats) = run();
        for (i, &l) in lat.iter().enumerate() {
            // Slow in [20, 30), [50, 60), [80, 90) ms.
            let slow = i % 30 >= 20;
            assert_eq!(l, if slow { 4 * 36_000 } else { 36_000 }, "at {i} ms");
        }
        assert_eq!(stats.episodes, 3);
        assert_eq!(stats.slow_ns, 29 * MSN);
        assert_eq!(run(), (lat, stats));
    }

    #[test]
    fn random_episodes_keep_their_share_and_compose_with_a_base_factor() {
        let spec = FailSlowSpec::parse("2x/10ms/10%").unwrap();
        let mut m = FailSlow::new(exact_dc(), spec, 9);
        m.set_speed_factor(3.0);
        let mut slow_lat = 0;
        let n = 200_000u64;
        for i in 0..n {
            let t = i * MSN / 10; // 20 s
            let l = m.submit(t, OpKind::Read, (i % 1000) * 65536, 4096) - t;
            assert!(l == 3 * 36_000 || l == 6 * 36_000, "{l}");
            slow_lat += u64::from(l == 6 * 36_000);
        }
        let share = m.fail_slow_stats().slow_ns as f64 / (n * MSN / 10) as f64;
        // ~200 episodes: the share is near 10%.
        assert!((0.06..0.14).contains(&share), "{share}");
        assert!((slow_lat as f64 / n as f64 - share).abs() < 0.01);
    }
}
