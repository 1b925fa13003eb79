//! A small deterministic driver for model-based tests: in-memory members with random
//! latencies, injected latency spikes and member failures, in virtual time.

#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::fusion::FusionConfig;
use fusionraid_core::{Data, DevError, DevOp, Engine, IoId, IoResult, Nanos, Op, Reply, Request};

pub mod fusion_pool;
pub mod seeds;

/// One device command as the driver saw it (for tests that check what the engine issued).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpRecord {
    pub disk: usize,
    pub write: bool,
    pub read: bool,
    pub background: bool,
    pub offset: u64,
    pub len: u64,
}

/// A write a member acknowledged (or still holds) but has not made durable: with a volatile
/// cache it is lost, kept or torn at a power cut.
struct CachedWrite {
    io: IoId,
    offset: u64,
    data: Vec<u8>,
    fua: bool,
    completed: bool,
}

pub struct MemDisk {
    pub bytes: Vec<u8>,
    /// Volatile-cache mode: what survives a power cut, and the writes not in it yet.
    durable: Option<Vec<u8>>,
    cache: Vec<CachedWrite>,
    /// Flushes in flight: the cache entries (by I/O id) each one makes durable.
    flushes: Vec<(IoId, Vec<IoId>)>,
    pub failed: bool,
    /// Latency multiplier while `now < spike_until`.
    pub spike_until: Nanos,
    pub spike_factor: u64,
}

enum Ev {
    Complete(IoId, IoResult),
    Timeout,
}

pub struct Driver {
    pub engine: Engine,
    pub disks: Vec<MemDisk>,
    pub rng: Rng,
    pub now: Nanos,
    seq: u64,
    events: BinaryHeap<Reverse<(Nanos, u64)>>,
    payload: BTreeMap<u64, Ev>,
    timeout_at: Option<Nanos>,
    pub replies: Vec<Reply>,
    pub base_latency_ns: Nanos,
    last_timeout_at: Nanos,
    same_instant_timeouts: u32,
    /// Every device command issued, in order.
    pub log: Vec<OpRecord>,
    /// Size-only mode: reads return `Data::Size`, writes carry no bytes and change nothing.
    pub size_only: bool,
    /// Discards in flight (I/O id -> member, offset, length): applied when they complete.
    trims: BTreeMap<u64, (usize, u64, u64)>,
    /// Overwrite a discarded range with [`TRIMMED`] when the discard completes (else the
    /// range keeps its bytes). FusionRAID's tests set it: its format relies on nothing a
    /// trimmed range reads back as. The in-place baselines, like md, read a trimmed stripe
    /// back for its parity and need a member that returns what it held or zeroes.
    pub poison_trims: bool,
    /// Bytes discarded so far.
    pub bytes_trimmed: u64,
    /// Engine timers that fired so far (wake-ups with no I/O completing).
    pub timeouts: u64,
}

/// What a discarded range reads as: neither zeros nor anything a write put there, so a read
/// of data the engine still needed fails its checksum or the model's comparison.
pub const TRIMMED: u8 = 0x7B;

impl Driver {
    pub fn new(engine: Engine, disks: usize, disk_bytes: u64, seed: u64) -> Self {
        Driver {
            engine,
            disks: (0..disks)
                .map(|_| MemDisk {
                    bytes: vec![0xEE; disk_bytes as usize],
                    durable: None,
                    cache: Vec::new(),
                    flushes: Vec::new(),
                    failed: false,
                    spike_until: 0,
                    spike_factor: 1,
                })
                .collect(),
            rng: Rng::new(seed ^ 0xD15C),
            now: 0,
            seq: 0,
            events: BinaryHeap::new(),
            payload: BTreeMap::new(),
            timeout_at: None,
            replies: Vec::new(),
            base_latency_ns: 100_000,
            last_timeout_at: u64::MAX,
            same_instant_timeouts: 0,
            log: Vec::new(),
            size_only: false,
            trims: BTreeMap::new(),
            poison_trims: false,
            bytes_trimmed: 0,
            timeouts: 0,
        }
    }

