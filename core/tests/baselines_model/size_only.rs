//! Size-only mode: the same scenario with no bytes anywhere, checking that every request is
//! answered exactly once with the right shape.

use std::collections::HashMap;

use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::baselines;
use fusionraid_core::{Data, Engine, EngineConfig, Op, PAGE_SIZE, Request};

use crate::common::Driver;
use crate::scenario::Scenario;

/// Size-only mode: no bytes anywhere, but the same device I/O; every request is answered exactly
/// once with the right shape, through spikes and failures.
pub fn run_size_only(sc: &Scenario) {
    let scheme = baselines::build(sc.scheme, &sc.cfg).unwrap_or_else(|e| panic!("{sc:?}: {e}"));
    let mut ecfg = EngineConfig::new(sc.cfg.disks);
    ecfg.seed = sc.seed;
    ecfg.size_only = true;
    let engine = Engine::new(ecfg, scheme, 0);
    let mut d = Driver::new(engine, sc.cfg.disks, 0, sc.seed);
    d.size_only = true;
    let mut r = Rng::new(sc.seed ^ 0x512E);
    let mut pending: HashMap<u64, (bool, u64)> = HashMap::new();
    let mut next_id = 1u64;
    let mut failed = false;
    let mut issued = 0;
    while issued < 2 * sc.ops || !pending.is_empty() {
        assert!(d.now < 120_000_000_000, "no progress in size-only mode");
        d.run_until(Some(d.now + r.below(100_000)));
        for rep in d.take_replies() {
            let (read, len) = pending.remove(&rep.id).expect("one reply per request");
            let res = rep.result.expect("request failed");
            if read {
                assert_eq!(res, Some(Data::Size(len)));
            }
        }
        if sc.spikes && r.below(40) == 0 {
            let disk = r.below(sc.cfg.disks as u64) as usize;
            d.disks[disk].spike_until = d.now + 1_000_000 + r.below(5_000_000);
            d.disks[disk].spike_factor = 30 + r.below(70);
        }
        if sc.failures > 0 && !failed && issued > 50 {
            failed = true;
            d.disks[0].failed = true;
        }
        if issued < 2 * sc.ops && pending.len() < sc.queue_depth {
            let vol = r.below(sc.cfg.volumes.len() as u64) as usize;
            let pages = sc.cfg.volumes[vol] / PAGE_SIZE;
            let p0 = r.below(pages);
            let len =
                (1 + r.below((pages - p0).min(sc.cfg.max_request_bytes / PAGE_SIZE))) * PAGE_SIZE;
            let offset = p0 * PAGE_SIZE;
            let (op, read) = match r.below(10) {
                0..=3 => (Op::Read { offset, len }, true),
                4..=7 => (
                    Op::Write {
                        offset,
                        data: Data::Size(len),
                        fua: r.below(4) == 0,
                    },
                    false,
                ),
                8 => (Op::Trim { offset, len }, false),
                _ => (Op::Flush, false),
            };
            let id = next_id;
            next_id += 1;
            pending.insert(id, (read, len));
            assert!(d.submit(Request {
                id,
                volume: vol as u32,
                op
            }));
            issued += 1;
        }
    }
    d.drain();
    d.engine.scheme().check_invariants();
    assert_eq!(d.engine.stats().requests, d.engine.stats().replies);
    assert!(!d.log.is_empty(), "device I/O issued in size-only mode");
}
