//! What to simulate: the pool, the scheme, the volumes, the load, the seed and how long.
//!
//! A [`Scenario`] is plain data; [`crate::driver::Sim::new`] turns it into devices, an engine
//! and request sources. [`Scenario::default_mix`] is the run `fusionraid sim` does with no
//! options: 29 aged datacenter SSDs, FusionRAID, one 6+1 RAID5 volume per workload of the
//! 4-workload mix TPC-C + YCSB-A + TensorFlow + VirtualDesktop.

mod schemes;
mod validate;

use std::path::PathBuf;

use fusionraid_core::Nanos;
use fusionraid_core::detector::DetectorConfig;
use fusionraid_core::layout::MolsLayout;
use fusionraid_core::scheme::fusion::{LayoutKind, Level, PoolGeometry, VolumeConfig};
use fusionraid_devices::fail_slow::FailSlowSpec;
use fusionraid_devices::spikes::SpikeSpec;
use serde::Serialize;

use crate::trace::{ReplayMode, TraceFormat};
use crate::workload::{Workload, WorkloadSpec};

pub use schemes::{
    FUSION_SCHEMES, SchemeError, SchemeOptions, SchemeParams, build_scheme, is_fusion,
    known_schemes, steers,
};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Bytes reserved at the start of every member (superblock and metadata records).
pub const DATA_OFFSET: u64 = MIB;

/// Size of a trace's volume unless the scenario sets one.
const TRACE_VOLUME: u64 = 64 * GIB;

/// Largest total volume size data mode will prefill (member contents are kept in memory).
pub const DATA_PREFILL_LIMIT: u64 = 8 * GIB;
/// Longest virtual run (and warm-up): a year. Times are u64 nanoseconds from the start of
/// the run plus set-up time, so this keeps every deadline far from overflow.
pub const MAX_VIRTUAL_NS: Nanos = 365 * 86_400 * 1_000_000_000;
/// Largest volume: 1 EiB, so sizes rounded up to whole blocks and their sums stay in u64.
pub const MAX_VOLUME_BYTES: u64 = 1 << 60;
/// Largest per-member slow-down factor: a member a thousand times slower than its preset
/// (the far end of the fail-slow drives field studies report). The models multiply service
/// times by it: 1e300 overflowed the device clocks, and factors of about 1e4 and more leave
/// requests queued for longer than the driver waits after the last arrival.
pub const MAX_SPEED_FACTOR: f64 = 1000.0;

/// The pool's members.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolSpec {
    /// Every member, SSDs and HDDs.
    pub disks: usize,
    /// The last `hdds` of the `disks` members are `hdd7200` HDDs (`sim --hdds`); `device`
    /// then names the others. Any member whose preset is an HDD's is in the pool's HDD tier
    /// (no stripes: [`PoolSpec::hdd_members`]).
    pub hdds: usize,
    /// The members' device models: a preset name (`fusionraid_devices::list_presets`, or an
    /// HDD preset), a fleet name (`fusionraid_devices::list_fleets`: its presets in order), or a
    /// comma-separated list of either, cycled over the members when shorter than the pool
    /// ([`PoolSpec::member_devices`]).
    pub device: String,
    /// Precondition every member to the paper's aged state ([`fusionraid_devices::AgeSpec::paper`]).
    pub aged: bool,
    /// With `aged`: the share of each member the ageing leaves unwritten (user
    /// over-provisioning, [`fusionraid_devices::AgeSpec::with_spare`]); 0 = the paper's state.
    pub spare: f64,
    /// Member capacity in bytes; `None` keeps the preset's.
    pub capacity_bytes: Option<u64>,
    /// Per-member speed factors `(disk, factor)` (2.0 = twice as slow) for heterogeneous
    /// fleets and slow-peer studies; unlisted members run at 1.0.
    pub speed_factors: Vec<(usize, f64)>,
    /// Fail-slow members `(disk, behaviour)`: slow by a factor in episodes
    /// ([`fusionraid_devices::fail_slow`]); on top of any speed factor.
    pub fail_slow: Vec<(usize, FailSlowSpec)>,
    /// A controlled spike process on every member: unresponsive periods at a rate and
    /// length ([`fusionraid_devices::spikes`], the spike-sensitivity study). Laid over the
    /// built (and aged) members by the driver, so fleets built once serve every setting.
    pub spikes: Option<SpikeSpec>,
    /// Stripe unit (64 KiB in the paper).
    pub block_size: u64,
    /// `None` picks MOLS when the pool size and width allow it, else permutations.
    pub layout: Option<LayoutKind>,
}

