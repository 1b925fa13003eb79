//! Model-based integrity test of the FusionRAID scheme: random mixes of reads, writes of every
//! size and alignment, trims, zeroing, flushes, overlapping requests, several volumes, injected
//! latency spikes and member failures up to the pool's tolerance, with conversion and
//! relocation running. Every read must return the last acknowledged data (compared with a plain
//! in-memory oracle), and the metadata must stay self-consistent.
//!
//! Seeds: `FUSIONRAID_SEEDS=N` runs seeds 0..N (default 200); `FUSIONRAID_SEED=S` replays one.
//! A failure prints the seed and the scenario so it replays exactly.

#[path = "../common/mod.rs"]
mod common;
mod scenario;

use common::Driver;
use common::seeds::{gathers, hedges_writes, rows};
use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::fusion::{FusionConfig, FusionScheme, PoolGeometry, VolumeConfig};
use fusionraid_core::{Data, DiskId, Engine, EngineConfig, Op, PAGE_SIZE, Request};
use scenario::{Scenario, scenario};

/// What the seeds made the engine do, summed to check every mechanism was reached.
#[derive(Default)]
struct Reached {
    rebuilt: u64,
    in_place: u64,
    offloaded: u64,
    log_reads: u64,
    hedged: u64,
    raid_hedged: u64,
    gathered: u64,
    rows: u64,
}

fn build(sc: &Scenario) -> (Driver, Vec<u64>) {
    let vols: Vec<VolumeConfig> = sc
        .volumes
        .iter()
        .enumerate()
        .map(|(i, &(level, width, blocks))| {
            let mut v = VolumeConfig::new(&format!("v{i}"), level, width, blocks * sc.block_size);
            v.replicated_fraction = sc.replicated_fraction;
            v.spare_fraction = 0.15;
            v
        })
        .collect();
    let sizes: Vec<u64> = vols.iter().map(|v| v.size_bytes).collect();
    let members = sc.disks + sc.hdds;
    let pool = PoolGeometry {
        disks: members,
        disk_bytes: u64::MAX / 4,
        block_size: sc.block_size,
        data_offset: 4096,
        layout: sc.layout,
        hdds: (sc.disks..members).map(|d| d as u32).collect(),
    };
    let mut cfg = FusionConfig::new(pool, vols);
    cfg.redirect = sc.redirect;
    cfg.hedge_ns = sc.hedge.then_some(400_000);
    cfg.raid_hedge_ns = sc.hedge.then_some(400_000);
    // Hedged writes on a quarter of the seeds (by seed: the rest of the scenario stays).
    cfg.write_hedge_ns = hedges_writes(sc.seed).then_some(200_000);
    cfg.gather_ns = gathers(sc.seed).then_some(150_000);
    // Requests arrive about 75 us apart here, a size of write several times that: rows
    // of up to 8 of one size are begun only when they fill within half the hold.
    cfg.row_ns = rows(sc.seed).then_some(8_000_000);
    // Sandook's policies on a third of the seeds (their own generator: the rest of the
    // scenario stays as it was).
    if sc.seed % 3 == 1 {
        let (steer, curves) = common::steering(sc.seed, members);
        cfg.steer = Some(steer);
        cfg.curves = curves;
    }
    cfg.trim = common::trim_policy(sc.seed);
    let wear = common::wear_ladder(sc.seed, sc.disks);
    cfg.wear_gap = wear.as_ref().map(|w| w.0);
    if sc.hdds > 0 {
        // A low queue threshold so small runs offload; the logs are only the members'
        // two spare blocks, so they fill and wrap.
        cfg.offload = Some(fusionraid_core::scheme::fusion::OffloadConfig {
            queue_threshold: (sc.seed / 6 % 3) as u32,
            // The test's loads are light: most seeds take the talk's rule alone so copies
            // reach the logs, some the floor.
            min_outstanding: [0.0, 0.0, 0.5][(sc.seed / 18 % 3) as usize],
            log_bytes: None,
        });
    }
    cfg.conversion.idle_ns = Some(2_000_000);
    cfg.conversion.pause_fg_bytes_per_sec = 1e12;
    cfg.max_request_bytes = 8 * sc.block_size;
    let scheme = FusionScheme::new(cfg.clone()).unwrap_or_else(|e| panic!("{sc:?}: {e}"));
    // Members two blocks larger than the zones need: space no volume uses, which discards
    // sweep.
    let disk_bytes = 4096 + (scheme.blocks_per_disk() + 2) * sc.block_size;
    cfg.pool.disk_bytes = disk_bytes;
    let scheme = FusionScheme::new(cfg.clone()).unwrap_or_else(|e| panic!("{sc:?}: {e}"));
    let mut ecfg = EngineConfig::new(members);
    ecfg.seed = sc.seed;
    ecfg.detector = common::driver_detector();
    let mut engine = Engine::new(ecfg, Box::new(scheme), 0);
    for (i, &w) in wear.iter().flat_map(|w| w.1.iter()).enumerate() {
        engine.set_wear(fusionraid_core::DiskId(i as u32), Some(w));
    }
    let mut d = Driver::new(engine, members, disk_bytes, sc.seed);
    d.poison_trims = true;
    (d, sizes)
}

