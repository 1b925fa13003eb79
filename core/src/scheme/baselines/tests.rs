//! Unit tests of the baselines, on a small in-memory driver: md's RMW/RCW choice, parity
//! consistency, batching, read redirection (ToleRAID, sit-out), NV-RAID latency and
//! back-pressure, LogRAID cleaning, RAIDM mirroring.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use super::geom::ArrayGeom;
use super::*;
use crate::engine::api::{Data, DevOp, IoId, IoResult, Op, Reply, Request};
use crate::engine::{Engine, EngineConfig};
use crate::parity;
use crate::types::{DiskId, Nanos, PAGE_SIZE};

const PS: usize = PAGE_SIZE as usize;

struct Mini {
    e: Engine,
    mem: Vec<Vec<u8>>,
    lat: Vec<Nanos>,
    now: Nanos,
    q: BinaryHeap<Reverse<(Nanos, u64)>>,
    ev: BTreeMap<u64, (IoId, IoResult)>,
    seq: u64,
    next_id: u64,
    /// Replies with the time they left.
    replies: Vec<(Reply, Nanos)>,
}

impl Mini {
    fn new(name: &str, mut cfg: BaselineConfig) -> Self {
        let rows = rows_needed(name, &cfg).unwrap();
        cfg.disk_bytes = cfg.data_offset + rows * cfg.block_size;
        let scheme = build(name, &cfg).unwrap();
        let mut ec = EngineConfig::new(cfg.disks);
        ec.detector = crate::detector::DetectorConfig {
            slot_ns: 100_000,
            window_slots: 10,
            x_high: 2,
            x_low: 0,
        };
        Mini {
            e: Engine::new(ec, scheme, 0),
            mem: vec![vec![0u8; cfg.disk_bytes as usize]; cfg.disks],
            lat: vec![50_000; cfg.disks],
            now: 0,
            q: BinaryHeap::new(),
            ev: BTreeMap::new(),
            seq: 0,
            next_id: 1,
            replies: Vec::new(),
        }
    }

    fn pump(&mut self) {
        while let Some(io) = self.e.poll_device_io() {
            let m = &mut self.mem[io.disk.index()];
            let r: IoResult = match io.op {
                DevOp::Read { offset, len } => Ok(Some(Data::Bytes(
                    m[offset as usize..(offset + len) as usize].to_vec(),
                ))),
                DevOp::Write { offset, data, .. } => {
                    if let Some(b) = data.bytes() {
                        m[offset as usize..offset as usize + b.len()].copy_from_slice(b);
                    }
                    Ok(None)
                }
                _ => Ok(None),
            };
            self.seq += 1;
            let t = self.now + self.lat[io.disk.index()];
            self.q.push(Reverse((t, self.seq)));
            self.ev.insert(self.seq, (io.id, r));
        }
        while let Some(r) = self.e.poll_reply() {
            self.replies.push((r, self.now));
        }
    }

    fn submit(&mut self, vol: u32, op: Op) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.e
            .submit(
                Request {
                    id,
                    volume: vol,
                    op,
                },
                self.now,
            )
            .unwrap();
        self.pump();
        id
    }

    /// Process events up to `until`, or until nothing is in flight.
    fn run(&mut self, until: Option<Nanos>) {
        for step in 0..5_000_000u64 {
            assert!(
                step < 4_999_999,
                "no progress: {}",
                self.e.scheme().debug_state()
            );
            let ev = self.q.peek().map(|r| r.0.0);
            let to = self.e.poll_timeout();
            let next = match (ev, to) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(x) => x,
                    None => break,
                },
            };
            if until.is_some_and(|u| next > u) {
                break;
            }
            if until.is_none() && self.e.inflight_requests() == 0 && self.e.inflight_ios() == 0 {
                break;
            }
            self.now = self.now.max(next);
            if ev == Some(next) {
                let Reverse((_, s)) = self.q.pop().unwrap();
                let (id, r) = self.ev.remove(&s).unwrap();
                self.e.handle_completion(id, r, self.now).unwrap();
            } else {
                self.e.handle_timeout(self.now);
            }
            self.pump();
        }
        if let Some(u) = until {
            self.now = self.now.max(u);
        }
    }

    fn reply(&mut self, id: u64) -> (Reply, Nanos) {
        let i = self
            .replies
            .iter()
            .position(|r| r.0.id == id)
            .expect("reply present");
        self.replies.remove(i)
    }

    fn read(&mut self, vol: u32, offset: u64, len: u64) -> Vec<u8> {
        let id = self.submit(vol, Op::Read { offset, len });
        self.run(None);
        self.reply(id)
            .0
            .result
            .unwrap()
            .unwrap()
            .into_bytes()
            .unwrap()
    }

    fn write(&mut self, vol: u32, offset: u64, data: Vec<u8>) {
        let id = self.submit(
            vol,
            Op::Write {
                offset,
                data: Data::Bytes(data),
                fua: false,
            },
        );
        self.run(None);
        self.reply(id).0.result.unwrap();
    }

    fn device_reads(&self) -> u64 {
        self.e.disks().iter().map(|s| s.counters.reads).sum()
    }
    fn disk_reads(&self, d: usize) -> u64 {
        self.e.disks().get(DiskId(d as u32)).counters.reads
    }
}

