//! How many stripes each volume's zone gets, and the `auto` spare share.
//!
//! A zone is the volume's data stripes, its replicated area (at most `replicated_fraction`
//! of the data, in `copies` stripes per stripe of data), and spare stripes: room for
//! out-of-place writes and for the holes the cleaner has not compacted yet. Zones lie one
//! after another on the members, rounded up to whole layout templates.
//!
//! Spare is what over-provisioning is to an SSD (the pitfalls study's strongest lever):
//! with more of it the cleaner finds emptier victims, and sustained small random writes cost
//! fewer device bytes per user byte (docs/BENCHMARKS-HISTORY.md). Capacity the volumes leave unused
//! on the members serves nothing else, so `auto` gives it to them as spare.

use super::config::{ConfigError, FusionConfig, VolumeConfig};
use crate::space::zone::blocks_per_disk;

/// No volume's `auto` share exceeds this. Beyond it the cleaner gains little (at 4.0 a
/// volume of sustained 4 KiB random writes is within a tenth of the two copies and parity it
/// must write anyway; docs/BENCHMARKS-HISTORY.md) while every spare stripe still costs engine memory.
/// The checkpoint area is sized for it (`ImageBound::Zone`).
pub const AUTO_SPARE_MAX: f64 = 4.0;

/// Stripes of the zone of `v`, whose layout template has `tpl` stripes.
pub fn zone_stripes(v: &VolumeConfig, tpl: u64, bs: u64, max_request_bytes: u64) -> u64 {
    let dcols = (v.width - v.level.nparity()) as u64;
    let blocks = v.size_bytes / bs;
    let data_stripes = blocks.div_ceil(dcols);
    let rep_blocks = (blocks as f64 * v.replicated_fraction).ceil() as u64;
    let rep_stripes = rep_blocks.div_ceil(dcols) * v.level.set_stripes() as u64;
    // Out-of-place writes need spare stripes: one request's worth on top of the
    // background reserve (see Vol::reserve_stripes), at the very least.
    let request_stripes = max_request_bytes.div_ceil(bs * dcols) + 1;
    let floor = 2 * (v.level.copies() as u64 + 2) + request_stripes;
    let slack = ((data_stripes as f64 * v.spare_fraction).ceil() as u64).max(floor);
    let want = data_stripes + rep_stripes + slack;
    want.div_ceil(tpl) * tpl
}

/// Sets the spare share of the volumes marked in `auto` to the largest share (the same for
/// all, at most [`AUTO_SPARE_MAX`]) at which every zone still fits on the members.
/// When not even a share of 0 fits, they get 0 and `FusionScheme::new` says what is missing.
pub fn fill_auto_spare(cfg: &mut FusionConfig, auto: &[bool]) -> Result<(), ConfigError> {
    assert_eq!(auto.len(), cfg.volumes.len(), "one flag per volume");
    let pool = &cfg.pool;
    let bs = pool.block_size;
    let have = pool.disk_bytes.saturating_sub(pool.data_offset) / bs;
    let layouts = cfg
        .volumes
        .iter()
        .map(|v| {
            pool.build_layout(v.width, v.level.nparity())
                .map_err(|reason| ConfigError::Geometry {
                    volume: v.name.clone(),
                    reason,
                })
        })
        .collect::<Result<Vec<_>, ConfigError>>()?;
    let max_request = cfg.max_request_bytes;
    let need = |vols: &[VolumeConfig]| -> u64 {
        vols.iter()
            .zip(&layouts)
            .map(|(v, l)| {
                let stripes = zone_stripes(v, l.template_stripes(), bs, max_request);
                blocks_per_disk(l.as_ref(), stripes)
            })
            .sum()
    };
    let with = |share: f64| -> Vec<VolumeConfig> {
        let mut vols = cfg.volumes.clone();
        for (v, _) in vols.iter_mut().zip(auto).filter(|(_, a)| **a) {
            v.spare_fraction = share;
        }
        vols
    };
    // Bisection on the share: blocks needed only grow with it.
    let (mut lo, mut hi) = (0.0f64, AUTO_SPARE_MAX);
    if need(&with(hi)) <= have {
        lo = hi;
    } else {
        for _ in 0..40 {
            let mid = (lo + hi) / 2.0;
            if need(&with(mid)) <= have {
                lo = mid;
            } else {
                hi = mid;
            }
        }
    }
    // Three decimals, rounded down: stored in the pool's superblocks as text.
    let share = (lo * 1000.0).floor() / 1000.0;
    cfg.volumes = with(share);
    Ok(())
}

/// Blocks every member gives the zones of `cfg`, the spare shares as set; None when a
/// volume's layout can not be built.
pub fn blocks_needed(cfg: &FusionConfig) -> Option<u64> {
    let pool = &cfg.pool;
    let mut total = 0u64;
    for v in &cfg.volumes {
        let l = pool.build_layout(v.width, v.level.nparity()).ok()?;
        let stripes = zone_stripes(
            v,
            l.template_stripes(),
            pool.block_size,
            cfg.max_request_bytes,
        );
        total = total.checked_add(blocks_per_disk(l.as_ref(), stripes))?;
    }
    Some(total)
}

/// Whether every zone of `cfg` fits on its members.
pub fn zones_fit(cfg: &FusionConfig) -> bool {
    let have = cfg.pool.disk_bytes.saturating_sub(cfg.pool.data_offset) / cfg.pool.block_size;
    blocks_needed(cfg).is_some_and(|n| n <= have)
}