struct Pending {
    vol: usize,
    kind: u8, // 0 read, 1 write, 2 trim, 3 zeroes, 4 flush
    offset: u64,
    len: u64,
    data: Vec<u8>,
    expect: Vec<u8>,
    /// For a read: what writes in flight when it was submitted put in its range (kind,
    /// offset, data): a read may return either side of a write it overlaps (a FUA write's
    /// data is visible before its reply, which waits for the journal).
    racing: Vec<(u8, u64, Vec<u8>)>,
}

/// May page `pg` (byte offset in the volume) of a read hold `got`? Either the oracle at
/// submission (`p.expect`) or at reply, or what an overlapping write in flight at either
/// moment wrote there: a read overlapping a write in time may return either side of it.
fn page_allowed(
    p: &Pending,
    pg: u64,
    got: &[u8],
    oracle: &[u8],
    pending: &std::collections::HashMap<u64, Pending>,
    bs: u64,
) -> bool {
    let at = (pg - p.offset) as usize;
    let n = got.len();
    if got == &p.expect[at..at + n] || got == &oracle[pg as usize..pg as usize + n] {
        return true;
    }
    let now = pending
        .values()
        .filter(|q| q.vol == p.vol && matches!(q.kind, 1..=3))
        .map(|q| (q.kind, q.offset, q.len, &q.data));
    let then = p.racing.iter().map(|(k, o, d)| (*k, *o, d.len() as u64, d));
    now.chain(then).any(|(kind, off, len, data)| {
        if pg < off || pg + n as u64 > off + len {
            return false;
        }
        match kind {
            1 => got == &data[(pg - off) as usize..(pg - off) as usize + n],
            3 => got.iter().all(|&b| b == 0),
            // A trim zeroes only whole blocks.
            _ => {
                pg / bs * bs >= off
                    && (pg / bs + 1) * bs <= off + len
                    && got.iter().all(|&b| b == 0)
            }
        }
    })
}