/// The preset of the HDDs `sim --hdds N` adds.
pub const HDD_PRESET: &str = "hdd7200";

/// The presets a pool's `device` text names, in order: fleets expanded, each name checked.
pub fn device_list(device: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for name in device.split(',').map(str::trim) {
        if let Some(members) = fusionraid_devices::fleet(name) {
            out.extend(members.iter().map(|m| m.to_string()));
        } else if fusionraid_devices::preset(name).is_ok()
            || fusionraid_devices::hdd_preset(name).is_ok()
        {
            out.push(name.to_string());
        } else {
            return Err(format!(
                "unknown device '{name}' in '{device}' (presets: {}, {}; fleets: {})",
                fusionraid_devices::list_presets().join(", "),
                fusionraid_devices::list_hdd_presets().join(", "),
                fusionraid_devices::list_fleets().join(", ")
            ));
        }
    }
    Ok(out)
}

impl PoolSpec {
    /// The preset of every member, in disk order: [`device_list`] cycled over the pool. A
    /// list longer than the pool is refused (its tail would be silently left out).
    pub fn member_devices(&self) -> Result<Vec<String>, String> {
        let list = device_list(&self.device)?;
        let listed = self.disks.saturating_sub(self.hdds);
        if list.len() > listed {
            return Err(format!(
                "'{}' names {} devices but the pool has {listed} disks besides its HDDs",
                self.device,
                list.len(),
            ));
        }
        let mut out: Vec<String> = list.iter().cycle().take(listed).cloned().collect();
        out.resize(self.disks, HDD_PRESET.to_string());
        Ok(out)
    }

