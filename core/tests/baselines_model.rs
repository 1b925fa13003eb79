//! Model-based integrity test of every baseline scheme (4-RAID5, RAID50, LogRAID, ToleRAID,
//! NV-RAID, 4-RAIDM, sit-out, Sandook), in data mode, on the shared deterministic driver: random reads,
//! writes of every size and alignment, overlapping requests, trims, write-zeroes, flushes,
//! injected latency spikes and member failures up to the scheme's tolerance, with each
//! scheme's own machinery pushed hard (tiny NV buffers, little log spare so cleaning runs,
//! batching delays, aggressive slow-disk detection so reads get rebuilt).
//!
//! The oracle follows block-device semantics: a read returns, page by page, either what the last
//! write acknowledged before the read was submitted left there, or what a write that overlapped
//! the read in time wrote; trimmed pages may read as anything. The schemes order overlapping
//! writes, so acknowledged state is applied in acknowledgement order. After the run every volume
//! is read back and compared exactly.
//!
//! Seeds: `FUSIONRAID_SEEDS=N` runs seeds 0..N per scheme (default 100), `FUSIONRAID_SEED=S`
//! replays one, `FUSIONRAID_SCHEME=name` restricts to one scheme. A failure prints the scheme,
//! the seed and the scenario.

mod common;

use std::collections::HashMap;
use std::rc::Rc;

use common::Driver;
use fusionraid_core::detector::DetectorConfig;
use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::baselines::{self, BaselineConfig};
use fusionraid_core::{Data, DiskId, Engine, EngineConfig, Op, PAGE_SIZE, Reply, Request};

const PS: usize = PAGE_SIZE as usize;

#[derive(Debug, Clone)]
struct Scenario {
    scheme: &'static str,
    seed: u64,
    cfg: BaselineConfig,
    ops: usize,
    queue_depth: usize,
    spikes: bool,
    failures: usize,
}

