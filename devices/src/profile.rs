//! Reader for the measured SSD load-latency profiles (`data/ssd-profiles/`, from the public
//! Sandook artifact): one CSV per drive and read/write mix, named `<serial>_<mix>.csv` where
//! `<mix>` is `100r` (all reads) or `NNNw` (NNN tenths of a percent writes). Columns:
//! `SerialNumber,Distribution,Target,Actual,Dropped,NeverSent,Median,90th,99th,99.9th,99.99th,
//! Start,StartTsc`, latencies in microseconds (`inf` when requests were lost).

use std::fs;
use std::path::{Path, PathBuf};

const COLUMNS: [&str; 13] = [
    "SerialNumber",
    "Distribution",
    "Target",
    "Actual",
    "Dropped",
    "NeverSent",
    "Median",
    "90th",
    "99th",
    "99.9th",
    "99.99th",
    "Start",
    "StartTsc",
];

/// One offered-load point.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileRow {
    pub target_iops: f64,
    pub actual_iops: f64,
    pub dropped: u64,
    pub never_sent: u64,
    /// Median, 90th, 99th, 99.9th, 99.99th percentiles (us).
    pub pct_us: [f64; 5],
}

impl ProfileRow {
    pub fn p50_us(&self) -> f64 {
        self.pct_us[0]
    }
    pub fn p99_us(&self) -> f64 {
        self.pct_us[2]
    }
}

/// One drive under one mix.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub serial: String,
    /// Writes in tenths of a percent (0 = read only, 1000 = write only).
    pub write_permille: u32,
    pub distribution: String,
    pub rows: Vec<ProfileRow>,
    pub path: PathBuf,
}

impl Profile {
    pub fn write_fraction(&self) -> f64 {
        self.write_permille as f64 / 1000.0
    }

    /// Sandook's saturation rule: the device saturates where P99 first reaches
    /// `threshold_us` (it uses 1000 us) or requests are lost; returns the highest offered load
    /// below that point.
    pub fn last_unsaturated(&self, threshold_us: f64) -> Option<&ProfileRow> {
        self.rows
            .iter()
            .take_while(|r| r.dropped == 0 && r.p99_us().is_finite() && r.p99_us() < threshold_us)
            .last()
    }

    /// Rows before saturation (as in [`Profile::last_unsaturated`]).
    pub fn unsaturated(&self, threshold_us: f64) -> &[ProfileRow] {
        let n = self
            .rows
            .iter()
            .take_while(|r| r.dropped == 0 && r.p99_us().is_finite() && r.p99_us() < threshold_us)
            .count();
        &self.rows[..n]
    }
}

/// `<serial>_<mix>` -> (serial, write permille).
pub fn parse_file_stem(stem: &str) -> Result<(String, u32), String> {
    let (serial, mix) = stem
        .rsplit_once('_')
        .ok_or_else(|| format!("'{stem}': expected <serial>_<mix>"))?;
    let permille = if mix == "100r" {
        0
    } else if let Some(n) = mix.strip_suffix('w') {
        n.parse::<u32>()
            .ok()
            .filter(|&n| n <= 1000)
            .ok_or_else(|| format!("'{stem}': bad mix '{mix}'"))?
    } else {
        return Err(format!("'{stem}': bad mix '{mix}' (want 100r or NNNw)"));
    };
    Ok((serial.to_string(), permille))
}

fn num(field: &str, what: &str, label: &str, line: usize) -> Result<f64, String> {
    let v: f64 = field
        .trim()
        .parse()
        .map_err(|_| format!("{label}:{line}: column '{what}' is not a number: '{field}'"))?;
    if v.is_nan() || v < 0.0 {
        return Err(format!(
            "{label}:{line}: column '{what}' out of range: '{field}'"
        ));
    }
    Ok(v)
}