fn pattern(len: u64, tag: u64) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ tag.wrapping_mul(0x9E37)) as u8)
        .collect()
}

fn small(disks: usize, width: usize, bs: u64, vols: Vec<u64>) -> BaselineConfig {
    let mut c = BaselineConfig::new(disks, 0, bs, width, vols);
    c.max_request_bytes = 1 << 20;
    c
}

#[test]
fn factory_knows_every_name() {
    let cfg = BaselineConfig::paper(vec![1 << 30; 4]);
    for n in NAMES
        .iter()
        .chain(&["raid5", "raidm", "RAID50", "nv-raid", "sit-out"])
    {
        let s = build(n, &cfg).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert_eq!(s.volume_count(), 4);
        assert_eq!(s.volume_size(3), Some(1 << 30));
        assert!(s.volume_status(0).is_some());
    }
    assert!(build("raid7", &cfg).is_err());
    // 4 x 6+1 arrays over disks 0..28; disk 28 is the unused hot spare.
    let geo = cfg.geometry().unwrap();
    assert_eq!((geo.groups, geo.width, geo.dcols()), (4, 7, 6));
    assert_eq!(geo.used_disks().last(), Some(DiskId(27)));
    let mut bad = cfg.clone();
    bad.block_size = 3000;
    assert!(build("raid50", &bad).is_err());
}

/// md's rule: pre-reads for RMW = written columns + parity, for RCW = unwritten data
/// columns; fewer wins, a tie goes to RCW; full stripes read nothing.
#[test]
fn rmw_vs_rcw_follows_md() {
    let bs = 16384u64;
    let stripe = 6 * bs;
    let mut m = Mini::new("4-raid5", small(7, 7, bs, vec![8 * stripe]));
    let step = |m: &mut Mini, off: u64, len: u64| {
        let before = m.device_reads();
        m.write(0, off, pattern(len, off));
        m.device_reads() - before
    };
    // One page of one column: RMW reads 2 (old data, parity) instead of 5.
    assert_eq!(step(&mut m, 0, 4096), 2);
    // Five whole columns: RCW reads the sixth column only.
    assert_eq!(step(&mut m, stripe, 5 * bs), 1);
    // Three columns: RMW 4 vs RCW 3: RCW.
    assert_eq!(step(&mut m, 2 * stripe, 3 * bs), 3);
    // Two columns: RMW 3 vs RCW 4: RMW.
    assert_eq!(step(&mut m, 3 * stripe, 2 * bs), 3);
    // A full stripe: no reads.
    let full = m.e.stats().full_stripe_writes;
    assert_eq!(step(&mut m, 4 * stripe, stripe), 0);
    assert_eq!(m.e.stats().full_stripe_writes, full + 1);

    // 3+1: one column written is a tie (2 vs 2), which md breaks towards RCW: the two other
    // data columns are read, not the parity.
    let mut m = Mini::new("4-raid5", small(4, 4, bs, vec![3 * bs * 4]));
    let geo = ArrayGeom::new(1, 4, 1, bs, 100, 0).unwrap();
    let pdisk = geo.disk(0, 3).index();
    m.write(0, 0, pattern(4096, 1));
    assert_eq!(m.device_reads(), 2);
    assert_eq!(m.disk_reads(pdisk), 0);
}

