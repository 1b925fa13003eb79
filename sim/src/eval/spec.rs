//! One simulation run of the evaluation as plain data ([`RunSpec`]), its stable id, and the
//! [`Scenario`] it stands for.

use std::fmt::Write;
use std::path::PathBuf;

use fusionraid_core::detector::DetectorConfig;
use fusionraid_core::steer::SteerConfig;
use fusionraid_devices::fail_slow::FailSlowSpec;
use fusionraid_devices::spikes::SpikeSpec;
use serde::{Serialize, Serializer};

use super::svg::fmt_us;
use crate::scenario::{Load, Scenario, SchemeOptions};
use crate::trace::{ReplayMode, TraceFormat};
use crate::workload::{Workload, WorkloadSpec, parse_synthetic};

/// Where the requests of a run come from.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LoadSpec {
    /// Table-4 generators, one volume each.
    Mix {
        #[serde(serialize_with = "names")]
        workloads: Vec<Workload>,
    },
    /// A trace replayed once at its timestamps.
    Trace { path: PathBuf },
    /// A trace looped for the run's duration next to generators (volumes 1..).
    TraceMix {
        path: PathBuf,
        #[serde(serialize_with = "names")]
        workloads: Vec<Workload>,
    },
    /// 4 KiB random overwrites of the whole of one volume (`rw`), Poisson arrivals at `iops`:
    /// offered above what the pool sustains, the rate it keeps is its sustained rate (the
    /// `pitfalls` experiment).
    RandomWrites { iops: u64 },
    /// Synthetic tenants, one volume each, as `sim --synthetic` spells them
    /// (`read=0.9,bs=4k,iops=1M,footprint=32G,name=reader`; the `sandook` experiment).
    Synthetic { tenants: Vec<String> },
}

/// The tenant of [`LoadSpec::RandomWrites`].
pub const RANDOM_WRITES_TENANT: &str = "rw";

pub(crate) fn names<S: Serializer>(ws: &[Workload], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ws.iter().map(|w| w.name()))
}

/// The spike detector in the paper's terms: y = 10 slots, x̌ = 0, threshold t and x̂ varied.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DetectorSpec {
    /// t = y x slot, in microseconds.
    pub t_us: u64,
    pub x_high: u32,
}

impl DetectorSpec {
    pub const WINDOW_SLOTS: u32 = 10;

    pub fn config(self) -> DetectorConfig {
        DetectorConfig {
            slot_ns: self.t_us * 1000 / u64::from(Self::WINDOW_SLOTS),
            window_slots: Self::WINDOW_SLOTS,
            x_high: self.x_high,
            x_low: 0,
        }
    }

    /// The paper's datacenter setting as the engine defines it.
    pub fn paper_dc() -> Self {
        let d = DetectorConfig::paper_dc();
        DetectorSpec {
            t_us: d.slot_ns * u64::from(d.window_slots) / 1000,
            x_high: d.x_high,
        }
    }

    pub fn label(self) -> String {
        format!("x̂={} t={}ms", self.x_high, self.t_us as f64 / 1000.0)
    }
}

/// A controlled spike process on every member (the sensitivity study): `per_min` unresponsive
/// periods per member-minute on average, each `length_us` long
/// ([`fusionraid_devices::spikes`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SpikeSetting {
    pub per_min: u32,
    pub length_us: u64,
}

impl SpikeSetting {
    pub fn spec(self) -> SpikeSpec {
        SpikeSpec {
            per_min: f64::from(self.per_min),
            length_ns: self.length_us * 1000,
        }
    }

    /// Long-run share of member-time unresponsive: rate x length.
    pub fn unresponsive_share(self) -> f64 {
        self.spec().unresponsive_share()
    }

    pub fn label(self) -> String {
        format!("{}/min x {}", self.per_min, fmt_us(self.length_us as f64))
    }
}

/// Members made fail-slow (the `failslow` experiment; `sim --fail-slow DISKS=SPEC`): each of
/// `disks` slower by the spec's factor in its episodes ([`fusionraid_devices::fail_slow`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailSlowSetting {
    pub disks: Vec<usize>,
    /// As `sim --fail-slow` takes it, e.g. `5x/2s/2s`.
    #[serde(serialize_with = "spec_text")]
    pub spec: FailSlowSpec,
}

