//! Load-latency curves: how a member's latency grows with the load offered to it, one curve per
//! read/write mix, measured offline (Sandook's profiles, `shared/data/ssd-profiles`), by
//! sweeping a device model, or learnt online. Steering predicts a member's latency at a load
//! from them and reads its peak off them.

/// Latency at which a member counts as saturated (Sandook's rule: 1 ms at the 99th percentile).
pub const SATURATION_US: f64 = 1000.0;
/// Share of the last unsaturated load taken as a member's peak (Sandook's rule).
pub const PEAK_SHARE: f64 = 0.95;

/// One offered load and the latency percentiles measured at it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurvePoint {
    /// Achieved 4 KiB operations per second.
    pub iops: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
}

/// Which percentile of a curve a prediction uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Percentile {
    P50,
    P90,
    P99,
}

impl CurvePoint {
    pub fn latency_us(&self, p: Percentile) -> f64 {
        match p {
            Percentile::P50 => self.p50_us,
            Percentile::P90 => self.p90_us,
            Percentile::P99 => self.p99_us,
        }
    }
}

/// One member under one read/write mix, points in increasing load.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadCurve {
    /// Writes in tenths of a percent (0 = all reads, 1000 = all writes).
    pub write_permille: u32,
    pub points: Vec<CurvePoint>,
}

impl LoadCurve {
    /// Checks the points are finite, positive and in increasing load.
    pub fn validate(&self) -> Result<(), String> {
        if self.points.is_empty() {
            return Err(format!("curve {}w has no points", self.write_permille));
        }
        if self.write_permille > 1000 {
            return Err(format!(
                "write share {} > 1000 permille",
                self.write_permille
            ));
        }
        let mut last = 0.0;
        for p in &self.points {
            let lat = [p.p50_us, p.p90_us, p.p99_us];
            if !(p.iops.is_finite() && p.iops > last)
                || lat.iter().any(|l| !l.is_finite() || *l <= 0.0)
            {
                return Err(format!(
                    "curve {}w: point {p:?} is not finite and positive, or not above the load before it",
                    self.write_permille
                ));
            }
            last = p.iops;
        }
        Ok(())
    }

    /// The highest load whose latency stays under [`SATURATION_US`] (or the first point's load
    /// when none does), times [`PEAK_SHARE`].
    pub fn peak_iops(&self, p: Percentile) -> f64 {
        let last = self
            .points
            .iter()
            .take_while(|pt| pt.latency_us(p) < SATURATION_US)
            .last()
            .unwrap_or(&self.points[0]);
        last.iops * PEAK_SHARE
    }

    /// Latency predicted at `iops`: linear between measured points, the first point's below
    /// them, and beyond the last point growing like an M/M/1 queue whose capacity is the last
    /// point's load (so steering sees overload as very expensive, never as flat).
    pub fn predict_us(&self, iops: f64, p: Percentile) -> f64 {
        let pts = &self.points;
        let first = pts[0];
        if iops <= first.iops {
            return first.latency_us(p);
        }
        if let Some(i) = pts.iter().position(|pt| pt.iops >= iops) {
            let (a, b) = (pts[i - 1], pts[i]);
            let t = (iops - a.iops) / (b.iops - a.iops);
            return a.latency_us(p) + t * (b.latency_us(p) - a.latency_us(p));
        }
        let last = pts[pts.len() - 1];
        let over = iops / last.iops;
        last.latency_us(p) * over * over * 4.0
    }
}

/// Every curve of one member, in increasing write share.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceCurves {
    /// What the curves describe (a serial number or a model preset).
    pub name: String,
    pub curves: Vec<LoadCurve>,
}

impl DeviceCurves {
    /// Sorts the curves and checks them: at least one, no write share twice, each valid.
    pub fn new(name: impl Into<String>, mut curves: Vec<LoadCurve>) -> Result<Self, String> {
        let name = name.into();
        curves.sort_by_key(|c| c.write_permille);
        if curves.is_empty() {
            return Err(format!("{name}: no load-latency curve"));
        }
        for c in &curves {
            c.validate().map_err(|e| format!("{name}: {e}"))?;
        }
        if curves
            .windows(2)
            .any(|w| w[0].write_permille == w[1].write_permille)
        {
            return Err(format!("{name}: two curves for one write share"));
        }
        Ok(DeviceCurves { name, curves })
    }

    /// The curve for a load with `write_share` (0..=1) of writes: the measured mix at or next
    /// above it (Sandook's "next bucket up": a mixed load is predicted pessimistically), the
    /// most write-heavy one when none is above.
    pub fn curve_for(&self, write_share: f64) -> &LoadCurve {
        let permille = (write_share.clamp(0.0, 1.0) * 1000.0).round() as u32;
        self.curves
            .iter()
            .find(|c| c.write_permille >= permille)
            .unwrap_or(&self.curves[self.curves.len() - 1])
    }

    pub fn peak_iops(&self, write_share: f64, p: Percentile) -> f64 {
        self.curve_for(write_share).peak_iops(p)
    }

    pub fn predict_us(&self, iops: f64, write_share: f64, p: Percentile) -> f64 {
        self.curve_for(write_share).predict_us(iops, p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(iops: f64, p99: f64) -> CurvePoint {
        CurvePoint {
            iops,
            p50_us: p99 / 2.0,
            p90_us: p99 * 0.8,
            p99_us: p99,
        }
    }

    fn dev() -> DeviceCurves {
        DeviceCurves::new(
            "t",
            vec![
                LoadCurve {
                    write_permille: 250,
                    points: vec![pt(10_000.0, 300.0), pt(50_000.0, 2000.0)],
                },
                LoadCurve {
                    write_permille: 0,
                    points: vec![
                        pt(100_000.0, 100.0),
                        pt(200_000.0, 500.0),
                        pt(300_000.0, 1500.0),
                    ],
                },
            ],
        )
        .unwrap()
    }

    #[test]
    fn a_mixed_load_uses_the_next_measured_mix_up() {
        let d = dev();
        assert_eq!(d.curve_for(0.0).write_permille, 0);
        assert_eq!(d.curve_for(0.1).write_permille, 250);
        assert_eq!(d.curve_for(0.9).write_permille, 250);
    }

    #[test]
    fn the_peak_is_the_last_load_under_a_millisecond_discounted() {
        let d = dev();
        assert_eq!(d.peak_iops(0.0, Percentile::P99), 200_000.0 * PEAK_SHARE);
        assert_eq!(d.peak_iops(0.2, Percentile::P99), 10_000.0 * PEAK_SHARE);
    }

    #[test]
    fn predictions_interpolate_and_grow_past_the_last_point() {
        let d = dev();
        let p = Percentile::P99;
        assert_eq!(d.predict_us(50_000.0, 0.0, p), 100.0);
        assert_eq!(d.predict_us(150_000.0, 0.0, p), 300.0);
        assert!(d.predict_us(400_000.0, 0.0, p) > 1500.0 * 2.0);
        assert!(d.predict_us(600_000.0, 0.0, p) > d.predict_us(400_000.0, 0.0, p));
    }

    #[test]
    fn bad_curves_are_refused() {
        let bad = LoadCurve {
            write_permille: 0,
            points: vec![pt(10.0, 1.0), pt(5.0, 2.0)],
        };
        assert!(DeviceCurves::new("x", vec![bad]).is_err());
        assert!(DeviceCurves::new("x", vec![]).is_err());
    }
}