fn run(sc: &Scenario) -> Reached {
    let (mut d, sizes) = build(sc);
    let mut oracle: Vec<Vec<u8>> = sizes.iter().map(|&s| vec![0u8; s as usize]).collect();
    let mut r = Rng::new(sc.seed ^ 0xA11CE);
    let mut pending: std::collections::HashMap<u64, Pending> = Default::default();
    let mut next_id = 1u64;
    // Sequential writes on gathering seeds, from their own generator (the other seeds'
    // requests stay as they were).
    let mut seq = Rng::new(sc.seed ^ 0x5E9);
    // Its own generator, so the rest of the scenario stays as it was.
    let mut one_page = Rng::new(sc.seed ^ 0x20E5);
    let mut last_end = vec![0u64; sc.volumes.len()];
    let mut failed = 0usize;
    let bs = sc.block_size;
    let mut issued = 0;
    while issued < sc.ops || !pending.is_empty() {
        if d.now >= 120_000_000_000 {
            eprintln!("stats: {:?}", d.engine.stats());
            for v in 0..sizes.len() {
                eprintln!("vol {v}: {:?}", d.engine.volume_status(v as u32));
            }
            eprintln!(
                "inflight ios {} reqs {} driver events {}",
                d.engine.inflight_ios(),
                d.engine.inflight_requests(),
                d.pending_events()
            );
            eprintln!("{}", d.engine.scheme().debug_state());
        }
        assert!(
            d.now < 120_000_000_000,
            "no progress: {} requests still pending after 120 s of virtual time (ids {:?})",
            pending.len(),
            pending.keys().take(5).collect::<Vec<_>>()
        );
        d.run_until(Some(d.now + r.below(150_000)));
        for rep in d.take_replies() {
            let p = pending
                .remove(&rep.id)
                .expect("reply for an unknown request");
            let res = rep.result.unwrap_or_else(|e| {
                panic!(
                    "request {} ({}) failed: {e}\n{}",
                    rep.id,
                    p.kind,
                    d.engine.scheme().debug_state()
                )
            });
            match p.kind {
                0 => {
                    let got = res.expect("read data").into_bytes().expect("bytes");
                    // Checked whether or not a write was in flight at submission: a read
                    // whose device read failed looks the mapping up again, and may then
                    // return a write submitted after it that completed first.
                    let racing_ok = got.chunks(PAGE_SIZE as usize).enumerate().all(|(k, c)| {
                        let pg = p.offset + k as u64 * PAGE_SIZE;
                        page_allowed(&p, pg, c, &oracle[p.vol], &pending, bs)
                    });
                    if got != p.expect && !racing_ok {
                        let first = got.iter().zip(&p.expect).position(|(a, b)| a != b).unwrap();
                        panic!(
                            "read of vol {} at {} len {} differs at byte {} (page {} of the read): got {:#x} want {:#x}",
                            p.vol,
                            p.offset,
                            p.len,
                            first,
                            first / 4096,
                            got[first],
                            p.expect[first]
                        );
                    }
                }
                1 | 3 => {
                    let src = if p.kind == 1 {
                        p.data
                    } else {
                        vec![0u8; p.len as usize]
                    };
                    oracle[p.vol][p.offset as usize..(p.offset + p.len) as usize]
                        .copy_from_slice(&src);
                }
                2 => {
                    // Whole blocks are unmapped and read as zeros; partial blocks keep data.
                    let first_full = p.offset.div_ceil(bs) * bs;
                    let end_full = (p.offset + p.len) / bs * bs;
                    if end_full > first_full {
                        oracle[p.vol][first_full as usize..end_full as usize].fill(0);
                    }
                }
                _ => {}
            }
        }
        if sc.spikes && r.below(40) == 0 {
            let disk = r.below(sc.disks as u64) as usize;
            d.disks[disk].spike_until = d.now + 1_000_000 + r.below(5_000_000);
            d.disks[disk].spike_factor = 30 + r.below(70);
        }
        if failed < sc.failures && issued > 20 && r.below(60) == 0 {
            let disk = r.below((sc.disks + sc.hdds) as u64) as usize;
            if !d.disks[disk].failed {
                d.disks[disk].failed = true;
                failed += 1;
                if r.below(2) == 0 {
                    // Sometimes the operator notices first; otherwise the first I/O error does.
                    d.engine.fail_disk(DiskId(disk as u32), d.now);
                }
            }
        }
        if issued > 10 && r.below(400) == 0 {
            // Scrubs run under the load; with nothing corrupted they must find nothing.
            let _ = d.engine.start_scrub(d.now);
        }
        let depth = if rows(sc.seed) {
            sc.queue_depth.max(16)
        } else {
            sc.queue_depth
        };
        if issued < sc.ops && pending.len() < depth {
            let vol = r.below(sizes.len() as u64) as usize;
            let size = sizes[vol];
            let pages = size / PAGE_SIZE;
            let mut kind = match r.below(100) {
                0..=39 => 1,
                40..=79 => 0,
                80..=85 => 2,
                86..=91 => 3,
                _ => 4,
            };
            // Lengths from one page to several blocks; some aligned to blocks.
            let (mut offset, mut len) = if r.below(3) == 0 {
                let bpp = bs / PAGE_SIZE;
                let blocks = size / bs;
                let b0 = r.below(blocks);
                let nb = 1 + r.below((blocks - b0).min(8));
                (b0 * bs, nb * bs.min(bpp * PAGE_SIZE))
            } else {
                let p0 = r.below(pages);
                let n = 1 + r.below((pages - p0).min(3 * bs / PAGE_SIZE));
                (p0 * PAGE_SIZE, n * PAGE_SIZE)
            };
            if kind == 1 && gathers(sc.seed) && seq.below(4) != 0 {
                let from = if last_end[vol].is_multiple_of(bs) && last_end[vol] < size {
                    last_end[vol]
                } else {
                    0
                };
                offset = from;
                len = ((1 + seq.below(2)) * bs).min(size - from);
            }
            if kind <= 1 && rows(sc.seed) && one_page.below(4) != 0 {
                // 1, 2 or 4 pages inside one block (rows of three heights).
                kind = 1;
                let ppb = bs / PAGE_SIZE;
                let n = [1, 1, 2, 4][one_page.below(4) as usize].min(ppb);
                let b = one_page.below(size / bs);
                offset = (b * ppb + one_page.below(ppb - n + 1)) * PAGE_SIZE;
                len = n * PAGE_SIZE;
            }
            if kind == 1 {
                last_end[vol] = offset + len;
            }
            let id = next_id;
            next_id += 1;
            let (op, data, expect) = match kind {
                0 => {
                    let expect = oracle[vol][offset as usize..(offset + len) as usize].to_vec();
                    (Op::Read { offset, len }, vec![], expect)
                }
                1 => {
                    let mut data = vec![0u8; len as usize];
                    let tag = r.next_u64();
                    for (i, chunk) in data.chunks_mut(8).enumerate() {
                        chunk.copy_from_slice(&(tag ^ i as u64).to_le_bytes()[..chunk.len()]);
                    }
                    (
                        Op::Write {
                            offset,
                            data: Data::Bytes(data.clone()),
                            fua: r.below(4) == 0,
                        },
                        data,
                        vec![],
                    )
                }
                2 => (Op::Trim { offset, len }, vec![], vec![]),
                3 => (
                    Op::WriteZeroes {
                        offset,
                        len,
                        fua: false,
                    },
                    vec![],
                    vec![],
                ),
                _ => (Op::Flush, vec![], vec![]),
            };
            let racing = if kind == 0 {
                pending
                    .values()
                    .filter(|q| {
                        q.vol == vol
                            && matches!(q.kind, 1..=3)
                            && q.offset < offset + len
                            && offset < q.offset + q.len
                    })
                    .map(|q| {
                        let d = match q.kind {
                            1 => q.data.clone(),
                            _ => vec![0u8; q.len as usize],
                        };
                        (q.kind, q.offset, d)
                    })
                    .collect()
            } else {
                Vec::new()
            };
            pending.insert(
                id,
                Pending {
                    vol,
                    kind,
                    offset,
                    len,
                    data,
                    expect,
                    racing,
                },
            );
            assert!(
                d.submit(Request {
                    id,
                    volume: vol as u32,
                    op
                }),
                "engine busy below its bound"
            );
            issued += 1;
        }
        if issued >= sc.ops && !pending.is_empty() && d.engine.inflight_requests() > 0 {
            let next = d.now + 1_000_000;
            d.run_until(Some(next));
        }
    }
    d.drain();
    d.engine.scheme().check_invariants();
    let rebuilt = replace_failed(&mut d, sizes.len(), sc.seed.is_multiple_of(2));
    d.engine.scheme().check_invariants();
    if (0..sizes.len()).any(|v| {
        d.engine
            .volume_status(v as u32)
            .is_some_and(|s| s.scrub.is_some())
    }) {
        d.settle(); // let the scrub finish, so what it finds is checked below
    }
    // Full read-back of every volume, in requests of the largest allowed size.
    for (vol, &size) in sizes.iter().enumerate() {
        let chunk = 8 * bs;
        let mut got = Vec::with_capacity(size as usize);
        let mut off = 0;
        while off < size {
            let len = chunk.min(size - off);
            let id = next_id;
            next_id += 1;
            assert!(d.submit(Request {
                id,
                volume: vol as u32,
                op: Op::Read { offset: off, len }
            }));
            d.drain();
            let rep = d.take_replies().pop().expect("read-back reply");
            got.extend(
                rep.result
                    .expect("read-back")
                    .expect("data")
                    .into_bytes()
                    .expect("bytes"),
            );
            off += len;
        }
        if got != oracle[vol] {
            let first = got
                .iter()
                .zip(&oracle[vol])
                .position(|(a, b)| a != b)
                .unwrap();
            panic!(
                "final read-back of vol {vol} differs at byte {first} (block {})",
                first as u64 / bs
            );
        }
    }
    d.engine.scheme().check_invariants();
    if common::trim_policy(sc.seed).enabled {
        // Every pool starts with spare stripes, so discards must have run (and every read
        // above returned the right data in spite of them).
        assert!(d.bytes_trimmed > 0, "discards on but none was sent");
        assert_eq!(d.bytes_trimmed, d.engine.stats().device_bytes_trimmed);
    } else {
        assert_eq!(d.bytes_trimmed, 0, "a discard with discards off");
    }
    // Nothing corrupts data in this test: a checksum error is a wrong checksum (one not
    // updated with its mapping, or verified against the wrong location).
    assert_eq!(d.engine.stats().checksum_errors, 0, "false checksum errors");
    assert_eq!(
        d.engine.stats().parity_rewrites,
        0,
        "a scrub found false bad parity"
    );
    let st = d.engine.stats();
    if !gathers(sc.seed) {
        assert_eq!(st.gathered_writes, 0, "a write gathered with gathering off");
    }
    if !rows(sc.seed) {
        assert_eq!(st.row_writes, 0, "a parity row with rows off");
    }
    Reached {
        rebuilt: rebuilt.0,
        in_place: rebuilt.1,
        offloaded: st.offloaded_writes,
        log_reads: st.log_reads,
        hedged: st.hedged_writes,
        raid_hedged: st.hedged_raid_reads,
        gathered: st.gathered_writes,
        rows: st.row_writes,
    }
}

