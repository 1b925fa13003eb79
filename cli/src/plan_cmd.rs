//! `fusionraid plan`: the over-provisioning planner. Reads a pool (a pool file, or members and
//! volumes on the command line), prices each volume's sustained 4 KiB random overwrites at a
//! range of spare shares (`fusionraid_sim::plan`) and recommends a share for a target.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args as ClapArgs;
use fusionraid_devices::SsdConfig;
use fusionraid_devices::sustained::History;
use fusionraid_io::{MemberSpec, parse_size};
use fusionraid_sim::plan::{self, DEFAULT_SHARES, PlanInput, Share, Target};
use fusionraid_sim::workload::parse_iops;

use crate::create_cmd::base_dir;
use crate::pool_config::{PoolFile, Size, Spare, VolumeSection};

/// Predict each volume's sustained 4 KiB random-write IOPS and device bytes written per user
/// byte across spare shares, and recommend a share for a target.
#[derive(ClapArgs, Debug)]
#[command(after_help = "Examples:\n  \
    fusionraid plan pool.toml\n  \
    fusionraid plan pool.toml --target-iops 25k\n  \
    fusionraid plan --members 8 --member-size 4G --device dc --volume raid5:5:1G --target-wa 4")]
pub struct Args {
    /// The pool file (as `create` and `serve` take).
    #[arg(required_unless_present = "members", conflicts_with = "members")]
    pool: Option<PathBuf>,
    /// Without a pool file: the number of members.
    #[arg(long, requires_all = ["member_size", "volume"])]
    members: Option<usize>,
    /// Member size (e.g. 4G; default with a pool file: its member_size, or the members' own).
    #[arg(long, value_parser = parse_size)]
    member_size: Option<u64>,
    /// Without a pool file: a volume, LEVEL:WIDTH:SIZE[:NAME] (e.g. raid5:5:1G). Repeatable.
    #[arg(long, value_name = "VOLUME")]
    volume: Vec<String>,
    /// Drive preset of members whose drive the pool does not name (emu: members name their
    /// preset, [steer] serials a profiled drive): dc, consumer, pm1725a, sn200, a serial.
    #[arg(long)]
    device: Option<String>,
    /// Members were trimmed (or are new) before the pool: flash the pool never writes counts
    /// as spare. Default: aged, written in full before (the conservative case).
    #[arg(long)]
    fresh: bool,
    /// Spare shares to price, comma-separated (numbers from 0 to 4, or auto).
    #[arg(long, value_delimiter = ',', value_parser = parse_share)]
    shares: Vec<Share>,
    /// Recommend the smallest share sustaining at least this many random-write IOPS.
    #[arg(long, value_parser = parse_iops, conflicts_with = "target_wa")]
    target_iops: Option<f64>,
    /// Recommend the smallest share writing at most this many device bytes (flash
    /// included) per user byte.
    #[arg(long)]
    target_wa: Option<f64>,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

fn parse_share(s: &str) -> Result<Share, String> {
    s.parse()
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let (file, base) = match &args.pool {
        Some(path) => (PoolFile::load(path)?, base_dir(path)?),
        None => (command_line_pool(&args)?, PathBuf::from(".")),
    };
    if !fusionraid_sim::scenario::is_fusion(&file.scheme) {
        eprintln!(
            "note: the planner models FusionRAID's write path and cleaner; this pool's scheme \
             is {}",
            file.scheme
        );
    }
    let disk_bytes = member_bytes(&file, &base, args.member_size)?;
    // Without redirection: steering (which would load or sweep curves) plays no part in
    // sizing or in the model.
    let cfg = file.fusion_config(disk_bytes, false, 0)?;
    let drives = member_drives(&file, disk_bytes, args.device.as_deref())?;
    let names = drive_names(&drives);
    let input = PlanInput {
        cfg,
        drives,
        history: if args.fresh {
            History::Fresh
        } else {
            History::Aged
        },
    };
    let shares = if args.shares.is_empty() {
        DEFAULT_SHARES.to_vec()
    } else {
        args.shares.clone()
    };
    let plans = plan::plan(&input, &shares).map_err(anyhow::Error::msg)?;
    let target = match (args.target_iops, args.target_wa) {
        (Some(n), _) => Some(Target::Iops(n)),
        (None, Some(a)) => Some(Target::WriteAmp(a)),
        (None, None) => None,
    };
    if args.json {
        let doc = serde_json::json!({
            "members": input.cfg.pool.disks,
            "member_bytes": disk_bytes,
            "drives": names,
            "history": if args.fresh { "fresh" } else { "aged" },
            "volumes": plans,
            "recommended": plans.iter().map(|p| target.and_then(|t| plan::recommend(p, t)).map(|x| x.spare)).collect::<Vec<_>>(),
            "error_band": {
                "iops": plan::trust::IOPS_ERROR,
                "written": plan::trust::WRITTEN_ERROR,
                "flash": plan::trust::FLASH_ERROR,
            },
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        let history = if args.fresh { "fresh" } else { "aged" };
        let what = format!(
            "{} x {names} of {} ({history})",
            input.cfg.pool.disks,
            fusionraid_io::format_size(disk_bytes)
        );
        print!("{}", plan::to_table(&plans, &what, target));
    }
    Ok(())
}

/// A pool file for `--members`, `--member-size` and `--volume`: members in memory (their
/// drive from `--device`), volumes with the `auto` share.
fn command_line_pool(args: &Args) -> anyhow::Result<PoolFile> {
    let (Some(n), Some(size)) = (args.members, args.member_size) else {
        bail!("without a pool file, give --members, --member-size and --volume");
    };
    let member = format!("mem:{size}");
    let mut volumes = Vec::new();
    for (i, text) in args.volume.iter().enumerate() {
        volumes.push(volume_of(text, i)?);
    }
    let mut toml = format!(
        "members = [{}]\n",
        vec![format!("\"{member}\""); n].join(", ")
    );
    for v in &volumes {
        toml.push_str(&format!(
            "[[volume]]\nname = \"{}\"\nlevel = \"{}\"\nwidth = {}\nsize = {}\n",
            v.name, v.level, v.width, v.size.0
        ));
    }
    PoolFile::parse(&toml).context("the pool the options describe")
}

/// `LEVEL:WIDTH:SIZE[:NAME]`.
fn volume_of(text: &str, i: usize) -> anyhow::Result<VolumeSection> {
    let parts: Vec<&str> = text.split(':').collect();
    let bad = || anyhow::anyhow!("--volume '{text}': expected LEVEL:WIDTH:SIZE[:NAME]");
    if !(3..=4).contains(&parts.len()) {
        return Err(bad());
    }
    let width = parts[1].parse().map_err(|_| bad())?;
    let size = parse_size(parts[2]).map_err(|e| anyhow::anyhow!("--volume '{text}': {e}"))?;
    Ok(VolumeSection {
        name: parts
            .get(3)
            .map_or_else(|| format!("vol{i}"), |n| n.to_string()),
        level: parts[0].to_string(),
        copies: None,
        width,
        size: Size(size),
        replicated_fraction: 0.10,
        spare_fraction: Spare::Auto,
        allow_unaligned: false,
    })
}

/// The members' size: `--member-size`, the pool's `member_size`, or the smallest the specs
/// name (in-memory members) or the files have.
fn member_bytes(
    file: &PoolFile,
    base: &std::path::Path,
    given: Option<u64>,
) -> anyhow::Result<u64> {
    if let Some(b) = given.or(file.member_size.map(|s| s.0)) {
        return Ok(b);
    }
    let mut smallest: Option<u64> = None;
    for spec in file.specs()? {
        let mut s = spec.resolved(base);
        while let MemberSpec::Emu { inner, .. } = s {
            s = *inner;
        }
        let bytes = match &s {
            MemberSpec::Mem { size, .. } => Some(*size),
            MemberSpec::File { path } => std::fs::metadata(path)
                .ok()
                .filter(std::fs::Metadata::is_file)
                .map(|m| m.len()),
            MemberSpec::Nbd { .. } | MemberSpec::Emu { .. } => None,
        };
        let Some(b) = bytes else {
            bail!("the size of member '{s:?}' is not known here: give --member-size");
        };
        smallest = Some(smallest.map_or(b, |x| x.min(b)));
    }
    smallest.context("a pool without members")
}

/// Each member's drive: its `emu:` preset, its [steer] serial's fitted preset, or `device`.
fn member_drives(
    file: &PoolFile,
    disk_bytes: u64,
    device: Option<&str>,
) -> anyhow::Result<Vec<SsdConfig>> {
    let specs = file.specs()?;
    let mut out = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        let serial = file
            .steer
            .serials
            .get(i)
            .filter(|s| !s.is_empty())
            .map(|s| s.to_ascii_lowercase());
        let (name, speed) = match (spec, serial, device) {
            (MemberSpec::Emu { preset, speed, .. }, _, _) => (preset.clone(), *speed),
            (_, Some(s), _) => (s, 1.0),
            (_, None, Some(d)) => (d.to_string(), 1.0),
            (_, None, None) => bail!(
                "member {i} ({}) names no drive model: give --device (presets: {})",
                file.members[i],
                fusionraid_devices::list_presets().join(", ")
            ),
        };
        let cfg = fusionraid_devices::preset(&name)
            .map_err(|e| anyhow::anyhow!("member {i}: {e} (the planner prices SSDs only)"))?;
        out.push(cfg.with_capacity(disk_bytes).with_speed_factor(speed));
    }
    Ok(out)
}

/// `dc` or `dc, consumer` (each preset once, in member order).
fn drive_names(drives: &[SsdConfig]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for d in drives {
        if !names.contains(&d.name.as_str()) {
            names.push(&d.name);
        }
    }
    names.join(", ")
}