fn check_parity(m: &Mini, geo: &ArrayGeom, stripes: u64) {
    let dcols = geo.dcols();
    for s in 0..stripes {
        for p in 0..geo.ppb {
            let col = |c: usize| {
                let (d, off) = geo.offset(s, c, p);
                m.mem[d.index()][off as usize..off as usize + PS].to_vec()
            };
            let data: Vec<Vec<u8>> = (0..dcols).map(col).collect();
            let refs: Vec<&[u8]> = data.iter().map(|v| v.as_slice()).collect();
            let mut pp = vec![0u8; PS];
            let mut qq = vec![0u8; PS];
            if geo.nparity == 1 {
                parity::gen_p(&refs, &mut pp);
            } else {
                parity::gen_pq(&refs, &mut pp, &mut qq);
                assert_eq!(col(dcols + 1), qq, "Q of stripe {s} page {p}");
            }
            assert_eq!(col(dcols), pp, "P of stripe {s} page {p}");
        }
    }
}

/// After many overlapping partial writes (RMW, RCW, merged batches), every stripe's parity on
/// the members equals parity recomputed from its data, for RAID5 and RAID6.
#[test]
fn parity_after_rmw_equals_recomputed() {
    for (np, delay) in [(1, None), (2, None), (1, Some(30_000)), (2, Some(30_000))] {
        let bs = 8192u64;
        let mut cfg = small(12, 6, bs, vec![40 * bs, 40 * bs]);
        cfg.nparity = np;
        cfg.raid5.batch_delay_ns = delay;
        let mut m = Mini::new("4-raid5", cfg);
        let mut rng = crate::rng::Rng::new(7 + np as u64);
        for round in 0..40u64 {
            for _ in 0..6 {
                let vol = rng.below(2) as u32;
                let p0 = rng.below(80);
                let n = 1 + rng.below((80 - p0).min(12));
                m.submit(
                    vol,
                    Op::Write {
                        offset: p0 * 4096,
                        data: Data::Bytes(pattern(n * 4096, round * 100 + p0)),
                        fua: false,
                    },
                );
            }
            m.run(None);
        }
        assert!(m.replies.iter().all(|r| r.0.result.is_ok()));
        let geo = ArrayGeom::new(2, 6, np, bs, 100, 0).unwrap();
        let stripes = 2 * (40 * bs).div_ceil(geo.stripe_data_bytes());
        check_parity(&m, &geo, stripes);
    }
}

/// With a batching delay, six concurrent single-chunk writes of one stripe become one full
/// stripe write with no pre-reads; without it the first one starts alone and pre-reads.
#[test]
fn batching_delay_fills_stripes() {
    let bs = 4096u64;
    for (delay, expect_reads) in [(Some(100_000), false), (None, true)] {
        let mut cfg = small(7, 7, bs, vec![6 * bs * 4]);
        cfg.raid5.batch_delay_ns = delay;
        let mut m = Mini::new("4-raid5", cfg);
        for c in 0..6 {
            m.submit(
                0,
                Op::Write {
                    offset: c * bs,
                    data: Data::Bytes(pattern(bs, c)),
                    fua: false,
                },
            );
        }
        m.run(None);
        assert_eq!(m.device_reads() > 0, expect_reads, "delay {delay:?}");
        assert_eq!(
            m.read(0, 0, 6 * bs),
            (0..6).flat_map(|c| pattern(bs, c)).collect::<Vec<_>>()
        );
    }
}

/// Writes to a degraded array keep everything readable: a write that skips the failed column
/// (rebuild mode) and one that covers it (degraded RCW), then reads rebuild the lost column.
#[test]
fn degraded_writes_stay_reconstructable() {
    for np in [1, 2] {
        let bs = 8192u64;
        let mut cfg = small(6, 6, bs, vec![30 * bs]);
        cfg.nparity = np;
        let mut m = Mini::new("4-raid5", cfg);
        let mut oracle = vec![0u8; 30 * bs as usize];
        let w = |m: &mut Mini, o: &mut Vec<u8>, off: u64, len: u64, tag: u64| {
            let d = pattern(len, tag);
            o[off as usize..(off + len) as usize].copy_from_slice(&d);
            m.write(0, off, d);
        };
        w(&mut m, &mut oracle, 0, 30 * bs, 1);
        for d in 0..np {
            m.e.fail_disk(DiskId(d as u32 * 2), m.now);
        }
        for (i, off) in [0u64, 4096, 3 * bs, 7 * bs + 4096, 12 * bs]
            .into_iter()
            .enumerate()
        {
            w(&mut m, &mut oracle, off, 3 * 4096, 10 + i as u64);
        }
        w(&mut m, &mut oracle, 20 * bs, 4 * bs, 99);
        assert_eq!(m.read(0, 0, 30 * bs), oracle);
        assert!(m.e.stats().reconstructed_reads > 0);
    }
}

