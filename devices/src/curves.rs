//! A drive's load-latency curves ([`DeviceCurves`], the input of profile-guided steering), two
//! ways:
//!
//! - [`from_profiles`] / [`load_serial`]: a profiled serial's measured curves, one per mix file;
//! - [`sweep`] / [`sweep_preset`]: the same experiment run on a device model (open-loop 4 KiB
//!   random I/O over the whole drive, Poisson arrivals, a fresh drive per load, as the
//!   profiles were measured on blkdiscarded drives) at [`SWEEP_MIXES`], at growing loads until
//!   past saturation. In simulation the model is the drive, so this is the offline profiling
//!   run a real deployment would do.

use std::path::Path;

use fusionraid_core::Nanos;
use fusionraid_core::rng::Rng;
use fusionraid_core::steer::{CurvePoint, DeviceCurves, LoadCurve};

use crate::loadgen::{Arrivals, OpenLoop, quantile, run_open_loop_samples};
use crate::profile::{Profile, load_device};
use crate::{DeviceModel, OpKind, PAGE, build};

/// The write shares (permille) a model is swept at.
pub const SWEEP_MIXES: [u32; 6] = [0, 100, 250, 500, 750, 1000];

/// A load counts as past saturation from this P90 (us) on: Sandook's 1 ms, read at the 90th
/// percentile so that the mixed curves (whose P99 crosses 1 ms from read/write interference
/// at a few percent of their throughput) are swept up to where P90 saturates as well, and
/// carry a P90 peak.
const SATURATION_P90_US: f64 = 1000.0;

/// A load is also past saturation when the device completed less than this share of it.
const FOLLOWS: f64 = 0.9;

/// One mix file as a curve: Actual IOPS with the median, 90th and 99th percentiles. Rows with
/// dropped requests or an infinite percentile are left out, and so is a row whose achieved
/// load is not above the previous kept one's (past saturation the achieved load stalls
/// while the offered one grows). `None` when no row is usable.
pub fn curve_of_profile(p: &Profile) -> Option<LoadCurve> {
    let mut points: Vec<CurvePoint> = Vec::new();
    for r in &p.rows {
        let [p50_us, p90_us, p99_us, ..] = r.pct_us;
        let finite = [r.actual_iops, p50_us, p90_us, p99_us]
            .iter()
            .all(|x| x.is_finite() && *x > 0.0);
        let above = points.last().is_none_or(|l| r.actual_iops > l.iops);
        if r.dropped == 0 && finite && above {
            points.push(CurvePoint {
                iops: r.actual_iops,
                p50_us,
                p90_us,
                p99_us,
            });
        }
    }
    (!points.is_empty()).then_some(LoadCurve {
        write_permille: p.write_permille,
        points,
    })
}

/// One drive's profiles (as [`load_device`] returns them) as curves named `name`.
pub fn from_profiles(name: &str, profiles: &[Profile]) -> Result<DeviceCurves, String> {
    DeviceCurves::new(name, profiles.iter().filter_map(curve_of_profile).collect())
}

/// The measured curves of `serial` in `dir`, named after the serial.
pub fn load_serial(dir: &Path, serial: &str) -> Result<DeviceCurves, String> {
    from_profiles(serial, &load_device(dir, serial)?)
}

/// How much simulation a sweep does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SweepOptions {
    /// Measured requests per load (after a tenth as many unmeasured ones).
    pub requests: usize,
    /// Ratio between consecutive offered loads.
    pub growth: f64,
    /// Most loads per mix (a device that never saturates stops there).
    pub max_points: usize,
    pub seed: u64,
}

impl Default for SweepOptions {
    /// 10,000 requests per load put about 100 samples above the P99; loads 20% apart give
    /// 15-30 points per curve of the fitted presets, swept in 0.1-0.4 s in a release build.
    fn default() -> Self {
        SweepOptions {
            requests: 10_000,
            growth: 1.2,
            max_points: 40,
            seed: 1,
        }
    }
}

/// Sweeps the device preset `name` (SSD or HDD, [`crate::build`]).
pub fn sweep_preset(name: &str, o: &SweepOptions) -> Result<DeviceCurves, String> {
    sweep(name, |seed| build(name, seed), o)
}

/// Sweeps the devices `make(seed)` builds (a fresh one per load) at every [`SWEEP_MIXES`]
/// share; the curves are named `name`. Same options, same curves.
pub fn sweep(
    name: &str,
    make: impl Fn(u64) -> Result<Box<dyn DeviceModel>, String>,
    o: &SweepOptions,
) -> Result<DeviceCurves, String> {
    if !(o.growth.is_finite() && o.growth > 1.0) || o.requests == 0 || o.max_points == 0 {
        return Err(format!("bad sweep options {o:?}"));
    }
    let mut curves = Vec::new();
    for mix in SWEEP_MIXES {
        curves.push(sweep_mix(mix, &make, o)?);
    }
    DeviceCurves::new(name, curves)
}

/// Seed of one load of one mix, so points are independent of each other and of the order
/// they are run in.
fn point_seed(seed: u64, mix: u32, k: usize) -> u64 {
    Rng::new(seed ^ ((mix as u64) << 32) ^ k as u64).next_u64()
}