/// Let the rebuilds finish (unless `at_once`), then put blank devices in the failed
/// members' slots: what is still on them is rebuilt in place, and the rebalance copies the
/// columns rebuilt into spare space back home. Returns the columns the rebuilds
/// reconstructed into spare space and in place.
fn replace_failed(d: &mut Driver, vols: usize, at_once: bool) -> (u64, u64) {
    let failed: Vec<usize> = (0..d.disks.len()).filter(|&i| d.disks[i].failed).collect();
    if failed.is_empty() {
        return (0, 0);
    }
    for &i in &failed {
        d.engine.fail_disk(DiskId(i as u32), d.now); // if no I/O noticed it yet
        d.pump();
    }
    let states = |d: &Driver| -> Vec<String> {
        (0..vols as u32)
            .filter_map(|v| d.engine.volume_status(v)?.rebuild)
            .collect()
    };
    let limit = d.now + 300_000_000_000;
    // A rebuild may stall when the pool is too small to hold the volume's stripes on the
    // survivors (width = members): the replacement then takes what is left in place.
    while !at_once
        && !states(d)
            .iter()
            .all(|s| s.starts_with("done") || s.starts_with("stalled"))
    {
        assert!(d.now < limit, "rebuild never finished: {:?}", states(d));
        let t = d.now + 5_000_000;
        d.run_until(Some(t));
    }
    for &i in &failed {
        // No I/O may be in flight to the old device.
        while let Err(e) = d.engine.replace_disk(DiskId(i as u32), d.now) {
            assert!(
                e.contains("in flight"),
                "replace of member {i} refused: {e}"
            );
            assert!(d.now < limit, "member {i} never replaceable: {e}");
            let t = d.now + 1_000_000;
            d.run_until(Some(t));
        }
        d.disks[i].failed = false;
        d.disks[i].bytes.fill(0x5A);
        d.pump();
    }
    while states(d)
        .iter()
        .any(|s| s.contains("rebalancing") || !s.starts_with("done"))
    {
        assert!(
            d.now < limit,
            "rebuild or rebalance never finished: {:?}",
            states(d)
        );
        let t = d.now + 5_000_000;
        d.run_until(Some(t));
    }
    let st = d.engine.stats();
    (st.rebuilt_columns, st.rebuilt_in_place)
}

