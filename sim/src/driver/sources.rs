//! Request sources: generators (Table-4 or synthetic tenants) and trace replay, both paced
//! by a [`Replayer`] and folded into their volume by a [`VolumeRemap`].
//!
//! A source has at most one arrival scheduled at a time (timestamp pacing), or keeps up to
//! its queue depth of requests outstanding (closed loop), so the event queue never holds
//! more than one future arrival per source, however long the trace.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use fusionraid_core::{Nanos, VolumeId};

use crate::scenario::{Load, MAX_VIRTUAL_NS, Scenario};
use crate::trace::{
    Arrival, IoRecord, Looped, ReplayMode, Replayer, TraceError, VolumeRemap, open_trace,
};
use crate::workload::{Generator, Workload, WorkloadSpec, synthetic_seed};

type Records = Box<dyn Iterator<Item = IoRecord> + Send>;

/// Unreadable trace lines, shared between the reading iterator and the driver.
#[derive(Clone, Default)]
pub struct TraceErrors {
    pub count: Arc<AtomicU64>,
    pub first: Arc<Mutex<Option<String>>>,
    /// The file itself could not be read (a directory, an I/O error): the reader stops there,
    /// and the run must fail rather than report a replay cut short as if it were the trace.
    fatal: Arc<Mutex<Option<String>>>,
}

impl TraceErrors {
    fn note(&self, e: &TraceError) {
        if let TraceError::Io { .. } = e {
            self.fatal
                .lock()
                .expect("trace error lock")
                .get_or_insert_with(|| format!("the trace could not be read to its end: {e}"));
            return;
        }
        if self.count.fetch_add(1, Ordering::Relaxed) == 0 {
            *self.first.lock().expect("trace error lock") = Some(e.to_string());
        }
    }

    /// The read failure that ended the trace, if any.
    pub fn take_fatal(&self) -> Option<String> {
        self.fatal.lock().expect("trace error lock").take()
    }
}

pub struct Source {
    /// The workload name, or `trace`.
    pub name: String,
    pub volume: VolumeId,
    remap: VolumeRemap,
    replayer: Replayer<Records>,
    pub closed_loop: bool,
    /// Requests of this source not yet answered (held ones included).
    pub in_flight: u32,
    /// Closed loop: the queue was full; pull again after a reply.
    pub waiting: bool,
    /// No more arrivals.
    pub done: bool,
    /// Arrivals at or after this time are not issued.
    stop_at: Option<Nanos>,
    /// Virtual time of the source's time 0.
    start: Nanos,
    /// Why the source stopped early, for the driver to fail the run with.
    pub error: Option<String>,
    /// The record of the arrival event scheduled for this source (timestamp pacing).
    pub scheduled: Option<IoRecord>,
}

impl Source {
    /// The next request to issue, and when: `None` if the source is done or (closed loop)
    /// has its queue full.
    pub fn next(&mut self, now: Nanos) -> Option<(Nanos, IoRecord)> {
        if self.done {
            return None;
        }
        match self.replayer.next_arrival(now, self.in_flight) {
            Arrival::Issue { at, record } => {
                if self.stop_at.is_some_and(|s| at >= s) {
                    self.done = true;
                    return None;
                }
                // A trace's own timestamps (or a tiny --speed) can put an arrival centuries
                // away, up to u64::MAX ns (the replayer saturates): the device models' clocks
                // would overflow. Runs are limited to a year, as --duration is.
                let after = at - self.start;
                if after > MAX_VIRTUAL_NS {
                    self.done = true;
                    self.error = Some(format!(
                        "{}: a record arrives {} s after the start of the replay, beyond the \
                         simulator's limit of a year ({} s) of virtual time (check the \
                         trace's timestamps, or replay it faster with --speed or closed-loop \
                         with --qd)",
                        self.name,
                        after / 1_000_000_000,
                        MAX_VIRTUAL_NS / 1_000_000_000
                    ));
                    return None;
                }
                self.waiting = false;
                Some((at, self.remap.apply(record)))
            }
            Arrival::QueueFull => {
                self.waiting = true;
                None
            }
            Arrival::Exhausted => {
                self.done = true;
                None
            }
        }
    }
}

