//! The latency target: a percentile of some requests' latency and the bound it must stay
//! under, as `fusionraid sim --slo` spells it (`p90:1ms`, `read:p99.9:500us`).

use std::fmt;
use std::str::FromStr;

use fusionraid_core::Nanos;
use serde::Serialize;

/// Which requests the percentile is taken over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SloOps {
    All,
    Read,
    Write,
}

/// "The `percentile` latency of `ops` stays under `limit_ns`".
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SloTarget {
    /// In percent, `0 < percentile < 100` (90 = P90).
    pub percentile: f64,
    /// The bound, exclusive.
    pub limit_ns: Nanos,
    pub ops: SloOps,
}

impl SloTarget {
    pub fn new(percentile: f64, limit_ns: Nanos) -> Self {
        SloTarget {
            percentile,
            limit_ns,
            ops: SloOps::All,
        }
    }

    /// The percentile as a quantile (`0.9` for P90).
    pub fn quantile(&self) -> f64 {
        self.percentile / 100.0
    }

    /// `P90`, `P99.9`.
    pub fn label(&self) -> String {
        format!("P{}", self.percentile)
    }

    /// Whether a latency (microseconds, as the histograms give it) meets the target.
    pub fn met_by(&self, latency_us: f64) -> bool {
        latency_us * 1e3 < self.limit_ns as f64
    }

    /// Why the target cannot be used, if it cannot.
    pub fn problem(&self) -> Option<String> {
        if !(self.percentile > 0.0 && self.percentile < 100.0) {
            return Some(format!(
                "percentile {} must be above 0 and below 100",
                self.percentile
            ));
        }
        (self.limit_ns == 0).then(|| "the latency bound must be positive".to_string())
    }
}

impl fmt::Display for SloTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ops = match self.ops {
            SloOps::All => "all requests",
            SloOps::Read => "reads",
            SloOps::Write => "writes",
        };
        write!(
            f,
            "{} of {ops} < {}",
            self.label(),
            latency(self.limit_ns as f64 / 1e3)
        )
    }
}

/// A latency in microseconds in a short unit: `412 us`, `1.25 ms`, `2.50 s`.
pub(super) fn latency(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.0} us")
    }
}

const FORM: &str = "expected [read:|write:]PERCENTILE:LATENCY, e.g. p90:1ms, p99.9:500us, \
                    read:p99:2ms";

impl FromStr for SloTarget {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.trim().split(':').map(str::trim).collect();
        let (ops, pct, bound) = match parts[..] {
            [p, b] => (SloOps::All, p, b),
            [o, p, b] => (parse_ops(o)?, p, b),
            _ => return Err(format!("'{s}': {FORM}")),
        };
        let percentile = pct
            .strip_prefix(['p', 'P'])
            .and_then(|n| n.parse::<f64>().ok())
            .ok_or_else(|| format!("'{pct}' is not a percentile (p50, p90, p99, p99.9)"))?;
        let t = SloTarget {
            percentile,
            limit_ns: parse_latency(bound)?,
            ops,
        };
        match t.problem() {
            Some(p) => Err(format!("'{s}': {p}")),
            None => Ok(t),
        }
    }
}

fn parse_ops(o: &str) -> Result<SloOps, String> {
    match o.to_ascii_lowercase().as_str() {
        "all" => Ok(SloOps::All),
        "read" | "reads" => Ok(SloOps::Read),
        "write" | "writes" => Ok(SloOps::Write),
        _ => Err(format!("'{o}' is not read, write or all ({FORM})")),
    }
}

/// `500us`, `1ms`, `1.5ms`, `2s`, `800ns`: a positive latency with its unit.
fn parse_latency(b: &str) -> Result<Nanos, String> {
    let split = b
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(b.len());
    let (num, unit) = b.split_at(split);
    let not_latency = || format!("'{b}' is not a latency (e.g. 1ms, 500us)");
    if num.is_empty() {
        return Err(not_latency());
    }
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" => return Err(format!("'{b}' has no unit (us, ms, s)")),
        u => {
            return Err(format!(
                "unknown latency unit '{u}' in '{b}' (ns, us, ms, s)"
            ));
        }
    };
    let ns = num
        .parse::<f64>()
        .map(|x| (x * scale).round())
        .map_err(|_| not_latency())?;
    // An hour: the histograms' top (longer latencies are all recorded as an hour).
    if !(1.0..=3.6e12).contains(&ns) {
        return Err(format!("latency bound '{b}' must be from 1 ns to an hour"));
    }
    Ok(ns as Nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_print() {
        let t: SloTarget = "p90:1ms".parse().unwrap();
        assert_eq!(t, SloTarget::new(90.0, 1_000_000));
        assert_eq!(t.to_string(), "P90 of all requests < 1.00 ms");
        assert!(t.met_by(999.0) && !t.met_by(1000.0));
        let t: SloTarget = " read : P99.9 : 500us ".parse().unwrap();
        assert_eq!(
            (t.ops, t.limit_ns, t.label()),
            (SloOps::Read, 500_000, "P99.9".into())
        );
        assert!((t.quantile() - 0.999).abs() < 1e-12);
        let t: SloTarget = "write:p50:1.5s".parse().unwrap();
        assert_eq!((t.ops, t.limit_ns), (SloOps::Write, 1_500_000_000));
    }

    #[test]
    fn bad_targets_are_explained() {
        let cases = [
            ("p90", "expected [read:|write:]PERCENTILE:LATENCY"),
            ("a:b:c:d", "expected"),
            ("90:1ms", "not a percentile"),
            ("px:1ms", "not a percentile"),
            ("p100:1ms", "below 100"),
            ("p0:1ms", "above 0"),
            ("p90:1", "no unit"),
            ("p90:1min", "unknown latency unit 'min'"),
            ("p90:fast", "not a latency"),
            ("p90:0ms", "from 1 ns"),
            ("p90:2h", "unknown latency unit"),
            ("p90:9999s", "to an hour"),
            ("disk:p90:1ms", "not read, write or all"),
        ];
        for (text, want) in cases {
            let e = text.parse::<SloTarget>().unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
