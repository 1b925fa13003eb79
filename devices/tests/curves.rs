//! Load-latency curves for steering: the measured ones of every profiled serial, and the ones
//! swept from the fitted presets, against each other (device data only).

use std::path::{Path, PathBuf};

use fusionraid_core::steer::{DeviceCurves, LoadCurve, Percentile};
use fusionraid_devices::curves::{SWEEP_MIXES, SweepOptions, load_serial, sweep_preset};
use fusionraid_devices::fitted_fleet::PROFILED;
use fusionraid_devices::profile::load_device;

/// `FUSIONRAID_PROFILES`, or the shared data directory next to the checkout.
fn profiles_dir() -> PathBuf {
    std::env::var_os("FUSIONRAID_PROFILES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/ssd-profiles")
        })
}

fn curve(c: &DeviceCurves, permille: u32) -> &LoadCurve {
    c.curves
        .iter()
        .find(|l| l.write_permille == permille)
        .unwrap_or_else(|| panic!("{}: no {permille}w curve", c.name))
}

#[test]
fn every_serial_has_one_curve_per_mix_file() {
    for d in &PROFILED {
        let files = load_device(&profiles_dir(), d.serial).unwrap();
        let c = load_serial(&profiles_dir(), d.serial).unwrap();
        assert_eq!(c.name, d.serial);
        assert_eq!(c.curves.len(), files.len(), "{}", d.serial);
        for p in [Percentile::P90, Percentile::P99] {
            let (read, write) = (c.peak_iops(0.0, p), c.peak_iops(1.0, p));
            assert!(
                write > 0.0 && read > write,
                "{} {p:?}: {read} {write}",
                d.serial
            );
        }
    }
}

/// Swept latency within this factor of the measured one at moderate loads (a quarter and a
/// half of each measured mix's P90 peak), at the median and the 90th percentile. Not the
/// 99th: on mixed curves it sits on the share of reads that meet a flash program, and jumps
/// between ~0.1 and ~2 ms within one load step in the measurements themselves.
const LATENCY_FACTOR: f64 = 2.0;
/// Swept P90 peak within this factor of the measured one, every mix.
const PEAK_FACTOR: f64 = 1.5;

fn within(ratio: f64, factor: f64) -> bool {
    ratio <= factor && ratio >= 1.0 / factor
}

fn check_swept_against_measured(preset: &str, serial: &str) {
    let model = sweep_preset(preset, &SweepOptions::default()).unwrap();
    let measured = load_serial(&profiles_dir(), serial).unwrap();
    for mix in SWEEP_MIXES {
        let (s, m) = (curve(&model, mix), curve(&measured, mix));
        let peak = m.peak_iops(Percentile::P90);
        for f in [0.25, 0.5] {
            for p in [Percentile::P50, Percentile::P90] {
                let r = s.predict_us(f * peak, p) / m.predict_us(f * peak, p);
                println!("{preset} {mix:>4}w at {f} of the P90 peak, {p:?}: model/measured {r:.2}");
                assert!(within(r, LATENCY_FACTOR), "{preset} {mix}w {f} {p:?}: {r}");
            }
        }
        let r = s.peak_iops(Percentile::P90) / peak;
        println!("{preset} {mix:>4}w P90 peak: model/measured {r:.2}");
        assert!(within(r, PEAK_FACTOR), "{preset} {mix}w peak {r}");
    }
    for p in [Percentile::P90, Percentile::P99] {
        let read = model.peak_iops(0.0, p);
        assert!(read > model.peak_iops(1.0, p), "{preset} {p:?}");
        assert!(model.curves.iter().all(|c| c.peak_iops(p) > 0.0));
    }
    // A quarter of writes mixed in: some reads wait behind flash programs, so the 99th
    // percentile crosses 1 ms below the read-only peak, in the model as on the drives.
    assert!(
        model.peak_iops(0.25, Percentile::P99) < model.peak_iops(0.0, Percentile::P99),
        "{preset}"
    );
}

/// The two serials whose fits the named presets reproduce within 35% (`calibration.rs`), one
/// per vendor.
#[test]
fn swept_curves_of_fitted_serials_follow_their_profiles() {
    check_swept_against_measured("s39wna0kb01161", "S39WNA0KB01161");
    check_swept_against_measured("sdm00001c5d1", "SDM00001C5D1");
}