/// The trace's source (volume 0) replayed in `mode` from `start`, with no arrival from
/// `stop_at` on; trace replay and trace-mix both build it here.
fn trace_source(
    mode: ReplayMode,
    records: Records,
    start: Nanos,
    stop_at: Option<Nanos>,
    remap: &impl Fn(usize) -> Result<VolumeRemap, String>,
) -> Result<Source, String> {
    let replayer = Replayer::new(mode, records, start).map_err(|e| e.to_string())?;
    Ok(Source {
        name: "trace".into(),
        volume: 0,
        remap: remap(0)?,
        replayer,
        closed_loop: matches!(mode, ReplayMode::ClosedLoop { .. }),
        in_flight: 0,
        waiting: false,
        done: false,
        stop_at,
        start,
        error: None,
        scheduled: None,
    })
}

/// Table-4 workloads as generator inputs, their IOPS multiplied by `scale`, each seeded by
/// [`Workload::seed_for`].
fn table4(list: &[Workload], scale: f64, seed: u64) -> Vec<(String, WorkloadSpec, u64)> {
    list.iter()
        .map(|w| {
            let mut spec = w.spec();
            spec.iops *= scale;
            (w.name().to_string(), spec, w.seed_for(seed))
        })
        .collect()
}

/// The sources a scenario describes, starting at virtual time `start`.
pub fn build_sources(
    sc: &Scenario,
    volume_sizes: &[u64],
    start: Nanos,
) -> Result<(Vec<Source>, TraceErrors), String> {
    let errors = TraceErrors::default();
    let mut out = Vec::new();
    let remap = |v: usize| VolumeRemap::new(volume_sizes[v]).map_err(|e| e.to_string());
    // Generators, the first in volume `first`: (name, spec, seed) each.
    let generators = |out: &mut Vec<Source>, tenants: Vec<(String, WorkloadSpec, u64)>, first| {
        let duration = sc
            .duration_ns
            .ok_or("workload generators need a duration")?;
        for (j, (name, spec, seed)) in tenants.into_iter().enumerate() {
            let i = first + j;
            let gen_ = Generator::new(spec, seed, i as u32)
                .map_err(|e| e.to_string())?
                .with_duration(duration);
            let mode = ReplayMode::Timestamp { speed: 1.0 };
            let replayer =
                Replayer::new(mode, Box::new(gen_) as Records, start).map_err(|e| e.to_string())?;
            out.push(Source {
                name,
                volume: i as VolumeId,
                remap: remap(i)?,
                replayer,
                closed_loop: false,
                in_flight: 0,
                waiting: false,
                done: false,
                stop_at: Some(start + duration),
                start,
                error: None,
                scheduled: None,
            });
        }
        Ok::<(), String>(())
    };
    match &sc.load {
        Load::Workloads { list, scale } => generators(&mut out, table4(list, *scale, sc.seed), 0)?,
        Load::Synthetic { tenants } => {
            let named = tenants
                .iter()
                .enumerate()
                .map(|(i, t)| (t.name.clone(), t.clone(), synthetic_seed(sc.seed, i)))
                .collect();
            generators(&mut out, named, 0)?;
        }
        Load::TraceMix {
            path,
            format,
            speed,
            list,
            scale,
        } => {
            let iter = open_trace(path, *format).map_err(|e| e.to_string())?;
            let mut records = Vec::new();
            for r in iter {
                match r {
                    Ok(rec) => records.push(rec),
                    Err(e) => errors.note(&e),
                }
            }
            if let Some(e) = errors.take_fatal() {
                return Err(e);
            }
            let mode = ReplayMode::Timestamp { speed: *speed };
            out.push(trace_source(
                mode,
                Box::new(Looped::new(records)),
                start,
                sc.duration_ns.map(|d| start + d),
                &remap,
            )?);
            generators(&mut out, table4(list, *scale, sc.seed), 1)?;
        }
        Load::Trace { path, format, mode } => {
            let iter = open_trace(path, *format).map_err(|e| e.to_string())?;
            let errs = errors.clone();
            let records = iter.filter_map(move |r| match r {
                Ok(rec) => Some(rec),
                Err(e) => {
                    errs.note(&e);
                    None
                }
            });
            out.push(trace_source(
                *mode,
                Box::new(records),
                start,
                sc.duration_ns.map(|d| start + d),
                &remap,
            )?);
        }
    }
    Ok((out, errors))
}
