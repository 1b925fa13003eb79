//! Sweeps device presets into load-latency curves (`curves::sweep_preset`) and prints each
//! curve's points, peaks and the sweep's wall time; for a profiled serial's preset, also the
//! swept latency against the measured one at 25/50/75% of each measured mix's P90 peak.
//!
//! `cargo run --release -p fusionraid-devices --example sweep_curves [PRESET...]`

use std::path::{Path, PathBuf};
use std::time::Instant;

use fusionraid_core::steer::{DeviceCurves, Percentile};
use fusionraid_devices::curves::{SweepOptions, load_serial, sweep_preset};
use fusionraid_devices::fitted_fleet::drive;

fn profiles_dir() -> PathBuf {
    std::env::var_os("FUSIONRAID_PROFILES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/ssd-profiles")
        })
}

fn print_curves(c: &DeviceCurves) {
    for l in &c.curves {
        let last = l.points.last().expect("a point");
        println!(
            "  {:>4}w: {:>2} points up to {:>9.0} IOPS (P90 {:>7.0} us); peak P90 {:>9.0}, P99 {:>9.0}",
            l.write_permille,
            l.points.len(),
            last.iops,
            last.p90_us,
            l.peak_iops(Percentile::P90),
            l.peak_iops(Percentile::P99)
        );
    }
}

fn compare(model: &DeviceCurves, measured: &DeviceCurves) {
    for m in &measured.curves {
        let Some(s) = model
            .curves
            .iter()
            .find(|c| c.write_permille == m.write_permille)
        else {
            continue;
        };
        let peak = m.peak_iops(Percentile::P90);
        for f in [0.25, 0.5, 0.75] {
            let iops = f * peak;
            let r = |p| s.predict_us(iops, p) / m.predict_us(iops, p);
            println!(
                "  {:>4}w at {:>8.0} IOPS ({f} of measured P90 peak): model/measured P50 {:.2} P90 {:.2} P99 {:.2}",
                m.write_permille,
                iops,
                r(Percentile::P50),
                r(Percentile::P90),
                r(Percentile::P99)
            );
        }
        println!(
            "  {:>4}w peaks model/measured: P90 {:.2}, P99 {:.2}",
            m.write_permille,
            s.peak_iops(Percentile::P90) / peak,
            s.peak_iops(Percentile::P99) / m.peak_iops(Percentile::P99)
        );
    }
}

fn main() -> Result<(), String> {
    let names: Vec<String> = std::env::args().skip(1).collect();
    for name in names {
        let t = Instant::now();
        let c = sweep_preset(&name, &SweepOptions::default())?;
        println!("{name}: swept in {:.2} s", t.elapsed().as_secs_f64());
        print_curves(&c);
        if let Some(d) = drive(&name) {
            let measured = load_serial(&profiles_dir(), d.serial)?;
            println!("{name} measured:");
            print_curves(&measured);
            compare(&c, &measured);
        }
    }
    Ok(())
}
