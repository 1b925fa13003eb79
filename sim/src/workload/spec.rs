//! The named workloads of the paper's Table 4 and the parameter set that drives a generator.

use std::fmt;
use std::str::FromStr;

use super::address::Hotspot;
use super::arrivals::Burst;
use super::sizes::SizeMix;

/// The eight workloads of FusionRAID's Table 4, in the table's order (`index()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Workload {
    YcsbLoad,
    YcsbA,
    YcsbB,
    Tpcc,
    TensorFlow,
    VirtualDesktop,
    Exchange,
    Proxy,
}

/// One row of Table 4 as published: the targets a generator must reproduce.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Table4Row {
    pub iops: f64,
    /// Writes / all requests.
    pub write_ratio: f64,
    /// Mean write size in KiB (the paper's "KB"; its sizes are block sizes, so 1024 bytes).
    pub avg_write_kib: f64,
}

impl Workload {
    pub const ALL: [Workload; 8] = [
        Workload::YcsbLoad,
        Workload::YcsbA,
        Workload::YcsbB,
        Workload::Tpcc,
        Workload::TensorFlow,
        Workload::VirtualDesktop,
        Workload::Exchange,
        Workload::Proxy,
    ];

    /// Position in Table 4 (and in [`ALL`](Self::ALL)).
    pub fn index(self) -> usize {
        self as usize
    }

    /// Canonical name, accepted by `FromStr`.
    pub fn name(self) -> &'static str {
        match self {
            Workload::YcsbLoad => "ycsb-load",
            Workload::YcsbA => "ycsb-a",
            Workload::YcsbB => "ycsb-b",
            Workload::Tpcc => "tpcc",
            Workload::TensorFlow => "tensorflow",
            Workload::VirtualDesktop => "vd",
            Workload::Exchange => "exchange",
            Workload::Proxy => "proxy",
        }
    }

    /// The published characteristics (Table 4).
    pub fn table4(self) -> Table4Row {
        let (iops, write_ratio, avg_write_kib) = match self {
            Workload::YcsbLoad => (409.0, 0.99, 507.0),
            Workload::YcsbA => (1353.0, 0.64, 500.4),
            Workload::YcsbB => (1218.0, 0.62, 500.2),
            Workload::Tpcc => (5764.0, 0.75, 29.6),
            Workload::TensorFlow => (65.0, 0.69, 80.1),
            Workload::VirtualDesktop => (811.0, 0.42, 23.8),
            Workload::Exchange => (846.0, 0.70, 13.1),
            Workload::Proxy => (307.0, 0.32, 13.8),
        };
        Table4Row {
            iops,
            write_ratio,
            avg_write_kib,
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `FromStr` error for [`Workload`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownWorkload(pub String);

impl fmt::Display for UnknownWorkload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown workload '{}' (expected ycsb-load, ycsb-a, ycsb-b, tpcc, tensorflow/tf, \
             vd/virtualdesktop, exchange or proxy)",
            self.0
        )
    }
}

impl std::error::Error for UnknownWorkload {}

impl FromStr for Workload {
    type Err = UnknownWorkload;

    /// Case-insensitive; `_` and `-` are interchangeable and optional.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let key: String = s
            .trim()
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .map(|c| c.to_ascii_lowercase())
            .collect();
        Ok(match key.as_str() {
            "ycsbload" => Workload::YcsbLoad,
            "ycsba" => Workload::YcsbA,
            "ycsbb" => Workload::YcsbB,
            "tpcc" => Workload::Tpcc,
            "tensorflow" | "tf" => Workload::TensorFlow,
            "vd" | "virtualdesktop" => Workload::VirtualDesktop,
            "exchange" => Workload::Exchange,
            "proxy" => Workload::Proxy,
            _ => return Err(UnknownWorkload(s.to_string())),
        })
    }
}

/// Everything a [`Generator`](super::Generator) needs. Fields are public so experiments can
/// start from a catalog entry and change one knob (e.g. scale `iops` or shrink `footprint`).
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    pub name: String,
    /// Long-run requests per second.
    pub iops: f64,
    /// Probability that a request is a write.
    pub write_ratio: f64,
    pub write_sizes: SizeMix,
    pub read_sizes: SizeMix,
    /// Bytes addressed: offsets fall in `0..footprint`.
    pub footprint: u64,
    /// Probability that a write continues the previous write's run.
    pub write_seq: f64,
    /// Probability that a read continues the previous read's run.
    pub read_seq: f64,
    /// Skew of the random (non-sequential) requests, if any.
    pub hotspot: Option<Hotspot>,
    pub burst: Burst,
}

impl WorkloadSpec {
    /// Why this spec cannot drive a generator, if it cannot.
    pub fn problem(&self) -> Option<String> {
        let prob = |p: f64| (0.0..=1.0).contains(&p);
        if !(self.iops.is_finite() && self.iops >= 0.0) {
            return Some(format!("iops must be finite and >= 0, got {}", self.iops));
        }
        if !prob(self.write_ratio) || !prob(self.write_seq) || !prob(self.read_seq) {
            return Some("write_ratio, write_seq and read_seq must be in [0, 1]".into());
        }
        if self.footprint < fusionraid_core::PAGE_SIZE {
            return Some(format!(
                "footprint of {} bytes is below 4 KiB",
                self.footprint
            ));
        }
        (self.write_ratio > 0.0)
            .then(|| self.write_sizes.problem())
            .flatten()
            .or_else(|| {
                (self.write_ratio < 1.0)
                    .then(|| self.read_sizes.problem())
                    .flatten()
            })
            .or_else(|| self.hotspot.and_then(|h| h.problem()))
            .or_else(|| self.burst.problem())
            .map(|p| format!("{}: {p}", self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse() {
        for w in Workload::ALL {
            assert_eq!(w.name().parse::<Workload>(), Ok(w));
            assert_eq!(Workload::ALL[w.index()], w);
        }
        assert_eq!("tf".parse::<Workload>(), Ok(Workload::TensorFlow));
        assert_eq!(
            "VirtualDesktop".parse::<Workload>(),
            Ok(Workload::VirtualDesktop)
        );
        assert_eq!("YCSB_A".parse::<Workload>(), Ok(Workload::YcsbA));
        assert!(
            "ycsb-c"
                .parse::<Workload>()
                .unwrap_err()
                .to_string()
                .contains("ycsb-c")
        );
    }
}