    /// The members whose preset is an HDD's (ascending): they hold no stripes.
    pub fn hdd_members(&self) -> Vec<u32> {
        self.member_devices()
            .unwrap_or_default()
            .iter()
            .enumerate()
            .filter(|(_, n)| fusionraid_devices::hdd_preset(n).is_ok())
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// Whether any member is consumer-class ([`fusionraid_devices::is_consumer_class`]).
    pub fn has_consumer_members(&self) -> bool {
        let mut names = device_list(&self.device).unwrap_or_default();
        names.sort();
        names.dedup();
        names
            .iter()
            .any(|d| fusionraid_devices::is_consumer_class(d))
    }
}

/// Where the user requests come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Load {
    /// Table-4 generators, one volume each (the paper's multi-tenant mixes). `scale`
    /// multiplies every workload's IOPS (1.0 = Table 4).
    Workloads { list: Vec<Workload>, scale: f64 },
    /// Tenants described by their knobs ([`WorkloadSpec::uniform`],
    /// [`crate::workload::parse_synthetic`]), one volume each, named after the tenant.
    Synthetic { tenants: Vec<WorkloadSpec> },
    /// A trace file replayed into one volume (addresses folded into it).
    Trace {
        path: PathBuf,
        format: TraceFormat,
        mode: ReplayMode,
    },
    /// A trace as one tenant among generated ones: replayed at its timestamps (sped up by
    /// `speed`) and repeated back to back until the duration ends ([`crate::trace::Looped`]),
    /// into volume 0 (`trace`), with Table-4 generators in volumes 1.. (`list` may be empty:
    /// the looped trace alone). The trace is read into memory, so this is for short traces.
    TraceMix {
        path: PathBuf,
        format: TraceFormat,
        speed: f64,
        list: Vec<Workload>,
        scale: f64,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub pool: PoolSpec,
    /// Scheme name, see [`known_schemes`].
    pub scheme: String,
    /// Scheme knobs the experiments vary (conversion, NVRAM size); defaults otherwise.
    pub scheme_options: SchemeOptions,
    pub level: Level,
    /// Blocks per stripe, data and parity (7 = 6+1 for RAID5).
    pub width: usize,
    /// Volumes (by name) with a level of their own; a mirror's width is its copies.
    /// FusionRAID schemes only.
    pub volume_levels: Vec<(String, Level)>,
    /// Size of every volume; `None` = each workload's footprint (traces: 64 GiB).
    pub volume_bytes: Option<u64>,
    /// Every volume's spare share (FusionRAID: spare stripes as a share of the data, as a
    /// pool file's `spare_fraction`); `None` = the engine's default (0.25).
    pub volume_spare: Option<f64>,
    pub load: Load,
    pub seed: u64,
    /// Arrivals stop at this virtual time; `None` = when the source runs dry (traces only).
    pub duration_ns: Option<Nanos>,
    /// Requests arriving before this time are served but not counted in latency statistics.
    pub warmup_ns: Nanos,
    /// Payloads carry only sizes (fast); otherwise real bytes go through the engine.
    pub size_only: bool,
    /// User requests the engine takes at once before answering `Busy`.
    pub max_requests: usize,
    /// Requests held by the driver while the engine is busy; beyond this they are dropped.
    pub held_capacity: usize,
    /// `None` = the paper's setting for the device class (consumer or datacenter).
    pub detector: Option<DetectorConfig>,
    /// Write every volume once before the run (see `driver::prefill`), so reads hit data.
    pub prefill: bool,
    /// After the last reply, keep the engine running on its timers for up to this long, until
    /// background work (conversion) is done, so the report shows the settled state (space
    /// after conversion). 0 = stop at the last reply.
    pub settle_ns: Nanos,
    /// Report the members' wear and wear-out times (always with wear-aware placement).
    pub report_wear: bool,
}

impl Scenario {
    /// The default `fusionraid sim` run (see the module documentation), `secs` of virtual time.
    pub fn default_mix(secs: f64) -> Self {
        Scenario {
            pool: PoolSpec {
                disks: 29,
                hdds: 0,
                device: "dc".into(),
                aged: true,
                spare: 0.0,
                capacity_bytes: None,
                speed_factors: Vec::new(),
                fail_slow: Vec::new(),
                spikes: None,
                block_size: 64 * KIB,
                layout: None,
            },
            scheme: "fusionraid".into(),
            scheme_options: SchemeOptions::default(),
            level: Level::Raid5,
            width: 7,
            volume_levels: Vec::new(),
            volume_bytes: None,
            volume_spare: None,
            load: Load::Workloads {
                list: vec![
                    Workload::Tpcc,
                    Workload::YcsbA,
                    Workload::TensorFlow,
                    Workload::VirtualDesktop,
                ],
                scale: 1.0,
            },
            seed: 1,
            duration_ns: Some((secs * 1e9) as Nanos),
            warmup_ns: 0,
            size_only: true,
            max_requests: 4096,
            held_capacity: 1 << 16,
            detector: None,
            prefill: true,
            settle_ns: 0,
            report_wear: false,
        }
    }

    /// The detector setting in force: the configured one, else the paper's consumer setting
    /// when any member is consumer-class and its datacenter one otherwise. A mixed pool
    /// takes the consumer setting because its shorter threshold (2 ms, against 5 ms) is what
    /// catches the consumer members' 3-12 ms flush stalls; on datacenter members it only
    /// steers a little earlier around long queues.
    pub fn detector_config(&self) -> DetectorConfig {
        self.detector
            .unwrap_or(if self.pool.has_consumer_members() {
                DetectorConfig::paper_consumer()
            } else {
                DetectorConfig::paper_dc()
            })
    }

    /// The layout in force: the configured one, or MOLS when the geometry allows it.
    pub fn layout(&self) -> LayoutKind {
        self.pool.layout.unwrap_or_else(|| {
            // Stripes lie on the SSD members only.
            let ssds = self.pool.disks - self.pool.hdd_members().len();
            if MolsLayout::new(ssds, self.width).is_ok() {
                LayoutKind::Mols
            } else {
                LayoutKind::Permutation {
                    seed: self.seed ^ 0x1a70,
                }
            }
        })
    }

