//! The scheme factory: a scheme name to a boxed [`Scheme`] for a pool and its volumes.
//!
//! This is the single place where schemes are registered for the simulator: FusionRAID and
//! Fusion-ND here, the baselines (4-RAID5, RAID50, LogRAID, ToleRAID, NV-RAID, 4-RAIDM,
//! sit-out, Sandook) through `core/src/scheme/baselines/` (`baselines::build`), all from the same
//! [`SchemeParams`].

use fusionraid_core::Nanos;
use fusionraid_core::scheme::Scheme;
use fusionraid_core::scheme::baselines::{self, BaselineConfig};
use fusionraid_core::scheme::fusion::{
    FusionConfig, FusionScheme, PoolGeometry, TrimPolicy, VolumeConfig,
};
use fusionraid_core::steer::{DeviceCurves, SteerConfig};

/// The FusionRAID variants, built here.
pub const FUSION_SCHEMES: &[&str] = &["fusionraid", "fusionraid+", "fusion-nd"];

/// Whether `name` is one of the FusionRAID variants (which use the pool's declustering
/// layout; the baselines use fixed groups).
pub fn is_fusion(name: &str) -> bool {
    matches!(
        name.trim().to_ascii_lowercase().as_str(),
        "fusionraid" | "fusion" | "fusionraid+" | "fusion+" | "fusion-nd" | "fusionnd"
    )
}

/// Whether scheme `name` steers by the members' load-latency curves (the driver then
/// measures them, as Sandook profiles its drives).
pub fn steers(name: &str) -> bool {
    matches!(
        name.trim().to_ascii_lowercase().as_str(),
        "sandook" | "fusionraid+" | "fusion+"
    )
}

/// Every scheme name [`build_scheme`] accepts (canonical spellings), in the order reports
/// and `--help` list them.
pub fn known_schemes() -> Vec<&'static str> {
    FUSION_SCHEMES
        .iter()
        .chain(baselines::NAMES)
        .copied()
        .collect()
}

/// Knobs of particular schemes that experiments vary (the paper's §5.2-5.4 sweeps); the
/// defaults are each scheme's own.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemeOptions {
    /// FusionRAID and Fusion-ND: background conversion of replicated pairs to parity stripes
    /// (off for the paper's Fig. 13 "conversion off" runs).
    pub conversion: bool,
    /// NV-RAID: size of the NVRAM write buffer (paper Fig. 11b); `None` = the scheme's default.
    pub nvram_bytes: Option<u64>,
    /// Sandook: which steering mechanisms run, and how.
    pub steer: SteerConfig,
    /// Each member's load-latency curves, in disk order, for schemes that steer by them
    /// (empty: none known).
    pub curves: Vec<Option<DeviceCurves>>,
    /// FusionRAID and Fusion-ND: discard freed stripes on the members (None: the scheme's
    /// own choice, on for fusionraid+ only).
    pub trim: Option<bool>,
    /// FusionRAID and Fusion-ND: re-issue a replicated read to another copy after this long
    /// (hedged request, paper §6); None: off.
    pub hedge_ns: Option<Nanos>,
    /// FusionRAID and Fusion-ND: rebuild a read of a RAID block from its stripe when it is
    /// still out after this long (hedged RAID read); None: off.
    pub raid_hedge_ns: Option<Nanos>,
    /// FusionRAID: place a write again when a device write of it has waited this long on a
    /// member the detector marks unresponsive (hedged write); None: the scheme's own
    /// choice (on for fusionraid+ only, `FUSIONRAID_PLUS_WRITE_HEDGE_NS`); Some(None): off.
    pub write_hedge_ns: Option<Option<Nanos>>,
    /// FusionRAID: hold sequential writes smaller than a stripe this long while their
    /// stripe gathers (`FusionConfig::gather_ns`); None: off.
    pub gather_ns: Option<Nanos>,
    /// FusionRAID: hold one-page writes this long while a parity row fills
    /// (`FusionConfig::row_ns`); None: off.
    pub row_ns: Option<Nanos>,
    /// FusionRAID and Fusion-ND: wear-aware placement with this ladder gap (a share of
    /// rated life, `fusionraid_core::policy::WearLadder`); None: off.
    pub wear_gap: Option<f64>,
    /// FusionRAID: offload replica writes from busy SSDs to HDD logs (issue 21).
    pub offload: bool,
    /// FusionRAID with offload: the busy floor (`OffloadConfig::min_outstanding`); None:
    /// the engine's default.
    pub offload_floor: Option<f64>,
}

