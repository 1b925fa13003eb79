//! One-pass summary of a record stream (for reports, tests and sanity checks of a trace).

use std::fmt;

use fusionraid_core::Nanos;

use super::{IoKind, IoRecord};

/// Counts and sizes of a stream of records; `O(1)` memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceStats {
    pub records: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub trim_bytes: u64,
    pub first_ns: Option<Nanos>,
    pub last_ns: Option<Nanos>,
    /// Largest stream id seen plus one (streams are small dense ids in every reader).
    pub streams: u32,
}

impl TraceStats {
    pub fn add(&mut self, r: &IoRecord) {
        self.records += 1;
        match r.kind {
            IoKind::Read => {
                self.reads += 1;
                self.read_bytes = self.read_bytes.saturating_add(r.len);
            }
            IoKind::Write => {
                self.writes += 1;
                self.write_bytes = self.write_bytes.saturating_add(r.len);
            }
            IoKind::Trim => {
                self.trims += 1;
                self.trim_bytes = self.trim_bytes.saturating_add(r.len);
            }
        }
        self.first_ns = Some(self.first_ns.map_or(r.time_ns, |f| f.min(r.time_ns)));
        self.last_ns = Some(self.last_ns.map_or(r.time_ns, |l| l.max(r.time_ns)));
        self.streams = self.streams.max(r.stream.saturating_add(1));
    }

    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a IoRecord>) -> Self {
        let mut s = TraceStats::default();
        records.into_iter().for_each(|r| s.add(r));
        s
    }

    /// Time from the first to the last arrival.
    pub fn span_ns(&self) -> Nanos {
        match (self.first_ns, self.last_ns) {
            (Some(f), Some(l)) => l - f,
            _ => 0,
        }
    }

    /// Requests per second over the span (0 when the span is empty).
    pub fn iops(&self) -> f64 {
        match self.span_ns() {
            0 => 0.0,
            s => self.records as f64 * 1e9 / s as f64,
        }
    }

    /// Writes as a share of reads + writes (trims excluded), in `0..=1`.
    pub fn write_ratio(&self) -> f64 {
        ratio(self.writes, self.reads + self.writes)
    }

    pub fn mean_read_bytes(&self) -> f64 {
        ratio(self.read_bytes, self.reads)
    }

    pub fn mean_write_bytes(&self) -> f64 {
        ratio(self.write_bytes, self.writes)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

impl fmt::Display for TraceStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} records ({} reads, {} writes, {} trims) over {:.6} s ({:.0} IOPS), \
             {} streams, write ratio {:.1}%, mean read {:.1} KiB, mean write {:.1} KiB",
            self.records,
            self.reads,
            self.writes,
            self.trims,
            self.span_ns() as f64 / 1e9,
            self.iops(),
            self.streams,
            self.write_ratio() * 100.0,
            self.mean_read_bytes() / 1024.0,
            self.mean_write_bytes() / 1024.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises() {
        let recs = [
            IoRecord {
                time_ns: 0,
                kind: IoKind::Read,
                offset: 0,
                len: 4096,
                stream: 0,
            },
            IoRecord {
                time_ns: 500_000_000,
                kind: IoKind::Write,
                offset: 0,
                len: 8192,
                stream: 2,
            },
        ];
        let s = TraceStats::from_records(&recs);
        assert_eq!((s.records, s.reads, s.writes, s.streams), (2, 1, 1, 3));
        assert_eq!(s.span_ns(), 500_000_000);
        assert_eq!(s.iops(), 4.0);
        assert_eq!(s.write_ratio(), 0.5);
        assert_eq!(s.mean_write_bytes(), 8192.0);
        assert!(s.to_string().starts_with("2 records"));
    }
}
