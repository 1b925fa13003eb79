//! Configuration of a FusionRAID pool and its volumes.

use crate::layout::{
    GeometryError, GroupLayout, Layout, MolsLayout, PermutationLayout, TieredLayout,
};
use crate::types::Nanos;

/// Redundancy level of a volume: RAID5 keeps one parity column and two replicas of recent
/// small writes; RAID6 keeps two parity columns and three replicas.
///
/// A mirror volume keeps `copies` (2 or 3) copies of everything and no parity, for tenants
/// of random writes. Its stripes are `copies` wide with one data column, and the parity of
/// one column is that column (P = D; Q = g^0 D = D), so the RAID machinery (full-stripe
/// writes, rebuild by reconstruction, the cleaner, scrub) handles mirrored blocks as they
/// are: a mirror stripe is RAID5 of width 2 or RAID6 of width 3. Its replica slots lie in
/// one stripe, a copy per column, so a pack of small writes is a mirror stripe already and
/// its conversion changes only the mapping (no read, no parity write).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Raid5,
    Raid6,
    Mirror { copies: u8 },
}

impl Level {
    pub fn nparity(self) -> usize {
        match self {
            Level::Raid5 => 1,
            Level::Raid6 => 2,
            Level::Mirror { copies } => copies as usize - 1,
        }
    }
    /// Copies a replicated write makes: the same fault tolerance as the parity level.
    pub fn copies(self) -> usize {
        self.nparity() + 1
    }
    pub fn is_mirror(self) -> bool {
        matches!(self, Level::Mirror { .. })
    }
    /// Stripes one pair set takes: a copy per stripe, or, in a mirror volume, one stripe
    /// holding every copy.
    pub fn set_stripes(self) -> usize {
        if self.is_mirror() { 1 } else { self.copies() }
    }
    /// The stripe width the level implies, if it fixes one (mirrors: one column per copy).
    pub fn fixed_width(self) -> Option<usize> {
        self.is_mirror().then(|| self.copies())
    }
    pub fn name(self) -> &'static str {
        match self {
            Level::Raid5 => "raid5",
            Level::Raid6 => "raid6",
            Level::Mirror { copies: 2 } => "mirror",
            Level::Mirror { .. } => "mirror3",
        }
    }
}

impl std::str::FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "raid5" | "5" => Ok(Level::Raid5),
            "raid6" | "6" => Ok(Level::Raid6),
            "mirror" | "mirror2" | "raid1" | "1" => Ok(Level::Mirror { copies: 2 }),
            "mirror3" => Ok(Level::Mirror { copies: 3 }),
            _ => Err(format!(
                "unknown RAID level '{s}' (raid5, raid6, mirror or mirror3)"
            )),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutKind {
    /// RAID+ mutually orthogonal Latin squares (prime-power pool sizes).
    Mols,
    /// RAID50-style fixed groups of `width` disks.
    Groups,
    /// dRAID-style permutations (any pool size).
    Permutation { seed: u64 },
}

impl LayoutKind {
    pub fn build(
        self,
        disks: usize,
        width: usize,
        nparity: usize,
    ) -> Result<Box<dyn Layout>, GeometryError> {
        Ok(match self {
            LayoutKind::Mols => Box::new(MolsLayout::new(disks, width)?),
            LayoutKind::Groups => Box::new(GroupLayout::new(disks, width, nparity)?),
            LayoutKind::Permutation { seed } => {
                Box::new(PermutationLayout::new(disks, width, seed)?)
            }
        })
    }
}

impl std::str::FromStr for LayoutKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "mols" | "raid+" => Ok(LayoutKind::Mols),
            "groups" | "raid50" => Ok(LayoutKind::Groups),
            "permutation" | "draid" => Ok(LayoutKind::Permutation { seed: 0x5eed }),
            _ => Err(format!("unknown layout '{s}' (mols, groups, permutation)")),
        }
    }
}

/// The pool's members and how they are cut into blocks.
#[derive(Clone, Debug)]
pub struct PoolGeometry {
    pub disks: usize,
    pub disk_bytes: u64,
    /// Stripe unit and mapping granularity (64 KiB in the paper).
    pub block_size: u64,
    /// Bytes reserved at the start of every member for the superblock and metadata.
    pub data_offset: u64,
    pub layout: LayoutKind,
    /// Pool indices of the HDD members, ascending (issue 21). They hold no volume stripes:
    /// every layout is built over the other (SSD) members, and the HDDs serve as write
    /// logs only. Empty: an all-SSD pool.
    pub hdds: Vec<u32>,
}

