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
//! | `sandook` | [`sandook`] | two replicas in a log over every member, steered by load-latency curves |
//!
//! Fusion-ND is [`crate::scheme::fusion::FusionScheme`] with `redirect: false`.
//!
//! All of them share one pool description, [`BaselineConfig`], and one factory, [`build`].
//! The parity schemes run on [`array::RaidCore`], an md-like RAID5/6 engine (per-stripe
//! serialisation, RMW vs RCW, batching delay, degraded reads and writes, read redirection).
//! Every scheme works in data mode and in size-only mode (no bytes, the same device I/O).

pub mod array;
pub mod config;
pub mod gather;
pub mod geom;
pub mod inplace;
pub mod logbase;
pub mod lograid;
pub mod nvraid;
pub mod pageset;
pub mod raid5;
pub mod raid50;
pub mod raidm;
pub mod sandook;
pub mod sitout;
pub mod toleraid;

#[cfg(test)]
mod tests;

use crate::scheme::Scheme;
pub use config::{
    BaselineConfig, LogRaidConfig, NvRaidConfig, Raid5Options, RaidmConfig, SandookConfig,
    SitOutConfig, TolerConfig,
};

/// Canonical scheme names [`build`] accepts (aliases: `raid5` for `4-raid5`, `raidm` for
/// `4-raidm`).
pub const NAMES: &[&str] = &[
    "4-raid5", "raid50", "lograid", "toleraid", "nvraid", "4-raidm", "sitout", "sandook",
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
        "sandook" => sandook::rows_needed(&c)?,
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
        "sandook" => "sandook",
        _ => {
            return Err(format!(
                "unknown baseline '{name}' (known: {})",
                NAMES.join(", ")
            ));
        }
    })
}

/// The baselines lay their stripes over every member: a hybrid pool's HDD members (issue
/// 21) would hold RAID columns at HDD latency, so only FusionRAID takes them.
pub fn check_no_hdds(name: &str, hdds: &[u32]) -> Result<(), String> {
    if hdds.is_empty() {
        return Ok(());
    }
    Err(format!(
        "scheme {name} lays stripes over every member and takes no HDD members (members {hdds:?} \
         are HDDs); hybrid SSD+HDD pools need the fusionraid scheme"
    ))
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
        "sandook" => Box::new(sandook::build(cfg)?),
        _ => unreachable!(),
    })
}