/// Parses a profile's text; `label` (the file name) prefixes every error with `:line`.
pub fn parse_profile(
    text: &str,
    label: &str,
    serial: &str,
    permille: u32,
) -> Result<Profile, String> {
    let mut lines = text.lines().enumerate();
    let (_, header) = lines
        .next()
        .ok_or_else(|| format!("{label}:1: empty file"))?;
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    if cols != COLUMNS {
        return Err(format!(
            "{label}:1: unexpected header, want {}",
            COLUMNS.join(",")
        ));
    }
    let mut rows = Vec::new();
    let mut distribution = String::new();
    for (i, line) in lines {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != COLUMNS.len() {
            return Err(format!(
                "{label}:{n}: expected {} columns, found {}",
                COLUMNS.len(),
                f.len()
            ));
        }
        if f[0].trim() != serial {
            return Err(format!(
                "{label}:{n}: serial '{}' does not match file name",
                f[0]
            ));
        }
        if distribution.is_empty() {
            distribution = f[1].trim().to_string();
        } else if distribution != f[1].trim() {
            return Err(format!("{label}:{n}: distribution changes to '{}'", f[1]));
        }
        let mut pct_us = [0.0; 5];
        for (k, p) in pct_us.iter_mut().enumerate() {
            *p = num(f[6 + k], COLUMNS[6 + k], label, n)?;
        }
        if pct_us.windows(2).any(|w| w[1] < w[0]) {
            return Err(format!("{label}:{n}: percentiles decrease"));
        }
        let row = ProfileRow {
            target_iops: num(f[2], "Target", label, n)?,
            actual_iops: num(f[3], "Actual", label, n)?,
            dropped: num(f[4], "Dropped", label, n)? as u64,
            never_sent: num(f[5], "NeverSent", label, n)? as u64,
            pct_us,
        };
        if !row.target_iops.is_finite() || row.target_iops <= 0.0 {
            return Err(format!("{label}:{n}: Target must be positive"));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(format!("{label}: no data rows"));
    }
    Ok(Profile {
        serial: serial.to_string(),
        write_permille: permille,
        distribution,
        rows,
        path: PathBuf::from(label),
    })
}

/// Reads one profile file.
pub fn load_profile(path: &Path) -> Result<Profile, String> {
    let label = path.display().to_string();
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| format!("{label}: not a profile file name"))?;
    let (serial, permille) = parse_file_stem(stem).map_err(|e| format!("{label}: {e}"))?;
    let text = fs::read_to_string(path).map_err(|e| format!("{label}: {e}"))?;
    let mut p = parse_profile(&text, &label, &serial, permille)?;
    p.path = path.to_path_buf();
    Ok(p)
}

/// All mixes of one drive in `dir`, ordered by write fraction.
pub fn load_device(dir: &Path, serial: &str) -> Result<Vec<Profile>, String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for e in entries {
        let path = e.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let is_csv = path.extension().is_some_and(|x| x == "csv");
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if is_csv && stem.rsplit_once('_').is_some_and(|(s, _)| s == serial) {
            out.push(load_profile(&path)?);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "{}: no profiles for serial '{serial}'",
            dir.display()
        ));
    }
    out.sort_by_key(|p| p.write_permille);
    Ok(out)
}

/// Serial numbers with at least one profile in `dir`, sorted.
pub fn list_serials(dir: &Path) -> Result<Vec<String>, String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for e in entries {
        let path = e.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.extension().is_none_or(|x| x != "csv") {
            continue;
        }
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if let Ok((serial, _)) = parse_file_stem(stem) {
            out.push(serial);
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "SerialNumber,Distribution,Target,Actual,Dropped,NeverSent,Median,90th,99th,99.9th,99.99th,Start,StartTsc";

    #[test]
    fn parses_rows_and_inf() {
        let text = format!(
            "{HEAD}\nX1,constant,100,100,0,1,76.0,89.0,94.0,135.0,155.0,1,2\n\
             X1,constant,200,190,5,1,80.0,90.0,inf,inf,inf,1,2\n"
        );
        let p = parse_profile(&text, "X1_500w.csv", "X1", 500).unwrap();
        assert_eq!(p.rows.len(), 2);
        assert_eq!(p.distribution, "constant");
        assert_eq!(p.rows[0].p99_us(), 94.0);
        assert!(p.rows[1].p99_us().is_infinite());
        assert_eq!(p.last_unsaturated(1000.0).unwrap().target_iops, 100.0);
        assert_eq!(p.write_fraction(), 0.5);
    }

    #[test]
    fn errors_name_file_and_line() {
        let text = format!("{HEAD}\nX1,constant,100,100,0,1,76.0,89.0,9x4,135.0,155.0,1,2\n");
        let e = parse_profile(&text, "X1_100r.csv", "X1", 0).unwrap_err();
        assert!(e.starts_with("X1_100r.csv:2:") && e.contains("99th"), "{e}");
        let text = format!("{HEAD}\nX1,constant,100\n");
        let e = parse_profile(&text, "f.csv", "X1", 0).unwrap_err();
        assert!(e.starts_with("f.csv:2: expected 13 columns"), "{e}");
        let e = parse_profile("a,b\n", "f.csv", "X1", 0).unwrap_err();
        assert!(e.starts_with("f.csv:1: unexpected header"), "{e}");
    }

    #[test]
    fn file_names() {
        assert_eq!(parse_file_stem("SDM1_100r").unwrap(), ("SDM1".into(), 0));
        assert_eq!(parse_file_stem("SDM1_250w").unwrap(), ("SDM1".into(), 250));
        assert!(parse_file_stem("SDM1_250x").is_err());
        assert!(parse_file_stem("SDM1").is_err());
    }
}