    /// One volume per workload (named after it), or one `trace` volume. Sizes are rounded
    /// up to whole blocks.
    pub fn volume_configs(&self) -> Vec<VolumeConfig> {
        let bs = self.pool.block_size.max(1);
        let round = |b: u64| b.div_ceil(bs).max(1) * bs;
        let vol = |name: &str, bytes: u64| {
            let level = self
                .volume_levels
                .iter()
                .find(|(n, _)| n == name)
                .map_or(self.level, |&(_, l)| l);
            let width = level.fixed_width().unwrap_or(self.width);
            let mut v = VolumeConfig::new(name, level, width, round(bytes));
            if let Some(s) = self.volume_spare {
                v.spare_fraction = s;
            }
            v
        };
        match &self.load {
            Load::Workloads { list, .. } => list
                .iter()
                .map(|w| vol(w.name(), self.volume_bytes.unwrap_or(w.spec().footprint)))
                .collect(),
            Load::Synthetic { tenants } => tenants
                .iter()
                .map(|t| vol(&t.name, self.volume_bytes.unwrap_or(t.footprint)))
                .collect(),
            Load::Trace { .. } => vec![vol("trace", self.volume_bytes.unwrap_or(TRACE_VOLUME))],
            Load::TraceMix { list, .. } => {
                std::iter::once(vol("trace", self.volume_bytes.unwrap_or(TRACE_VOLUME)))
                    .chain(
                        list.iter().map(|w| {
                            vol(w.name(), self.volume_bytes.unwrap_or(w.spec().footprint))
                        }),
                    )
                    .collect()
            }
        }
    }

    /// What a report says about the scenario.
    pub fn summary(&self) -> ScenarioSummary {
        let source = match &self.load {
            Load::Workloads { list, scale } => SourceSummary::Workloads {
                workloads: list.iter().map(|w| w.name().to_string()).collect(),
                load_scale: *scale,
            },
            Load::Synthetic { tenants } => SourceSummary::Synthetic {
                tenants: tenants.iter().map(TenantSummary::of).collect(),
            },
            Load::Trace { path, format, mode } => SourceSummary::Trace {
                path: path.display().to_string(),
                format: format.name().to_string(),
                mode: match mode {
                    ReplayMode::Timestamp { speed } => format!("timestamp x{speed}"),
                    ReplayMode::ClosedLoop { queue_depth } => {
                        format!("closed-loop qd {queue_depth}")
                    }
                },
            },
            Load::TraceMix {
                path,
                format,
                speed,
                list,
                scale,
            } => SourceSummary::TraceMix {
                path: path.display().to_string(),
                format: format.name().to_string(),
                mode: format!("looped, timestamp x{speed}"),
                workloads: list.iter().map(|w| w.name().to_string()).collect(),
                load_scale: *scale,
            },
        };
        let det = self.detector_config();
        ScenarioSummary {
            scheme: self.scheme.clone(),
            conversion: self.scheme_options.conversion,
            nvram_bytes: self.scheme_options.nvram_bytes,
            disks: self.pool.disks,
            device: self.pool.device.clone(),
            aged: self.pool.aged,
            spare: self.pool.spare,
            volume_spare: self.volume_spare,
            capacity_bytes: self.pool.capacity_bytes,
            speed_factors: self.pool.speed_factors.clone(),
            fail_slow: self
                .pool
                .fail_slow
                .iter()
                .map(|(d, f)| (*d, f.to_string()))
                .collect(),
            spikes: self.pool.spikes.map(|s| s.to_string()),
            block_size: self.pool.block_size,
            layout: if schemes::is_fusion(&self.scheme) {
                layout_name(self.layout()).to_string()
            } else {
                "groups".to_string()
            },
            level: format!(
                "{} {}+{}",
                self.level.name(),
                self.width.saturating_sub(self.level.nparity()),
                self.level.nparity()
            ),
            volume_levels: self
                .volume_levels
                .iter()
                .map(|(n, l)| (n.clone(), l.name().to_string()))
                .collect(),
            volumes: self
                .volume_configs()
                .iter()
                .map(|v| (v.name.clone(), v.size_bytes))
                .collect(),
            source,
            seed: self.seed,
            duration_s: self.duration_ns.map(|d| d as f64 / 1e9),
            warmup_s: self.warmup_ns as f64 / 1e9,
            size_only: self.size_only,
            prefill: self.prefill,
            detector: format!(
                "slot {} us, y {}, x_high {}, x_low {}",
                det.slot_ns / 1000,
                det.window_slots,
                det.x_high,
                det.x_low
            ),
        }
    }

