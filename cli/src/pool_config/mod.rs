//! The pool file (TOML): members, geometry, volumes, policies and where to serve.
//!
//! ```toml
//! name = "tank"
//! members = ["emu:dc:file:d0.img", "emu:dc:file:d1.img", "..."]
//! member_size = "2G"        # create missing file members (sparse) of this size
//! spares = ["file:s0.img"]  # hot spares: take a failed member's slot after its rebuild
//! # hdd_members = [8, 9]    # members that are HDDs (e.g. "emu:hdd7200:file:h0.img"):
//!                           # no stripes, write logs only (fusionraid scheme)
//! block_size = "64K"        # stripe unit
//! # data_offset = "8M"      # reserved at the start of every member (superblock, journal,
//!                           # checkpoints); default: what the metadata needs, fixed by create
//! layout = "auto"           # auto (mols where it fits, else permutation) | mols | groups | permutation
//! scheme = "fusionraid"     # fusionraid | fusion-nd | raid50 | 4-raid5 | lograid | ...
//!
//! [detector]                # spike detector: preset dc | consumer, and overrides
//! preset = "dc"
//!
//! [conversion]              # in-position conversion policy
//! enabled = true
//!
//! [offload]                 # write offload to HDD logs (SeRW; needs hdd_members)
//! enabled = true
//! queue_threshold = 3       # L: an SSD above the median IOPS with a longer queue is busy
//! min_outstanding = 0.5     # and only with this many I/Os outstanding on average (0: off)
//! # log_size = "16G"        # per HDD (default: the whole member after data_offset)
//!
//! [metadata]                # durable mapping (FusionRAID schemes)
//! journal = true            # false: mapping in memory only, lost at restart
//! journal_size = "4M"       # journal ring per member
//! commit_interval_ms = 20   # commit at least this often while changes are pending
//!
//! [[volume]]
//! name = "vol0"
//! level = "raid5"
//! width = 5
//! size = "4G"
//!
//! [[volume]]                # no parity: every block in `copies` copies (2 or 3), for
//! name = "db"               # tenants of small random writes
//! level = "mirror"
//! copies = 2
//! size = "1G"
//!
//! [serve]
//! unix = "nbd.sock"         # relative paths are relative to this file
//! tcp = "127.0.0.1:10809"
//! ```
//!
//! Two kinds of settings: the *geometry* (members, block size, data offset, layout,
//! volumes) is fixed by `create` and stored in every member's superblock; the *policies*
//! (scheme, detector, conversion, serve) may change between runs of `serve`.

mod engine_config;
mod steer;
#[cfg(test)]
mod tests;
mod units;
mod warnings;

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use fusionraid_core::meta::ImageBound;
use fusionraid_core::scheme::fusion::Level;
use fusionraid_io::{MemberSpec, format_size};
use serde::{Deserialize, Serialize};

pub use units::{Size, Spare};