impl PoolGeometry {
    /// Whether member `d` is an HDD (holds no stripes).
    pub fn is_hdd(&self, d: crate::types::DiskId) -> bool {
        self.hdds.binary_search(&d.0).is_ok()
    }

    /// The members that hold stripes, in pool order.
    pub fn ssd_members(&self) -> Vec<crate::types::DiskId> {
        (0..self.disks as u32)
            .map(crate::types::DiskId)
            .filter(|&d| !self.is_hdd(d))
            .collect()
    }

    /// A volume's layout: `self.layout` over the SSD members, named by pool index.
    pub fn build_layout(
        &self,
        width: usize,
        nparity: usize,
    ) -> Result<Box<dyn Layout>, GeometryError> {
        if self.hdds.is_empty() {
            return self.layout.build(self.disks, width, nparity);
        }
        self.check_tiers()?;
        let ssds = self.ssd_members();
        let inner = self.layout.build(ssds.len(), width, nparity)?;
        Ok(Box::new(TieredLayout::new(inner, ssds, self.disks)))
    }

    /// HDD indices ascending, distinct, inside the pool, and leaving an SSD.
    fn check_tiers(&self) -> Result<(), GeometryError> {
        let sorted = self.hdds.windows(2).all(|w| w[0] < w[1]);
        let inside = self.hdds.iter().all(|&d| (d as usize) < self.disks);
        if !sorted || !inside || self.hdds.len() >= self.disks {
            return Err(GeometryError::Other(format!(
                "HDD members {:?} must be distinct, ascending member indices below {}, and \
                 leave at least one SSD",
                self.hdds, self.disks
            )));
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct VolumeConfig {
    pub name: String,
    pub level: Level,
    /// Blocks per stripe, data and parity.
    pub width: usize,
    pub size_bytes: u64,
    /// Upper bound of the replicated area as a share of the volume's logical size (paper: 10%).
    pub replicated_fraction: f64,
    /// Physical stripes beyond those the logical size needs, as a share: room for the
    /// replicated area, out-of-place writes and holes before compaction.
    pub spare_fraction: f64,
}

impl VolumeConfig {
    pub fn new(name: &str, level: Level, width: usize, size_bytes: u64) -> Self {
        VolumeConfig {
            name: name.to_string(),
            level,
            width,
            size_bytes,
            replicated_fraction: 0.10,
            spare_fraction: 0.25,
        }
    }
}

/// A mirror's cleaning moves fill one-block stripes (a RAID stripe of the usual widths
/// takes four blocks or more), and its conversions do no I/O: this many times the moves in
/// flight keep its cleaner ahead of its writers. Eight, not four (which matches the pages
/// in flight of a RAID5 4+1 volume): at four, under sustained 4 KiB random writes, the
/// cleaner had all its moves in flight all the time once its plans no longer chained
/// (`reloc_plan::fill`), the members' latency well below a RAID5 volume's under the same
/// load; at eight the members are the bound (docs/BENCHMARKS.md, "Mirror volumes next to
/// RAID5"). Within the cleaner's reserve they still run one at a time
/// (`relocate::readiness`).
pub const MIRROR_MOVES_FACTOR: usize = 8;

/// When background conversion of replicated pairs to parity stripes runs (paper §4.2).
#[derive(Clone, Debug)]
pub struct ConversionPolicy {
    /// Convert on the policy's triggers (spare low water, replicated high water, idle).
    /// Off, conversion still runs when the replicated area reaches its hard cap or writes
    /// wait for room: otherwise every small write past the cap would take a zero-padded
    /// full stripe for the cleaner to compact again (sustained 16 KiB overwrites on 8 aged
    /// `dc` members then cost 16x the user bytes on the members and seconds of latency;
    /// docs/BENCHMARKS.md, "RocksDB", conversion off).
    pub enabled: bool,
    /// Convert, and clean (relocate), when spare stripes fall below this share of the zone.
    /// Free space kept above this is slack the cleaner can not use for garbage, so a lower
    /// mark makes cleaning cheaper: sustained 4 KiB random writes over a whole volume with
    /// 25% spare cost 4.65 device bytes per user byte at 0.10, 3.82 at 0.05 and 3.50 at 0.02
    /// (`cargo bench -p fusionraid-core --bench small_writes`); a higher one leaves more
    /// room for bursts before the cleaner must run.
    pub spare_low_water: f64,
    /// Convert when the replicated area exceeds this share of its configured size.
    pub replicated_high_water: f64,
    /// Convert when no user request arrived for this long.
    pub idle_ns: Option<Nanos>,
    /// Pause while any disk of a candidate serves more foreground bytes per second than this
    /// (paper: 40 MB/s, the per-drive average it observed).
    pub pause_fg_bytes_per_sec: f64,
    /// Conversions and compactions in flight at once per volume.
    pub max_concurrent: usize,
    /// Pace of the rebuild after a member failure: bytes of user data moved per second per
    /// surviving member (the whole pool rebuilds, so the pace grows with it).
    pub rebuild_bytes_per_sec: f64,
    /// Rebuild moves in flight per volume; 0 = one per member.
    pub rebuild_concurrent: usize,
    /// Pace of a scrub: bytes read per second per member.
    pub scrub_bytes_per_sec: f64,
}

impl Default for ConversionPolicy {
    fn default() -> Self {
        ConversionPolicy {
            enabled: true,
            spare_low_water: 0.05,
            replicated_high_water: 0.5,
            idle_ns: Some(50_000_000),
            pause_fg_bytes_per_sec: 40e6,
            max_concurrent: 2,
            rebuild_bytes_per_sec: 50e6,
            rebuild_concurrent: 0,
            scrub_bytes_per_sec: 20e6,
        }
    }
}

/// Proactive discard: the members are told which blocks the pool no longer uses, so their
/// flash translation layers stop copying dead data during garbage collection (FusionRAID
/// §6 proposes it; the Pitfalls study shows spare capacity to be the strongest lever on an
/// SSD's sustained random-write speed). Only whole spare stripes are discarded, once the
/// commit that freed them is durable (FORMAT.md, "Discards"): a hole in a live RAID stripe
/// or a dead slot of a live pair set is still covered by parity, present or to come.
#[derive(Clone, Debug)]
pub struct TrimPolicy {
    pub enabled: bool,
    /// Most stripes one batch discards (their blocks merged into one range per run of
    /// adjacent blocks on a member).
    pub batch_stripes: usize,
    /// Least time between two batches: one batch per volume is in flight at a time, and
    /// discards wait this long between batches, so they take a small share of the
    /// members' command slots.
    pub interval_ns: Nanos,
}

impl TrimPolicy {
    /// Off: the paper's FusionRAID never discards.
    pub fn off() -> Self {
        TrimPolicy {
            enabled: false,
            ..Self::on()
        }
    }
    pub fn on() -> Self {
        TrimPolicy {
            enabled: true,
            batch_stripes: 256,
            interval_ns: 5_000_000,
        }
    }
}

/// The redirect rule's knobs (`FusionConfig::offload`; the rule is in `offload`).
#[derive(Clone, Debug, PartialEq)]
pub struct OffloadConfig {
    /// L: an SSD with more I/Os than this in its queue is congested.
    pub queue_threshold: u32,
    /// An SSD is busy only when it had at least this many I/Os outstanding on average over
    /// its last steering window, whatever the median says. SeRW's "IOPS above the median"
    /// is relative, so without a floor it redirects on a nearly idle pool, where an HDD
    /// append spares no read anything. The default, 0.5, calls an SSD idle half the time
    /// or more not busy (docs/EVALUATION.md, "The busy floor"). 0: the talk's rule alone.
    pub min_outstanding: f64,
    /// Bytes of each HDD's log, from its data offset on; None: the whole member beyond it.
    pub log_bytes: Option<u64>,
}

impl Default for OffloadConfig {
    fn default() -> Self {
        OffloadConfig {
            queue_threshold: 3,
            min_outstanding: 0.5,
            log_bytes: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct FusionConfig {
    pub pool: PoolGeometry,
    pub volumes: Vec<VolumeConfig>,
    /// Steer reads and writes around unresponsive disks (off = the paper's Fusion-ND).
    pub redirect: bool,
    pub conversion: ConversionPolicy,
    /// Re-issue a replicated read to another copy after this long (hedged request); None = off.
    pub hedge_ns: Option<Nanos>,
    /// Rebuild a user read of a RAID block from the rest of its stripe when it is still out
    /// after this long, racing the direct read (`raid_hedge.rs`); None = off.
    pub raid_hedge_ns: Option<Nanos>,
    /// Place a write again, away from the member, when one of its device writes has waited
    /// this long on a member the detector marks unresponsive (a hedged write,
    /// `write_hedge.rs`); None = off.
    pub write_hedge_ns: Option<Nanos>,
    /// Hold a write of a sequential stream, smaller than a stripe, up to this long while
    /// the rest of its stripe arrives, so the stream goes as full-stripe writes
    /// (`gather.rs`); None = off (every write placed as it arrives, the paper's engine).
    pub gather_ns: Option<Nanos>,
    /// Hold a write of 1 to 8 pages inside a block up to this long while writes of its size
    /// arrive to fill a parity row, the same pages of every data column of a stripe plus
    /// their parity, written instead of two or three copies (`rows.rs`); None = off (the
    /// paper's engine).
    pub row_ns: Option<Nanos>,
    /// Blocks of one stripe a write must cover in full to take the RAID path. None = the
    /// break-even point floor(width / copies) (= floor(width/2) for RAID5, paper §4.2).
    pub raid_threshold: Option<usize>,
    /// Largest user request in bytes (NBD clients are told; the engine rejects larger).
    /// Each zone keeps enough spare stripes for one request this large on top of the reserve.
    pub max_request_bytes: u64,
    /// Journal the mapping to the members (crate::meta). None keeps it in memory only, as the
    /// paper's battery-backed DRAM would: right for simulations of the paper's setting, not
    /// for a pool that must survive a restart.
    pub journal: Option<crate::meta::JournalConfig>,
    /// Sandook's steering (issue 20) as FusionRAID policies: writes and parity on members in
    /// write mode, reads on copies in read mode, weights and rate factors from the members'
    /// curves. None = the paper's policies. Only with `redirect`.
    pub steer: Option<crate::steer::SteerConfig>,
    /// Each member's load-latency curves, in disk order (shorter: the rest unknown).
    pub curves: Vec<Option<crate::steer::DeviceCurves>>,
    /// Discards of freed stripes (off by default: the paper's configuration).
    pub trim: TrimPolicy,
    /// Wear-aware placement (`crate::policy::WearLadder`): the share of rated life each
    /// member should trail the next more worn one by; off by default.
    pub wear_gap: Option<f64>,
    /// Offload replica writes from busy SSDs to the HDD members' logs (SeRW, issue 21;
    /// `offload::OffloadConfig`). None (the default): off. Needs HDD members.
    pub offload: Option<OffloadConfig>,
}

impl FusionConfig {
    pub fn new(pool: PoolGeometry, volumes: Vec<VolumeConfig>) -> Self {
        FusionConfig {
            pool,
            volumes,
            redirect: true,
            conversion: ConversionPolicy::default(),
            hedge_ns: None,
            raid_hedge_ns: None,
            write_hedge_ns: None,
            gather_ns: None,
            row_ns: None,
            raid_threshold: None,
            max_request_bytes: 32 << 20,
            journal: None,
            steer: None,
            curves: Vec::new(),
            trim: TrimPolicy::off(),
            wear_gap: None,
            offload: None,
        }
    }
}

/// A pool or volume configuration that can not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The layout refuses the volume's geometry. The reason is part of this error's text, not
    /// its source, so a chain of causes does not print it twice.
    #[error("volume '{volume}': {reason}")]
    Geometry {
        volume: String,
        reason: GeometryError,
    },
    #[error("block size {0} must be a power of two, at least 4 KiB and at most 1 MiB")]
    BlockSize(u64),
    #[error(
        "volumes need {need} blocks per disk but members hold only {have}: members of at least \
         {min_member_bytes} bytes would hold them{}",
        largest_last.as_ref().map_or(String::new(), |(name, size)| format!(
            ", or volume '{name}' of at most {size} bytes on these members"
        ))
    )]
    TooSmall {
        need: u64,
        have: u64,
        /// The smallest member size that holds every volume as configured.
        min_member_bytes: u64,
        /// The largest size the last volume could have on these members, the others as
        /// configured (None: not even the others fit).
        largest_last: Option<(String, u64)>,
    },
    #[error("volume '{0}': {1}")]
    Volume(String, String),
    #[error("the pool needs at least one volume")]
    NoVolumes,
}
