//! Space under sustained overwrites: a volume accepts a write to any of its blocks, forever,
//! whatever the pattern, at every spare share the configuration accepts (ARCHITECTURE.md,
//! "The space invariant"). Long runs of random small overwrites over whole volumes, RAID5
//! and RAID6, several widths, and mirrors, healthy and degraded; no write may fail for lack
//! of space.

mod common;

use common::Driver;
use fusionraid_core::meta::JournalConfig;
use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::fusion::{
    FusionConfig, FusionScheme, LayoutKind, Level, PoolGeometry, VolumeConfig,
};
use fusionraid_core::{Data, Engine, EngineConfig, Op, ReqError, Request};

struct Soak {
    disks: usize,
    level: Level,
    width: usize,
    block_size: u64,
    blocks: u64,
    spare: f64,
    passes: u64,
    queue_depth: usize,
    write_pages: u64,
    seed: u64,
    /// A member that fails before the writes start.
    failed: Option<usize>,
    /// Mean device latency (memory-backed members answer in microseconds).
    latency_ns: u64,
    /// Chance per 1,000 writes sent that a random member stalls (30-100x slower for 1-6 ms),
    /// so the spike detector steers writes away from it meanwhile.
    spikes_per_mille: u64,
    /// Idle time between passes.
    pause_ns: u64,
    /// A member that fails at the start of the given pass: (pass, member).
    fails_at: Option<(u64, usize)>,
    /// Write every block whole before the random writes (each block's base then sits in
    /// one RAID block, and the cleaner moves most of a block at a time).
    whole_first: bool,
}

fn config(s: &Soak) -> FusionConfig {
    let mut v = VolumeConfig::new("v", s.level, s.width, s.blocks * s.block_size);
    v.spare_fraction = s.spare;
    let pool = PoolGeometry {
        disks: s.disks,
        disk_bytes: u64::MAX / 4,
        block_size: s.block_size,
        data_offset: 0,
        layout: LayoutKind::Mols,
        hdds: Vec::new(),
    };
    let mut cfg = FusionConfig::new(pool, vec![v]);
    // Small requests keep the spare floor (one request's worth of stripes) small too.
    cfg.max_request_bytes = 8 * s.block_size;
    cfg.journal = Some(JournalConfig {
        pool_id: 7,
        journal_bytes: 1 << 20,
        commit_interval_ns: 20_000_000,
        ..Default::default()
    });
    let end = fusionraid_core::scheme::fusion::durable::meta_layout(&cfg)
        .expect("journaled")
        .end();
    cfg.pool.data_offset = end.div_ceil(4096) * 4096;
    cfg
}

/// Random writes of `write_pages` pages over the whole volume, `passes` times its size;
/// returns the writes that failed for lack of space.
fn soak(s: &Soak) -> u64 {
    soak_on(s).0
}

/// `soak`, and the driver after it (to look at the volume).
fn soak_on(s: &Soak) -> (u64, Driver) {
    let cfg = config(s);
    let scheme = FusionScheme::new(cfg.clone()).expect("config");
    let disk_bytes = cfg.pool.data_offset + scheme.blocks_per_disk() * s.block_size;
    let mut ecfg = EngineConfig::new(s.disks);
    ecfg.seed = s.seed;
    let engine = Engine::new(ecfg, Box::new(scheme), 0);
    let mut d = Driver::new(engine, s.disks, disk_bytes, s.seed);
    d.base_latency_ns = s.latency_ns;
    if let Some(m) = s.failed {
        d.disks[m].failed = true;
        d.engine.fail_disk(fusionraid_core::DiskId(m as u32), 0);
    }
    if s.whole_first {
        write_whole(&mut d, s);
    }
    let mut rng = Rng::new(s.seed);
    let bytes = s.blocks * s.block_size;
    let pages = bytes / 4096;
    let total = pages * s.passes / s.write_pages;
    let (mut sent, mut done, mut no_space) = (0u64, 0u64, 0u64);
    let payload = vec![0x5au8; (s.write_pages * 4096) as usize];
    let per_pass = total / s.passes;
    while done < total {
        if let Some((pass, m)) = s.fails_at
            && sent == pass * per_pass
            && !d.disks[m].failed
        {
            d.disks[m].failed = true;
            d.engine.fail_disk(fusionraid_core::DiskId(m as u32), d.now);
        }
        if s.pause_ns > 0 && sent == done && sent > 0 && sent % per_pass == 0 {
            // Between passes the client goes away for a while (fio restarting).
            let t = d.now + s.pause_ns;
            d.run_until(Some(t));
        }
        while sent < total
            && sent - done < s.queue_depth as u64
            && !(s.pause_ns > 0 && sent > done && sent % per_pass == 0)
        {
            let page = rng.below(pages - s.write_pages + 1);
            let ok = d.submit(Request {
                id: sent,
                volume: 0,
                op: Op::Write {
                    offset: page * 4096,
                    data: Data::Bytes(payload.clone()),
                    fua: false,
                },
            });
            assert!(ok, "submit refused");
            sent += 1;
            if s.spikes_per_mille > 0 && rng.below(1000) < s.spikes_per_mille {
                let until = d.now + 1_000_000 + rng.below(5_000_000);
                let factor = 30 + rng.below(70);
                for _ in 0..=rng.below(4) {
                    let disk = rng.below(s.disks as u64) as usize;
                    d.disks[disk].spike_until = until;
                    d.disks[disk].spike_factor = factor;
                }
            }
        }
        let t = d.now + s.latency_ns / 5;
        d.run_until(Some(t));
        for r in d.take_replies() {
            done += 1;
            match r.result {
                Ok(_) => {}
                Err(ReqError::NoSpace) => no_space += 1,
                Err(e) => panic!("write failed: {e:?}"),
            }
        }
    }
    (no_space, d)
}

