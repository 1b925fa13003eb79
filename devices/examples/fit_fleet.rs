//! Fits every profiled drive (or the serials given as arguments) and prints the entries of
//! `fitted_fleet::PROFILED` to freeze, plus each fit's error on stderr. Run in release (a fit
//! is ~25 s there):
//!
//! `cargo run --release -p fusionraid-devices --example fit_fleet [SERIAL...]`
//!
//! With `--report` first, fits nothing and prints instead how close each frozen preset is to
//! its curves (a Markdown table row per drive, as in docs/DEVICE_MODELS.md).
//!
//! Profiles: `FUSIONRAID_PROFILES`, or the shared data directory next to the checkout.

use std::path::{Path, PathBuf};

use fusionraid_devices::fit::{self, FitOptions, FitParams};
use fusionraid_devices::fitted_fleet::{PROFILED, ProfiledDrive, model_of};
use fusionraid_devices::profile::{Profile, list_serials, load_device};

fn profiles_dir() -> PathBuf {
    std::env::var_os("FUSIONRAID_PROFILES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/ssd-profiles")
        })
}

/// `1234567` -> `1_234_567`.
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push('_');
        }
        out.push(c);
    }
    out
}

/// A capacity as `last_load * multiplier` when it is exactly that (how the fit builds it),
/// else the value itself.
fn capacity(value: f64, last: f64, grid: &[f64]) -> String {
    match grid.iter().find(|&&m| last * m == value) {
        Some(m) if last.fract() == 0.0 => format!("{}.0 * {m:?}", grouped(last as u64)),
        _ => format!("{value:?}"),
    }
}

fn last_load(p: &Profile) -> f64 {
    fit::below_saturation(p)
        .last()
        .map_or(p.rows[0].target_iops, |r| r.target_iops)
}

fn params_src(p: &FitParams, r_last: f64, w_last: f64) -> String {
    let cap = [1.01, 1.03, 1.06, 1.1, 1.2];
    let wcap = [1.01, 1.03, 1.06, 1.1, 1.3, 1.7, 2.5];
    let unit = if p.program_unit_bytes.is_multiple_of(1024) {
        format!("{} * KIB", p.program_unit_bytes / 1024)
    } else {
        p.program_unit_bytes.to_string()
    };
    let suspend = match p.suspend {
        None => "None".to_string(),
        Some(s) => format!(
            "Some(ProgramSuspend {{ suspend_ns: {}, max_per_program: {} }})",
            grouped(s.suspend_ns),
            s.max_per_program
        ),
    };
    format!(
        "FitParams {{ ctrl_servers: {}, write_servers: {}, read_cap_iops: {}, write_cap_iops: {}, \
         dies: {}, die_read_ns: {}, program_ns: {}, program_unit_bytes: {unit}, suspend: {suspend} }}",
        p.ctrl_servers,
        p.write_servers,
        capacity(p.read_cap_iops, r_last, &cap),
        capacity(p.write_cap_iops, w_last, &wcap),
        p.dies,
        grouped(p.die_read_ns),
        grouped(p.program_ns),
    )
}

/// One table row: mixes, parameters, robust P99 / P90 errors on the fit's rows of every mix
/// file, P99 points within 35%.
fn report(d: &ProfiledDrive, dir: &Path) -> Result<(), String> {
    let profiles = load_device(dir, d.serial)?;
    let all: Vec<&Profile> = profiles.iter().collect();
    let points = fit::evaluate(&d.config(), &all, &FitOptions::default());
    let near = points
        .iter()
        .filter(|p| (p.ratio() - 1.0).abs() <= 0.35)
        .count();
    let mixes: Vec<String> = profiles
        .iter()
        .map(|p| match p.write_permille {
            0 => "100r".to_string(),
            m => format!("{m}w"),
        })
        .collect();
    let p = &d.params;
    println!(
        "| `{}` | {} | {} | {:.0}K / {:.0}K | {} x {} us | {} us, {} KiB{} | {:.2} / {:.2} | {}/{} |",
        d.name,
        d.model,
        mixes.join(" "),
        p.read_cap_iops / 1e3,
        p.write_cap_iops / 1e3,
        p.dies,
        p.die_read_ns / 1000,
        p.program_ns / 1000,
        p.program_unit_bytes / 1024,
        p.suspend.map_or(String::new(), |s| format!(
            ", suspend {} us x {}",
            s.suspend_ns / 1000,
            s.max_per_program
        )),
        fit::robust_log_error_p99(&points),
        fit::robust_log_error_p90(&points),
        near,
        points.len()
    );
    Ok(())
}

fn main() -> Result<(), String> {
    let dir = profiles_dir();
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--report") {
        args.remove(0);
        for d in PROFILED
            .iter()
            .filter(|d| args.is_empty() || args.contains(&d.serial.to_string()))
        {
            report(d, &dir)?;
        }
        return Ok(());
    }
    let serials = if args.is_empty() {
        list_serials(&dir)?
    } else {
        args
    };
    for serial in serials {
        let profiles = load_device(&dir, &serial)?;
        let name = serial.to_ascii_lowercase();
        let r = fit::fit_profiles(&name, &profiles, &FitOptions::default())
            .map_err(|e| format!("{serial}: {e}"))?;
        let reads = profiles
            .iter()
            .find(|p| p.write_permille == 0)
            .expect("fit");
        let writes = profiles
            .iter()
            .find(|p| p.write_permille == 1000)
            .expect("fit");
        let worst = r
            .points
            .iter()
            .map(|p| p.ratio())
            .max_by(|a, b| a.ln().abs().total_cmp(&b.ln().abs()))
            .unwrap_or(1.0);
        let mixes: Vec<u32> = profiles.iter().map(|p| p.write_permille).collect();
        eprintln!(
            "{serial}: mixes {mixes:?}, rms log error P99 {:.3} P90 {:.3}, worst P99 ratio {worst:.2}, {:?}",
            r.rms_log_error,
            fit::rms_log_error_p90(&r.points),
            r.params
        );
        println!(
            "    ProfiledDrive {{ serial: {serial:?}, name: {name:?}, model: {:?}, read_us: {:?}, \
             write_us: {:?}, params: {} }},",
            model_of(&serial),
            reads.rows[0].pct_us,
            writes.rows[0].pct_us,
            params_src(&r.params, last_load(reads), last_load(writes))
        );
    }
    Ok(())
}
