//! The members' wear, as their devices report it (`Member::wear`: an emulated SSD's model,
//! an NVMe drive's SMART page), handed to the engine for wear-aware placement
//! (`fusionraid_core::policy::WearLadder`). Wear moves by a fraction of a percent per day,
//! so once a second is plenty, and nothing is fed to a scheme that does not skew for wear.

use fusionraid_core::policy::WearLadder;
use fusionraid_core::{DiskId, Engine, Nanos};

use crate::member::Member;

/// How often the engine hears the members' wear.
const PERIOD_NS: Nanos = 1_000_000_000;

#[derive(Debug, Default)]
pub(crate) struct WearFeed {
    next: Nanos,
}

impl WearFeed {
    /// Feeds every member's wear when a period has passed (a missing member's as unknown,
    /// which keeps the ladder from holding anyone back until it is replaced).
    pub fn tick(&mut self, now: Nanos, engine: &mut Engine, members: &[Option<Box<dyn Member>>]) {
        if now < self.next || engine.scheme().wear_gap().is_none() {
            return;
        }
        self.next = now + PERIOD_NS;
        for (i, m) in members.iter().enumerate() {
            engine.set_wear(DiskId(i as u32), m.as_ref().and_then(|m| m.wear()));
        }
    }
}

/// The members wear-aware placement holds back now (bit `i` for member `i`), from the wear
/// the engine was last told; 0 when the scheme does not skew for wear.
pub(crate) fn held_back(engine: &Engine) -> u64 {
    let Some(gap) = engine.scheme().wear_gap() else {
        return 0;
    };
    let disks = engine.config().disks;
    let hdds: Vec<u32> = (0..disks as u32)
        .filter(|&d| engine.scheme().is_hdd(DiskId(d)))
        .collect();
    let ladder = WearLadder::for_pool(gap, disks, &hdds);
    let members: Vec<(usize, Option<f64>)> = engine
        .disks()
        .iter()
        .enumerate()
        .filter(|(i, d)| *i < 64 && !d.failed)
        .map(|(i, d)| (i, d.wear))
        .collect();
    ladder.held_back_of(&members)
}
