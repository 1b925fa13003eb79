//! The pool file (TOML): members, geometry, volumes, policies and where to serve.
//!
//! ```toml
//! name = "tank"
//! members = ["emu:dc:file:d0.img", "emu:dc:file:d1.img", "..."]
//! member_size = "2G"        # create missing file members (sparse) of this size
//! spares = ["file:s0.img"]  # hot spares: take a failed member's slot after its rebuild
//! block_size = "64K"        # stripe unit
//! # data_offset = "8M"      # reserved at the start of every member (superblock, journal,
//!                           # checkpoints); default: what the metadata needs, fixed by create
//! layout = "mols"           # mols | groups | permutation
//! scheme = "fusionraid"     # fusionraid | fusion-nd | raid50 | 4-raid5 | lograid | ...
//!
//! [detector]                # spike detector: preset dc | consumer, and overrides
//! preset = "dc"
//!
//! [conversion]              # in-position conversion policy
//! enabled = true
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
//! [serve]
//! unix = "nbd.sock"         # relative paths are relative to this file
//! tcp = "127.0.0.1:10809"
//! ```
//!
//! Two kinds of settings: the *geometry* (members, block size, data offset, layout,
//! volumes) is fixed by `create` and stored in every member's superblock; the *policies*
//! (scheme, detector, conversion, serve) may change between runs of `serve`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use fusionraid_core::detector::DetectorConfig;
use fusionraid_core::meta::{ImageBound, JournalConfig};
use fusionraid_core::scheme::fusion::{
    ConversionPolicy, FusionConfig, LayoutKind, PoolGeometry, VolumeConfig, sizing,
};
use fusionraid_io::{MemberSpec, format_size, parse_size};

use crate::pool_limits;
use serde::{Deserialize, Serialize};

/// A byte count written as an integer or a string with a unit ("64K", "2G").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(pub u64);

impl Serialize for Size {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_size(self.0))
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Size, D::Error> {
        d.deserialize_any(SizeVisitor)
    }
}

/// Says what a size may be for every kind of value (serde's untagged-enum fallback only
/// says that no variant matched).
struct SizeVisitor;

impl serde::de::Visitor<'_> for SizeVisitor {
    type Value = Size;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a size: a whole number of bytes, or a string such as \"64K\" or \"2G\"")
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Size, E> {
        Ok(Size(n))
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Size, E> {
        u64::try_from(n)
            .map(Size)
            .map_err(|_| E::custom(format!("a size can not be negative ({n})")))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Size, E> {
        Err(E::custom(format!(
            "a size is a whole number of bytes or a string such as \"64K\", not {v}"
        )))
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Size, E> {
        parse_size(s).map(Size).map_err(E::custom)
    }
}

/// A volume's spare share: a number (of its data), or `"auto"`: the largest share at which
/// every volume still fits on the members (core `sizing::fill_auto_spare`). `create` stores
/// the share it resolved, so later versions computing it differently never move data.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Spare {
    #[default]
    Auto,
    Share(f64),
}

/// Below this spare share sustained small random overwrites cost many device writes each
/// (the cleaner finds little dead space per block it moves), and in some geometries they
/// can still outrun the cleaner (`core/tests/space.rs`: RAID5 and RAID6 of width 4 at
/// shares up to 0.15; every tested geometry holds at 0.25).
pub const SPARE_WARN_BELOW: f64 = 0.25;

impl Spare {
    /// A warning for a resolved share too small for sustained random overwrites.
    pub fn warning(self, volume: &str) -> Option<String> {
        let share = self.share()?;
        (share < SPARE_WARN_BELOW).then(|| {
            format!(
                "warning: volume '{volume}' keeps a spare share of {share}: sustained small \
                 random overwrites will cost several device writes each, and in some \
                 geometries may outrun the cleaner; a share of 0.25 or more (a smaller \
                 volume, or larger members) is recommended"
            )
        })
    }
    pub fn share(self) -> Option<f64> {
        match self {
            Spare::Auto => None,
            Spare::Share(f) => Some(f),
        }
    }
}

impl std::fmt::Display for Spare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Spare::Auto => f.write_str("auto"),
            Spare::Share(x) => write!(f, "{x}"),
        }
    }
}

