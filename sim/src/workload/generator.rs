//! A synthetic workload as a deterministic stream of [`IoRecord`]s.

use std::fmt;

use fusionraid_core::rng::Rng;
use fusionraid_core::{Nanos, PAGE_SIZE};

use super::address::Addresser;
use super::arrivals::OnOff;
use super::spec::WorkloadSpec;
use crate::trace::{IoKind, IoRecord};

/// A spec that cannot drive a generator (see [`WorkloadSpec::problem`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidSpec(pub String);

impl fmt::Display for InvalidSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid workload spec: {}", self.0)
    }
}

impl std::error::Error for InvalidSpec {}

/// Records of one workload in time order, starting near time 0. The same spec, seed and stream
/// always give the same records. Unbounded unless limited by duration or record count.
///
/// Randomness is split into two forked streams, one for arrival times and one for request
/// contents, so changing e.g. a size mix does not move any arrival.
#[derive(Clone, Debug)]
pub struct Generator {
    spec: WorkloadSpec,
    stream: u32,
    arrivals: OnOff,
    time_rng: Rng,
    op_rng: Rng,
    reads: Addresser,
    writes: Addresser,
    end_ns: Option<Nanos>,
    max_records: Option<u64>,
    emitted: u64,
    done: bool,
}

impl Generator {
    /// A generator for `spec`, or why the spec cannot work.
    pub fn new(spec: WorkloadSpec, seed: u64, stream: u32) -> Result<Self, InvalidSpec> {
        match spec.problem() {
            Some(p) => Err(InvalidSpec(p)),
            None => Ok(Self::from_catalog(spec, seed, stream)),
        }
    }

    /// Without validation: for the built-in catalog, whose specs are checked by tests. Even an
    /// invalid spec only yields odd records here (sizes fall back to one page, probabilities
    /// saturate), never a panic or a hang.
    pub(crate) fn from_catalog(spec: WorkloadSpec, seed: u64, stream: u32) -> Self {
        let mut root = Rng::new(seed);
        let mut time_rng = root.fork();
        let mut op_rng = root.fork();
        let pages = spec.footprint / PAGE_SIZE;
        let arrivals = OnOff::new(spec.iops, spec.burst, &mut time_rng);
        let reads = Addresser::new(pages, spec.read_seq, spec.hotspot, &mut op_rng);
        let writes = Addresser::new(pages, spec.write_seq, spec.hotspot, &mut op_rng);
        Generator {
            spec,
            stream,
            arrivals,
            time_rng,
            op_rng,
            reads,
            writes,
            end_ns: None,
            max_records: None,
            emitted: 0,
            done: false,
        }
    }

    /// Stop before the first arrival at or after `duration_ns`.
    pub fn with_duration(mut self, duration_ns: Nanos) -> Self {
        self.end_ns = Some(duration_ns);
        self
    }

    /// Stop after `n` records.
    pub fn with_max_records(mut self, n: u64) -> Self {
        self.max_records = Some(n);
        self
    }

    pub fn spec(&self) -> &WorkloadSpec {
        &self.spec
    }

    pub fn stream(&self) -> u32 {
        self.stream
    }
}

impl Iterator for Generator {
    type Item = IoRecord;

    fn next(&mut self) -> Option<IoRecord> {
        if self.done || self.max_records.is_some_and(|m| self.emitted >= m) {
            return None;
        }
        let horizon = self.end_ns.map_or(f64::INFINITY, |e| e as f64);
        let Some(t) = self.arrivals.next(&mut self.time_rng, horizon) else {
            self.done = true;
            return None;
        };
        // f64 -> u64 `as` saturates, and t >= 0, so this cannot wrap.
        let time_ns = t as Nanos;
        if self.end_ns.is_some_and(|e| time_ns >= e) {
            self.done = true;
            return None;
        }
        let rng = &mut self.op_rng;
        let write = rng.unit() < self.spec.write_ratio;
        let (sizes, addr, kind) = if write {
            (&self.spec.write_sizes, &mut self.writes, IoKind::Write)
        } else {
            (&self.spec.read_sizes, &mut self.reads, IoKind::Read)
        };
        let footprint_pages = (self.spec.footprint / PAGE_SIZE).max(1);
        let pages = (sizes.sample(rng) / PAGE_SIZE).clamp(1, footprint_pages);
        let first_page = addr.next(rng, pages);
        self.emitted += 1;
        Some(IoRecord {
            time_ns,
            kind,
            offset: first_page * PAGE_SIZE,
            len: pages * PAGE_SIZE,
            stream: self.stream,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Workload;

    #[test]
    fn limits_and_determinism() {
        let a: Vec<_> = Workload::Tpcc
            .generator(1, 3)
            .with_max_records(1000)
            .collect();
        let b: Vec<_> = Workload::Tpcc
            .generator(1, 3)
            .with_max_records(1000)
            .collect();
        let c: Vec<_> = Workload::Tpcc
            .generator(2, 3)
            .with_max_records(1000)
            .collect();
        assert_eq!(a.len(), 1000);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().all(|r| r.stream == 3));
        assert!(a.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
        let d: Vec<_> = Workload::Proxy
            .generator(1, 0)
            .with_duration(1_000_000_000)
            .collect();
        assert!(d.last().unwrap().time_ns < 1_000_000_000);
    }

    #[test]
    fn invalid_specs_are_rejected() {
        let mut s = Workload::Exchange.spec();
        s.write_ratio = 1.5;
        assert!(Generator::new(s, 0, 0).is_err());
        let mut s = Workload::Exchange.spec();
        s.footprint = 100;
        let e = Generator::new(s, 0, 0).unwrap_err();
        assert!(e.to_string().contains("footprint"), "{e}");
        assert!(Generator::new(Workload::Exchange.spec(), 0, 0).is_ok());
    }

    #[test]
    fn tiny_footprint_clamps_sizes() {
        let mut s = Workload::YcsbLoad.spec();
        s.footprint = 64 * 1024;
        for r in Generator::new(s, 5, 0).unwrap().with_max_records(500) {
            assert!(r.offset + r.len <= 64 * 1024);
        }
    }
}
