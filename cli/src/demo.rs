//! The default pool `fusionraid serve` builds when given no pool file: seven emulated
//! consumer SSDs (sparse files, `file_space = "thin"`, in ./fusionraid-demo/, each behind
//! the `consumer` SSD model, whose buffer-flush and GC stalls make latency spikes visible on
//! any machine) holding a 4+1 RAID5 volume open to any client (byte-granular, so nbdfuse
//! works) and a 4+2 RAID6.

use std::path::{Path, PathBuf};

use anyhow::Context;

pub const DEFAULT_DIR: &str = "fusionraid-demo";

const MEMBERS: usize = 7;

fn pool_toml() -> String {
    let members: Vec<String> = (0..MEMBERS)
        .map(|i| format!("\"emu:consumer:file:d{i}.img\""))
        .collect();
    format!(
        r#"# The demo pool written by `fusionraid serve` (edit freely; see `fusionraid create --help`).
name = "demo"
members = [{}]
member_size = "2G"
# Sparse member files, so the demo runs on a machine with little free disk; a real pool
# keeps the default "reserved": member files allocated in full, never refused a write.
file_space = "thin"
block_size = "64K"
layout = "mols"
scheme = "fusionraid"

[detector]
preset = "consumer"

[[volume]]
name = "vol0"
level = "raid5"
width = 5
size = "3G"
allow_unaligned = true

[[volume]]
name = "vol1"
level = "raid6"
width = 6
size = "1G"

[serve]
unix = "nbd.sock"
status = "status.sock"
tcp = "127.0.0.1:10809"
"#,
        members.join(", ")
    )
}

/// Makes sure `dir` holds a pool file; returns its path and whether the members still
/// need to be created (no member file exists yet). With only some files present the pool
/// is assembled as usual: degraded if few are missing, a clear error otherwise.
pub fn prepare(dir: &Path) -> anyhow::Result<(PathBuf, bool)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("pool.toml");
    if !path.exists() {
        std::fs::write(&path, pool_toml())
            .with_context(|| format!("writing {}", path.display()))?;
        crate::console::tell!("fusionraid: wrote the demo pool file {}", path.display());
    }
    let file = crate::pool_config::PoolFile::load(&path)?;
    let base = crate::create_cmd::base_dir(&path)?;
    let fresh = file
        .specs()?
        .iter()
        .all(|s| s.resolved(&base).file_path().is_none_or(|p| !p.exists()));
    Ok((path, fresh))
}

#[cfg(test)]
mod tests {
    #[test]
    fn demo_pool_is_valid_and_fits() {
        let p = crate::pool_config::PoolFile::parse(&super::pool_toml()).unwrap();
        crate::scheme_choice::build_engine(&p, None, (2 << 30) / 4096 * 4096).unwrap();
    }
}
