//! The discrete-event driver: runs the sans-IO engine against device models in virtual time.
//!
//! One event queue ordered by `(time, sequence)` holds three kinds of event: a source's next
//! arrival, a device completion (at the time the device model returned when the I/O was
//! issued) and the engine's deadline. The loop pops the earliest event, advances the virtual
//! clock to it, feeds it to the engine, then performs every device I/O the engine emitted,
//! collects every reply and re-arms the engine's timer. Every random choice comes from a
//! PRNG seeded from the scenario's seed (the engine's, each device model's, each generator's),
//! so the same scenario, seed and commit produce the same report, byte for byte.
//!
//! Files: `events` (the queue), `sources` (generators and trace replay), `fleet` (device
//! models), `requests` (in-flight requests and the hold queue), `store` and `oracle` (data
//! mode: member contents and read checks), `run` (the loop), `finish` (the report).

mod events;
mod finish;
mod fleet;
mod oracle;
mod prefill;
mod rebuild;
mod requests;
mod run;
mod sources;
mod store;

use std::collections::HashMap;

use fusionraid_core::engine::stats::EngineStats;
use fusionraid_core::{Data, DevOp, DiskId, Engine, EngineConfig, IoId, IoResult, Nanos};
use fusionraid_devices::DeviceModel;

use crate::scenario::{Scenario, SchemeError, build_scheme};
use crate::stats::{OpHists, SpikeTracker};
pub use events::{Event, EventQueue};
use oracle::Oracle;
use requests::{HoldQueue, RequestTable};
use sources::{Source, TraceErrors};
use store::Store;

/// Why a simulation could not be set up or finish.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("bad scenario: {0}")]
    Scenario(String),
    #[error(transparent)]
    Scheme(#[from] SchemeError),
    #[error("devices: {0}")]
    Device(String),
    #[error("request source: {0}")]
    Source(String),
    #[error("simulation stuck at {now} ns: {what}")]
    Stuck { now: Nanos, what: String },
}

/// Where a run is, for progress bars.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub now: Nanos,
    /// When arrivals stop, if known.
    pub until: Option<Nanos>,
    pub completed: u64,
    pub events: u64,
}

/// A finished run: its report and the latency histograms behind it, per source (in
/// source order: the scenario's workloads, or the trace first) and over all sources.
pub struct Detailed {
    pub report: crate::stats::Report,
    pub workloads: Vec<OpHists>,
    pub all: OpHists,
    /// Measured requests (arrived after the warm-up) answered before arrivals stopped: over
    /// the measured window, the throughput the pool kept up with. A saturated pool answers
    /// fewer than arrive, its queue growing, and the report's IOPS (every measured request,
    /// answered however late) would hide it.
    pub answered_in_window: u64,
}

/// Data mode state: member contents, read results waiting for their completion event, and
/// the read checker.
struct DataMode {
    store: Store,
    results: HashMap<u64, IoResult>,
    oracle: Oracle,
    writes: u64,
}

impl DataMode {
    /// Performs a device I/O on the stored contents at issue time, as the core's test driver
    /// does: a read issued later sees an earlier write. Read data waits for the completion.
    fn apply(&mut self, disk: usize, id: IoId, op: &DevOp) {
        match op {
            DevOp::Read { offset, len } => {
                let data = self.store.read(disk, *offset, *len);
                self.results.insert(id.0, Ok(Some(Data::Bytes(data))));
            }
            DevOp::Write { offset, data, .. } => {
                let bytes = data.bytes().expect("data mode writes carry bytes");
                self.store.write(disk, *offset, bytes);
            }
            DevOp::Trim { .. } | DevOp::Flush => {}
        }
    }
}

/// Virtual time a run may go on after its last arrival before it is declared stuck.
const DRAIN_LIMIT_NS: Nanos = 600_000_000_000;
/// Engine timeouts allowed at one instant before the driver pushes the next one forward.
const SAME_INSTANT_TIMEOUTS: u32 = 64;

/// One simulation run. Build with [`Sim::new`], then [`Sim::run`].
pub struct Sim {
    scenario: Scenario,
    engine: Engine,
    devices: Vec<Box<dyn DeviceModel>>,
    data: Option<DataMode>,
    events: EventQueue,
    now: Nanos,
    sources: Vec<Source>,
    reqs: RequestTable,
    hold: HoldQueue,
    max_request_bytes: u64,
    volume_sizes: Vec<u64>,
    /// The engine deadline an event is scheduled for.
    timer: Option<Nanos>,
    last_timeout_at: Nanos,
    same_instant: u32,
    timer_bumps: u64,
    hists: Vec<OpHists>,
    /// See [`Detailed::answered_in_window`].
    answered_in_window: u64,
    /// Bytes read and written per source, measured window only.
    source_bytes: Vec<(u64, u64)>,
    all: OpHists,
    spikes: SpikeTracker,
    counts: crate::stats::Requests,
    trace_errors: TraceErrors,
    /// A source stopped on an error (an arrival beyond the virtual-time limit); the run
    /// loop fails with it.
    source_error: Option<String>,
    processed: u64,
    last_arrival_at: Nanos,
    /// Virtual time the run started at (after the prefill); reported times are relative.
    start: Nanos,
    /// Engine counters after the prefill, subtracted in the report.
    baseline: EngineStats,
    /// Virtual time spent after the last reply letting background work finish.
    settled_ns: Nanos,
    /// Each member's wear when the run started (after the prefill).
    wear_at_start: Vec<f64>,
}

pub use fleet::build_fleet;