const REGRESSION_SEEDS: &[u64] = &[2533, 5161, 16011];

#[test]
fn fusion_model_random_seeds() {
    let mut seeds = common::seeds("FUSIONRAID_SEED", "FUSIONRAID_SEEDS", 200);
    if std::env::var("FUSIONRAID_SEED").is_err() {
        // Seeds past the usual range, always replayed for the cases they reach:
        // 2533: a write whose second chunk waits for replica slots its first chunk holds,
        // in a replicated area too small for both (it must not wait forever).
        // 5161: a read retried after a member failed returns a write submitted after it
        // and acknowledged before it, which the oracle must allow.
        // 16011: two members failed; a rebuild that tries a donor for every degraded
        // stripe of one sweep at once takes donors faster than the sweep's pace and leaves
        // a write no room (so it makes one column attempt per sweep step).
        for &s in REGRESSION_SEEDS {
            if !seeds.contains(&s) {
                seeds.push(s);
            }
        }
    }
    let mut all = Reached::default();
    for &seed in &seeds {
        let sc = scenario(seed);
        let result = std::panic::catch_unwind(|| run(&sc));
        if let Ok(r) = &result {
            all.rebuilt += r.rebuilt;
            all.in_place += r.in_place;
            all.offloaded += r.offloaded;
            all.log_reads += r.log_reads;
            all.hedged += r.hedged;
            all.raid_hedged += r.raid_hedged;
            all.gathered += r.gathered;
            all.rows += r.rows;
        }
        if let Err(e) = result {
            eprintln!(
                "FAILED seed {seed}: replay with FUSIONRAID_SEED={seed} cargo test -p fusionraid-core --test model\nscenario: {sc:?}"
            );
            std::panic::resume_unwind(e);
        }
    }
    let Reached {
        rebuilt,
        in_place,
        offloaded,
        log_reads,
        hedged,
        raid_hedged,
        gathered,
        rows,
    } = all;
    eprintln!(
        "model test: {} seeds passed; {rebuilt} columns rebuilt into spare space, \
         {in_place} in place; \
         {offloaded} replica writes offloaded to HDD logs, {log_reads} reads served from them; \
         {hedged} writes hedged, {raid_hedged} RAID reads hedged; \
         {gathered} sequential writes gathered into full stripes, {rows} parity rows",
        seeds.len()
    );
    if seeds.len() >= 50 {
        assert!(rebuilt > 0, "no seed rebuilt a column into spare space");
        assert!(in_place > 0, "no seed rebuilt a column in place");
        assert!(offloaded > 0, "no hybrid seed offloaded a write");
        assert!(hedged > 0, "no seed hedged a write");
        assert!(raid_hedged > 0, "no seed hedged a read of a RAID block");
        assert!(gathered > 0, "no seed gathered a write into a full stripe");
        assert!(rows > 0, "no seed wrote a parity row");
    }
}