/// Reads the same pattern over time against a member 100x slower than its peers.
fn slow_disk_reads(name: &str, cfg: BaselineConfig) -> (Mini, bool) {
    let size = cfg.volumes[0];
    let mut m = Mini::new(name, cfg);
    let data = pattern(size, 5);
    m.write(0, 0, data.clone());
    m.lat[1] = 5_000_000;
    let mut ids = Vec::new();
    let mut rng = crate::rng::Rng::new(3);
    for t in 0..300 {
        // Some writes keep latency samples flowing for the sit-out tracker.
        if t % 3 == 0 {
            let p = rng.below(size / 4096);
            m.submit(
                0,
                Op::Write {
                    offset: p * 4096,
                    data: Data::Bytes(
                        data[(p * 4096) as usize..(p * 4096 + 4096) as usize].to_vec(),
                    ),
                    fua: false,
                },
            );
        }
        let p = rng.below(size / 4096);
        ids.push((
            p,
            m.submit(
                0,
                Op::Read {
                    offset: p * 4096,
                    len: 4096,
                },
            ),
        ));
        let until = m.now + 100_000;
        m.run(Some(until));
    }
    m.run(None);
    let mut ok = true;
    for (p, id) in ids {
        let got = m.reply(id).0.result.unwrap().unwrap().into_bytes().unwrap();
        ok &= got == data[(p * 4096) as usize..(p * 4096 + 4096) as usize];
    }
    (m, ok)
}

#[test]
fn toleraid_rebuilds_reads_away_from_a_busy_disk() {
    let cfg = small(5, 5, 4096, vec![4 * 4096 * 16]);
    let (m, ok) = slow_disk_reads("toleraid", cfg.clone());
    assert!(ok, "rebuilt reads return the data");
    let st = m.e.stats();
    assert!(st.redirected_reads > 20, "{st:?}");
    assert!(st.reconstructed_reads >= st.redirected_reads);
    // Plain 4-RAID5 waits for the slow disk instead.
    let (m, ok) = slow_disk_reads("4-raid5", cfg);
    assert!(ok);
    assert_eq!(m.e.stats().redirected_reads, 0);
    assert_eq!(m.e.stats().reconstructed_reads, 0);
}

#[test]
fn sitout_rebuilds_reads_of_a_latency_outlier() {
    let mut cfg = small(5, 5, 4096, vec![4 * 4096 * 16]);
    cfg.sitout.check_interval_ns = 1_000_000;
    cfg.sitout.min_samples = 4;
    cfg.sitout.sit_out_ns = 1_000_000_000;
    let (m, ok) = slow_disk_reads("sitout", cfg);
    assert!(ok, "rebuilt reads return the data");
    let st = m.e.stats();
    assert!(st.redirected_reads > 20, "{st:?}");
    assert_eq!(st.reconstructed_reads, st.redirected_reads);
}

#[test]
fn sitout_tracker_flags_only_outliers() {
    let geo = ArrayGeom::new(1, 5, 1, 4096, 10, 0).unwrap();
    let mut so = array::SitOutTracker::new(
        SitOutConfig {
            min_samples: 2,
            check_interval_ns: 10,
            ..SitOutConfig::default()
        },
        5,
    );
    for d in 0..5u32 {
        for _ in 0..4 {
            let lat = if d == 3 {
                900_000
            } else {
                100_000 + d as u64 * 1000
            };
            so.observe(DiskId(d), lat, 0);
        }
    }
    // A bare Ctx: the check only looks at failures.
    let mut disks =
        crate::engine::disks::Disks::new(5, crate::detector::DetectorConfig::paper_dc(), 0);
    let mut ios = crate::engine::iotable::IoTable::default();
    let mut rng = crate::rng::Rng::new(1);
    let (mut oi, mut or, mut ui) = (Default::default(), Default::default(), 0usize);
    let mut stats = Default::default();
    let now = 20;
    let ctx = crate::engine::ctx::Ctx {
        now,
        rng: &mut rng,
        size_only: false,
        disks: &mut disks,
        ios: &mut ios,
        out_io: &mut oi,
        out_reply: &mut or,
        user_inflight: &mut ui,
        stats: &mut stats,
    };
    so.check(&ctx, &geo);
    assert!(so.sitting(DiskId(3), now));
    assert!(
        (0..5)
            .filter(|&d| d != 3)
            .all(|d| !so.sitting(DiskId(d), now))
    );
    assert_eq!(so.sit_outs, 1);
    assert!(
        so.next_deadline().is_none(),
        "no timer while nothing completes"
    );
}