impl Sim {
    pub fn new(scenario: &Scenario) -> Result<Sim, SimError> {
        scenario.validate().map_err(SimError::Scenario)?;
        let devices =
            fleet::build_fleet(&scenario.pool, scenario.seed).map_err(SimError::Device)?;
        Sim::with_fleet(scenario, devices)
    }

    /// Like [`Sim::new`], with the members given: they must be what
    /// [`build_fleet`]`(&scenario.pool, scenario.seed)` returns (or a copy of it, as a
    /// cache of preconditioned fleets hands out), or the run is not the scenario's. The
    /// pool's spike process, if any, is laid over them here ([`fleet::add_spikes`]).
    pub fn with_fleet(
        scenario: &Scenario,
        devices: Vec<Box<dyn DeviceModel>>,
    ) -> Result<Sim, SimError> {
        scenario.validate().map_err(SimError::Scenario)?;
        if devices.len() != scenario.pool.disks {
            return Err(SimError::Device(format!(
                "{} devices for a pool of {}",
                devices.len(),
                scenario.pool.disks
            )));
        }
        let devices = fleet::add_spikes(&scenario.pool, scenario.seed, devices);
        let disk_bytes = devices
            .iter()
            .map(|d| d.capacity_bytes())
            .min()
            .expect("at least one member");
        // The schemes size their tables from the volumes before they compare them with the
        // members: a volume that can not fit is refused here, before that allocation.
        let logical: u64 = scenario
            .volume_configs()
            .iter()
            .map(|v| v.size_bytes)
            .fold(0, u64::saturating_add);
        let raw = disk_bytes.saturating_mul(scenario.pool.disks as u64);
        if logical > raw {
            return Err(SimError::Scenario(format!(
                "the volumes hold {logical} bytes but the {} members only {raw}",
                scenario.pool.disks
            )));
        }
        let mut params = scenario.scheme_params(disk_bytes);
        if crate::scenario::steers(&scenario.scheme) && params.options.curves.is_empty() {
            // As Sandook profiles each drive before use: here the drive is its model.
            let curves =
                crate::fleet_curves::pool_curves(&scenario.pool).map_err(SimError::Scenario)?;
            params.options.curves = curves.members.iter().map(|c| Some((**c).clone())).collect();
        }
        let scheme = build_scheme(&scenario.scheme, &params)?;
        let mut ecfg = EngineConfig::new(scenario.pool.disks);
        ecfg.detector = scenario.detector_config();
        ecfg.max_requests = scenario.max_requests;
        ecfg.size_only = scenario.size_only;
        ecfg.seed = scenario.seed;
        let engine = Engine::new(ecfg, scheme, 0);
        let volume_sizes: Vec<u64> = (0..engine.volume_count())
            .map(|v| engine.volume_size(v as u32).expect("volume exists"))
            .collect();
        let disks = scenario.pool.disks;
        let zeroed = engine.scheme().members_start_zeroed();
        let mut sim = Sim {
            max_request_bytes: engine.scheme().max_request_bytes(),
            engine,
            devices,
            data: (!scenario.size_only).then(|| DataMode {
                // The in-place baselines read never-written blocks from the members: with the
                // 0xEE fill a run without prefill would report thousands of false mismatches.
                store: if zeroed {
                    Store::with_fill(disks, 0)
                } else {
                    Store::new(disks)
                },
                results: HashMap::new(),
                oracle: Oracle::default(),
                writes: 0,
            }),
            events: EventQueue::default(),
            now: 0,
            hists: Vec::new(),
            source_bytes: Vec::new(),
            answered_in_window: 0,
            sources: Vec::new(),
            reqs: RequestTable::default(),
            hold: HoldQueue::new(scenario.held_capacity),
            volume_sizes,
            timer: None,
            last_timeout_at: u64::MAX,
            same_instant: 0,
            timer_bumps: 0,
            all: OpHists::default(),
            spikes: SpikeTracker::new(disks),
            counts: Default::default(),
            trace_errors: TraceErrors::default(),
            source_error: None,
            processed: 0,
            last_arrival_at: 0,
            start: 0,
            baseline: EngineStats::default(),
            settled_ns: 0,
            wear_at_start: Vec::new(),
            scenario: scenario.clone(),
        };
        if scenario.prefill {
            sim.prefill()?;
        }
        // The run starts when the prefill is done (at 0 unless a scheme needed timers).
        sim.start = sim.now;
        sim.wear_at_start = sim
            .devices
            .iter()
            .map(|d| d.wear().unwrap_or(0.0))
            .collect();
        for d in 0..disks {
            sim.report_wear_of(d);
        }
        sim.last_arrival_at = sim.now;
        let (sources, trace_errors) =
            sources::build_sources(scenario, &sim.volume_sizes, sim.start)
                .map_err(SimError::Source)?;
        sim.hists = vec![OpHists::default(); sources.len()];
        sim.source_bytes = vec![(0, 0); sources.len()];
        sim.sources = sources;
        sim.trace_errors = trace_errors;
        Ok(sim)
    }

    /// Whether the members' wear is reported (and fed to the engine's placement).
    fn wants_wear(&self) -> bool {
        self.scenario.report_wear || self.scenario.scheme_options.wear_gap.is_some()
    }

    /// Tells the engine member `d`'s wear, as its device reports it, when placement uses it.
    fn report_wear_of(&mut self, d: usize) {
        if self.scenario.scheme_options.wear_gap.is_some() {
            let wear = self.devices[d].wear();
            self.engine.set_wear(DiskId(d as u32), wear);
        }
    }

    /// The engine, e.g. to inspect its scheme after a run step.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Virtual time now, counted from the start of the run (after the prefill).
    pub fn now(&self) -> Nanos {
        self.now - self.start
    }
}