    /// Give every member a volatile write cache: completed writes survive a power cut only
    /// once a flush issued after their completion finishes, or a FUA write completes after them.
    pub fn enable_volatile_caches(&mut self) {
        for d in &mut self.disks {
            d.durable = Some(d.bytes.clone());
        }
    }

    /// Cut the power: each member keeps its durable bytes plus, for every cached write, at
    /// random nothing, all of it, or a random subset of its 4 KiB pages (a torn write).
    /// Returns the members' contents as they would be found on restart.
    /// A blank device takes the slot of member `i`: every byte `fill`, nothing cached.
    pub fn blank_disk(&mut self, i: usize, fill: u8) {
        let d = &mut self.disks[i];
        d.bytes.fill(fill);
        if let Some(img) = d.durable.as_mut() {
            img.fill(fill);
        }
        d.cache.clear();
        d.flushes.clear();
        d.failed = false;
    }

    pub fn power_cut(&mut self, rng: &mut Rng) -> Vec<Vec<u8>> {
        self.disks
            .iter_mut()
            .map(|d| {
                let mut img = d.durable.take().expect("volatile caches enabled");
                for w in d.cache.drain(..) {
                    let o = w.offset as usize;
                    match rng.below(3) {
                        0 => {}
                        1 => img[o..o + w.data.len()].copy_from_slice(&w.data),
                        _ => {
                            for (i, page) in w.data.chunks(4096).enumerate() {
                                if rng.below(2) == 0 {
                                    let p = o + i * 4096;
                                    img[p..p + page.len()].copy_from_slice(page);
                                }
                            }
                        }
                    }
                }
                img
            })
            .collect()
    }

    /// Volatile-cache bookkeeping at a completion.
    fn cache_complete(&mut self, id: IoId, ok: bool) {
        for d in &mut self.disks {
            let Some(durable) = d.durable.as_mut() else {
                return;
            };
            if let Some(i) = d.cache.iter().position(|w| w.io == id) {
                if !ok {
                    d.cache.remove(i);
                    return;
                }
                d.cache[i].completed = true;
                if d.cache[i].fua {
                    // FUA: this write and every completed write issued before it are on media.
                    let mut rest = Vec::new();
                    for (j, w) in d.cache.drain(..).enumerate() {
                        if j <= i && w.completed {
                            let o = w.offset as usize;
                            durable[o..o + w.data.len()].copy_from_slice(&w.data);
                        } else {
                            rest.push(w);
                        }
                    }
                    d.cache = rest;
                }
                return;
            }
            if let Some(f) = d.flushes.iter().position(|f| f.0 == id) {
                let (_, covered) = d.flushes.remove(f);
                if ok {
                    d.cache.retain(|w| {
                        if covered.contains(&w.io) {
                            let o = w.offset as usize;
                            durable[o..o + w.data.len()].copy_from_slice(&w.data);
                            false
                        } else {
                            true
                        }
                    });
                }
                return;
            }
        }
    }

