//! Cheap checks that the volumes can fit on the members, made before the engine is built.
//!
//! The engine sizes each volume's tables (mapping, stripes) from the configured size before
//! it compares the total with the members, and asserts that stripe ids fit in 32 bits. A
//! pool file asking for a petabyte on 64 MiB members would otherwise make it allocate for
//! the petabyte (or hit that assertion) instead of answering "does not fit".

use anyhow::bail;
use fusionraid_core::scheme::fusion::{Level, sizing};
use fusionraid_io::format_size;

use crate::pool_config::PoolFile;

/// Largest request the engine takes (it keeps spare stripes for one on top of its reserve).
const MAX_REQUEST_BYTES: u64 = 32 << 20;

/// Errors if the volumes can not fit on `pool.members.len()` members of `disk_bytes`.
pub fn check_fits(pool: &PoolFile, disk_bytes: u64) -> anyhow::Result<()> {
    // Without an explicit data_offset the metadata area is sized later; the superblock is a
    // lower bound good enough for this pre-check (the engine checks exactly).
    let reserved = pool
        .data_offset
        .map_or(crate::superblock::SUPERBLOCK_BYTES, |o| o.0);
    let per_member = disk_bytes.saturating_sub(reserved);
    let raw = per_member.saturating_mul(pool.members.len() as u64);
    let logical = pool
        .volumes
        .iter()
        .try_fold(0u64, |a, v| a.checked_add(v.size.0))
        .unwrap_or(u64::MAX);
    if logical > raw {
        bail!(
            "the volumes hold {} but the {} members offer {} in all ({} each after the \
             reserved {})",
            format_size(logical),
            pool.members.len(),
            format_size(raw),
            format_size(per_member),
            format_size(reserved)
        );
    }
    for v in &pool.volumes {
        let level: Level = v.parsed_level().map_err(|e: String| anyhow::anyhow!(e))?;
        let spare = v.spare_fraction.share().unwrap_or(sizing::AUTO_SPARE_MAX);
        let stripes = stripe_bound(pool, v.size.0, v.stripe_width(), level, spare);
        if stripes > u64::from(u32::MAX) {
            bail!(
                "volume {}: about {stripes} stripes of {} blocks, more than the engine's \
                 32-bit stripe ids allow; use a larger `block_size`",
                v.name.escape_debug(),
                format_size(pool.block_size.0)
            );
        }
    }
    Ok(())
}

/// An upper bound of the stripes the engine gives a volume: data stripes, the replicated
/// area (at most one copy set per data stripe), the spare share, the reserve for one
/// largest request, and rounding up to whole layout templates (at most members^2 stripes).
fn stripe_bound(pool: &PoolFile, size: u64, width: usize, level: Level, spare: f64) -> u64 {
    let bs = pool.block_size.0;
    let dcols = width.saturating_sub(level.nparity()).max(1) as u64;
    let data = (size / bs).div_ceil(dcols);
    let copies = level.copies() as u64;
    let per_data = 1 + copies + spare.max(0.0).ceil() as u64;
    let reserve = 2 * (copies + 2) + MAX_REQUEST_BYTES.div_ceil(bs * dcols) + 1 + copies;
    let n = pool.members.len() as u64;
    data.saturating_mul(per_data)
        .saturating_add(reserve)
        .saturating_add(n.saturating_mul(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(size: &str, bs: &str) -> PoolFile {
        PoolFile::parse(&format!(
            "members = [\"mem:1G\", \"mem:1G\", \"mem:1G\", \"mem:1G\", \"mem:1G\"]\n\
             block_size = \"{bs}\"\n[[volume]]\nname = \"v\"\nlevel = \"raid5\"\nwidth = 3\n\
             size = \"{size}\""
        ))
        .unwrap()
    }

    #[test]
    fn volumes_larger_than_the_members_do_not_fit() {
        assert!(check_fits(&pool("1G", "64K"), 1 << 30).is_ok());
        let e = check_fits(&pool("16T", "64K"), 1 << 30).unwrap_err();
        assert!(format!("{e}").contains("offer"), "{e}");
        // Members smaller than the reserved area hold nothing.
        assert!(check_fits(&pool("64K", "64K"), 4096).is_err());
    }

    #[test]
    fn stripe_ids_must_fit_32_bits() {
        // 16 TiB of 4 KiB blocks in 2+1 stripes: 2^31 data stripes, times the copies.
        let e = check_fits(&pool("16T", "4K"), 8 << 40).unwrap_err();
        assert!(format!("{e}").contains("32-bit"), "{e}");
        assert!(check_fits(&pool("16T", "1M"), 8 << 40).is_ok());
    }
}
