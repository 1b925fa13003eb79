//! The pool description every baseline is built from, [`BaselineConfig`], with the knobs of
//! each scheme. It sits below every scheme: they all read it, and its code names none of them.

use super::geom;
use crate::steer::{DeviceCurves, SteerConfig};
use crate::types::{Nanos, PAGE_SIZE};

/// Options of the md-like arrays (4-RAID5, RAID50, ToleRAID, sit-out, and the RAID50 under
/// LogRAID and NV-RAID).
#[derive(Debug, Clone, Default)]
pub struct Raid5Options {
    /// md's stripe batching: hold partial-stripe writes up to this long hoping later writes
    /// fill the stripe (None or 0: start at once).
    pub batch_delay_ns: Option<Nanos>,
}

/// The pool and volumes every baseline is built from.
#[derive(Debug, Clone)]
pub struct BaselineConfig {
    /// Pool members (the paper: 29). Disks beyond `groups * group_width` stay unused (spares).
    pub disks: usize,
    pub disk_bytes: u64,
    /// Bytes reserved at the start of every member.
    pub data_offset: u64,
    /// Chunk (stripe unit) size, a power of two from 4 KiB to 1 MiB (the paper: 64 KiB).
    pub block_size: u64,
    /// Disks per RAID group (the paper: 7, i.e. 6+1).
    pub group_width: usize,
    /// Parity columns per stripe: 1 (RAID5) or 2 (RAID6).
    pub nparity: usize,
    /// Number of groups; None = `disks / group_width`.
    pub groups: Option<usize>,
    /// Volume sizes in bytes (multiples of 4 KiB), named v0, v1, ...
    pub volumes: Vec<u64>,
    pub max_request_bytes: u64,
    pub raid5: Raid5Options,
    pub lograid: LogRaidConfig,
    pub toleraid: TolerConfig,
    pub nvraid: NvRaidConfig,
    pub raidm: RaidmConfig,
    pub sitout: SitOutConfig,
    pub sandook: SandookConfig,
}

impl BaselineConfig {
    pub fn new(
        disks: usize,
        disk_bytes: u64,
        block_size: u64,
        group_width: usize,
        volumes: Vec<u64>,
    ) -> Self {
        BaselineConfig {
            disks,
            disk_bytes,
            data_offset: 0,
            block_size,
            group_width,
            nparity: 1,
            groups: None,
            volumes,
            max_request_bytes: 32 << 20,
            raid5: Raid5Options::default(),
            lograid: LogRaidConfig::default(),
            toleraid: TolerConfig::default(),
            nvraid: NvRaidConfig::default(),
            raidm: RaidmConfig::default(),
            sandook: SandookConfig::default(),
            sitout: SitOutConfig::default(),
        }
    }

    /// The paper's pool: 29 x 240 GB SSDs, 64 KiB chunks, groups of 7 (four 6+1 arrays and
    /// one hot spare).
    pub fn paper(volumes: Vec<u64>) -> Self {
        BaselineConfig::new(29, 240_000_000_000, 64 << 10, 7, volumes)
    }

    pub fn group_count(&self) -> usize {
        self.groups.unwrap_or(self.disks / self.group_width.max(1))
    }

    fn validate(&self) -> Result<(), String> {
        let bs = self.block_size;
        if !bs.is_power_of_two() || !(PAGE_SIZE..=(1 << 20)).contains(&bs) {
            return Err(format!(
                "block size {bs} must be a power of two from 4 KiB to 1 MiB"
            ));
        }
        if !(1..=2).contains(&self.nparity) {
            return Err(format!("nparity {} must be 1 or 2", self.nparity));
        }
        if self.group_width < self.nparity + 2 || self.group_width > 32 {
            return Err(format!(
                "group width {} must be between {} and 32",
                self.group_width,
                self.nparity + 2
            ));
        }
        let g = self.group_count();
        if g == 0 || g * self.group_width > self.disks {
            return Err(format!(
                "{g} groups of {} disks do not fit in {} disks",
                self.group_width, self.disks
            ));
        }
        if self.volumes.is_empty() {
            return Err("at least one volume is needed".into());
        }
        for (i, &v) in self.volumes.iter().enumerate() {
            if v == 0 || v % PAGE_SIZE != 0 {
                return Err(format!(
                    "volume v{i}: size {v} must be a positive multiple of 4 KiB"
                ));
            }
        }
        if self.max_request_bytes < PAGE_SIZE {
            return Err("max_request_bytes below one page".into());
        }
        Ok(())
    }