pub(crate) fn spec_text<S: Serializer>(f: &FailSlowSpec, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(f)
}

impl FailSlowSetting {
    /// For the run id: `3+10_5x-2s-2s` (no `/` in a file name).
    fn id_part(&self) -> String {
        let disks: Vec<String> = self.disks.iter().map(usize::to_string).collect();
        format!(
            "{}_{}",
            disks.join("+"),
            self.spec.to_string().replace('/', "-")
        )
    }
}

/// Pool and volume sizes: the paper's (29 members of the preset's capacity, volumes of each
/// workload's footprint) or a tiny one for tests.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PoolSize {
    Paper,
    Tiny {
        member_bytes: u64,
        volume_bytes: u64,
    },
    /// `disks` members of `member_bytes`, stripes `width` wide, one volume of `volume_bytes`
    /// (the `pitfalls` experiment's arrays).
    Array {
        disks: usize,
        width: usize,
        member_bytes: u64,
        volume_bytes: u64,
    },
    /// `disks` members of the preset's capacity, stripes `width` wide, volumes of each
    /// workload's footprint (the `serw` experiment's small pools, as `sim --disks --width`).
    Members {
        disks: usize,
        width: usize,
    },
}

/// The members' device preset of every experiment but `consumer`.
pub const DEFAULT_DEVICE: &str = "dc";

fn is_default_device(d: &str) -> bool {
    d == DEFAULT_DEVICE
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

fn is_zero_usize(x: &usize) -> bool {
    *x == 0
}

fn is_false(x: &bool) -> bool {
    !*x
}

/// A search for the highest offered load meeting a latency target ([`crate::slo::search`],
/// `sim --slo`): the run becomes many runs at scaled loads, its result the best one's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SloSpec {
    /// As `sim --slo` takes it: `p90:1ms`.
    pub target: String,
    /// Offered IOPS of the first run (`--slo-start`).
    pub start_iops: f64,
    /// `--slo-precision`.
    pub precision: f64,
    /// `--slo-max-runs`.
    pub max_runs: usize,
}

impl SloSpec {
    pub fn target(&self) -> Result<crate::slo::SloTarget, String> {
        self.target.parse()
    }

    /// The id's part: `_slo-p90-1ms`.
    fn label(&self) -> String {
        format!("_slo-{}", self.target.replace([':', '.'], "-"))
    }
}