fn sweep_mix(
    mix: u32,
    make: &impl Fn(u64) -> Result<Box<dyn DeviceModel>, String>,
    o: &SweepOptions,
) -> Result<LoadCurve, String> {
    let write_fraction = mix as f64 / 1000.0;
    let start = 0.5 / unloaded_latency_s(make(point_seed(o.seed, mix, usize::MAX))?.as_mut(), mix);
    let mut points: Vec<CurvePoint> = Vec::new();
    for k in 0..o.max_points {
        let offered = start * o.growth.powi(k as i32);
        let mut dev = make(point_seed(o.seed, mix, k))?;
        let spec = OpenLoop {
            iops: offered,
            write_fraction,
            io_bytes: PAGE,
            span_bytes: dev.capacity_bytes(),
            requests: o.requests,
            warmup: o.requests / 10,
            arrivals: Arrivals::Poisson,
            seed: point_seed(o.seed ^ 0x5eed, mix, k),
        };
        let pt = measure(dev.as_mut(), &spec);
        if points.last().is_some_and(|l| pt.iops <= l.iops) {
            break;
        }
        points.push(pt);
        let under_before = points.iter().any(|p| p.p90_us < SATURATION_P90_US);
        let saturated = pt.p90_us >= SATURATION_P90_US && under_before;
        if saturated || pt.iops < FOLLOWS * offered {
            break;
        }
    }
    Ok(LoadCurve {
        write_permille: mix,
        points,
    })
}

/// Mean latency (s) of 64 requests of the mix issued one at a time: the load the sweep starts
/// at is half the rate one outstanding request sustains, light for any device.
fn unloaded_latency_s(dev: &mut dyn DeviceModel, mix: u32) -> f64 {
    const N: u64 = 64;
    let pages = (dev.capacity_bytes() / PAGE).max(1);
    let mut rng = Rng::new(0x1a7e);
    let mut t: Nanos = 0;
    for _ in 0..N {
        let kind = if rng.below(1000) < mix as u64 {
            OpKind::Write
        } else {
            OpKind::Read
        };
        t = dev.submit(t, kind, rng.below(pages) * PAGE, PAGE);
    }
    (t as f64 / N as f64 / 1e9).max(1e-7)
}

/// One load: achieved IOPS and latency percentiles. Achieved is the requests completed while
/// requests were arriving, over that time: below saturation it misses only the few still in
/// flight at the end (offered load x mean latency), past it the growing backlog. (The time to
/// the last completion would instead count one slow straggler against the whole window, which
/// is short at high loads.)
fn measure(dev: &mut dyn DeviceModel, spec: &OpenLoop) -> CurvePoint {
    let samples = run_open_loop_samples(dev, spec);
    let first = samples.first().map_or(0, |s| s.submit);
    let end = samples.last().map_or(first, |s| s.submit);
    let done = samples.iter().filter(|s| s.done <= end).count();
    let lat: Vec<Nanos> = samples.iter().map(|s| s.latency()).collect();
    let us = |q: f64| (quantile(&lat, q) as f64 / 1e3).max(1e-3);
    CurvePoint {
        iops: done.max(1) as f64 * 1e9 / (end - first).max(1) as f64,
        p50_us: us(0.5),
        p90_us: us(0.9),
        p99_us: us(0.99),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::parse_profile;
    use fusionraid_core::steer::Percentile;

    const HEAD: &str = "SerialNumber,Distribution,Target,Actual,Dropped,NeverSent,Median,90th,99th,99.9th,99.99th,Start,StartTsc";

    #[test]
    fn profile_rows_with_drops_infinities_or_no_gain_are_left_out() {
        let text = format!(
            "{HEAD}\n\
             X1,constant,100,100,0,0,70.0,80.0,90.0,95.0,99.0,1,2\n\
             X1,constant,200,199,0,0,75.0,85.0,95.0,99.0,99.0,1,2\n\
             X1,constant,300,250,4,0,80.0,90.0,99.0,99.0,99.0,1,2\n\
             X1,constant,400,190,0,0,90.0,95.0,99.0,99.0,99.0,1,2\n\
             X1,constant,500,260,0,0,80.0,900.0,inf,inf,inf,1,2\n\
             X1,constant,600,300,0,0,85.0,95.0,2000.0,3000.0,4000.0,1,2\n"
        );
        let p = parse_profile(&text, "X1_250w.csv", "X1", 250).unwrap();
        let c = curve_of_profile(&p).unwrap();
        assert_eq!(c.write_permille, 250);
        let iops: Vec<f64> = c.points.iter().map(|p| p.iops).collect();
        assert_eq!(iops, vec![100.0, 199.0, 300.0]);
        assert_eq!(c.points[1].p90_us, 85.0);
        assert_eq!(c.points[2].p99_us, 2000.0);
        c.validate().unwrap();
    }

    #[test]
    fn a_sweep_is_deterministic_and_rises_to_saturation() {
        let o = SweepOptions {
            requests: 1_000,
            ..SweepOptions::default()
        };
        let a = sweep_preset("dc", &o).unwrap();
        assert_eq!(a, sweep_preset("dc", &o).unwrap());
        let other = SweepOptions { seed: 2, ..o };
        assert_ne!(a, sweep_preset("dc", &other).unwrap());
        let mixes: Vec<u32> = a.curves.iter().map(|c| c.write_permille).collect();
        assert_eq!(mixes, SWEEP_MIXES);
        for c in &a.curves {
            assert!(c.points.len() >= 5, "{c:?}");
            assert!(c.points[0].p90_us < SATURATION_P90_US, "{c:?}");
            // Stopped by a saturation rule, not by the cap.
            assert!(c.points.len() < o.max_points, "{c:?}");
        }
        assert!(a.peak_iops(0.0, Percentile::P99) > a.peak_iops(1.0, Percentile::P99));
        assert!(sweep_preset("nope", &o).is_err());
        let bad = SweepOptions { growth: 1.0, ..o };
        assert!(sweep_preset("dc", &bad).is_err());
    }
}