impl Default for SchemeOptions {
    fn default() -> Self {
        SchemeOptions {
            conversion: true,
            nvram_bytes: None,
            steer: SteerConfig::default(),
            curves: Vec::new(),
            trim: None,
            hedge_ns: None,
            raid_hedge_ns: None,
            write_hedge_ns: None,
            gather_ns: None,
            row_ns: None,
            wear_gap: None,
            offload: false,
            offload_floor: None,
        }
    }
}

/// The pool and volumes a scheme is built for.
#[derive(Clone, Debug)]
pub struct SchemeParams {
    /// Members, their usable size, the stripe unit and the declustering layout (the
    /// baselines use fixed groups of the volumes' width and ignore the layout).
    pub pool: PoolGeometry,
    /// One entry per volume, in volume-id order.
    pub volumes: Vec<VolumeConfig>,
    /// For schemes that make random choices at construction time.
    pub seed: u64,
    pub options: SchemeOptions,
}

/// Why a scheme could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemeError {
    #[error("unknown scheme '{name}' (known: {})", known_schemes().join(", "))]
    Unknown { name: String },
    #[error("scheme '{name}': {reason}")]
    Config { name: String, reason: String },
}

/// Builds scheme `name` (case-insensitive; aliases such as `raid5` for `4-raid5` accepted)
/// for `p`.
pub fn build_scheme(name: &str, p: &SchemeParams) -> Result<Box<dyn Scheme + Send>, SchemeError> {
    let key = name.trim().to_ascii_lowercase();
    let config_err = |reason: String| SchemeError::Config {
        name: key.clone(),
        reason,
    };
    match key.as_str() {
        "fusionraid" | "fusion" => fusion(p, true, false).map_err(|e| config_err(e.to_string())),
        // FusionRAID with every policy the pool offers (Sandook's steering, proactive discard,
        // hedged writes).
        "fusionraid+" | "fusion+" => fusion(p, true, true).map_err(|e| config_err(e.to_string())),
        // The paper's Fusion-ND: FusionRAID without redirection around slow disks.
        "fusion-nd" | "fusionnd" => fusion(p, false, false).map_err(|e| config_err(e.to_string())),
        _ => {
            if baselines::canonical(&key).is_err() {
                return Err(SchemeError::Unknown { name: key });
            }
            baselines::check_no_hdds(&key, &p.pool.hdds).map_err(config_err)?;
            baselines::build(&key, &baseline_config(p).map_err(config_err)?).map_err(config_err)
        }
    }
}

/// The combined system's hedged-write delay: a write is placed again as soon as one of its
/// device writes sits on a member the detector has marked unresponsive (the detector's own
/// threshold is the wait that counts), checked from 1 ms after it was issued.
pub const FUSIONRAID_PLUS_WRITE_HEDGE_NS: Nanos = 1_000_000;