fn scheme_salt(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

fn scenario(scheme: &'static str, seed: u64) -> Scenario {
    let mut r = Rng::new(seed ^ scheme_salt(scheme));
    let groups = 1 + r.below(3) as usize;
    let mirrored = matches!(scheme, "4-raidm" | "sandook");
    let nparity = if !mirrored && r.below(4) == 0 { 2 } else { 1 };
    let width = nparity + 2 + r.below(3) as usize;
    let disks = groups * width + r.below(2) as usize;
    let block_size = [4096u64, 8192, 16384, 65536][r.below(4) as usize];
    let nvol = 1 + r.below(groups as u64 + 1) as usize;
    let volumes: Vec<u64> = (0..nvol).map(|_| (8 + r.below(40)) * block_size).collect();
    let mut cfg = BaselineConfig::new(disks, 0, block_size, width, volumes);
    cfg.nparity = nparity;
    cfg.data_offset = [0, 4096][r.below(2) as usize];
    cfg.max_request_bytes = 8 * block_size;
    if r.below(2) == 0 {
        cfg.raid5.batch_delay_ns = Some(20_000 + r.below(300_000));
    }
    cfg.lograid.flush_delay_ns = r.below(300_000);
    cfg.lograid.spare_fraction = [0.1, 0.3, 1.0][r.below(3) as usize];
    cfg.lograid.gc_low_water = [0.05, 0.3][r.below(2) as usize];
    cfg.lograid.max_inflight_segments = 1 + r.below(6) as usize;
    cfg.lograid.cleaners = 1 + r.below(2) as usize;
    cfg.nvraid.buffer_bytes = cfg.max_request_bytes * (1 + r.below(4));
    cfg.nvraid.max_flushes = 1 + r.below(6) as usize;
    cfg.nvraid.high_water = [0.0, 0.5, 0.9][r.below(3) as usize];
    cfg.nvraid.max_age_ns = [None, Some(200_000)][r.below(2) as usize];
    cfg.nvraid.write_ns_per_line = [0, 100][r.below(2) as usize];
    cfg.raidm.spare_fraction = [0.1, 0.3, 1.0][r.below(3) as usize];
    cfg.raidm.gc_low_water = [0.05, 0.3][r.below(2) as usize];
    cfg.raidm.heads = r.below(4) as usize;
    cfg.toleraid.queue_min = 1 + r.below(4) as u32;
    cfg.toleraid.queue_factor = [1.5, 4.0][r.below(2) as usize];
    cfg.sitout.check_interval_ns = 200_000 + r.below(1_000_000);
    cfg.sitout.sit_out_ns = 500_000 + r.below(5_000_000);
    cfg.sitout.insensitivity = [1.5, 3.0, 50.0][r.below(3) as usize];
    cfg.sitout.min_samples = 2 + r.below(6);
    let tolerance = if mirrored { 1 } else { nparity };
    steering(&mut cfg, disks, seed);
    let rows = baselines::rows_needed(scheme, &cfg).expect("rows");
    cfg.disk_bytes = cfg.data_offset + rows * block_size;
    Scenario {
        scheme,
        seed,
        cfg,
        ops: 150 + r.below(150) as usize,
        queue_depth: 1 + r.below(12) as usize,
        spikes: r.below(2) == 0,
        failures: if r.below(3) == 0 {
            1 + r.below(tolerance as u64) as usize
        } else {
            0
        },
    }
}

/// Sandook's steering pushed hard ([`common::steering`]), with its own generator so the other
/// schemes' scenarios do not change with it.
fn steering(cfg: &mut BaselineConfig, disks: usize, seed: u64) {
    let (steer, curves) = common::steering(seed, disks);
    cfg.sandook.steer = steer;
    cfg.sandook.curves = curves;
}

fn build(sc: &Scenario) -> Driver {
    let scheme = baselines::build(sc.scheme, &sc.cfg).unwrap_or_else(|e| panic!("{sc:?}: {e}"));
    let mut ecfg = EngineConfig::new(sc.cfg.disks);
    ecfg.seed = sc.seed;
    ecfg.detector = DetectorConfig {
        slot_ns: 100_000,
        window_slots: 10,
        x_high: 2,
        x_low: 0,
    };
    let engine = Engine::new(ecfg, scheme, 0);
    let mut d = Driver::new(engine, sc.cfg.disks, sc.cfg.disk_bytes, sc.seed);
    // Parity arrays assume consistent parity from the start: members are erased (read as
    // zeros, whose parity is zero), as for md created with --assume-clean on erased SSDs.
    for m in &mut d.disks {
        m.bytes.fill(0);
    }
    d
}

/// What a write-like request did to its range.
enum WKind {
    Data(Vec<u8>),
    Zeroes,
    Trim,
}

struct WriteRec {
    vol: usize,
    offset: u64,
    len: u64,
    kind: WKind,
}

impl WriteRec {
    /// Whether page `p` (volume page index) may read as `got` because of this write.
    fn allows(&self, p: u64, got: &[u8]) -> bool {
        let first = self.offset / PAGE_SIZE;
        if p < first || p >= first + self.len / PAGE_SIZE {
            return false;
        }
        match &self.kind {
            WKind::Data(d) => {
                let o = ((p - first) * PAGE_SIZE) as usize;
                &d[o..o + PS] == got
            }
            WKind::Zeroes => got.iter().all(|&b| b == 0),
            WKind::Trim => true,
        }
    }
}

struct Oracle {
    data: Vec<Vec<u8>>,
    /// Pages whose content is unspecified (trimmed since last written).
    unknown: Vec<Vec<bool>>,
}

impl Oracle {
    fn apply(&mut self, w: &WriteRec) {
        let (o, l) = (w.offset as usize, w.len as usize);
        let (p0, pn) = (o / PS, l / PS);
        match &w.kind {
            WKind::Data(d) => self.data[w.vol][o..o + l].copy_from_slice(d),
            WKind::Zeroes => self.data[w.vol][o..o + l].fill(0),
            WKind::Trim => {}
        }
        let unknown = matches!(w.kind, WKind::Trim);
        self.unknown[w.vol][p0..p0 + pn].fill(unknown);
    }
}

/// A read in flight, and what each of its pages may read as: what acknowledged writes left
/// there when it was submitted (`base`, unless unspecified), or what a write overlapping it in
/// time wrote (`cands`).
struct PendingRead {
    vol: usize,
    offset: u64,
    len: u64,
    base: Vec<u8>,
    base_unknown: Vec<bool>,
    cands: Vec<Rc<WriteRec>>,
}

enum Pending {
    Read(PendingRead),
    Write(Rc<WriteRec>),
    Flush,
}

/// A write as submitted, and when it was acknowledged, to explain a mismatch.
struct Submitted {
    id: u64,
    at: u64,
    acked: Option<u64>,
    w: Rc<WriteRec>,
}

fn overlaps(a_off: u64, a_len: u64, b_off: u64, b_len: u64) -> bool {
    a_off < b_off + b_len && b_off < a_off + a_len
}

/// One data-mode run: the driver, the oracle, and the requests in flight.
struct Model<'a> {
    sc: &'a Scenario,
    d: Driver,
    r: Rng,
    oracle: Oracle,
    pending: HashMap<u64, Pending>,
    next_id: u64,
    history: Vec<Submitted>,
    failed: usize,
    issued: usize,
}

