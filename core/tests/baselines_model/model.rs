//! One data-mode run of a scenario: requests issued at random up to a queue depth, time
//! passing in random steps, latency spikes and member failures injected, every reply checked
//! against the oracle (`verify`); then every volume read back whole. The requests themselves
//! are made in `requests`.

use std::collections::HashMap;

use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::baselines;
use fusionraid_core::{DiskId, Engine, EngineConfig, PAGE_SIZE, Reply};

use crate::common::Driver;
use crate::oracle::{Oracle, Pending, Submitted};
use crate::scenario::{Scenario, scheme_salt};

fn build(sc: &Scenario) -> Driver {
    let scheme = baselines::build(sc.scheme, &sc.cfg).unwrap_or_else(|e| panic!("{sc:?}: {e}"));
    let mut ecfg = EngineConfig::new(sc.cfg.disks);
    ecfg.seed = sc.seed;
    ecfg.detector = crate::common::driver_detector();
    let engine = Engine::new(ecfg, scheme, 0);
    let mut d = Driver::new(engine, sc.cfg.disks, sc.cfg.disk_bytes, sc.seed);
    // Parity arrays assume consistent parity from the start: members are erased (read as
    // zeros, whose parity is zero), as for md created with --assume-clean on erased SSDs.
    for m in &mut d.disks {
        m.bytes.fill(0);
    }
    d
}

/// One data-mode run: the driver, the oracle, and the requests in flight.
pub struct Model<'a> {
    pub sc: &'a Scenario,
    pub d: Driver,
    pub r: Rng,
    pub oracle: Oracle,
    pub pending: HashMap<u64, Pending>,
    pub next_id: u64,
    pub history: Vec<Submitted>,
    pub failed: usize,
    pub issued: usize,
}

pub fn run(sc: &Scenario) {
    let mut m = Model::new(sc);
    while m.issued < sc.ops || !m.pending.is_empty() {
        m.step();
    }
    m.d.drain();
    m.d.engine.scheme().check_invariants();
    m.read_back();
    m.d.engine.scheme().check_invariants();
    assert!(m.d.engine.is_idle() || m.d.engine.inflight_requests() == 0);
    if std::env::var("FUSIONRAID_VERBOSE").is_ok() {
        m.report();
    }
}

impl<'a> Model<'a> {
    fn new(sc: &'a Scenario) -> Self {
        let sizes = &sc.cfg.volumes;
        Model {
            sc,
            d: build(sc),
            // A never-written page is unspecified for the oracle.
            oracle: Oracle {
                data: sizes.iter().map(|&s| vec![0u8; s as usize]).collect(),
                unknown: sizes
                    .iter()
                    .map(|&s| vec![true; (s / PAGE_SIZE) as usize])
                    .collect(),
            },
            r: Rng::new(sc.seed ^ 0xA11CE ^ scheme_salt(sc.scheme)),
            pending: HashMap::new(),
            next_id: 1,
            history: Vec::new(),
            failed: 0,
            issued: 0,
        }
    }

    /// Time passes, replies are checked, maybe a spike or a failure, maybe a new request.
    fn step(&mut self) {
        let sc = self.sc;
        if self.d.now >= 120_000_000_000 {
            eprintln!("stats: {:?}", self.d.engine.stats());
            eprintln!("{}", self.d.engine.scheme().debug_state());
        }
        assert!(
            self.d.now < 120_000_000_000,
            "no progress: {} requests still pending after 120 s of virtual time",
            self.pending.len()
        );
        let until = self.d.now + self.r.below(150_000);
        self.d.run_until(Some(until));
        for rep in self.d.take_replies() {
            self.on_reply(rep);
        }
        self.maybe_spike();
        self.maybe_fail();
        if self.issued < sc.ops && self.pending.len() < sc.queue_depth {
            self.issue();
        }
        if self.issued >= sc.ops
            && !self.pending.is_empty()
            && self.d.engine.inflight_requests() > 0
        {
            let next = self.d.now + 1_000_000;
            self.d.run_until(Some(next));
        }
    }

    fn on_reply(&mut self, rep: Reply) {
        let p = self
            .pending
            .remove(&rep.id)
            .expect("reply for an unknown request");
        let res = rep.result.unwrap_or_else(|e| {
            panic!(
                "request {} failed: {e}\n{}",
                rep.id,
                self.d.engine.scheme().debug_state()
            )
        });
        match p {
            Pending::Read(pr) => {
                let got = res.expect("read data").into_bytes().expect("bytes");
                self.check_read(&pr, &got);
            }
            Pending::Write(w) => {
                self.oracle.apply(&w);
                if let Some(h) = self.history.iter_mut().find(|h| h.id == rep.id) {
                    h.acked = Some(self.d.now);
                }
            }
            Pending::Flush => {}
        }
    }

    fn maybe_spike(&mut self) {
        if self.sc.spikes && self.r.below(40) == 0 {
            let disk = self.r.below(self.sc.cfg.disks as u64) as usize;
            self.d.disks[disk].spike_until = self.d.now + 1_000_000 + self.r.below(5_000_000);
            self.d.disks[disk].spike_factor = 30 + self.r.below(70);
        }
    }

    fn maybe_fail(&mut self) {
        let sc = self.sc;
        if self.failed >= sc.failures || self.issued <= 20 || self.r.below(60) != 0 {
            return;
        }
        // One member per group at most (RAIDM, and RAID5 groups, tolerate one each; RAID6
        // two): pick among disks whose group has no failure yet, so the total stays within
        // every group's tolerance.
        let w = sc.cfg.group_width;
        let groups = sc.cfg.group_count();
        let disk = self.r.below(sc.cfg.disks as u64) as usize;
        let grp = disk / w;
        let grp_failed = (0..sc.cfg.disks)
            .filter(|&x| x / w == grp && self.d.disks[x].failed)
            .count();
        let limit = if matches!(sc.scheme, "4-raidm" | "sandook") {
            1
        } else {
            sc.cfg.nparity
        };
        if !self.d.disks[disk].failed && (grp >= groups || grp_failed < limit) {
            self.d.disks[disk].failed = true;
            self.failed += 1;
            if self.r.below(2) == 0 {
                self.d.engine.fail_disk(DiskId(disk as u32), self.d.now);
            }
        }
    }

    fn report(&self) {
        let st = self.d.engine.stats();
        eprintln!(
            "{} seed {}: failures {} redirected {} rebuilt {} full stripes {} bg written {} | {}",
            self.sc.scheme,
            self.sc.seed,
            self.failed,
            st.redirected_reads,
            st.reconstructed_reads,
            st.full_stripe_writes,
            st.device_bytes_written_bg,
            self.d.engine.scheme().debug_state()
        );
    }
}
