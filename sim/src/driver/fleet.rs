//! The pool's members as device models: a preset by name, its own seed per member, optionally
//! aged and slowed down.

use fusionraid_core::rng::Rng;
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
    let mut out: Vec<Box<dyn DeviceModel>> = Vec::with_capacity(pool.disks);
    for i in 0..pool.disks {
        let s = member_seed(seed, i);
        let mut m: Box<dyn DeviceModel> = match preset(&pool.device) {
            Ok(mut c) => {
                if let Some(cap) = pool.capacity_bytes {
                    c = c.with_capacity(cap);
                }
                Box::new(SsdModel::try_new(c.with_seed(s))?)
            }
            Err(ssd_err) => match hdd_preset(&pool.device) {
                Ok(mut c) => {
                    if let Some(cap) = pool.capacity_bytes {
                        c.capacity_bytes = cap;
                    }
                    c.validate()?;
                    Box::new(HddModel::new(c))
                }
                Err(hdd_err) => return Err(format!("{ssd_err}; {hdd_err}")),
            },
        };
        if pool.aged {
            // with_spare(0) is the paper's state (AgeSpec::paper).
            m.age(&AgeSpec::with_spare(pool.spare));
        }
        out.push(m);
    }
    for &(d, f) in &pool.speed_factors {
        out[d].set_speed_factor(f);
    }
    Ok(out)
}
