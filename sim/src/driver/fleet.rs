//! The pool's members as device models: each member's preset by name
//! ([`PoolSpec::member_devices`]: one preset for all, or a mix), its own seed per member,
//! optionally aged, slowed down and fail-slow; and the spike process laid over them.

use fusionraid_core::rng::Rng;
use fusionraid_devices::fail_slow::FailSlow;
use fusionraid_devices::spikes::Spiking;
use fusionraid_devices::{AgeSpec, DeviceModel, HddModel, SsdModel, hdd_preset, preset};

use crate::scenario::PoolSpec;

/// Seed of member `i`'s model, derived from the run seed so members differ from each other
/// and from the engine's stream.
fn member_seed(seed: u64, i: usize) -> u64 {
    let mut r = Rng::new(seed ^ 0xde5e_ed00_u64.wrapping_mul(i as u64 + 1));
    r.next_u64()
}

/// One model per member, in disk order.
pub fn build_fleet(pool: &PoolSpec, seed: u64) -> Result<Vec<Box<dyn DeviceModel>>, String> {
    let names = pool.member_devices()?;
    let mut out: Vec<Box<dyn DeviceModel>> = Vec::with_capacity(pool.disks);
    for (i, name) in names.iter().enumerate() {
        let mut m = build_member(name, pool.capacity_bytes, member_seed(seed, i))?;
        if pool.aged {
            // with_spare(0) is the paper's state (AgeSpec::paper).
            m.age(&AgeSpec::with_spare(pool.spare));
        }
        if let Some(&(_, spec)) = pool.fail_slow.iter().find(|p| p.0 == i) {
            m = Box::new(FailSlow::new(m, spec, member_seed(seed, i)));
        }
        out.push(m);
    }
    for &(d, f) in &pool.speed_factors {
        out[d].set_speed_factor(f);
    }
    Ok(out)
}

/// Lays the pool's spike process (if any) over `fleet`, the members [`build_fleet`] gave
/// (or a copy of them). Apart from `build_fleet`, so a fleet aged once serves runs at every
/// spike setting; each member draws its periods from its own seed.
pub fn add_spikes(
    pool: &PoolSpec,
    seed: u64,
    fleet: Vec<Box<dyn DeviceModel>>,
) -> Vec<Box<dyn DeviceModel>> {
    match pool.spikes {
        Some(spec) if spec.is_active() => fleet
            .into_iter()
            .enumerate()
            .map(|(i, m)| {
                Box::new(Spiking::new(m, spec, member_seed(seed, i))) as Box<dyn DeviceModel>
            })
            .collect(),
        _ => fleet,
    }
}

/// A fresh member of preset `name`, with the pool's capacity when it sets one.
fn build_member(
    name: &str,
    capacity: Option<u64>,
    seed: u64,
) -> Result<Box<dyn DeviceModel>, String> {
    match preset(name) {
        Ok(mut c) => {
            if let Some(cap) = capacity {
                c = c.with_capacity(cap);
            }
            Ok(Box::new(SsdModel::try_new(c.with_seed(seed))?))
        }
        Err(ssd_err) => match hdd_preset(name) {
            Ok(mut c) => {
                if let Some(cap) = capacity {
                    c.capacity_bytes = cap;
                }
                c.validate()?;
                Ok(Box::new(HddModel::new(c)))
            }
            Err(hdd_err) => Err(format!("{ssd_err}; {hdd_err}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    #[test]
    fn a_list_of_presets_is_cycled_over_the_members() {
        let mut pool = Scenario::default_mix(1.0).pool;
        pool.disks = 5;
        pool.aged = false;
        pool.device = "pm1725a, dc".into();
        let names: Vec<String> = build_fleet(&pool, 1)
            .unwrap()
            .iter()
            .map(|d| d.name().to_string())
            .collect();
        assert_eq!(names, ["pm1725a", "dc", "pm1725a", "dc", "pm1725a"]);
        // A member's model and seed depend on its slot only: the same preset in the same slot
        // behaves the same whatever the other members are.
        let mut single = pool.clone();
        single.device = "pm1725a".into();
        let mut a = build_fleet(&pool, 1).unwrap();
        let mut b = build_fleet(&single, 1).unwrap();
        for t in 0..50u64 {
            let (x, y) = (t * 7_000, (t % 9) * 4096);
            let kind = fusionraid_devices::OpKind::Read;
            assert_eq!(a[2].submit(x, kind, y, 4096), b[2].submit(x, kind, y, 4096));
        }
        pool.device = "sandook12".into();
        pool.disks = 12;
        let fleet = build_fleet(&pool, 1).unwrap();
        assert_eq!(fleet[0].name(), "s39wna0kb01161");
        assert_eq!(fleet[11].name(), "sdm000024db4");
        pool.disks = 11;
        assert!(build_fleet(&pool, 1).err().unwrap().contains("12 devices"));
        pool.device = "dc,nope".into();
        assert!(build_fleet(&pool, 1).err().unwrap().contains("'nope'"));
    }

    /// A fail-slow member answers `factor` times slower inside its episodes and as its plain
    /// self outside them; the other members are untouched.
    #[test]
    fn fail_slow_members_are_wrapped() {
        use fusionraid_devices::OpKind::Read;
        use fusionraid_devices::fail_slow::FailSlowSpec;
        let mut pool = Scenario::default_mix(1.0).pool;
        pool.disks = 3;
        pool.aged = false;
        let plain = pool.clone();
        pool.fail_slow = vec![(1, FailSlowSpec::parse("4x/10ms/10ms").unwrap())];
        let mut a = build_fleet(&pool, 1).unwrap();
        let mut b = build_fleet(&plain, 1).unwrap();
        let ms = 1_000_000;
        // One isolated read per member at 5 ms (normal) and at 15 ms (in the first episode).
        for (t, factor) in [(5 * ms, 1), (15 * ms, 4)] {
            for d in 0..3 {
                let slow = a[d].submit(t, Read, 0, 4096) - t;
                let base = b[d].submit(t, Read, 0, 4096) - t;
                let f = if d == 1 { factor } else { 1 };
                assert!(
                    slow.abs_diff(f * base) <= 4,
                    "disk {d} at {t}: {slow} vs {base}"
                );
            }
        }
    }
}