/// One run. Runs with equal specs are equal (the simulator is deterministic), so the runner
/// performs each distinct spec once, whichever experiments share it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSpec {
    pub scheme: String,
    pub load: LoadSpec,
    /// The members' device preset (`fusionraid_devices::list_presets`), or a fleet or a
    /// comma-separated list of them ([`crate::scenario::PoolSpec::device`]). Left out of the JSON (and
    /// so of the id's hash) when it is the default, so runs on `dc` members have the same ids
    /// and files as in builds without a choice of preset.
    #[serde(skip_serializing_if = "is_default_device")]
    pub device: String,
    /// Members preconditioned to the paper's aged state (else fresh).
    pub aged: bool,
    /// Volumes written once before the run (so reads hit data).
    pub prefill: bool,
    /// FusionRAID variants: background conversion.
    pub conversion: bool,
    /// NV-RAID buffer size; `None` = the scheme's default.
    pub nvram_bytes: Option<u64>,
    /// `None` = the paper's setting for the device class.
    pub detector: Option<DetectorSpec>,
    /// A spike process laid on every member; left out of the JSON (and the id) when there is
    /// none, so every other run keeps its id and file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spikes: Option<SpikeSetting>,
    /// With `aged`: the share of each member the ageing leaves unwritten (the Pitfalls
    /// study's spare capacity, [`crate::scenario::PoolSpec::spare`]). This and the two
    /// fields below are left out of the JSON (and the id) at their defaults, so every run
    /// without them keeps its id and file.
    #[serde(skip_serializing_if = "is_zero")]
    pub member_spare: f64,
    /// The volumes' spare share (FusionRAID's over-provisioning); `None` = the engine's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_spare: Option<f64>,
    /// The volumes' level (`raid5`, `mirror`, ...) when not RAID5.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// Multiplies every workload's Table-4 IOPS (`sim --load`). This and the two fields
    /// below are left out of the JSON (and the id) at their defaults, as the three above.
    #[serde(skip_serializing_if = "is_one")]
    pub load_scale: f64,
    /// `hdd7200` members added after the SSDs (`sim --hdds`, issue 21): they hold write
    /// logs only.
    #[serde(skip_serializing_if = "is_zero_usize")]
    pub hdds: usize,
    /// FusionRAID: offload replica writes from busy SSDs to the HDD logs (`sim --offload`).
    #[serde(skip_serializing_if = "is_false")]
    pub offload: bool,
    /// Fail-slow members (`sim --fail-slow`, issue 23); left out of the JSON (and the id)
    /// when there are none, so every other run keeps its id and file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_slow: Option<FailSlowSetting>,
    /// Steering mechanisms `sandook` and `fusionraid+` run, as `sim --steer` takes them
    /// (`weights,congestion`, `none`); `None` = all three (the default). This and `slo` are
    /// left out of the JSON (and the id) at their defaults, as the fields above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steer: Option<String>,
    /// Search for the highest load meeting a latency target instead of one run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo: Option<SloSpec>,
    /// Arrivals stop after this much virtual time (trace replays: the whole trace).
    pub duration_ms: Option<u64>,
    /// Requests arriving before this are left out of the statistics.
    pub warmup_ms: u64,
    /// After the last reply, let background work (conversion) finish for up to this long.
    pub settle_ms: u64,
    pub seed: u64,
    pub pool: PoolSize,
}

impl RunSpec {
    /// A run of `scheme` on the aged pool with every default.
    pub fn new(scheme: &str, load: LoadSpec, duration_ms: u64, seed: u64, pool: PoolSize) -> Self {
        RunSpec {
            scheme: scheme.to_string(),
            load,
            device: DEFAULT_DEVICE.to_string(),
            aged: true,
            prefill: true,
            conversion: true,
            nvram_bytes: None,
            detector: None,
            spikes: None,
            member_spare: 0.0,
            volume_spare: None,
            level: None,
            load_scale: 1.0,
            hdds: 0,
            offload: false,
            fail_slow: None,
            steer: None,
            slo: None,
            duration_ms: Some(duration_ms),
            warmup_ms: duration_ms / 10,
            settle_ms: 0,
            seed,
            pool,
        }
    }