use crate::pool_limits;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolFile {
    #[serde(default = "default_name")]
    pub name: String,
    pub members: Vec<String>,
    /// Hot spares: devices that take the slot of a failed member once the rebuild has moved
    /// its data onto the others (files are created with `member_size`). A spare that is also
    /// listed in `members` has been used (replace edits `members`, not this list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spares: Vec<String>,
    /// Members that are HDDs (indices into `members`, ascending): a hybrid pool's HDD tier
    /// (issue 21). They hold no volume stripes, only write logs; the `fusionraid` scheme
    /// alone takes them. Fixed by `create` (recorded in every member's superblock).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hdd_members: Vec<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_size: Option<Size>,
    /// `file:` members that are regular files: "reserved" (the default) allocates each in
    /// full at `create` and keeps it so, trims zeroing ranges in place, so a file system
    /// that fills up can never refuse the pool a write; "thin" leaves them sparse, takes
    /// space as the pool writes and gives trimmed ranges back (punched holes).
    #[serde(default, skip_serializing_if = "is_reserved")]
    pub file_space: fusionraid_io::member::uring::FileSpace,
    /// Seconds a member write refused for lack of space (a thin `file:`, a thin-provisioned
    /// device, an `nbd://` export on thin storage) is held and tried again before the
    /// member fails: room made in that time loses nothing (0 fails the member at once).
    #[serde(
        default = "default_no_space_wait_s",
        skip_serializing_if = "is_default_no_space_wait_s"
    )]
    pub no_space_wait_s: u64,
    #[serde(default = "default_block")]
    pub block_size: Size,
    /// None: as much as the metadata needs (`resolved_data_offset`); `create` stores the
    /// resolved value in the superblocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_offset: Option<Size>,
    #[serde(default = "default_layout")]
    pub layout: String,
    #[serde(default = "default_scheme")]
    pub scheme: String,
    /// Seeds the engine's random choices and the emulated device models.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// User requests in the engine at once (backpressure beyond).
    #[serde(default = "default_max_requests")]
    pub max_requests: usize,
    /// Re-issue a replicated read to the other copy after this many microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedge_us: Option<u64>,
    /// Rebuild a read of a RAID block from the rest of its stripe when it has not completed
    /// after this many microseconds and its member looks stalled, racing the direct read
    /// (hedged RAID read, `fusionraid` scheme); off when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raid_hedge_us: Option<u64>,
    /// Place a write again, away from the member, when one of its device writes has waited
    /// this many microseconds on a member the detector marks unresponsive (hedged write,
    /// `fusionraid` scheme); off when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_hedge_us: Option<u64>,
    /// Hold a write of a sequential stream, smaller than a stripe, up to this many
    /// microseconds while the rest of its stripe arrives, so the stream is written as full
    /// stripes instead of replicas converted later (stripe gathering, `fusionraid` scheme);
    /// 0 turns it off. Streams written one request at a time are never held.
    #[serde(
        default = "default_gather_us",
        skip_serializing_if = "is_default_gather_us"
    )]
    pub gather_us: u64,
    /// Hold a write of 1 to 8 pages inside a block up to this many microseconds while
    /// writes of its size arrive to fill a parity row: the same pages of every data column
    /// of a stripe plus their parity, written instead of two or three copies and a
    /// conversion (`fusionraid` scheme); 0 turns it off. A client writing one request at a
    /// time is never held.
    #[serde(default = "default_row_us", skip_serializing_if = "is_default_row_us")]
    pub row_us: u64,
    /// Wear-aware placement (`fusionraid` scheme): keep each member at least this share of
    /// its rated life (0.05 = 5%) behind the next more worn one, so the members do not wear
    /// out together (issue 22; docs/EVALUATION.md "Wear-aware placement"). Needs members
    /// that report wear (emulated SSDs, NVMe drives read as root); off by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wear_gap: Option<f64>,
    /// Blocks of a stripe a write must cover to take the RAID path (default: break-even).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raid_threshold: Option<usize>,
    /// Discard freed stripes, and the members' space no volume uses, on the members
    /// (`fusionraid` scheme; `file:` members punch holes, `nbd://` members send TRIM).
    #[serde(default = "default_trim", skip_serializing_if = "is_default_trim")]
    pub trim: bool,
    #[serde(default)]
    pub detector: DetectorSection,
    #[serde(default)]
    pub conversion: ConversionSection,
    #[serde(default)]
    pub metadata: MetadataSection,
    #[serde(rename = "volume")]
    pub volumes: Vec<VolumeSection>,
    #[serde(default)]
    pub serve: ServeSection,
    /// Sandook's steering: always for the `sandook` scheme, for `fusionraid` when enabled.
    #[serde(default, skip_serializing_if = "SteerSection::is_default")]
    pub steer: SteerSection,
    /// Write offload to the HDD members' logs (issue 21; `fusionraid` only).
    #[serde(default, skip_serializing_if = "OffloadSection::is_default")]
    pub offload: OffloadSection,
    /// How the pool's checkpoint area is sized: not a setting but a fact of the pool,
    /// taken from its superblocks' version (new pools: the zone rule).
    #[serde(skip)]
    pub image_bound: ImageBound,
}