    fn push(&mut self, at: Nanos, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((at, self.seq)));
        self.payload.insert(self.seq, ev);
    }

    /// Perform every device I/O the engine emitted and collect replies; schedule the timer.
    pub fn pump(&mut self) {
        while let Some(io) = self.engine.poll_device_io() {
            let (offset, read, write) = match &io.op {
                DevOp::Read { offset, .. } => (*offset, true, false),
                DevOp::Write { offset, .. } => (*offset, false, true),
                DevOp::Trim { offset, .. } => (*offset, false, false),
                DevOp::Flush => (0, false, false),
            };
            self.log.push(OpRecord {
                disk: io.disk.index(),
                write,
                read,
                background: io.background,
                offset,
                len: io.op.len(),
            });
            let d = &mut self.disks[io.disk.index()];
            let mut lat = self.base_latency_ns / 2 + self.rng.below(self.base_latency_ns);
            if self.now < d.spike_until {
                lat *= d.spike_factor;
            }
            let result: IoResult = if d.failed {
                Err(DevError("injected failure".into()))
            } else if self.size_only {
                match io.op {
                    DevOp::Read { len, .. } => Ok(Some(Data::Size(len))),
                    DevOp::Write { ref data, .. } => {
                        assert!(data.bytes().is_none(), "bytes written in size-only mode");
                        Ok(None)
                    }
                    _ => Ok(None),
                }
            } else {
                match io.op {
                    DevOp::Read { offset, len } => {
                        let (o, l) = (offset as usize, len as usize);
                        assert!(o + l <= d.bytes.len(), "read past the end of a member");
                        Ok(Some(Data::Bytes(d.bytes[o..o + l].to_vec())))
                    }
                    DevOp::Write { offset, data, fua } => {
                        let b = data.bytes().expect("data mode");
                        if d.durable.is_some() {
                            d.cache.push(CachedWrite {
                                io: io.id,
                                offset,
                                data: b.to_vec(),
                                fua,
                                completed: false,
                            });
                        }
                        let o = offset as usize;
                        assert!(
                            o + b.len() <= d.bytes.len(),
                            "write past the end of a member"
                        );
                        // Applied at issue: a read issued later sees it, like a device whose
                        // queue completes in order of arrival for overlapping ranges.
                        d.bytes[o..o + b.len()].copy_from_slice(b);
                        Ok(None)
                    }
                    DevOp::Flush => {
                        if d.durable.is_some() {
                            let covered = d.cache.iter().filter(|w| w.completed).map(|w| w.io);
                            let covered = covered.collect();
                            d.flushes.push((io.id, covered));
                        }
                        Ok(None)
                    }
                    DevOp::Trim { offset, len } => {
                        // Applied at completion, and to the durable image too: a discard
                        // reordered after a later write to the range, or one that lands
                        // before the range is durably free, destroys data this model checks.
                        let (o, l) = (offset as usize, len as usize);
                        assert!(o + l <= d.bytes.len(), "trim past the end of a member");
                        self.trims.insert(io.id.0, (io.disk.index(), offset, len));
                        Ok(None)
                    }
                }
            };
            let at = self.now + lat;
            self.push(at, Ev::Complete(io.id, result));
        }
        while let Some(r) = self.engine.poll_reply() {
            self.replies.push(r);
        }
        if let Some(t) = self.engine.poll_timeout()
            && self.timeout_at != Some(t)
        {
            self.timeout_at = Some(t);
            self.push(t.max(self.now), Ev::Timeout);
        }
    }

    pub fn submit(&mut self, req: Request) -> bool {
        let ok = self.engine.submit(req, self.now).is_ok();
        self.pump();
        ok
    }

    /// Process events up to `until` (or until none remain when `until` is None).
    pub fn run_until(&mut self, until: Option<Nanos>) {
        while let Some(&Reverse((t, seq))) = self.events.peek() {
            if until.is_some_and(|u| t > u) {
                break;
            }
            self.events.pop();
            self.now = self.now.max(t);
            match self.payload.remove(&seq).expect("event payload") {
                Ev::Complete(id, r) => {
                    if let Some((disk, o, l)) = self.trims.remove(&id.0) {
                        let d = &mut self.disks[disk];
                        let (o, l) = (o as usize, l as usize);
                        if self.poison_trims {
                            d.bytes[o..o + l].fill(TRIMMED);
                            if let Some(img) = d.durable.as_mut() {
                                img[o..o + l].fill(TRIMMED);
                            }
                        }
                        self.bytes_trimmed += l as u64;
                    }
                    self.cache_complete(id, r.is_ok());
                    self.engine
                        .handle_completion(id, r, self.now)
                        .expect("known I/O");
                }
                Ev::Timeout => {
                    self.timeouts += 1;
                    if self.timeout_at == Some(t) {
                        self.timeout_at = None;
                    }
                    // A timer that keeps firing at one instant is an engine bug (a busy loop).
                    if t == self.last_timeout_at {
                        self.same_instant_timeouts += 1;
                        assert!(
                            self.same_instant_timeouts < 10_000,
                            "engine timer re-armed at the same instant {t} forever"
                        );
                    } else {
                        self.last_timeout_at = t;
                        self.same_instant_timeouts = 0;
                    }
                    self.engine.handle_timeout(self.now);
                }
            }
            self.pump();
        }
        if let Some(u) = until {
            self.now = self.now.max(u);
        }
    }

    /// Run until the engine has nothing in flight (background work may keep timers alive, so
    /// bound by virtual time).
    pub fn drain(&mut self) {
        let limit = self.now + 60_000_000_000;
        while self.engine.inflight_requests() > 0 || self.engine.inflight_ios() > 0 {
            assert!(
                self.now < limit,
                "engine did not drain within 60 s of virtual time ({} requests, {} I/Os): {}",
                self.engine.inflight_requests(),
                self.engine.inflight_ios(),
                self.engine.scheme().debug_state()
            );
            let before = self.events.len();
            if before == 0 {
                panic!(
                    "requests in flight but no events pending: the engine is stuck ({} requests, {} I/Os, scrub {:?})",
                    self.engine.inflight_requests(),
                    self.engine.inflight_ios(),
                    self.engine.volume_status(0).and_then(|s| s.scrub)
                );
            }
            let next = self.events.peek().map(|r| r.0.0).expect("event");
            self.run_until(Some(next));
        }
    }

    /// Submit a write of `data` at `offset` of volume 0 (not FUA) without waiting for it;
    /// false if the engine refused it.
    pub fn submit_write(&mut self, id: u64, offset: u64, data: Vec<u8>) -> bool {
        self.submit(Request {
            id,
            volume: 0,
            op: Op::Write {
                offset,
                data: Data::Bytes(data),
                fua: false,
            },
        })
    }

    /// Write `data` at `offset` of volume 0, wait for it, and check it succeeded.
    pub fn write_ok(&mut self, id: u64, offset: u64, data: Vec<u8>) {
        assert!(self.submit_write(id, offset, data));
        self.drain();
        let r = self.take_replies();
        assert!(r.iter().all(|r| r.result.is_ok()), "write failed: {r:?}");
    }

    /// Read `len` bytes at `offset` of volume 0 and wait for the answer.
    pub fn read_now(&mut self, id: u64, offset: u64, len: u64) -> Result<Vec<u8>, String> {
        assert!(self.submit(Request {
            id,
            volume: 0,
            op: Op::Read { offset, len },
        }));
        self.drain();
        let r = self.take_replies().pop().expect("reply");
        r.result
            .map(|b| b.expect("data").into_bytes().expect("bytes"))
            .map_err(|e| e.to_string())
    }

    /// Run until the engine is idle, background work (conversion, repair, scrub) included.
    pub fn settle(&mut self) {
        let limit = self.now + 600_000_000_000;
        loop {
            self.drain();
            if self.engine.is_idle() {
                return;
            }
            assert!(self.now < limit, "background work never finished");
            let t = self.now + 1_000_000;
            self.run_until(Some(t));
        }
    }

    /// When the next event (a completion or the engine's timer) happens, if any.
    pub fn next_event_at(&self) -> Option<Nanos> {
        self.events.peek().map(|r| r.0.0)
    }

    pub fn pending_events(&self) -> String {
        format!(
            "{} at {:?} (now {})",
            self.events.len(),
            self.events.iter().map(|r| r.0.0).collect::<Vec<_>>(),
            self.now
        )
    }

    pub fn replies_ready(&self) -> usize {
        self.replies.len()
    }

    pub fn take_replies(&mut self) -> Vec<Reply> {
        std::mem::take(&mut self.replies)
    }
}

