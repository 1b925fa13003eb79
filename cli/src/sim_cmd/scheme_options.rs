//! Options only some schemes act on, refused for the others: a baseline run given
//! `--hedge 500us` ran without hedging and reported as if the option had been applied.

use fusionraid_sim::scenario::{is_fusion, steers};

use super::{Args, WearArg};

/// The first option given that scheme `scheme` would ignore, as an error naming it.
pub fn check(args: &Args, scheme: &str) -> anyhow::Result<()> {
    let fusion = is_fusion(scheme);
    let key = scheme.trim().to_ascii_lowercase();
    if !fusion && fusionraid_core::scheme::baselines::canonical(&key).is_err() {
        return Ok(()); // an unknown scheme: building it says so, with the names known
    }
    let fusion_only = [
        ("--trim", args.trim.is_some()),
        ("--conversion", args.conversion.is_some()),
        ("--hedge", args.hedge.is_some()),
        ("--raid-hedge", args.raid_hedge.is_some()),
        ("--write-hedge", args.write_hedge.is_some()),
        ("--gather", args.gather.is_some()),
        ("--wear GAP", matches!(args.wear, Some(WearArg::Gap(_)))),
        ("--offload", args.offload.is_some()),
        ("--offload-floor", args.offload_floor.is_some()),
    ];
    if !fusion && let Some((name, _)) = fusion_only.iter().find(|(_, given)| *given) {
        anyhow::bail!(
            "{name} applies to the FusionRAID schemes (fusionraid, fusionraid+, fusion-nd), \
             not {scheme}"
        );
    }
    let default_steer = fusionraid_core::steer::SteerConfig::default();
    if args.steer != default_steer && !steers(scheme) {
        anyhow::bail!(
            "--steer applies to the schemes that steer (sandook, fusionraid+), not {scheme}"
        );
    }
    Ok(())
}