fn default_name() -> String {
    "pool".into()
}
fn default_block() -> Size {
    Size(64 << 10)
}
/// The layout a pool file that names none gets: chosen by `create` from the geometry
/// (`PoolFile::resolved_layout`) and stored resolved.
pub const AUTO_LAYOUT: &str = "auto";
fn default_layout() -> String {
    AUTO_LAYOUT.into()
}
fn default_scheme() -> String {
    "fusionraid".into()
}
/// Stripe gathering's hold: long enough for a client that sends a request every 100-250 us
/// (fio's NBD engine on a loaded 2-core machine) to send the rest of a 4-block stripe
/// (docs/BENCHMARKS.md, "Sequential writes"); a shallow stream pays it once per back-off.
pub const DEFAULT_GATHER_US: u64 = 1000;
fn is_reserved(s: &fusionraid_io::member::uring::FileSpace) -> bool {
    *s == fusionraid_io::member::uring::FileSpace::Reserved
}
fn default_no_space_wait_s() -> u64 {
    fusionraid_io::member::DEFAULT_NO_SPACE_WAIT_NS / 1_000_000_000
}
fn is_default_no_space_wait_s(s: &u64) -> bool {
    *s == default_no_space_wait_s()
}
fn default_gather_us() -> u64 {
    DEFAULT_GATHER_US
}
fn is_default_gather_us(g: &u64) -> bool {
    *g == DEFAULT_GATHER_US
}
/// Parity rows' hold: a client keeping 16 random 4 KiB writes in flight over NBD sends the
/// pages of a row within about 100 us on this project's 2-core machine
/// (docs/BENCHMARKS.md, "Sustained random overwrites"); a shallow client pays it once per
/// back-off.
pub const DEFAULT_ROW_US: u64 = 500;
fn default_row_us() -> u64 {
    DEFAULT_ROW_US
}
fn is_default_row_us(g: &u64) -> bool {
    *g == DEFAULT_ROW_US
}
fn default_trim() -> bool {
    true
}
fn is_default_trim(t: &bool) -> bool {
    *t == default_trim()
}
fn default_seed() -> u64 {
    1
}
fn default_max_requests() -> usize {
    4096
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectorSection {
    /// dc (datacenter SSDs) or consumer: the paper's settings for each class.
    #[serde(default = "default_detector")]
    pub preset: String,
    pub slot_us: Option<u64>,
    pub window_slots: Option<u32>,
    pub x_high: Option<u32>,
    pub x_low: Option<u32>,
}

fn default_detector() -> String {
    "dc".into()
}

impl Default for DetectorSection {
    fn default() -> Self {
        DetectorSection {
            preset: default_detector(),
            slot_us: None,
            window_slots: None,
            x_high: None,
            x_low: None,
        }
    }
}

/// `[steer]`: profile-guided steering (issue 20; docs/FORMAT.md has no part in it: nothing of
/// it is stored on the members).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SteerSection {
    /// Run Sandook's mechanisms as FusionRAID policies (`fusionraid` only; `sandook` always
    /// steers).
    #[serde(default)]
    pub enabled: bool,
    /// Which mechanisms: weights, segregation, congestion (default: all three for `sandook`,
    /// weights and congestion for `fusionraid`, where segregation costs more than it buys:
    /// docs/EVALUATION.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanisms: Option<Vec<String>>,
    /// A directory of load-latency profiles in Sandook's format (`<serial>_<mix>.csv`, as in
    /// `shared/data/ssd-profiles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiles: Option<String>,
    /// Each member's serial in `profiles`, in member order ("" for none). Emulated members
    /// (`emu:PRESET`) without one get their model's swept curves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub serials: Vec<String>,
}