/// Every block of the volume written whole, 8 blocks a request, one at a time.
fn write_whole(d: &mut Driver, s: &Soak) {
    let chunk = 8 * s.block_size;
    let payload = vec![0xa5u8; chunk as usize];
    for (i, off) in (0..s.blocks * s.block_size)
        .step_by(chunk as usize)
        .enumerate()
    {
        let len = chunk.min(s.blocks * s.block_size - off) as usize;
        assert!(d.submit(Request {
            id: u64::MAX - i as u64,
            volume: 0,
            op: Op::Write {
                offset: off,
                data: Data::Bytes(payload[..len].to_vec()),
                fua: false,
            },
        }));
        d.drain();
        for r in d.take_replies() {
            assert!(r.result.is_ok(), "whole-block write failed: {:?}", r.result);
        }
    }
}

fn matrix(spare: f64, passes: u64, failed: Option<usize>) {
    let mut bad = Vec::new();
    let levels = [
        (Level::Raid5, 3..=8),
        (Level::Raid6, 4..=8),
        (Level::Mirror { copies: 2 }, 2..=2),
        (Level::Mirror { copies: 3 }, 3..=3),
    ];
    for (level, widths) in levels {
        for width in widths {
            let s = Soak {
                disks: 9,
                level,
                width,
                block_size: 64 << 10,
                blocks: 768,
                spare,
                passes,
                queue_depth: 16,
                write_pages: 1,
                seed: width as u64,
                failed,
                latency_ns: 100_000,
                spikes_per_mille: 0,
                pause_ns: 0,
                fails_at: None,
                whole_first: false,
            };
            let n = soak(&s);
            if n > 0 {
                bad.push(format!("{level:?} width {width}: {n} writes failed"));
            }
        }
    }
    assert!(bad.is_empty(), "spare {spare}: {bad:#?}");
}

#[test]
fn case1_raid6_w6_nine_members() {
    let s = Soak {
        disks: 9,
        level: Level::Raid6,
        width: 6,
        block_size: 64 << 10,
        blocks: 4096,
        spare: 0.167,
        passes: 3,
        queue_depth: 16,
        write_pages: 1,
        seed: 1,
        failed: None,
        latency_ns: 100_000,
        spikes_per_mille: 0,
        pause_ns: 0,
        fails_at: None,
        whole_first: false,
    };
    let n = soak(&s);
    assert_eq!(n, 0, "writes failed for lack of space");
}

/// The spare share's floor (`sizing::zone_stripes`): the cleaner's reserve and one request.
#[test]
fn overwrites_at_the_smallest_spare_share() {
    matrix(0.0, 4, None);
}

#[test]
fn overwrites_at_a_quarter_spare() {
    matrix(0.25, 4, None);
}

#[test]
fn degraded_overwrites_at_the_smallest_spare_share() {
    matrix(0.0, 3, Some(4));
}

/// Memory-backed members answer in microseconds and a loaded machine makes them look
/// stalled at random (the detector then steers writes away from them), with the client
/// away between passes: the timing under which issue 19's case 1 over NBD used up the
/// cleaner's reserve.
#[test]
fn fast_members_that_stall_at_random() {
    let s = Soak {
        disks: 9,
        level: Level::Raid6,
        width: 6,
        block_size: 64 << 10,
        blocks: 5120,
        spare: 0.331,
        passes: 3,
        queue_depth: 16,
        write_pages: 1,
        seed: 2,
        failed: None,
        latency_ns: 5_000,
        spikes_per_mille: 5,
        pause_ns: 300_000_000,
        fails_at: None,
        whole_first: false,
    };
    assert_eq!(soak(&s), 0, "writes failed for lack of space");
}