impl Serialize for Spare {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Spare::Auto => s.serialize_str("auto"),
            Spare::Share(f) => s.serialize_f64(*f),
        }
    }
}

impl<'de> Deserialize<'de> for Spare {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Spare, D::Error> {
        d.deserialize_any(SpareVisitor)
    }
}

struct SpareVisitor;

impl serde::de::Visitor<'_> for SpareVisitor {
    type Value = Spare;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a share of the volume's size, such as 0.25, or \"auto\"")
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Spare, E> {
        Ok(Spare::Share(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Spare, E> {
        Ok(Spare::Share(v as f64))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Spare, E> {
        Ok(Spare::Share(v as f64))
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Spare, E> {
        if s == "auto" {
            Ok(Spare::Auto)
        } else {
            Err(E::custom(format!(
                "expected a share such as 0.25 or \"auto\", not \"{}\"",
                s.escape_debug()
            )))
        }
    }
}

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_size: Option<Size>,
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
    /// Blocks of a stripe a write must cover to take the RAID path (default: break-even).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raid_threshold: Option<usize>,
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
fn default_layout() -> String {
    "mols".into()
}
fn default_scheme() -> String {
    "fusionraid".into()
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

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversionSection {
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
    /// raid5 or raid6.
    pub level: String,
    /// Blocks per stripe, data and parity.
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
        let eph = self.specs()?.iter().filter(|s| s.is_ephemeral()).count();
        if eph != 0 && eph != self.members.len() {
            bail!(
                "`members`: {eph} of {} members are in memory (mem:); a pool is either all in \
                 memory or all persistent, since in-memory members keep no superblock",
                self.members.len()
            );
        }
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
        self.layout_kind()?;
        pool_limits::check_policies(self)?;
        self.detector_config()?;
        if self.volumes.is_empty() {
            bail!("`[[volume]]`: at least one volume is needed");
        }
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

    pub fn specs(&self) -> anyhow::Result<Vec<MemberSpec>> {
        self.members
            .iter()
            .enumerate()
            .map(|(i, m)| MemberSpec::parse(m).map_err(|e| anyhow::anyhow!("`members[{i}]`: {e}")))
            .collect()
    }

    pub fn is_ephemeral(&self) -> bool {
        self.specs()
            .map(|s| s.iter().all(MemberSpec::is_ephemeral))
            .unwrap_or(false)
    }

    pub fn layout_kind(&self) -> anyhow::Result<LayoutKind> {
        let mut k: LayoutKind = self
            .layout
            .parse()
            .map_err(|e: String| anyhow::anyhow!("`layout`: {e}"))?;
        if let LayoutKind::Permutation { seed } = &mut k {
            *seed ^= self.seed;
        }
        Ok(k)
    }

    pub fn detector_config(&self) -> anyhow::Result<DetectorConfig> {
        let d = &self.detector;
        let mut c = match d.preset.as_str() {
            "dc" | "datacenter" => DetectorConfig::paper_dc(),
            "consumer" => DetectorConfig::paper_consumer(),
            other => bail!("`detector.preset`: unknown preset '{other}' (dc, consumer)"),
        };
        if let Some(s) = d.slot_us {
            c.slot_ns = s.saturating_mul(1000);
        }
        if let Some(w) = d.window_slots {
            c.window_slots = w;
        }
        if let Some(x) = d.x_high {
            c.x_high = x;
        }
        if let Some(x) = d.x_low {
            c.x_low = x;
        }
        c.validate()
            .map_err(|e| anyhow::anyhow!("`detector`: {e}"))?;
        Ok(c)
    }

    fn conversion_policy(&self) -> ConversionPolicy {
        let c = &self.conversion;
        let mut p = ConversionPolicy {
            enabled: c.enabled,
            ..ConversionPolicy::default()
        };
        if let Some(v) = c.spare_low_water {
            p.spare_low_water = v;
        }
        if let Some(v) = c.replicated_high_water {
            p.replicated_high_water = v;
        }
        if let Some(ms) = c.idle_ms {
            p.idle_ns = (ms > 0).then(|| ms * 1_000_000);
        }
        if let Some(v) = c.pause_mb_per_s {
            p.pause_fg_bytes_per_sec = v * 1e6;
        }
        if let Some(v) = c.max_concurrent {
            p.max_concurrent = v;
        }
        p
    }

    /// The FusionRAID configuration for members of `disk_bytes` each.
    /// Bytes reserved at the start of every member: the configured value, or the
    /// superblock plus what the journal and the largest checkpoint need, in whole MiB.
    pub fn resolved_data_offset(&self) -> anyhow::Result<u64> {
        if let Some(o) = self.data_offset {
            return Ok(o.0);
        }
        let mut cfg = self.fusion_config_at(0, 0, true, 0)?;
        cfg.journal.get_or_insert_with(Default::default);
        let end = fusionraid_core::scheme::fusion::durable::meta_layout(&cfg)
            .map_or(1 << 20, |l| l.end());
        if end > u64::MAX / 2 {
            bail!("the volumes are too large for any member: their metadata alone would not fit");
        }
        Ok(end.div_ceil(1 << 20).max(1) << 20)
    }

    /// The FusionRAID configuration of this pool on members of `disk_bytes`; `pool_id`
    /// marks its journal (from the superblock's uuid).
    pub fn fusion_config(
        &self,
        disk_bytes: u64,
        redirect: bool,
        pool_id: u64,
    ) -> anyhow::Result<FusionConfig> {
        self.fusion_config_at(disk_bytes, self.resolved_data_offset()?, redirect, pool_id)
    }

    fn fusion_config_at(
        &self,
        disk_bytes: u64,
        data_offset: u64,
        redirect: bool,
        pool_id: u64,
    ) -> anyhow::Result<FusionConfig> {
        let pool = PoolGeometry {
            disks: self.members.len(),
            disk_bytes,
            block_size: self.block_size.0,
            data_offset,
            layout: self.layout_kind()?,
        };
        let volumes = self
            .volumes
            .iter()
            .map(|v| {
                let mut c = VolumeConfig::new(
                    &v.name,
                    v.level.parse().map_err(|e: String| anyhow::anyhow!(e))?,
                    v.width,
                    v.size.0,
                );
                c.replicated_fraction = v.replicated_fraction;
                c.spare_fraction = v.spare_fraction.share().unwrap_or(sizing::AUTO_SPARE_MAX);
                Ok(c)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut f = FusionConfig::new(pool, volumes);
        let auto: Vec<bool> = self
            .volumes
            .iter()
            .map(|v| v.spare_fraction == Spare::Auto)
            .collect();
        // Without members (sizing the metadata area) the cap stands in: the metadata area
        // is the same for every share up to it (`ImageBound::Zone`).
        if disk_bytes > 0 && auto.contains(&true) {
            sizing::fill_auto_spare(&mut f, &auto)?;
        }
        f.redirect = redirect;
        f.conversion = self.conversion_policy();
        f.hedge_ns = self.hedge_us.map(|u| u * 1000);
        f.raid_threshold = self.raid_threshold;
        f.journal = self.metadata.journal.then(|| JournalConfig {
            pool_id,
            journal_bytes: self.metadata.journal_size.0,
            commit_interval_ns: self.metadata.commit_interval_ms * 1_000_000,
            image_bound: self.image_bound,
        });
        Ok(f)
    }

    /// The same pool file with every `auto` spare share resolved for members of
    /// `disk_bytes` (what `create` stores).
    pub fn with_spare_resolved(&self, disk_bytes: u64) -> anyhow::Result<PoolFile> {
        let f = self.fusion_config(disk_bytes, true, 0)?;
        let mut out = self.clone();
        for (v, c) in out.volumes.iter_mut().zip(&f.volumes) {
            v.spare_fraction = Spare::Share(c.spare_fraction);
        }
        Ok(out)
    }

    /// The part `create` fixes: a pool file differing from the stored one here describes
    /// another pool.
    pub fn geometry_key(&self) -> String {
        let vols: Vec<String> = self
            .volumes
            .iter()
            // The fractions size each volume's zone, and zones lie one after another on
            // the members: changing either moves every later volume's data.
            .map(|v| {
                format!(
                    "{}:{}:{}:{}:rep={}:spare={}",
                    v.name, v.level, v.width, v.size.0, v.replicated_fraction, v.spare_fraction
                )
            })
            .collect();
        format!(
            "members={} block={} journal={} layout={} volumes=[{}]",
            self.members.len(),
            self.block_size.0,
            if self.metadata.journal {
                format_size(self.metadata.journal_size.0)
            } else {
                "off".into()
            },
            self.layout,
            vols.join(",")
        )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_spare_shares_are_warned_about() {
        assert!(
            Spare::Share(0.2)
                .warning("v")
                .is_some_and(|w| w.contains("'v'"))
        );
        assert!(Spare::Share(0.0).warning("v").is_some());
        assert!(Spare::Share(SPARE_WARN_BELOW).warning("v").is_none());
        assert!(Spare::Share(1.0).warning("v").is_none());
        assert!(
            Spare::Auto.warning("v").is_none(),
            "auto is resolved before it is judged"
        );
    }

    #[test]
    fn spare_share_is_a_number_or_auto_and_auto_resolves_to_what_fits() {
        let with = |line: &str| {
            PoolFile::parse(&GOOD.replace("size = \"16M\"", &format!("size = \"16M\"\n{line}")))
                .unwrap()
                .volumes[0]
                .spare_fraction
        };
        assert_eq!(with(""), Spare::Auto);
        assert_eq!(with("spare_fraction = \"auto\""), Spare::Auto);
        assert_eq!(with("spare_fraction = 1"), Spare::Share(1.0));
        assert_eq!(with("spare_fraction = 0.5"), Spare::Share(0.5));

        // Five 64 MiB members hold far more than one 16 MiB volume: auto takes the cap.
        let p = PoolFile::parse(GOOD).unwrap();
        let r = p.with_spare_resolved(64 << 20).unwrap();
        let Spare::Share(share) = r.volumes[0].spare_fraction else {
            panic!("unresolved");
        };
        assert_eq!(share, sizing::AUTO_SPARE_MAX);
        // Stored and parsed back, it is the same geometry.
        let again = PoolFile::parse(&r.to_toml()).unwrap();
        assert_eq!(again.geometry_key(), r.geometry_key());
        // On members that only just hold the volume, less.
        let tight = p.with_spare_resolved(8 << 20).unwrap();
        assert!(
            matches!(tight.volumes[0].spare_fraction, Spare::Share(s) if s < share),
            "{:?}",
            tight.volumes[0].spare_fraction
        );
    }

    const GOOD: &str = r#"
name = "t"
members = ["mem:64M", "mem:64M", "mem:64M", "mem:64M", "mem:64M"]
[[volume]]
name = "v0"
level = "raid5"
width = 4
size = "16M"
"#;

    #[test]
    fn defaults_and_round_trip() {
        let p = PoolFile::parse(GOOD).unwrap();
        assert_eq!(p.block_size, Size(64 << 10));
        assert_eq!(p.scheme, "fusionraid");
        assert!(p.is_ephemeral());
        let again = PoolFile::parse(&p.to_toml()).unwrap();
        assert_eq!(again, p);
    }

    fn err(patch: &str) -> String {
        let text = format!("{GOOD}\n{patch}");
        format!("{:#}", PoolFile::parse(&text).unwrap_err())
    }

    #[test]
    fn errors_name_the_field() {
        assert!(err("[detector]\npreset = \"x\"").contains("detector.preset"));
        assert!(err("[detector]\nx_high = 0").contains("detector"));
        assert!(
            err("[[volume]]\nname = \"v0\"\nlevel = \"raid5\"\nwidth = 4\nsize = \"1M\"")
                .contains("used twice")
        );
        assert!(
            err("[[volume]]\nname = \"w\"\nlevel = \"raid9\"\nwidth = 4\nsize = \"1M\"")
                .contains("level")
        );
        assert!(
            err("[[volume]]\nname = \"w\"\nlevel = \"raid5\"\nwidth = 4\nsize = \"100K\"")
                .contains("size")
        );
        assert!(
            err("[[volume]]\nname = \"w\"\nlevel = \"raid5\"\nwidth = 4\nsize = \"1Q\"")
                .contains("unknown unit")
        );
        assert!(err("bogus = 1").contains("bogus"));
        let bad = GOOD.replace("\"mem:64M\", \"mem:64M\"]", "\"mem:64M\", \"disk0\"]");
        assert!(format!("{:#}", PoolFile::parse(&bad).unwrap_err()).contains("members[4]"));
        let mixed = GOOD.replace("\"mem:64M\"]", "\"file:/tmp/x\"]");
        assert!(format!("{:#}", PoolFile::parse(&mixed).unwrap_err()).contains("in memory"));
    }

    /// Values the fuzzer found (pool_config_fuzz.rs) that would overflow, allocate without
    /// bound, or fail to round-trip through the superblock if accepted.
    #[test]
    fn hostile_values_are_refused_with_the_field_named() {
        let top = |line: &str| {
            let text = format!("{line}\n{GOOD}");
            format!("{:#}", PoolFile::parse(&text).unwrap_err())
        };
        assert!(top("hedge_us = 9223372036854775807").contains("hedge_us"));
        assert!(top("max_requests = 9223372036854775807").contains("max_requests"));
        assert!(top("block_size = -1").contains("can not be negative"));
        assert!(top("block_size = 1.5").contains("whole number"));
        let esc = GOOD.replace("name = \"t\"", "name = \"a\\u001b[2Jb\"");
        assert!(format!("{:#}", PoolFile::parse(&esc).unwrap_err()).contains("control"));
        assert!(top("member_size = \"4K\"").contains("member_size"));
        assert!(err("[conversion]\nidle_ms = 9223372036854775807").contains("idle_ms"));
        assert!(err("[conversion]\nspare_low_water = nan").contains("spare_low_water"));
        assert!(err("[conversion]\npause_mb_per_s = -inf").contains("pause_mb_per_s"));
        assert!(err("[conversion]\nmax_concurrent = 0").contains("max_concurrent"));
        assert!(err("[detector]\nslot_us = 9223372036854775807").contains("slot_us"));
        assert!(err("[serve]\nqueue_depth = 9223372036854775807").contains("queue_depth"));
        let vol = |extra: &str| {
            err(&format!(
                "[[volume]]\nname = \"w\"\nlevel = \"raid6\"\nwidth = 4\nsize = \"1M\"\n{extra}"
            ))
        };
        assert!(vol("replicated_fraction = nan").contains("replicated_fraction"));
        assert!(vol("spare_fraction = inf").contains("spare_fraction"));
        assert!(vol("spare_fraction = 5").contains("spare_fraction"));
        assert!(vol("spare_fraction = \"lots\"").contains("\"auto\""));
        let narrow = GOOD.replace("width = 4", "width = 2");
        assert!(format!("{:#}", PoolFile::parse(&narrow).unwrap_err()).contains("width"));
        let huge = GOOD.replace("size = \"16M\"", "size = \"16777215T\"");
        let p = PoolFile::parse(&huge).unwrap();
        let Err(e) = crate::scheme_choice::build_engine(&p, None, 64 << 20) else {
            panic!("16 EiB of volumes on 64 MiB members was accepted");
        };
        assert!(format!("{e:#}").contains("members offer"), "{e:#}");
    }
}
