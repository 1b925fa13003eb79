//! Per-member congestion control: a rate factor in (0, 1] that scales how much of the load a
//! member is offered, halved when the member shows congestion and raised slowly otherwise
//! (additive increase, multiplicative decrease, as Sandook's clients do per SSD).
//!
//! The signal: the member's tail latency over the last window is above an absolute limit, or
//! above a multiple of what its curve predicts at the load it is getting. Hysteresis: once
//! signalled, the member stays congested until its tail falls below `clear` of the limit.

use crate::types::Nanos;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AimdParams {
    /// Smallest factor (Sandook: 0.001).
    pub floor: f64,
    pub decrease: f64,
    pub increase: f64,
    /// At most one decrease, and one increase, per period (Sandook: 50 ms).
    pub period_ns: Nanos,
    /// Absolute tail limit (Sandook: 2.5 ms at P99).
    pub limit_ns: Nanos,
    /// Limit relative to the curve's prediction (Sandook: 2.5x).
    pub over_model: f64,
    /// Share of the limit the tail must fall below to clear the signal.
    pub clear: f64,
}

impl Default for AimdParams {
    fn default() -> Self {
        AimdParams {
            floor: 0.001,
            decrease: 0.5,
            increase: 0.05,
            period_ns: 50_000_000,
            limit_ns: 2_500_000,
            over_model: 2.5,
            clear: 0.8,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Aimd {
    pub factor: f64,
    congested: bool,
    changed_at: Nanos,
}

impl Default for Aimd {
    fn default() -> Self {
        Aimd {
            factor: 1.0,
            congested: false,
            changed_at: 0,
        }
    }
}

impl Aimd {
    pub fn congested(&self) -> bool {
        self.congested
    }

    /// One observation: the tail over the last window (`None`: idle) and the tail the curve
    /// predicts for the load the member got (`None`: no curve).
    pub fn observe(
        &mut self,
        now: Nanos,
        tail_ns: Option<Nanos>,
        predicted_ns: Option<f64>,
        p: &AimdParams,
    ) {
        let limit = predicted_ns.map_or(p.limit_ns as f64, |m| {
            (p.limit_ns as f64).min(m * p.over_model)
        });
        match tail_ns {
            Some(t) if t as f64 > limit => self.congested = true,
            Some(t) if (t as f64) < limit * p.clear => self.congested = false,
            None => self.congested = false,
            _ => {}
        }
        if now < self.changed_at + p.period_ns {
            return;
        }
        let next = if self.congested {
            (self.factor * p.decrease).max(p.floor)
        } else {
            (self.factor + p.increase).min(1.0)
        };
        if next != self.factor {
            self.factor = next;
            self.changed_at = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn halves_on_congestion_at_most_once_per_period_then_recovers_slowly() {
        let p = AimdParams::default();
        let mut a = Aimd::default();
        a.observe(100 * MS, Some(5 * MS), None, &p);
        assert_eq!(a.factor, 0.5);
        a.observe(110 * MS, Some(5 * MS), None, &p);
        assert_eq!(a.factor, 0.5, "one cut per period");
        a.observe(150 * MS, Some(5 * MS), None, &p);
        assert_eq!(a.factor, 0.25);
        // Between the clear level and the limit: still congested (hysteresis).
        a.observe(200 * MS, Some(2_200_000), None, &p);
        assert_eq!(a.factor, 0.125);
        a.observe(250 * MS, Some(MS), None, &p);
        assert!((a.factor - 0.175).abs() < 1e-12);
        for k in 0..40 {
            a.observe((300 + 50 * k) * MS, Some(MS), None, &p);
        }
        assert_eq!(a.factor, 1.0);
    }

    #[test]
    fn the_model_lowers_the_limit_and_the_floor_holds() {
        let p = AimdParams::default();
        let mut a = Aimd::default();
        // 400 us when 100 us is predicted: 4x the model, congested though under 2.5 ms.
        a.observe(60 * MS, Some(400_000), Some(100_000.0), &p);
        assert!(a.congested());
        for k in 0..40 {
            a.observe((100 + 50 * k) * MS, Some(400_000), Some(100_000.0), &p);
        }
        assert_eq!(a.factor, p.floor);
    }
}