    /// The RAID groups over the whole members.
    pub fn geometry(&self) -> Result<geom::ArrayGeom, String> {
        self.validate()?;
        let rows = self.disk_bytes.saturating_sub(self.data_offset) / self.block_size;
        geom::ArrayGeom::new(
            self.group_count(),
            self.group_width,
            self.nparity,
            self.block_size,
            rows,
            self.data_offset,
        )
    }

    pub fn check_rows(&self, geo: &geom::ArrayGeom, rows: u64) -> Result<(), String> {
        if rows > geo.rows {
            return Err(format!(
                "volumes need {rows} rows of {} bytes per disk but members hold {}",
                self.block_size, geo.rows
            ));
        }
        Ok(())
    }

    pub fn level_name(&self) -> String {
        let lvl = if self.nparity == 1 { "raid5" } else { "raid6" };
        format!("{lvl} {}+{}", self.group_width - self.nparity, self.nparity)
    }
}

/// LogRAID's log (see [`super::lograid`]).
#[derive(Debug, Clone)]
pub struct LogRaidConfig {
    /// Longest a partially filled segment waits for more writes before it is padded.
    pub flush_delay_ns: Nanos,
    /// Log space beyond the volumes' logical size, as a share of it.
    pub spare_fraction: f64,
    /// Clean when free segments fall below this share of the region.
    pub gc_low_water: f64,
    pub max_inflight_segments: usize,
    /// Victims cleaned at once.
    pub cleaners: usize,
}

impl Default for LogRaidConfig {
    fn default() -> Self {
        LogRaidConfig {
            flush_delay_ns: 100_000,
            spare_fraction: 0.25,
            gc_low_water: 0.05,
            max_inflight_segments: 8,
            cleaners: 1,
        }
    }
}

/// 4-RAIDM's mirrored logs, one per group (see [`super::raidm`]).
#[derive(Debug, Clone)]
pub struct RaidmConfig {
    /// Space beyond the group's volumes (counted once, before mirroring), as a share.
    pub spare_fraction: f64,
    /// Clean when free MUs fall below this share of the group's MUs.
    pub gc_low_water: f64,
    /// Open MUs per group taking writes in turn; 0 = one per disk.
    pub heads: usize,
    pub cleaners: usize,
}

impl Default for RaidmConfig {
    fn default() -> Self {
        RaidmConfig {
            spare_fraction: 0.25,
            gc_low_water: 0.05,
            heads: 0,
            cleaners: 1,
        }
    }
}

/// Sandook's steering (see [`super::sandook`]); its log takes [`RaidmConfig`]'s knobs.
#[derive(Debug, Clone, Default)]
pub struct SandookConfig {
    pub steer: SteerConfig,
    /// Each member's load-latency curves, in disk order (None, or a shorter list: members
    /// without a profile; steering then treats the pool as equals).
    pub curves: Vec<Option<DeviceCurves>>,
}

/// When ToleRAID counts a member as busy (see [`super::toleraid`]).
#[derive(Debug, Clone)]
pub struct TolerConfig {
    pub queue_factor: f64,
    pub queue_min: u32,
}

impl Default for TolerConfig {
    fn default() -> Self {
        TolerConfig {
            queue_factor: 4.0,
            queue_min: 8,
        }
    }
}

/// NV-RAID's write buffer (see [`super::nvraid`]).
#[derive(Debug, Clone)]
pub struct NvRaidConfig {
    pub buffer_bytes: u64,
    pub write_ns_per_line: u64,
    pub read_ns_per_line: u64,
    pub line_bytes: u64,
    /// Flush partial stripes when the buffer is fuller than this share.
    pub high_water: f64,
    /// Flush a partial stripe whose oldest dirty page is older than this (None: never for age).
    pub max_age_ns: Option<Nanos>,
    pub max_flushes: usize,
}

impl Default for NvRaidConfig {
    fn default() -> Self {
        NvRaidConfig {
            buffer_bytes: 1 << 30,
            write_ns_per_line: 100,
            read_ns_per_line: 100,
            line_bytes: 64,
            high_water: 0.5,
            max_age_ns: Some(1_000_000_000),
            max_flushes: 16,
        }
    }
}

/// When sit-out judges a member a latency outlier, and for how long (see [`super::sitout`]
/// for the reasons behind the defaults).
#[derive(Debug, Clone)]
pub struct SitOutConfig {
    pub alpha: f64,
    pub check_interval_ns: Nanos,
    pub sit_out_ns: Nanos,
    pub insensitivity: f64,
    pub min_ratio: f64,
    pub min_samples: u64,
}

impl Default for SitOutConfig {
    fn default() -> Self {
        SitOutConfig {
            alpha: 0.1,
            check_interval_ns: 100_000_000,
            sit_out_ns: 5_000_000_000,
            insensitivity: 50.0,
            min_ratio: 2.0,
            min_samples: 8,
        }
    }
}
