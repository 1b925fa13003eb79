//! The baseline schemes FusionRAID is compared with (paper §5), each a [`Scheme`]:
//!
//! | name | file | what |
//! | --- | --- | --- |
//! | `4-raid5` / `raid5` | [`raid5`] | independent md-like RAID5/6 arrays, one volume per array |
//! | `raid50` | [`raid50`] | RAID0 over the RAID5 groups, volumes striped over all of them |
//! | `lograid` | [`lograid`] | log-structured RAID50: one append log of full stripes, 4 KiB mapping, cleaning |
//! | `toleraid` | [`toleraid`] | 4-RAID5 whose reads of a busy member are rebuilt from parity |
//! | `nvraid` | [`nvraid`] | an NVRAM write buffer above RAID50 |
//! | `4-raidm` / `raidm` | [`raidm`] | four groups, every write mirrored and log-structured round-robin |
//! | `sitout` | [`sitout`] | 4-RAID5 with OpenZFS-style latency-outlier sit-out |
//!
//! Fusion-ND is [`crate::scheme::fusion::FusionScheme`] with `redirect: false`.
//!
//! All of them share one pool description, [`BaselineConfig`], and one factory, [`build`].
//! The parity schemes run on [`array::RaidCore`], an md-like RAID5/6 engine (per-stripe
//! serialisation, RMW vs RCW, batching delay, degraded reads and writes, read redirection).
//! Every scheme works in data mode and in size-only mode (no bytes, the same device I/O).

pub mod array;
pub mod gather;
pub mod geom;
pub mod inplace;
pub mod lograid;
pub mod logspace;
pub mod nvraid;
pub mod pageset;
pub mod raid5;
pub mod raid50;
pub mod raidm;
pub mod sitout;
pub mod sparse;
pub mod toleraid;

#[cfg(test)]
mod tests;

use crate::scheme::Scheme;
use crate::types::{Nanos, PAGE_SIZE};
pub use lograid::LogRaidConfig;
pub use nvraid::NvRaidConfig;
pub use raidm::RaidmConfig;
pub use sitout::SitOutConfig;
pub use toleraid::TolerConfig;

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

/// Canonical scheme names [`build`] accepts (aliases: `raid5` for `4-raid5`, `raidm` for
/// `4-raidm`).
pub const NAMES: &[&str] = &[
    "4-raid5", "raid50", "lograid", "toleraid", "nvraid", "4-raidm", "sitout",
];

/// Rows (chunks of `block_size`) per member that baseline `name` uses for `cfg`'s volumes, so a
/// driver can size members: `data_offset + rows * block_size` bytes suffice. The members'
/// `disk_bytes` in `cfg` does not matter here.
pub fn rows_needed(name: &str, cfg: &BaselineConfig) -> Result<u64, String> {
    let mut c = cfg.clone();
    c.disk_bytes = u64::MAX / 4;
    let geo = c.geometry()?;
    Ok(match canonical(name)? {
        "4-raid5" | "toleraid" | "sitout" => geom::place_volumes(&geo, &c.volumes, true).1,
        "raid50" | "nvraid" => geom::place_volumes(&geo, &c.volumes, false).1,
        "lograid" => lograid::rows_needed(&c)?,
        "4-raidm" => raidm::rows_needed(&c)?,
        _ => unreachable!(),
    })
}

/// The canonical name of a baseline, from any accepted spelling.
pub fn canonical(name: &str) -> Result<&'static str, String> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "raid5" | "4-raid5" | "4raid5" => "4-raid5",
        "raid50" => "raid50",
        "lograid" => "lograid",
        "toleraid" => "toleraid",
        "nvraid" | "nv-raid" => "nvraid",
        "raidm" | "4-raidm" | "4raidm" => "4-raidm",
        "sitout" | "sit-out" => "sitout",
        _ => {
            return Err(format!(
                "unknown baseline '{name}' (known: {})",
                NAMES.join(", ")
            ));
        }
    })
}

/// Build the baseline called `name` over `cfg`.
pub fn build(name: &str, cfg: &BaselineConfig) -> Result<Box<dyn Scheme + Send>, String> {
    Ok(match canonical(name)? {
        "4-raid5" => Box::new(raid5::build(cfg)?),
        "raid50" => Box::new(raid50::build(cfg)?),
        "lograid" => Box::new(lograid::LogRaid::new(cfg)?),
        "toleraid" => Box::new(toleraid::build(cfg)?),
        "nvraid" => Box::new(nvraid::NvRaid::new(cfg)?),
        "4-raidm" => Box::new(raidm::RaidM::new(cfg)?),
        "sitout" => Box::new(sitout::build(cfg)?),
        _ => unreachable!(),
    })
}