impl SteerSection {
    fn is_default(&self) -> bool {
        *self == SteerSection::default()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetadataSection {
    #[serde(default = "yes")]
    pub journal: bool,
    #[serde(default = "default_journal_size")]
    pub journal_size: Size,
    #[serde(default = "default_commit_ms")]
    pub commit_interval_ms: u64,
}

fn default_journal_size() -> Size {
    Size(4 << 20)
}
fn default_commit_ms() -> u64 {
    20
}

impl Default for MetadataSection {
    fn default() -> Self {
        MetadataSection {
            journal: true,
            journal_size: default_journal_size(),
            commit_interval_ms: default_commit_ms(),
        }
    }
}

/// `[offload]`: SeRW's write offload. A policy, not geometry: it may be turned off between
/// runs (copies already in the logs are still read and retired), but a log's size must not
/// change while copies are in it (recovery refuses, naming the size to set back).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffloadSection {
    #[serde(default)]
    pub enabled: bool,
    /// L of SeRW's rule: a busy SSD's queue must be longer than this (or the write larger
    /// than the median).
    #[serde(default = "default_queue_threshold")]
    pub queue_threshold: u32,
    /// A busy SSD must also have had this many I/Os outstanding on average over its last
    /// 10 ms, so a nearly idle pool never redirects (0: SeRW's relative rule alone).
    #[serde(default = "default_min_outstanding")]
    pub min_outstanding: f64,
    /// Bytes of each HDD's log (default: the whole member after the data offset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_size: Option<Size>,
}

fn default_queue_threshold() -> u32 {
    3
}

fn default_min_outstanding() -> f64 {
    fusionraid_core::scheme::fusion::OffloadConfig::default().min_outstanding
}

impl Default for OffloadSection {
    fn default() -> Self {
        OffloadSection {
            enabled: false,
            queue_threshold: default_queue_threshold(),
            min_outstanding: default_min_outstanding(),
            log_size: None,
        }
    }
}

impl OffloadSection {
    fn is_default(&self) -> bool {
        *self == OffloadSection::default()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversionSection {
    /// Convert replicated pairs to parity in the background on the policy's triggers. Off,
    /// the pool still converts when its replicated area is full or writes wait for room
    /// (never a zero-padded stripe per small write).
    #[serde(default = "yes")]
    pub enabled: bool,
    pub spare_low_water: Option<f64>,
    pub replicated_high_water: Option<f64>,
    /// Convert after this long without user requests; 0 = never on idleness.
    pub idle_ms: Option<u64>,
    /// Pause while a disk serves more foreground MB/s than this (paper: 40).
    pub pause_mb_per_s: Option<f64>,
    pub max_concurrent: Option<usize>,
}

fn yes() -> bool {
    true
}

impl Default for ConversionSection {
    fn default() -> Self {
        ConversionSection {
            enabled: true,
            spare_low_water: None,
            replicated_high_water: None,
            idle_ms: None,
            pause_mb_per_s: None,
            max_concurrent: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VolumeSection {
    pub name: String,
    /// raid5, raid6 or mirror.
    pub level: String,
    /// A mirror's copies, 2 (the default) or 3; only with `level = "mirror"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies: Option<u8>,
    /// Blocks per stripe, data and parity (a mirror's is its copies, and may be left out).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub width: usize,
    pub size: Size,
    #[serde(default = "default_rep")]
    pub replicated_fraction: f64,
    /// Spare stripes beyond the data and the replicated area, as a share of the data, or
    /// "auto" (the default): what the members hold beyond the volumes' needs, shared out.
    #[serde(default)]
    pub spare_fraction: Spare,
    /// Export with byte granularity (read-modify-write at the edge) for clients such as
    /// nbdfuse that ignore the 4 KiB minimum block size.
    #[serde(default)]
    pub allow_unaligned: bool,
}

fn default_rep() -> f64 {
    0.10
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl VolumeSection {
    /// The level with the mirror's copies applied.
    pub fn parsed_level(&self) -> Result<Level, String> {
        let level: Level = self.level.parse()?;
        match (level, self.copies) {
            (_, None) => Ok(level),
            (Level::Mirror { .. }, Some(c @ 2..=3))
                if self.level.eq_ignore_ascii_case("mirror") =>
            {
                Ok(Level::Mirror { copies: c })
            }
            (Level::Mirror { .. }, Some(c @ 2..=3)) => Err(format!(
                "`copies` {c} with level '{}': give `level = \"mirror\"` and the copies",
                self.level
            )),
            (Level::Mirror { .. }, Some(c)) => {
                Err(format!("a mirror keeps 2 or 3 copies, not {c}"))
            }
            (_, Some(_)) => Err(format!(
                "`copies` is for mirrors; a {} volume's copies follow from its parity",
                self.level
            )),
        }
    }

    /// Blocks per stripe: `width`, or the one a mirror's copies imply.
    pub fn stripe_width(&self) -> usize {
        match self.parsed_level().ok().and_then(Level::fixed_width) {
            Some(w) if self.width == 0 => w,
            _ => self.width,
        }
    }

    /// The level as `create` and `serve` print it.
    pub fn level_label(&self) -> String {
        self.parsed_level()
            .map_or_else(|_| self.level.clone(), |l| l.name().to_string())
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeSection {
    /// NBD Unix socket (default: nbd.sock next to the pool file).
    pub unix: Option<String>,
    /// NBD TCP address, e.g. 127.0.0.1:10809 (default: none). Binding beyond loopback
    /// exposes the volumes to the network without authentication.
    pub tcp: Option<String>,
    /// Status socket (default: status.sock next to the pool file).
    pub status: Option<String>,
    /// Commands queued between NBD connections and the engine.
    pub queue_depth: Option<usize>,
    /// Prometheus endpoint address, e.g. 127.0.0.1:9108 (default: none).
    pub metrics: Option<String>,
}

impl PoolFile {
    pub fn load(path: &Path) -> anyhow::Result<PoolFile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading pool file {}", path.display()))?;
        PoolFile::parse(&text).with_context(|| format!("pool file {}", path.display()))
    }

    pub fn parse(text: &str) -> anyhow::Result<PoolFile> {
        let p: PoolFile = toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
        p.validate()?;
        Ok(p)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a pool file always serialises")
    }

    /// Checks everything that can be checked without opening members.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.check_members()?;
        self.check_reserved_area()?;
        self.layout_kind()?;
        pool_limits::check_policies(self)?;
        self.detector_config()?;
        self.check_volumes()?;
        // What `create` stores must fit the superblock, or the pool could never be created.
        let stored = self.to_toml().len();
        if stored > crate::superblock::MAX_CONFIG_BYTES {
            bail!(
                "the pool file is {stored} bytes in canonical form; a superblock holds at most {}",
                crate::superblock::MAX_CONFIG_BYTES
            );
        }
        Ok(())
    }

    /// Members and spares parse, and the pool is all in memory or all persistent.
    fn check_members(&self) -> anyhow::Result<()> {
        if self.members.is_empty() {
            bail!("`members`: at least one member is needed");
        }
        for (i, m) in self.members.iter().enumerate() {
            MemberSpec::parse(m).map_err(|e| anyhow::anyhow!("`members[{i}]`: {e}"))?;
        }
        for (i, m) in self.spares.iter().enumerate() {
            MemberSpec::parse(m).map_err(|e| anyhow::anyhow!("`spares[{i}]`: {e}"))?;
            if m.contains(char::is_whitespace) {
                bail!("`spares[{i}]`: {m:?} contains spaces");
            }
        }
        self.check_hdd_members()?;
        if self.offload.enabled && self.hdd_members.is_empty() {
            bail!("`offload.enabled`: write offload needs HDD members (`hdd_members`) to log to");
        }
        if self.offload.log_size.is_some_and(|s| s.0 < 4096) {
            bail!("`offload.log_size`: at least 4K");
        }
        let eph = self.specs()?.iter().filter(|s| s.is_ephemeral()).count();
        if eph != 0 && eph != self.members.len() {
            bail!(
                "`members`: {eph} of {} members are in memory (mem:); a pool is either all in \
                 memory or all persistent, since in-memory members keep no superblock",
                self.members.len()
            );
        }
        Ok(())
    }

    /// HDD member indices: ascending, distinct, listed members, leaving an SSD.
    fn check_hdd_members(&self) -> anyhow::Result<()> {
        let n = self.members.len();
        if let Some(&bad) = self.hdd_members.iter().find(|&&i| i >= n) {
            bail!("`hdd_members`: {bad} is not a member index (the pool has {n} members)");
        }
        if self.hdd_members.windows(2).any(|w| w[0] >= w[1]) {
            bail!("`hdd_members`: indices must be ascending and distinct");
        }
        if !self.hdd_members.is_empty() && self.hdd_members.len() >= n {
            bail!("`hdd_members`: a pool needs at least one SSD member to hold its volumes");
        }
        Ok(())
    }

    /// Whether member `i` is an HDD (`hdd_members`).
    pub fn is_hdd(&self, i: usize) -> bool {
        self.hdd_members.binary_search(&i).is_ok()
    }

    /// The block size, the area reserved at the start of every member (superblock, journal,
    /// checkpoints) and the member size that must exceed it.
    fn check_reserved_area(&self) -> anyhow::Result<()> {
        let bs = self.block_size.0;
        if !bs.is_power_of_two() || !(4096..=(1 << 20)).contains(&bs) {
            bail!("`block_size`: {bs} must be a power of two from 4K to 1M");
        }
        let min_off = crate::superblock::SUPERBLOCK_BYTES;
        if let Some(off) = self.data_offset
            && (off.0 < min_off || !off.0.is_multiple_of(4096))
        {
            bail!(
                "`data_offset`: {} must be a multiple of 4K and at least {} (the superblock)",
                off.0,
                format_size(min_off)
            );
        }
        let m = &self.metadata;
        if m.journal_size.0 < 64 << 10 || m.journal_size.0 > 1 << 30 {
            bail!(
                "`metadata.journal_size`: {} must be between 64K and 1G",
                format_size(m.journal_size.0)
            );
        }
        if m.commit_interval_ms == 0 || m.commit_interval_ms > 60_000 {
            bail!("`metadata.commit_interval_ms` must be between 1 and 60000");
        }
        if self.no_space_wait_s > 86_400 {
            bail!(
                "`no_space_wait_s`: {} s is more than a day; a write held that long is a \
                 client timing out, not a member waiting for room",
                self.no_space_wait_s
            );
        }
        let reserved = self.data_offset.map_or(min_off, |o| o.0);
        if let Some(m) = self.member_size
            && (m.0 <= reserved || !m.0.is_multiple_of(4096))
        {
            bail!(
                "`member_size`: {} must be a multiple of 4K larger than `data_offset` ({})",
                m.0,
                format_size(reserved)
            );
        }
        Ok(())
    }

    /// At least one volume, every one within limits, named once and sized in whole blocks.
    fn check_volumes(&self) -> anyhow::Result<()> {
        if self.volumes.is_empty() {
            bail!("`[[volume]]`: at least one volume is needed");
        }
        let bs = self.block_size.0;
        let mut total = 0u64;
        for (i, v) in self.volumes.iter().enumerate() {
            let at = format!("`volume[{i}]` ({})", v.name.escape_debug());
            pool_limits::check_volume(&at, v)?;
            if self.volumes[..i].iter().any(|w| w.name == v.name) {
                bail!("{at}: `name` is used twice");
            }
            if v.size.0 == 0 || v.size.0 % bs != 0 {
                bail!(
                    "{at}: `size` {} must be a positive multiple of the block size {}",
                    v.size.0,
                    format_size(bs)
                );
            }
            total = total
                .checked_add(v.size.0)
                .ok_or_else(|| anyhow::anyhow!("{at}: the volumes' sizes add up beyond 16E"))?;
        }
        Ok(())
    }
}

/// Paths of the serve section, resolved against the pool file's directory.
pub struct ServePaths {
    pub unix: Option<PathBuf>,
    pub tcp: Option<String>,
    pub status: PathBuf,
}

impl ServeSection {
    pub fn resolve(&self, base: &Path) -> ServePaths {
        let at = |p: &str| {
            let p = PathBuf::from(p);
            if p.is_relative() { base.join(p) } else { p }
        };
        ServePaths {
            unix: Some(at(self.unix.as_deref().unwrap_or("nbd.sock"))),
            tcp: self.tcp.clone(),
            status: at(self.status.as_deref().unwrap_or("status.sock")),
        }
    }
}