/// A mirror stripe holds one block: the cleaner must split the pages it moves across
/// targets (whole-block items would leave every target part empty and no plan would give
/// stripes back; the volume then ran out of space after about one pass).
#[test]
fn mirror_overwrites_fill_one_block_targets() {
    let s = Soak {
        disks: 7,
        level: Level::Mirror { copies: 2 },
        width: 2,
        block_size: 64 << 10,
        blocks: 4096,
        spare: 0.25,
        passes: 2,
        queue_depth: 16,
        write_pages: 1,
        seed: 5,
        failed: None,
        latency_ns: 100_000,
        spikes_per_mille: 0,
        pause_ns: 0,
        fails_at: None,
        whole_first: true,
    };
    assert_eq!(soak(&s), 0, "writes failed for lack of space");
}

/// Issue 19's case 2: a full volume rewritten twice, then a member fails and the rebuild
/// runs under more overwrites.
#[test]
fn a_member_fails_under_overwrites() {
    let levels = [
        (Level::Raid6, 6),
        (Level::Raid5, 5),
        (Level::Mirror { copies: 2 }, 2),
    ];
    for (level, width) in levels {
        let s = Soak {
            disks: 9,
            level,
            width,
            block_size: 64 << 10,
            blocks: 2048,
            spare: 0.331,
            passes: 4,
            queue_depth: 16,
            write_pages: 1,
            seed: 3,
            failed: None,
            latency_ns: 100_000,
            spikes_per_mille: 0,
            pause_ns: 0,
            fails_at: Some((2, 8)),
            whole_first: false,
        };
        let n = soak(&s);
        assert_eq!(
            n, 0,
            "{level:?} width {width}: writes failed for lack of space"
        );
    }
}

/// Dead pages come back as free stripes while the volume is idle: after random overwrites
/// (their dead pages spread over every stripe) and after a trim of a quarter of the volume.
#[test]
fn dead_pages_come_back_as_free_space_when_idle() {
    let s = Soak {
        disks: 9,
        level: Level::Raid5,
        width: 5,
        block_size: 64 << 10,
        blocks: 2048,
        spare: 0.25,
        passes: 2,
        queue_depth: 16,
        write_pages: 1,
        seed: 4,
        failed: None,
        latency_ns: 100_000,
        spikes_per_mille: 0,
        pause_ns: 0,
        fails_at: None,
        whole_first: false,
    };
    let (n, mut d) = soak_on(&s);
    assert_eq!(n, 0, "writes failed for lack of space");
    let status = |d: &Driver| d.engine.volume_status(0).expect("volume");
    let idle = |d: &mut Driver| {
        let t = d.now + 5_000_000_000;
        d.run_until(Some(t));
    };
    idle(&mut d);
    let after_writes = status(&d);
    // Live data is the whole volume: its RAID stripes hold little more than that.
    let data = s.blocks * s.block_size;
    let raid_data = after_writes.raid_bytes / 5 * 4;
    assert!(
        raid_data <= data + data / 16,
        "idle volume keeps {} MiB of RAID data space for {} MiB of data",
        raid_data >> 20,
        data >> 20
    );
    // Trim a quarter of the volume in 512 KiB requests: its space shows as free.
    let trimmed = data / 4;
    for (i, off) in (0..trimmed).step_by(512 << 10).enumerate() {
        assert!(d.submit(fusionraid_core::Request {
            id: 1_000_000 + i as u64,
            volume: 0,
            op: Op::Trim {
                offset: off,
                len: 512 << 10,
            },
        }));
    }
    idle(&mut d);
    for r in d.take_replies() {
        assert!(r.result.is_ok(), "trim failed: {:?}", r.result);
    }
    let after_trim = status(&d);
    // Two passes leave some pages never written: what the trim unmapped is the live data
    // that was there.
    let unmapped = after_writes.mapped_bytes - after_trim.mapped_bytes;
    assert!(
        unmapped >= trimmed / 2,
        "the trim unmapped {unmapped} bytes"
    );
    let grown = after_trim.free_bytes / 5 * 4 - after_writes.free_bytes / 5 * 4;
    assert!(
        grown >= unmapped - unmapped / 8,
        "a trim of {} MiB of data freed only {} MiB",
        unmapped >> 20,
        grown >> 20
    );
}