/// The seeds a randomized test runs: `one` (e.g. FUSIONRAID_SEED) replays a single seed,
/// otherwise `many` (e.g. FUSIONRAID_SEEDS) sets how many, from 0, with `default` when unset.
/// A spike detector sized to this driver's members (base latency 100 us): 100 us slots,
/// a 1 ms window, so the injected spikes of a short virtual run are seen and left behind.
pub fn driver_detector() -> fusionraid_core::detector::DetectorConfig {
    fusionraid_core::detector::DetectorConfig {
        slot_ns: 100_000,
        window_slots: 10,
        x_high: 2,
        x_low: 0,
    }
}

pub fn seeds(one: &str, many: &str, default: u64) -> Vec<u64> {
    if let Ok(s) = std::env::var(one) {
        return vec![
            s.parse()
                .unwrap_or_else(|_| panic!("{one} must be a number")),
        ];
    }
    let n: u64 = std::env::var(many)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    (0..n).collect()
}

/// Conversion on, started only by the idle trigger (30 ms without foreground writes) and
/// never paused by foreground traffic: tests decide when a pair set converts.
pub fn convert_when_idle(c: &mut FusionConfig) {
    c.conversion.enabled = true;
    c.conversion.idle_ns = Some(30_000_000);
    c.conversion.replicated_high_water = 100.0; // only the idle trigger
    c.conversion.pause_fg_bytes_per_sec = 1e15;
}

