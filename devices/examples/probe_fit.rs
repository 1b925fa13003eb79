//! Scratch: fit one serial and compare swept peaks with measured.
use fusionraid_core::steer::Percentile;
use fusionraid_devices::curves::{SweepOptions, load_serial, sweep};
use fusionraid_devices::fit::{self, FitOptions};
use fusionraid_devices::profile::load_device;
use fusionraid_devices::{DeviceModel, SsdModel};
use std::path::Path;
use std::time::Instant;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/ssd-profiles");
    let frozen = std::env::var("FROZEN").is_ok();
    for serial in std::env::args().skip(1) {
        let profiles = load_device(&dir, &serial).unwrap();
        let t = Instant::now();
        let (cfg, points) = if frozen {
            let cfg = fusionraid_devices::preset(&serial.to_ascii_lowercase()).unwrap();
            let all: Vec<_> = profiles
                .iter()
                .filter(|p| [0, 100, 250, 500, 1000].contains(&p.write_permille))
                .collect();
            let pts = fit::evaluate(&cfg, &all, &FitOptions::default());
            println!("{serial}: frozen");
            (cfg, pts)
        } else {
            let r = fit::fit_profiles(&serial, &profiles, &FitOptions::default()).unwrap();
            println!(
                "{serial}: fit {:.1}s {:?}",
                t.elapsed().as_secs_f64(),
                r.params
            );
            (r.config, r.points)
        };
        if std::env::var("VERBOSE").is_ok() {
            for p in &points {
                println!(
                    "    {:>4}w {:>8.0} P90 {:>6.0}/{:>6.0} P99 {:>6.0}/{:>6.0}",
                    p.write_permille,
                    p.target_iops,
                    p.model_p90_us,
                    p.measured_p90_us,
                    p.model_p99_us,
                    p.measured_p99_us
                );
            }
        }
        let cap = 2f64.ln().powi(2);
        let r99 = (points
            .iter()
            .map(|p| p.ratio().ln().powi(2).min(cap))
            .sum::<f64>()
            / points.len() as f64)
            .sqrt();
        let r90 = (points
            .iter()
            .map(|p| p.ratio_p90().ln().powi(2).min(cap))
            .sum::<f64>()
            / points.len() as f64)
            .sqrt();
        println!("  robust99 {r99:.3} robust90 {r90:.3}");
        println!(
            "  rms p99 {:.3} p90 {:.3} robust {:.3} (n {})",
            fit::rms_log_error(&points),
            fit::rms_log_error_p90(&points),
            fit::robust_log_error(&points),
            points.len()
        );
        let c = sweep(
            &serial,
            |seed| Ok(Box::new(SsdModel::new(cfg.clone().with_seed(seed))) as Box<dyn DeviceModel>),
            &SweepOptions::default(),
        )
        .unwrap();
        let m = load_serial(&dir, &serial).unwrap();
        for mc in &m.curves {
            if let Some(s) = c
                .curves
                .iter()
                .find(|x| x.write_permille == mc.write_permille)
            {
                println!(
                    "  {:>4}w P90 {:.2} P99 {:.2}",
                    mc.write_permille,
                    s.peak_iops(Percentile::P90) / mc.peak_iops(Percentile::P90),
                    s.peak_iops(Percentile::P99) / mc.peak_iops(Percentile::P99)
                );
            }
        }
    }
}