    /// A file-name-safe id: the readable settings plus a hash of the whole spec, so two
    /// different specs never share an id.
    pub fn id(&self) -> String {
        let mut s = self.scheme.clone();
        let short = |ws: &[Workload]| {
            ws.iter()
                .map(|w| w.name().replace("tensorflow", "tf"))
                .collect::<Vec<_>>()
                .join("+")
        };
        match &self.load {
            LoadSpec::Mix { workloads } => {
                let _ = write!(s, "_{}", short(workloads));
            }
            LoadSpec::Trace { .. } => s.push_str("_trace"),
            LoadSpec::TraceMix { workloads, .. } => {
                let _ = write!(s, "_trace+{}", short(workloads));
            }
            LoadSpec::RandomWrites { iops } => {
                let _ = write!(s, "_rw{}k", iops / 1000);
            }
            LoadSpec::Synthetic { tenants } => {
                let _ = write!(s, "_syn{}", tenants.len());
            }
        }
        if let Some(l) = &self.level {
            let _ = write!(s, "_{l}");
        }
        if !is_default_device(&self.device) {
            // A list of presets: `a,b` (spaces dropped) reads `a+b`, as workload lists do.
            let list = self.device.replace(' ', "").replace(',', "+");
            let _ = write!(s, "_{list}");
        }
        s.push_str(if self.aged { "_aged" } else { "_clean" });
        if !self.prefill {
            s.push_str("_noprefill");
        }
        if !self.conversion {
            s.push_str("_noconv");
        }
        if let Some(b) = self.nvram_bytes {
            let _ = write!(s, "_nv{}m", b >> 20);
        }
        if let Some(d) = self.detector {
            let _ = write!(s, "_x{}t{}us", d.x_high, d.t_us);
        }
        if let Some(k) = self.spikes {
            let _ = write!(s, "_spk{}x{}us", k.per_min, k.length_us);
        }
        if self.member_spare > 0.0 {
            let _ = write!(s, "_ms{}", self.member_spare);
        }
        if let Some(v) = self.volume_spare {
            let _ = write!(s, "_vs{v}");
        }
        if self.load_scale != 1.0 {
            let _ = write!(s, "_load{}", self.load_scale);
        }
        if self.hdds > 0 {
            let _ = write!(s, "_hdd{}", self.hdds);
        }
        if self.offload {
            s.push_str("_offload");
        }
        if let Some(f) = &self.fail_slow {
            let _ = write!(s, "_fs{}", f.id_part());
        }
        if let Some(m) = &self.steer {
            let _ = write!(s, "_steer-{}", m.replace(' ', "").replace(',', "+"));
        }
        if let Some(o) = &self.slo {
            s.push_str(&o.label());
        }
        if let Some(d) = self.duration_ms {
            let _ = write!(s, "_{d}ms");
        }
        if self.settle_ms > 0 {
            s.push_str("_settled");
        }
        let _ = write!(s, "_s{}", self.seed);
        let json = serde_json::to_string(self).expect("a spec serializes");
        let _ = write!(s, "_{:08x}", fnv1a(json.as_bytes()) as u32);
        s
    }

    /// The workload (or `trace`) names in source order, as the report lists them.
    pub fn source_names(&self) -> Vec<String> {
        let ws = match &self.load {
            LoadSpec::Mix { workloads } => workloads.clone(),
            LoadSpec::Trace { .. } => Vec::new(),
            LoadSpec::TraceMix { workloads, .. } => workloads.clone(),
            LoadSpec::RandomWrites { .. } => return vec![RANDOM_WRITES_TENANT.to_string()],
            LoadSpec::Synthetic { tenants } => {
                return synthetic_tenants(tenants)
                    .iter()
                    .map(|t| t.name.clone())
                    .collect();
            }
        };
        let trace = !matches!(self.load, LoadSpec::Mix { .. });
        trace
            .then(|| "trace".to_string())
            .into_iter()
            .chain(ws.iter().map(|w| w.name().to_string()))
            .collect()
    }