fn run(sc: &Scenario) {
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

    fn check_read(&self, pr: &PendingRead, got: &[u8]) {
        assert_eq!(got.len() as u64, pr.len);
        for (i, page) in got.chunks(PS).enumerate() {
            let vp = pr.offset / PAGE_SIZE + i as u64;
            let ok = pr.base_unknown[i]
                || page == &pr.base[i * PS..(i + 1) * PS]
                || pr.cands.iter().any(|w| w.allows(vp, page));
            if !ok {
                self.explain_mismatch(pr, i, page);
            }
        }
    }

    /// Page `i` of read `pr` came back as `page`, which no write explains: say which writes
    /// touched it, then fail.
    fn explain_mismatch(&self, pr: &PendingRead, i: usize, page: &[u8]) -> ! {
        let (d, vol) = (&self.d, pr.vol);
        let vp = pr.offset / PAGE_SIZE + i as u64;
        let base = &pr.base[i * PS..(i + 1) * PS];
        for s in &self.history {
            let w = &s.w;
            if w.vol == vol && (w.allows(vp, base) || w.allows(vp, page)) {
                eprintln!(
                    "write {} submitted {} acked {:?} range {}+{} matches {}",
                    s.id,
                    s.at,
                    s.acked,
                    w.offset,
                    w.len,
                    if w.allows(vp, page) { "got" } else { "want" }
                );
            }
        }
        eprintln!(
            "now {} failed disks {:?}",
            d.now,
            (0..self.sc.cfg.disks)
                .filter(|&x| d.disks[x].failed)
                .collect::<Vec<_>>()
        );
        let first = page.iter().zip(base).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "read of vol {vol} at {} len {}: page {i} (volume page {vp}) differs at byte {first}: got {:#x} want {:#x} ({} overlapping writes)\n{}",
            pr.offset,
            pr.len,
            page[first],
            base[first],
            pr.cands.len(),
            d.engine.scheme().debug_state()
        );
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

    /// A random range of a volume of `size` bytes: whole blocks one time in three, else pages.
    fn random_range(&mut self, size: u64) -> (u64, u64) {
        let bs = self.sc.cfg.block_size;
        let pages = size / PAGE_SIZE;
        if self.r.below(3) == 0 {
            let blocks = size / bs;
            let b0 = self.r.below(blocks);
            let nb = 1 + self.r.below((blocks - b0).min(8));
            (b0 * bs, nb * bs)
        } else {
            let p0 = self.r.below(pages);
            let n = 1 + self.r.below((pages - p0).min(3 * bs / PAGE_SIZE));
            (p0 * PAGE_SIZE, n * PAGE_SIZE)
        }
    }

    /// Submits a random request: a read, a write, a trim, a write-zeroes or a flush.
    fn issue(&mut self) {
        let vol = self.r.below(self.sc.cfg.volumes.len() as u64) as usize;
        let size = self.sc.cfg.volumes[vol];
        let kind = match self.r.below(100) {
            0..=39 => 1,
            40..=79 => 0,
            80..=85 => 2,
            86..=91 => 3,
            _ => 4,
        };
        let (offset, len) = self.random_range(size);
        let id = self.next_id;
        self.next_id += 1;
        let (op, entry) = match kind {
            0 => (Op::Read { offset, len }, self.read(vol, offset, len)),
            4 => (Op::Flush, Pending::Flush),
            _ => self.write(id, kind, vol, offset, len),
        };
        self.pending.insert(id, entry);
        assert!(
            self.d.submit(Request {
                id,
                volume: vol as u32,
                op
            }),
            "engine busy below its bound"
        );
        self.issued += 1;
    }

    /// A read of `len` bytes at `offset` of `vol`, with what it may see.
    fn read(&self, vol: usize, offset: u64, len: u64) -> Pending {
        let (o, l) = (offset as usize, len as usize);
        let cands: Vec<Rc<WriteRec>> = self
            .pending
            .values()
            .filter_map(|p| match p {
                Pending::Write(w) if w.vol == vol && overlaps(w.offset, w.len, offset, len) => {
                    Some(w.clone())
                }
                _ => None,
            })
            .collect();
        Pending::Read(PendingRead {
            vol,
            offset,
            len,
            base: self.oracle.data[vol][o..o + l].to_vec(),
            base_unknown: self.oracle.unknown[vol][o / PS..(o + l) / PS].to_vec(),
            cands,
        })
    }

    /// A write (`kind` 1), trim (2) or write-zeroes (3) `id` of `len` bytes at `offset` of
    /// `vol`; reads in flight over its range may see it too.
    fn write(&mut self, id: u64, kind: u32, vol: usize, offset: u64, len: u64) -> (Op, Pending) {
        let (op, wk) = match kind {
            1 => {
                let mut data = vec![0u8; len as usize];
                let tag = self.r.next_u64();
                for (i, chunk) in data.chunks_mut(8).enumerate() {
                    chunk.copy_from_slice(&(tag ^ i as u64).to_le_bytes());
                }
                let op = Op::Write {
                    offset,
                    data: Data::Bytes(data.clone()),
                    fua: self.r.below(4) == 0,
                };
                (op, WKind::Data(data))
            }
            2 => (Op::Trim { offset, len }, WKind::Trim),
            _ => {
                let fua = self.r.below(2) == 0;
                (Op::WriteZeroes { offset, len, fua }, WKind::Zeroes)
            }
        };
        let w = Rc::new(WriteRec {
            vol,
            offset,
            len,
            kind: wk,
        });
        for p in self.pending.values_mut() {
            if let Pending::Read(pr) = p
                && pr.vol == vol
                && overlaps(pr.offset, pr.len, offset, len)
            {
                pr.cands.push(w.clone());
            }
        }
        self.history.push(Submitted {
            id,
            at: self.d.now,
            acked: None,
            w: w.clone(),
        });
        (op, Pending::Write(w))
    }

    /// Every volume read back whole and compared with the oracle exactly.
    fn read_back(&mut self) {
        let sc = self.sc;
        for (vol, &size) in sc.cfg.volumes.iter().enumerate() {
            let chunk = sc.cfg.max_request_bytes;
            let mut off = 0;
            while off < size {
                let len = chunk.min(size - off);
                let id = self.next_id;
                self.next_id += 1;
                assert!(self.d.submit(Request {
                    id,
                    volume: vol as u32,
                    op: Op::Read { offset: off, len }
                }));
                self.d.drain();
                let rep = self.d.take_replies().pop().expect("read-back reply");
                let got = rep
                    .result
                    .unwrap_or_else(|e| panic!("read-back of vol {vol} at {off}: {e}"))
                    .expect("data")
                    .into_bytes()
                    .expect("bytes");
                for (i, page) in got.chunks(PS).enumerate() {
                    let p = (off / PAGE_SIZE) as usize + i;
                    let want = &self.oracle.data[vol][p * PS..(p + 1) * PS];
                    assert!(
                        self.oracle.unknown[vol][p] || page == want,
                        "final read-back of vol {vol} differs at page {p} (block {})",
                        p as u64 * PAGE_SIZE / sc.cfg.block_size
                    );
                }
                off += len;
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

/// Size-only mode: no bytes anywhere, but the same device I/O; every request is answered exactly
/// once with the right shape, through spikes and failures.
fn run_size_only(sc: &Scenario) {
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

fn run_scheme(scheme: &'static str) {
    if let Ok(only) = std::env::var("FUSIONRAID_SCHEME")
        && baselines::canonical(&only).ok() != Some(scheme)
    {
        return;
    }
    let seeds = common::seeds("FUSIONRAID_SEED", "FUSIONRAID_SEEDS", 100);
    for &seed in &seeds {
        let sc = scenario(scheme, seed);
        let result = std::panic::catch_unwind(|| {
            run(&sc);
            if seed % 4 == 0 {
                run_size_only(&sc);
            }
        });
        if let Err(e) = result {
            eprintln!(
                "FAILED {scheme} seed {seed}: replay with FUSIONRAID_SEED={seed} FUSIONRAID_SCHEME={scheme} cargo test -p fusionraid-core --test baselines_model\nscenario: {sc:?}"
            );
            std::panic::resume_unwind(e);
        }
    }
    eprintln!("{scheme}: {} seeds passed", seeds.len());
}

#[test]
fn raid5_model() {
    run_scheme("4-raid5");
}
#[test]
fn raid50_model() {
    run_scheme("raid50");
}
#[test]
fn lograid_model() {
    run_scheme("lograid");
}
#[test]
fn toleraid_model() {
    run_scheme("toleraid");
}
#[test]
fn nvraid_model() {
    run_scheme("nvraid");
}
#[test]
fn raidm_model() {
    run_scheme("4-raidm");
}
#[test]
fn sandook_model() {
    run_scheme("sandook");
}
#[test]
fn sitout_model() {
    run_scheme("sitout");
}