#[test]
fn nvraid_latency_is_the_copy_cost_until_the_buffer_fills() {
    let bs = 16384u64;
    let mut cfg = small(8, 4, bs, vec![3 * bs * 64]);
    cfg.max_request_bytes = 64 << 10;
    cfg.nvraid.buffer_bytes = 128 << 10;
    cfg.nvraid.max_age_ns = None;
    cfg.nvraid.high_water = 0.9;
    let mut m = Mini::new("nvraid", cfg);
    for l in m.lat.iter_mut() {
        *l = 2_000_000;
    }
    // Room: a 4 KiB write costs 64 lines x 100 ns.
    let id = m.submit(
        0,
        Op::Write {
            offset: 0,
            data: Data::Bytes(pattern(4096, 1)),
            fua: false,
        },
    );
    m.run(Some(m.now + 1_000_000));
    let (r, at) = m.reply(id);
    assert!(r.result.is_ok());
    assert_eq!(at - r.submitted_at, 6400);
    // And a read of it hits the buffer at the read cost, without device I/O.
    let before = m.device_reads();
    let id = m.submit(
        0,
        Op::Read {
            offset: 0,
            len: 4096,
        },
    );
    m.run(Some(m.now + 1_000_000));
    let (r, at) = m.reply(id);
    assert_eq!(
        r.result.unwrap().unwrap().into_bytes().unwrap(),
        pattern(4096, 1)
    );
    assert_eq!(at - r.submitted_at, 6400);
    assert_eq!(m.device_reads(), before);
    // Flood it: 64 KiB writes of distinct stripes against 2 ms members. The first ones take
    // the copy cost (1024 lines); later ones wait for flushes to free room.
    let start = m.now;
    let mut ids = Vec::new();
    for i in 0..12u64 {
        ids.push(m.submit(
            0,
            Op::Write {
                offset: (4 + i * 4) * 3 * bs,
                data: Data::Bytes(pattern(64 << 10, i)),
                fua: false,
            },
        ));
    }
    m.run(None);
    let lats: Vec<Nanos> = ids
        .iter()
        .map(|&id| {
            let (r, at) = m.reply(id);
            assert!(r.result.is_ok());
            at - start
        })
        .collect();
    assert_eq!(lats[0], 102_400);
    assert!(lats.iter().any(|&l| l > 1_000_000), "{lats:?}");
    for i in 0..12u64 {
        assert_eq!(
            m.read(0, (4 + i * 4) * 3 * bs, 64 << 10),
            pattern(64 << 10, i)
        );
    }
}

#[test]
fn lograid_cleaning_reclaims_space() {
    let bs = 8192u64;
    let size = 3 * bs * 24;
    let mut cfg = small(8, 4, bs, vec![size]);
    cfg.lograid.spare_fraction = 0.2;
    cfg.lograid.flush_delay_ns = 10_000;
    let mut m = Mini::new("lograid", cfg);
    let mut oracle = vec![0u8; size as usize];
    let mut rng = crate::rng::Rng::new(11);
    let mut written = 0u64;
    // Write the volume over six times in random 8 KiB pieces.
    while written < 6 * size {
        for _ in 0..4 {
            let p = rng.below(size / 8192) * 8192;
            let d = pattern(8192, written + p);
            oracle[p as usize..p as usize + 8192].copy_from_slice(&d);
            m.submit(
                0,
                Op::Write {
                    offset: p,
                    data: Data::Bytes(d),
                    fua: false,
                },
            );
            written += 8192;
        }
        m.run(None);
    }
    assert!(m.replies.iter().all(|r| r.0.result.is_ok()));
    let st = m.e.volume_status(0).unwrap();
    assert!(st.free_bytes > 0);
    assert!(m.e.stats().device_bytes_written_bg > 0 || m.e.stats().device_bytes_read_bg > 0);
    assert!(
        m.e.stats().device_bytes_read_bg > 0,
        "the cleaner read live pages"
    );
    let wa = m.e.stats().write_amplification();
    assert!(
        wa < 8.0,
        "cleaning makes progress instead of churning: {wa}"
    );
    assert_eq!(
        m.read(0, 0, size.min(1 << 20)),
        oracle[..size.min(1 << 20) as usize]
    );
    m.e.scheme().check_invariants();
    // The log region is far smaller than what was written: only cleaning made that possible.
    let rows = rows_needed("lograid", &small(8, 4, bs, vec![size])).unwrap();
    assert!(rows * 2 * 3 * bs < 6 * size);
}

