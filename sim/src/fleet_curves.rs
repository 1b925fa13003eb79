//! Load-latency curves of a pool's members ([`DeviceCurves`], what profile-guided steering
//! reads) and the pool's ideal throughput. Each member's curves come from sweeping its
//! preset's model the way the profiles were measured
//! ([`fusionraid_devices::curves::sweep_preset`]): the offline profiling of a fresh drive, so
//! they leave out what the run does to the member later (ageing, a slow-down factor, a
//! smaller capacity). A preset is swept once per process and shared by every member and
//! pool naming it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use fusionraid_core::steer::{DeviceCurves, Percentile};
use fusionraid_devices::curves::{SweepOptions, sweep_preset};

use crate::scenario::PoolSpec;

type Slot = Arc<Mutex<Option<Arc<DeviceCurves>>>>;

fn cache() -> &'static Mutex<HashMap<String, Slot>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Slot>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The curves of preset `name`, swept with the default [`SweepOptions`] on first use.
pub fn preset_curves(name: &str) -> Result<Arc<DeviceCurves>, String> {
    let slot = cache()
        .lock()
        .expect("curve cache")
        .entry(name.to_string())
        .or_default()
        .clone();
    // Held while sweeping, so two threads asking for one preset sweep it once.
    let mut s = slot.lock().expect("curve slot");
    if let Some(c) = s.as_ref() {
        return Ok(c.clone());
    }
    let c = Arc::new(sweep_preset(name, &SweepOptions::default())?);
    *s = Some(c.clone());
    Ok(c)
}

/// Where the measured load-latency profiles are (`<serial>_<mix>.csv`): `FUSIONRAID_PROFILES`,
/// or the shared data directory next to the checkout this binary was built from.
pub fn profiles_dir() -> PathBuf {
    std::env::var_os("FUSIONRAID_PROFILES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/ssd-profiles")
        })
}

/// Every member's curves, in disk order.
#[derive(Clone, Debug)]
pub struct PoolCurves {
    pub members: Vec<Arc<DeviceCurves>>,
}

impl PoolCurves {
    /// Sum over the members of their peak at `write_share` (0..=1) writes
    /// ([`DeviceCurves::peak_iops`]): the throughput the pool sustains at that percentile
    /// under the 1 ms rule when every member gets load in proportion to its peak.
    pub fn ideal_iops(&self, write_share: f64, p: Percentile) -> f64 {
        self.members
            .iter()
            .map(|c| c.peak_iops(write_share, p))
            .sum()
    }
}

/// The curves of `pool`'s members ([`PoolSpec::member_devices`]).
pub fn pool_curves(pool: &PoolSpec) -> Result<PoolCurves, String> {
    let members = pool
        .member_devices()?
        .iter()
        .map(|name| preset_curves(name))
        .collect::<Result<_, _>>()?;
    Ok(PoolCurves { members })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    #[test]
    fn a_mixed_pool_sums_its_members_peaks() {
        let mut pool = Scenario::default_mix(1.0).pool;
        pool.disks = 5;
        pool.device = "pm1725a,sn200".into();
        let c = pool_curves(&pool).unwrap();
        let names: Vec<&str> = c.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["pm1725a", "sn200", "pm1725a", "sn200", "pm1725a"]);
        // One sweep per preset, shared by its members and by later calls.
        assert!(Arc::ptr_eq(&c.members[0], &c.members[2]));
        assert!(Arc::ptr_eq(&c.members[1], &preset_curves("sn200").unwrap()));
        for p in [Percentile::P90, Percentile::P99] {
            let (pm, sn) = (
                c.members[0].peak_iops(0.0, p),
                c.members[1].peak_iops(0.0, p),
            );
            assert!(pm > 0.0 && sn > pm, "{pm} {sn}");
            let ideal = c.ideal_iops(0.0, p);
            assert!((ideal - (3.0 * pm + 2.0 * sn)).abs() < 1e-6 * ideal);
            // Writes mixed into reads lower what the pool sustains.
            assert!(c.ideal_iops(0.5, p) < ideal);
        }
        pool.device = "nope".into();
        assert!(pool_curves(&pool).is_err());
    }
}
