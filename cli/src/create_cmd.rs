//! `fusionraid create POOL.toml`: format the members of a pool (superblocks).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args as ClapArgs;
use fusionraid_io::format_size;

use crate::assemble::{Io, create};
use crate::pool_config::PoolFile;
use crate::superblock::uuid_string;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The pool file (TOML): members, layout, block size, volumes, policies.
    pub pool: PathBuf,
    /// Overwrite members that already belong to a pool (their data is lost).
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let file = PoolFile::load(&args.pool)?;
    if file.is_ephemeral() {
        anyhow::bail!(
            "every member of {} is in memory (mem:), which keeps no superblock; `fusionraid serve {}` \
             formats such a pool each time it starts",
            args.pool.display(),
            args.pool.display()
        );
    }
    let base = base_dir(&args.pool)?;
    let io = Io::new()?;
    let pool = create(&file, &base, args.force, &io)?;
    println!(
        "created pool '{}' ({}) on {} members of {} each",
        file.name,
        uuid_string(&pool.uuid),
        file.members.len(),
        format_size(pool.disk_bytes)
    );
    // The stored configuration: `auto` spare shares resolved.
    for v in &pool.cfg.volumes {
        println!(
            "  volume {:<12} {} width {} size {} spare {}",
            v.name,
            v.level_label(),
            v.stripe_width(),
            format_size(v.size.0),
            v.spare_fraction
        );
    }
    for w in pool.cfg.spare_warnings(pool.disk_bytes) {
        eprintln!("{w}");
    }
    println!("serve it with: fusionraid serve {}", args.pool.display());
    Ok(())
}

/// The directory relative member paths and sockets are resolved against.
pub fn base_dir(pool_file: &std::path::Path) -> anyhow::Result<PathBuf> {
    let abs = std::path::absolute(pool_file)
        .with_context(|| format!("resolving {}", pool_file.display()))?;
    Ok(abs
        .parent()
        .map_or_else(|| PathBuf::from("/"), std::path::Path::to_path_buf))
}