/// Steering pushed hard for a model or crash test: every mechanism on or off, curves for no
/// member, half or all, recomputation and write-set rotation every few hundred microseconds
/// (the runs are short) and a congestion limit low enough to trigger. From its own generator
/// (salted `seed`), so adding it leaves a test's other random choices as they were.
pub fn steering(
    seed: u64,
    disks: usize,
) -> (
    fusionraid_core::steer::SteerConfig,
    Vec<Option<fusionraid_core::steer::DeviceCurves>>,
) {
    let mut r = fusionraid_core::rng::Rng::new(seed ^ 0x5a4d_d00c);
    let mut s = fusionraid_core::steer::SteerConfig {
        profile_weights: r.below(3) != 0,
        segregation: r.below(3) != 0,
        congestion: r.below(2) == 0,
        recompute_ns: 50_000 + r.below(500_000),
        rotate_ns: 100_000 + r.below(2_000_000),
        ..Default::default()
    };
    s.aimd.limit_ns = [200_000, 2_500_000][r.below(2) as usize];
    s.aimd.period_ns = 100_000 + r.below(1_000_000);
    let profiled = [0, disks / 2, disks][r.below(3) as usize];
    let curves = (0..profiled)
        .map(|i| Some(made_up_curves(i, 20_000.0 * (1 + r.below(8)) as f64)))
        .collect();
    (s, curves)
}

/// Made-up curves for member `i`: latency rising from 80 us to 1.5 ms at `peak`, half the
/// peak under writes.
pub fn made_up_curves(i: usize, peak: f64) -> fusionraid_core::steer::DeviceCurves {
    use fusionraid_core::steer::{CurvePoint, DeviceCurves, LoadCurve};
    let curve = |write_permille: u32, peak: f64| LoadCurve {
        write_permille,
        points: (1..=8)
            .map(|k| {
                let us = 80.0 + 1400.0 * (k as f64 / 8.0).powi(2);
                CurvePoint {
                    iops: peak * k as f64 / 8.0,
                    p50_us: us * 0.6,
                    p90_us: us,
                    p99_us: us * 1.8,
                }
            })
            .collect(),
    };
    DeviceCurves::new(
        format!("m{i}"),
        vec![curve(0, peak), curve(1000, peak / 2.0)],
    )
    .unwrap()
}

/// Proactive discard on half of the seeds, with a batch size and pace of their own
/// generator (the rest of a scenario stays as it was).
pub fn trim_policy(seed: u64) -> fusionraid_core::scheme::fusion::TrimPolicy {
    use fusionraid_core::scheme::fusion::TrimPolicy;
    let mut r = Rng::new(seed ^ 0x7121_D15C);
    if r.below(2) == 0 {
        return TrimPolicy::off();
    }
    TrimPolicy {
        enabled: true,
        batch_stripes: [1usize, 4, 32][r.below(3) as usize],
        interval_ns: [50_000u64, 500_000, 5_000_000][r.below(3) as usize],
    }
}

/// Wear-aware placement on a quarter of the seeds (its own generator, so the rest of a
/// scenario stays as it was): the ladder's gap and each member's wear, spread so that some
/// members are held back and some are not.
pub fn wear_ladder(seed: u64, disks: usize) -> Option<(f64, Vec<f64>)> {
    let mut r = Rng::new(seed ^ 0x3EA7_1ADD);
    if r.below(4) != 0 {
        return None;
    }
    let gap = [0.01, 0.05, 0.2][r.below(3) as usize];
    let wear = (0..disks).map(|_| r.below(300) as f64 / 1000.0).collect();
    Some((gap, wear))
}