fn fusion(
    p: &SchemeParams,
    redirect: bool,
    steer: bool,
) -> Result<Box<dyn Scheme + Send>, fusionraid_core::scheme::fusion::ConfigError> {
    let mut cfg = FusionConfig::new(p.pool.clone(), p.volumes.clone());
    cfg.redirect = redirect;
    if steer {
        cfg.steer = Some(p.options.steer.clone());
        cfg.curves = p.options.curves.clone();
    }
    cfg.conversion.enabled = p.options.conversion;
    cfg.hedge_ns = p.options.hedge_ns;
    cfg.raid_hedge_ns = p.options.raid_hedge_ns;
    cfg.write_hedge_ns = p
        .options
        .write_hedge_ns
        .unwrap_or(steer.then_some(FUSIONRAID_PLUS_WRITE_HEDGE_NS));
    cfg.wear_gap = p.options.wear_gap;
    cfg.gather_ns = p.options.gather_ns;
    cfg.row_ns = p.options.row_ns;
    if p.options.offload {
        let mut o = fusionraid_core::scheme::fusion::OffloadConfig::default();
        if let Some(f) = p.options.offload_floor {
            o.min_outstanding = f;
        }
        cfg.offload = Some(o);
    }
    // The combined system (`steer`) runs every policy the pool offers, discards included.
    if p.options.trim.unwrap_or(steer) {
        cfg.trim = TrimPolicy::on();
    }
    Ok(Box::new(FusionScheme::new(cfg)?))
}

/// The baselines build RAID groups of one width and level from the volumes' settings.
fn baseline_config(p: &SchemeParams) -> Result<BaselineConfig, String> {
    let first = p.volumes.first().ok_or("at least one volume is needed")?;
    if p.volumes
        .iter()
        .any(|v| v.width != first.width || v.level != first.level)
    {
        return Err("the baselines need every volume at one width and level".into());
    }
    let mut cfg = BaselineConfig::new(
        p.pool.disks,
        p.pool.disk_bytes,
        p.pool.block_size,
        first.width,
        p.volumes.iter().map(|v| v.size_bytes).collect(),
    );
    cfg.data_offset = p.pool.data_offset;
    cfg.nparity = first.level.nparity();
    if let Some(b) = p.options.nvram_bytes {
        cfg.nvraid.buffer_bytes = b;
    }
    cfg.sandook.steer = p.options.steer.clone();
    cfg.sandook.curves = p.options.curves.clone();
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusionraid_core::scheme::fusion::{LayoutKind, Level};

    fn params() -> SchemeParams {
        SchemeParams {
            pool: PoolGeometry {
                disks: 29,
                disk_bytes: 1 << 34,
                block_size: 64 << 10,
                data_offset: 1 << 20,
                layout: LayoutKind::Mols,
                hdds: Vec::new(),
            },
            volumes: vec![VolumeConfig::new("v", Level::Raid5, 7, 1 << 30)],
            seed: 1,
            options: SchemeOptions::default(),
        }
    }

    /// Issue 21: HDD members are FusionRAID's; a baseline names them and refuses.
    #[test]
    fn baselines_refuse_hdd_members() {
        let mut p = params();
        p.pool.hdds = vec![27, 28];
        p.pool.layout = LayoutKind::Permutation { seed: 1 };
        let e = build_scheme("raid50", &p).err().unwrap().to_string();
        assert!(e.contains("[27, 28]") && e.contains("fusionraid"), "{e}");
        assert!(build_scheme("fusionraid", &p).is_ok());
    }

    #[test]
    fn every_known_scheme_builds_and_unknown_lists_them() {
        for name in known_schemes() {
            let s = build_scheme(name, &params()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(s.volume_count(), 1, "{name}");
            assert_eq!(is_fusion(name), FUSION_SCHEMES.contains(&name));
        }
        assert_eq!(
            build_scheme("Fusion-ND", &params()).unwrap().name(),
            "fusion-nd"
        );
        assert!(build_scheme("raid5", &params()).is_ok());
        let e = build_scheme("raid7", &params()).err().unwrap().to_string();
        assert!(
            e.contains("'raid7'") && e.contains("fusionraid, fusionraid+, fusion-nd, 4-raid5"),
            "{e}"
        );
        let mut tiny = params();
        tiny.pool.disk_bytes = 1 << 20;
        for name in ["fusionraid", "4-raid5"] {
            assert!(
                matches!(build_scheme(name, &tiny), Err(SchemeError::Config { .. })),
                "{name}"
            );
        }
    }
}
