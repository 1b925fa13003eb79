//! `--scheme NAME`: every scheme of the core behind one engine. FusionRAID and Fusion-ND are
//! built from the pool file's volumes directly; the baselines from the same pool through
//! their shared [`BaselineConfig`].

use anyhow::{Context, bail};
use fusionraid_core::scheme::Scheme;
use fusionraid_core::scheme::baselines::{self, BaselineConfig};
use fusionraid_core::scheme::fusion::{FusionScheme, Level};
use fusionraid_core::{Engine, EngineConfig};

use crate::pool_config::PoolFile;

pub const FUSION_NAMES: &[&str] = &["fusionraid", "fusion-nd"];

pub fn known_schemes() -> String {
    FUSION_NAMES
        .iter()
        .chain(baselines::NAMES)
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

/// Is `name` a FusionRAID scheme (one whose mapping the pool's metadata journal holds)?
pub fn is_fusion(name: &str) -> bool {
    FUSION_NAMES.contains(&name.to_ascii_lowercase().as_str())
}

/// The scheme `name` over `pool`, whose members hold `disk_bytes` each, with empty volumes.
pub fn build_scheme(
    pool: &PoolFile,
    name: &str,
    disk_bytes: u64,
) -> anyhow::Result<Box<dyn Scheme + Send>> {
    crate::pool_fit::check_fits(pool, disk_bytes)?;
    let lname = name.to_ascii_lowercase();
    if is_fusion(&lname) {
        let cfg = pool.fusion_config(disk_bytes, lname == "fusionraid", 0)?;
        let s = FusionScheme::new(cfg).with_context(|| format!("scheme {lname}"))?;
        return Ok(Box::new(s));
    }
    let hdds: Vec<u32> = pool.hdd_members.iter().map(|&i| i as u32).collect();
    baselines::check_no_hdds(name, &hdds).map_err(|e| anyhow::anyhow!(e))?;
    if let Some(v) = pool
        .volumes
        .iter()
        .find(|v| v.parsed_level().is_ok_and(Level::is_mirror))
    {
        bail!(
            "scheme {name}: mirror volumes ('{}') are FusionRAID's; the baselines build \
             RAID5/RAID6 groups (4-raidm is their mirrored layout)",
            v.name.escape_debug()
        );
    }
    let first = &pool.volumes[0];
    if pool
        .volumes
        .iter()
        .any(|v| v.width != first.width || v.level != first.level)
    {
        bail!(
            "scheme {name}: the baselines build RAID groups of one width and level; every \
             [[volume]] must have the same `level` and `width`"
        );
    }
    let level: Level = first
        .level
        .parse()
        .map_err(|e: String| anyhow::anyhow!(e))?;
    let mut cfg = BaselineConfig::new(
        pool.members.len(),
        disk_bytes,
        pool.block_size.0,
        first.width,
        pool.volumes.iter().map(|v| v.size.0).collect(),
    );
    cfg.data_offset = pool.resolved_data_offset()?;
    cfg.nparity = level.nparity();
    if let Some(steer) = pool.steer_config(&lname)? {
        cfg.sandook.steer = steer;
        cfg.sandook.curves = pool.member_curves()?;
    }
    baselines::build(name, &cfg).map_err(|e| {
        if e.starts_with("unknown baseline") {
            anyhow::anyhow!("unknown scheme '{name}' (known: {})", known_schemes())
        } else {
            anyhow::anyhow!("scheme {name}: {e}")
        }
    })
}

/// An engine running `scheme` (the pool file's own when `None`).
pub fn build_engine(
    pool: &PoolFile,
    scheme: Option<&str>,
    disk_bytes: u64,
) -> anyhow::Result<Engine> {
    let name = scheme.unwrap_or(&pool.scheme);
    let s = build_scheme(pool, name, disk_bytes)?;
    Ok(Engine::new(engine_config(pool)?, s, 0))
}

/// The engine settings the pool file asks for.
pub fn engine_config(pool: &PoolFile) -> anyhow::Result<EngineConfig> {
    let mut cfg = EngineConfig::new(pool.members.len());
    cfg.detector = pool.detector_config()?;
    cfg.max_requests = pool.max_requests;
    cfg.seed = pool.seed;
    Ok(cfg)
}

/// How many members may be missing while every volume keeps its data.
pub fn tolerance(pool: &PoolFile) -> usize {
    pool.volumes
        .iter()
        .filter_map(|v| v.parsed_level().ok())
        .map(Level::nparity)
        .min()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(scheme: &str) -> PoolFile {
        PoolFile::parse(&format!(
            r#"
scheme = "{scheme}"
members = ["mem:64M", "mem:64M", "mem:64M", "mem:64M", "mem:64M", "mem:64M", "mem:64M", "mem:64M"]
layout = "permutation"
[[volume]]
name = "a"
level = "raid5"
width = 4
size = "16M"
"#
        ))
        .unwrap()
    }

    #[test]
    fn every_scheme_builds() {
        for name in FUSION_NAMES.iter().chain(baselines::NAMES) {
            let e = build_engine(&pool(name), None, 64 << 20)
                .unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert_eq!(e.volume_count(), 1, "{name}");
        }
        let Err(e) = build_engine(&pool("fusionraid"), Some("nope"), 64 << 20) else {
            panic!("an unknown scheme was accepted");
        };
        assert!(format!("{e:#}").contains("raid50"), "{e:#}");
    }
}
