//! Aged fleets shared between runs. Preconditioning 29 SSD models costs a good share of a
//! short run, and many runs of an evaluation use the same pool and seed (every system on one
//! mix). Each such run gets a copy of one aged fleet, which is the fleet it would have built
//! itself (same models, same seeds, same state), so results do not change. A fleet is
//! dropped once the last run that needs it has taken its copy.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use fusionraid_devices::DeviceModel;

use crate::driver::build_fleet;
use crate::scenario::Scenario;

type Fleet = Vec<Box<dyn DeviceModel>>;

struct Entry {
    fleet: Arc<Mutex<Option<Fleet>>>,
    remaining: usize,
}

pub struct FleetCache {
    entries: Mutex<HashMap<String, Entry>>,
}

/// Runs with equal keys build equal fleets. The whole pool spec is in the key, so members
/// of different device presets (or capacities, spare, speeds) never share a fleet; nor do
/// pools mixing the same presets in another order (member `i` differs). Only the spike
/// process is left out: it is not part of the built fleet.
fn key(sc: &Scenario) -> Option<String> {
    // Fresh members cost nothing to build. The spike process is laid over the fleet after
    // the copy (`Sim::with_fleet`), so runs at every spike setting share one fleet.
    let pool = crate::scenario::PoolSpec {
        spikes: None,
        ..sc.pool.clone()
    };
    sc.pool.aged.then(|| format!("{pool:?}|{}", sc.seed))
}

impl FleetCache {
    /// A cache for these scenarios, each to be run once.
    pub fn new<'a>(scenarios: impl IntoIterator<Item = &'a Scenario>) -> Self {
        let mut entries: HashMap<String, Entry> = HashMap::new();
        for k in scenarios.into_iter().filter_map(key) {
            entries
                .entry(k)
                .or_insert_with(|| Entry {
                    fleet: Arc::new(Mutex::new(None)),
                    remaining: 0,
                })
                .remaining += 1;
        }
        // A fleet used by one run only is not worth keeping.
        entries.retain(|_, e| e.remaining > 1);
        FleetCache {
            entries: Mutex::new(entries),
        }
    }

    /// The members for `sc`: a copy of the shared fleet, or `None` to build its own.
    pub fn take(&self, sc: &Scenario) -> Result<Option<Fleet>, String> {
        let Some(k) = key(sc) else { return Ok(None) };
        let Some(slot) = self
            .entries
            .lock()
            .expect("fleet cache")
            .get(&k)
            .map(|e| e.fleet.clone())
        else {
            return Ok(None);
        };
        let copy = {
            // Held while building, so two workers do not age the same fleet twice.
            let mut f = slot.lock().expect("fleet");
            if f.is_none() {
                *f = Some(build_fleet(&sc.pool, sc.seed)?);
            }
            f.as_ref()
                .expect("built")
                .iter()
                .map(|d| d.clone_box())
                .collect::<Option<Fleet>>()
        };
        let mut entries = self.entries.lock().expect("fleet cache");
        if let Some(e) = entries.get_mut(&k) {
            e.remaining -= 1;
            if e.remaining == 0 {
                entries.remove(&k);
            }
        }
        Ok(copy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::Sim;

    #[test]
    fn a_copied_fleet_gives_the_same_report() {
        let mut sc = Scenario::default_mix(0.05);
        sc.pool.capacity_bytes = Some(4 << 30);
        sc.volume_bytes = Some(256 << 20);
        let cache = FleetCache::new([&sc, &sc]);
        let own = Sim::new(&sc).unwrap().run().unwrap().to_json();
        let copy = cache.take(&sc).unwrap().expect("shared by two runs");
        let shared = Sim::with_fleet(&sc, copy).unwrap().run().unwrap().to_json();
        assert_eq!(own, shared);
        // The second take is the last: the fleet is dropped after it.
        assert!(cache.take(&sc).unwrap().is_some());
        assert!(cache.entries.lock().unwrap().is_empty());
        // Same seed, another preset: two fleets, each used by one run, so none is kept.
        let mut consumer = sc.clone();
        consumer.pool.device = "consumer".into();
        assert_ne!(key(&sc), key(&consumer));
        assert!(
            FleetCache::new([&sc, &consumer])
                .take(&consumer)
                .unwrap()
                .is_none()
        );
        let mut clean = sc.clone();
        clean.pool.aged = false;
        assert!(
            FleetCache::new([&clean, &clean])
                .take(&clean)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn mixed_pools_share_fleets_by_member_order() {
        let mut sc = Scenario::default_mix(0.05);
        sc.pool.device = "sandook12,consumer".into();
        sc.pool.disks = 13;
        sc.width = 5;
        sc.pool.capacity_bytes = Some(4 << 30);
        sc.volume_bytes = Some(256 << 20);
        let mut swapped = sc.clone();
        swapped.pool.device = "consumer,sandook12".into();
        assert_ne!(key(&sc), key(&swapped));
        let cache = FleetCache::new([&sc, &sc, &swapped]);
        let own = Sim::new(&sc).unwrap().run().unwrap().to_json();
        let copy = cache.take(&sc).unwrap().expect("shared by two runs");
        assert_eq!(copy[12].name(), "consumer");
        let shared = Sim::with_fleet(&sc, copy).unwrap().run().unwrap().to_json();
        assert_eq!(own, shared);
        assert!(cache.take(&swapped).unwrap().is_none());
    }
}