    pub fn scenario(&self) -> Scenario {
        let mut sc = Scenario::default_mix(1.0);
        sc.scheme = self.scheme.clone();
        sc.scheme_options = SchemeOptions {
            conversion: self.conversion,
            nvram_bytes: self.nvram_bytes,
            offload: self.offload,
            ..Default::default()
        };
        if let Some(m) = &self.steer {
            let names = m.split(',').map(str::trim);
            sc.scheme_options.steer =
                SteerConfig::with_mechanisms(names.filter(|p| !p.is_empty() && *p != "none"))
                    .expect("mechanisms the experiment names");
        }
        sc.pool.device = self.device.clone();
        sc.pool.aged = self.aged;
        sc.pool.spikes = self.spikes.map(SpikeSetting::spec);
        sc.pool.spare = self.member_spare;
        sc.pool.fail_slow = self.fail_slow.as_ref().map_or(Vec::new(), |f| {
            f.disks.iter().map(|&d| (d, f.spec)).collect()
        });
        sc.volume_spare = self.volume_spare;
        if let Some(l) = &self.level {
            sc.level = l.parse().expect("a level the experiment names");
        }
        sc.prefill = self.prefill;
        sc.detector = self.detector.map(DetectorSpec::config);
        sc.duration_ns = self.duration_ms.map(|d| d * 1_000_000);
        sc.warmup_ns = self.warmup_ms * 1_000_000;
        sc.settle_ns = self.settle_ms * 1_000_000;
        sc.seed = self.seed;
        if let PoolSize::Tiny {
            member_bytes,
            volume_bytes,
        } = self.pool
        {
            sc.pool.capacity_bytes = Some(member_bytes);
            sc.volume_bytes = Some(volume_bytes);
        }
        if let PoolSize::Array {
            disks,
            width,
            member_bytes,
            volume_bytes,
        } = self.pool
        {
            sc.pool.disks = disks;
            sc.width = width;
            sc.pool.capacity_bytes = Some(member_bytes);
            sc.volume_bytes = Some(volume_bytes);
        }
        if let PoolSize::Members { disks, width } = self.pool {
            sc.pool.disks = disks;
            sc.width = width;
        }
        // The HDDs come after the SSDs, as `sim --hdds` adds them.
        sc.pool.disks += self.hdds;
        sc.pool.hdds = self.hdds;
        sc.load = match &self.load {
            LoadSpec::Mix { workloads } => Load::Workloads {
                list: workloads.clone(),
                scale: self.load_scale,
            },
            LoadSpec::Trace { path } => Load::Trace {
                path: path.clone(),
                format: TraceFormat::DiskSim,
                mode: ReplayMode::Timestamp { speed: 1.0 },
            },
            LoadSpec::TraceMix { path, workloads } => Load::TraceMix {
                path: path.clone(),
                format: TraceFormat::DiskSim,
                speed: 1.0,
                list: workloads.clone(),
                scale: 1.0,
            },
            LoadSpec::RandomWrites { iops } => {
                // The footprint is the volume (the scenario sizes the volume from it too).
                let bytes = sc.volume_bytes.unwrap_or(1 << 30);
                let t = WorkloadSpec::uniform(RANDOM_WRITES_TENANT, 0.0, 4096, *iops as f64, bytes);
                Load::Synthetic { tenants: vec![t] }
            }
            LoadSpec::Synthetic { tenants } => Load::Synthetic {
                tenants: synthetic_tenants(tenants),
            },
        };
        sc
    }
}

/// The tenants of [`LoadSpec::Synthetic`], named `syn0`, `syn1`, ... where the spec names
/// none (as `sim --synthetic` names them).
fn synthetic_tenants(tenants: &[String]) -> Vec<WorkloadSpec> {
    tenants
        .iter()
        .enumerate()
        .map(|(i, t)| {
            parse_synthetic(t, &format!("syn{i}")).expect("a tenant the experiment spells")
        })
        .collect()
}