/// Bytes of every member the pool ever writes: the reserved area and the zones.
pub fn bytes_used_per_member(cfg: &FusionConfig) -> u64 {
    let zones = blocks_needed(cfg)
        .unwrap_or(0)
        .saturating_mul(cfg.pool.block_size);
    cfg.pool
        .data_offset
        .saturating_add(zones)
        .min(cfg.pool.disk_bytes)
}

/// The largest size (a whole number of blocks) the last volume of `cfg` may have for every
/// zone to fit on the members, the other volumes as configured; None when not even one
/// block fits.
pub fn largest_last_volume(cfg: &FusionConfig) -> Option<(String, u64)> {
    let pool = &cfg.pool;
    let bs = pool.block_size;
    let have = pool.disk_bytes.saturating_sub(pool.data_offset) / bs;
    let need = |vols: &[VolumeConfig]| -> Option<u64> {
        let mut total = 0;
        for v in vols {
            let l = pool.build_layout(v.width, v.level.nparity()).ok()?;
            let stripes = zone_stripes(v, l.template_stripes(), bs, cfg.max_request_bytes);
            total += blocks_per_disk(l.as_ref(), stripes);
        }
        Some(total)
    };
    let mut vols = cfg.volumes.clone();
    let last = vols.len().checked_sub(1)?;
    let fits = |vols: &mut Vec<VolumeConfig>, blocks: u64| {
        vols[last].size_bytes = blocks * bs;
        need(vols).is_some_and(|n| n <= have)
    };
    if !fits(&mut vols, 1) {
        return None;
    }
    // Bisection on whole blocks: what a zone needs only grows with the volume.
    let (mut lo, mut hi) = (1u64, cfg.volumes[last].size_bytes / bs);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(&mut vols, mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some((cfg.volumes[last].name.clone(), lo * bs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheme::fusion::{FusionScheme, LayoutKind, Level, PoolGeometry};

    fn cfg(disk_bytes: u64, vols: &[(u64, f64)]) -> FusionConfig {
        let pool = PoolGeometry {
            disks: 7,
            disk_bytes,
            block_size: 64 << 10,
            data_offset: 1 << 20,
            layout: LayoutKind::Mols,
            hdds: Vec::new(),
        };
        let volumes = vols
            .iter()
            .enumerate()
            .map(|(i, &(size, spare))| {
                let mut v = VolumeConfig::new(&format!("v{i}"), Level::Raid5, 5, size);
                v.spare_fraction = spare;
                v
            })
            .collect();
        FusionConfig::new(pool, volumes)
    }

    #[test]
    fn auto_spare_takes_the_room_the_volumes_leave() {
        // 7 x 2 GiB for one 1 GiB volume: room for the cap.
        let mut c = cfg(2 << 30, &[(1 << 30, 0.25)]);
        fill_auto_spare(&mut c, &[true]).unwrap();
        assert_eq!(c.volumes[0].spare_fraction, AUTO_SPARE_MAX);
        FusionScheme::new(c).expect("fits");

        // 7 x 512 MiB: less room; the share found fits, a little more does not.
        let mut c = cfg(512 << 20, &[(1 << 30, 0.25), (256 << 20, 0.25)]);
        fill_auto_spare(&mut c, &[true, false]).unwrap();
        let share = c.volumes[0].spare_fraction;
        assert!(share > 0.25 && share < AUTO_SPARE_MAX, "{share}");
        assert_eq!(c.volumes[1].spare_fraction, 0.25, "fixed shares stay");
        FusionScheme::new(c.clone()).expect("the share found fits");
        let mut more = c.clone();
        more.volumes[0].spare_fraction = share + 0.01;
        assert!(matches!(
            FusionScheme::new(more),
            Err(ConfigError::TooSmall { .. })
        ));
    }

    #[test]
    fn too_small_says_what_would_fit() {
        let c = cfg(64 << 20, &[(1 << 30, 0.25)]);
        let Err(ConfigError::TooSmall {
            min_member_bytes,
            largest_last,
            ..
        }) = FusionScheme::new(c.clone())
        else {
            panic!("a 1 GiB volume does not fit on 7 members of 64 MiB");
        };
        let (name, largest) = largest_last.expect("a smaller volume fits");
        assert_eq!(name, c.volumes[0].name);
        let mut bigger = c.clone();
        bigger.pool.disk_bytes = min_member_bytes;
        FusionScheme::new(bigger.clone()).expect("the smallest member size named fits");
        bigger.pool.disk_bytes = min_member_bytes - 1;
        assert!(FusionScheme::new(bigger).is_err(), "and is the smallest");
        let mut smaller = c.clone();
        smaller.volumes[0].size_bytes = largest;
        FusionScheme::new(smaller.clone()).expect("the largest volume named fits");
        smaller.volumes[0].size_bytes = largest + (64 << 10);
        assert!(FusionScheme::new(smaller).is_err(), "and is the largest");
    }

    #[test]
    fn auto_spare_is_zero_when_nothing_fits() {
        let mut c = cfg(64 << 20, &[(1 << 30, 0.25)]);
        fill_auto_spare(&mut c, &[true]).unwrap();
        assert_eq!(c.volumes[0].spare_fraction, 0.0);
        assert!(matches!(
            FusionScheme::new(c),
            Err(ConfigError::TooSmall { .. })
        ));
    }
}