    /// The scheme's view of the pool: geometry and volumes.
    pub fn scheme_params(&self, disk_bytes: u64) -> SchemeParams {
        SchemeParams {
            pool: PoolGeometry {
                disks: self.pool.disks,
                disk_bytes,
                block_size: self.pool.block_size,
                data_offset: DATA_OFFSET,
                layout: self.layout(),
                hdds: self.pool.hdd_members(),
            },
            volumes: self.volume_configs(),
            seed: self.seed,
            options: self.scheme_options.clone(),
        }
    }
}

/// The synthetic tenants' own checks: at least one, each valid, names distinct (they name
/// the volumes and the report's rows).
fn validate_tenants(tenants: &[WorkloadSpec], duration: Option<Nanos>) -> Result<(), String> {
    if tenants.is_empty() {
        return Err("no synthetic tenants given".into());
    }
    if duration.is_none() {
        return Err("synthetic tenants need a duration".into());
    }
    for (i, t) in tenants.iter().enumerate() {
        if let Some(p) = t.problem() {
            return Err(format!("synthetic tenant {i}: {p}"));
        }
        if tenants[..i].iter().any(|u| u.name == t.name) {
            return Err(format!("two synthetic tenants are named '{}'", t.name));
        }
    }
    Ok(())
}

fn layout_name(l: LayoutKind) -> &'static str {
    match l {
        LayoutKind::Mols => "mols",
        LayoutKind::Groups => "groups",
        LayoutKind::Permutation { .. } => "permutation",
    }
}

/// The scenario as a report prints it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ScenarioSummary {
    pub scheme: String,
    /// FusionRAID variants: background conversion on.
    pub conversion: bool,
    /// NV-RAID buffer size, when not the scheme's default.
    pub nvram_bytes: Option<u64>,
    pub disks: usize,
    pub device: String,
    pub aged: bool,
    pub spare: f64,
    /// The volumes' spare share when set (else the engine's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_spare: Option<f64>,
    pub capacity_bytes: Option<u64>,
    pub speed_factors: Vec<(usize, f64)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fail_slow: Vec<(usize, String)>,
    /// The spike process on every member (`RATE/min:LENGTH`), when one runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spikes: Option<String>,
    pub block_size: u64,
    pub layout: String,
    pub level: String,
    /// Volumes with a level of their own (`Scenario::volume_levels`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volume_levels: Vec<(String, String)>,
    pub volumes: Vec<(String, u64)>,
    pub source: SourceSummary,
    pub seed: u64,
    pub duration_s: Option<f64>,
    pub warmup_s: f64,
    pub size_only: bool,
    pub prefill: bool,
    pub detector: String,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SourceSummary {
    Workloads {
        workloads: Vec<String>,
        load_scale: f64,
    },
    Trace {
        path: String,
        format: String,
        mode: String,
    },
    TraceMix {
        path: String,
        format: String,
        mode: String,
        workloads: Vec<String>,
        load_scale: f64,
    },
    Synthetic {
        tenants: Vec<TenantSummary>,
    },
}

/// A synthetic tenant as a report prints it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TenantSummary {
    pub name: String,
    pub iops: f64,
    pub read_share: f64,
    /// Mean request sizes.
    pub read_kib: f64,
    pub write_kib: f64,
    pub footprint: u64,
}

impl TenantSummary {
    fn of(t: &WorkloadSpec) -> Self {
        TenantSummary {
            name: t.name.clone(),
            iops: t.iops,
            read_share: 1.0 - t.write_ratio,
            read_kib: t.read_sizes.mean_bytes() / 1024.0,
            write_kib: t.write_sizes.mean_bytes() / 1024.0,
            footprint: t.footprint,
        }
    }
}

#[cfg(test)]
mod tests;
