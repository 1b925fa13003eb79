//! The trace formats by name.

use std::fmt;
use std::str::FromStr;

use fusionraid_core::Nanos;

use super::options::TraceOptions;

/// A supported trace format. Parses from (case-insensitive) `disksim`, `msr`, `alibaba`,
/// `tencent`, `blkparse`, `fio`, plus a few obvious aliases (`mqsim`, `snia`, `blktrace`,
/// `iolog`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    DiskSim,
    Msr,
    Alibaba,
    Tencent,
    Blkparse,
    Fio,
}

impl TraceFormat {
    pub const ALL: [TraceFormat; 6] = [
        TraceFormat::DiskSim,
        TraceFormat::Msr,
        TraceFormat::Alibaba,
        TraceFormat::Tencent,
        TraceFormat::Blkparse,
        TraceFormat::Fio,
    ];

    /// The canonical name, as accepted by `FromStr`.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::DiskSim => "disksim",
            TraceFormat::Msr => "msr",
            TraceFormat::Alibaba => "alibaba",
            TraceFormat::Tencent => "tencent",
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::Fio => "fio",
        }
    }

    /// Resolution of the format's clock: records sharing a timestamp are spread over this.
    pub fn tick_ns(self, opts: &TraceOptions) -> Nanos {
        match self {
            TraceFormat::DiskSim => opts.disksim_time_unit_ns,
            TraceFormat::Msr => 100,
            TraceFormat::Alibaba => 1_000,
            TraceFormat::Tencent => 1_000_000_000,
            TraceFormat::Blkparse => 1,
            TraceFormat::Fio => opts.fio_time_unit_ns,
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `FromStr` error: the name matched no format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownTraceFormat(pub String);

impl fmt::Display for UnknownTraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown trace format '{}' (expected disksim, msr, alibaba, tencent, blkparse or fio)",
            self.0
        )
    }
}

impl std::error::Error for UnknownTraceFormat {}

impl FromStr for TraceFormat {
    type Err = UnknownTraceFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "disksim" | "mqsim" => Ok(TraceFormat::DiskSim),
            "msr" | "snia" | "msr-cambridge" => Ok(TraceFormat::Msr),
            "alibaba" => Ok(TraceFormat::Alibaba),
            "tencent" | "cbs" => Ok(TraceFormat::Tencent),
            "blkparse" | "blktrace" => Ok(TraceFormat::Blkparse),
            "fio" | "iolog" => Ok(TraceFormat::Fio),
            _ => Err(UnknownTraceFormat(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_an_error() {
        for f in TraceFormat::ALL {
            assert_eq!(f.name().parse::<TraceFormat>(), Ok(f));
        }
        assert_eq!("MSR".parse::<TraceFormat>(), Ok(TraceFormat::Msr));
        let err = "csv".parse::<TraceFormat>().unwrap_err();
        assert!(err.to_string().contains("'csv'"));
    }
}