/// 64-bit FNV-1a: a stable hash (std's `DefaultHasher` may change between releases).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RunSpec {
        let load = LoadSpec::Mix {
            workloads: vec![Workload::Tpcc, Workload::TensorFlow],
        };
        RunSpec::new("fusionraid", load, 2000, 3, PoolSize::Paper)
    }

    #[test]
    fn ids_are_readable_stable_and_distinct() {
        let a = spec();
        let id = a.id();
        assert!(id.starts_with("fusionraid_tpcc+tf_aged_2000ms_s3_"), "{id}");
        assert_eq!(id, spec().id());
        let mut b = spec();
        b.warmup_ms = 0; // not in the readable part, still a different id
        assert_ne!(b.id(), id);
        let mut c = spec();
        c.detector = Some(DetectorSpec {
            t_us: 2500,
            x_high: 4,
        });
        assert!(c.id().contains("_x4t2500us_"), "{}", c.id());
        assert!(id.chars().all(|ch| ch.is_ascii_graphic() && ch != '/'));
    }

    #[test]
    fn the_device_shows_in_the_id_only_when_it_is_not_dc() {
        let dc = spec();
        let json = serde_json::to_string(&dc).unwrap();
        assert!(!json.contains("device"), "{json}");
        let mut c = spec();
        c.device = "consumer".into();
        assert!(
            c.id()
                .starts_with("fusionraid_tpcc+tf_consumer_aged_2000ms_s3_")
        );
        assert_ne!(c.id(), dc.id());
        assert!(
            serde_json::to_string(&c)
                .unwrap()
                .contains(r#""device":"consumer""#)
        );
        let sc = c.scenario();
        assert_eq!(sc.pool.device, "consumer");
        // No detector given: the scenario picks the consumer setting (x̂ = x̌ in the paper).
        assert_eq!(sc.detector_config(), DetectorConfig::paper_consumer());
        assert_eq!(dc.scenario().detector_config(), DetectorConfig::paper_dc());
    }

    #[test]
    fn a_mixed_device_list_reads_in_the_id_and_reaches_the_pool() {
        let mut c = spec();
        c.device = "sandook12, consumer".into();
        let id = c.id();
        assert!(
            id.starts_with("fusionraid_tpcc+tf_sandook12+consumer_aged_"),
            "{id}"
        );
        assert!(
            id.chars()
                .all(|ch| ch.is_ascii_graphic() && ch != '/' && ch != ',')
        );
        let sc = c.scenario();
        assert_eq!(sc.pool.device, "sandook12, consumer");
        assert_eq!(sc.pool.member_devices().unwrap()[12], "consumer");
        assert_eq!(sc.detector_config(), DetectorConfig::paper_consumer());
        c.device = "sandook12".into();
        assert_eq!(c.scenario().detector_config(), DetectorConfig::paper_dc());
    }

    #[test]
    fn spikes_show_in_the_id_and_reach_the_pool_only_when_set() {
        let plain = spec();
        assert!(!serde_json::to_string(&plain).unwrap().contains("spikes"));
        assert!(plain.scenario().pool.spikes.is_none());
        let mut k = spec();
        k.spikes = Some(SpikeSetting {
            per_min: 20,
            length_us: 10_000,
        });
        assert!(k.id().contains("_spk20x10000us_2000ms_"), "{}", k.id());
        assert_ne!(k.id(), plain.id());
        let sp = k.scenario().pool.spikes.unwrap();
        assert_eq!((sp.per_min, sp.length_ns), (20.0, 10_000_000));
        assert!((k.spikes.unwrap().unresponsive_share() - 20.0 * 0.01 / 60.0).abs() < 1e-12);
    }

    #[test]
    fn fail_slow_shows_in_the_id_and_reaches_the_pool_only_when_set() {
        let plain = spec();
        assert!(!serde_json::to_string(&plain).unwrap().contains("fail_slow"));
        assert!(plain.scenario().pool.fail_slow.is_empty());
        let mut f = spec();
        let slow = FailSlowSpec::parse("5x/2s/2s").unwrap();
        f.fail_slow = Some(FailSlowSetting {
            disks: vec![3, 10],
            spec: slow,
        });
        let id = f.id();
        assert!(id.contains("_aged_fs3+10_5x-2s-2s_2000ms_s3_"), "{id}");
        assert!(id.chars().all(|ch| ch.is_ascii_graphic() && ch != '/'));
        assert_ne!(id, plain.id());
        let json = serde_json::to_string(&f).unwrap();
        assert!(
            json.contains(r#""fail_slow":{"disks":[3,10],"spec":"5x/2s/2s"}"#),
            "{json}"
        );
        let sc = f.scenario();
        sc.validate().unwrap();
        assert_eq!(sc.pool.fail_slow, vec![(3, slow), (10, slow)]);
    }

    #[test]
    fn scenario_follows_the_spec() {
        let mut s = spec();
        s.conversion = false;
        s.detector = Some(DetectorSpec {
            t_us: 2500,
            x_high: 4,
        });
        s.pool = PoolSize::Tiny {
            member_bytes: 8 << 30,
            volume_bytes: 1 << 30,
        };
        let sc = s.scenario();
        sc.validate().unwrap();
        assert!(!sc.scheme_options.conversion);
        assert_eq!(sc.detector_config().slot_ns, 250_000);
        assert_eq!(sc.duration_ns, Some(2_000_000_000));
        assert_eq!(sc.warmup_ns, 200_000_000);
        assert_eq!(sc.volume_configs().len(), 2);
        assert_eq!(
            DetectorSpec::paper_dc().config(),
            DetectorConfig::paper_dc()
        );
        assert_eq!(s.source_names(), ["tpcc", "tensorflow"]);
    }
}