#[test]
fn raidm_mirrors_writes_round_robin() {
    let bs = 16384u64;
    let mut m = Mini::new("4-raidm", small(14, 7, bs, vec![64 * bs, 64 * bs]));
    for i in 0..14u64 {
        m.write(0, i * 4096 * 3, pattern(4096, i));
    }
    let writes: Vec<u64> = m.e.disks().iter().map(|s| s.counters.writes).collect();
    assert_eq!(writes.iter().sum::<u64>(), 28, "two copies per write");
    assert!(
        writes[..7].iter().all(|&w| w >= 2),
        "every disk of group 0 took writes: {writes:?}"
    );
    assert!(
        writes[7..].iter().all(|&w| w == 0),
        "volume 0 lives on group 0"
    );
    // Survives losing a disk of the group.
    m.e.fail_disk(DiskId(2), m.now);
    for i in 0..14u64 {
        assert_eq!(m.read(0, i * 4096 * 3, 4096), pattern(4096, i));
    }
}

/// Size-only speed at the paper's scale (29 x 240 GB, 4 volumes): run with
/// `cargo test -p fusionraid-core --release --lib size_only_paper_scale -- --ignored --nocapture`.
#[test]
#[ignore]
fn size_only_paper_scale() {
    let vols = vec![50u64 << 30; 4];
    for name in NAMES {
        let cfg = BaselineConfig::paper(vols.clone());
        let scheme = build(name, &cfg).unwrap();
        let mut ec = EngineConfig::new(cfg.disks);
        ec.size_only = true;
        let mut e = Engine::new(ec, scheme, 0);
        let mut rng = crate::rng::Rng::new(1);
        let mut q: BinaryHeap<Reverse<(Nanos, u64)>> = BinaryHeap::new();
        let mut ev: BTreeMap<u64, IoId> = BTreeMap::new();
        let (mut now, mut seq, mut inflight) = (0u64, 0u64, 0usize);
        let start = std::time::Instant::now();
        let n = 200_000u64;
        let mut done = 0u64;
        let mut id = 0u64;
        while done < n {
            while inflight < 64 && id < n {
                id += 1;
                let vol = rng.below(4) as u32;
                let off = rng.below((50u64 << 30) / 16384) * 16384;
                let op = if rng.below(10) < 6 {
                    Op::Write {
                        offset: off,
                        data: Data::Size(16384),
                        fua: false,
                    }
                } else {
                    Op::Read {
                        offset: off,
                        len: 16384,
                    }
                };
                e.submit(
                    Request {
                        id,
                        volume: vol,
                        op,
                    },
                    now,
                )
                .unwrap();
                inflight += 1;
            }
            while let Some(io) = e.poll_device_io() {
                seq += 1;
                q.push(Reverse((now + 50_000 + rng.below(50_000), seq)));
                ev.insert(seq, io.id);
            }
            while e.poll_reply().is_some() {
                inflight -= 1;
                done += 1;
            }
            let t = q.peek().map(|r| r.0.0);
            let to = e.poll_timeout();
            match (t, to) {
                (Some(a), b) if b.is_none_or(|b| a <= b) => {
                    let Reverse((a, s)) = q.pop().unwrap();
                    now = now.max(a);
                    let io = ev.remove(&s).unwrap();
                    e.handle_completion(io, Ok(None), now).unwrap();
                }
                (_, Some(b)) => {
                    now = now.max(b);
                    e.handle_timeout(now);
                }
                _ => {}
            }
        }
        eprintln!(
            "{name}: {n} requests in {:?} ({} device I/Os issued)",
            start.elapsed(),
            e.disks()
                .iter()
                .map(|d| d.counters.reads + d.counters.writes)
                .sum::<u64>()
        );
    }
}
