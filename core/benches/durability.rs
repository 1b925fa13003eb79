//! Durability costs (issue 6 benchmarks).
//!
//! 1. Engine CPU per 4 KiB random write with the metadata journal on vs off (size-only mode,
//!    devices that complete instantly, 500K IOPS offered in virtual time), and the metadata
//!    device writes and flushes the journal adds per user write.
//! 2. Recovery time vs metadata size: a fully mapped volume's checkpoint is framed, placed on
//!    29 members' metadata regions, and `FusionScheme::recover` rebuilds the volume from them
//!    (decode, replay, deriving stripe states).
//!
//! `cargo bench -p fusionraid-core --bench durability`; results in docs/BENCHMARKS.md.

use std::time::Instant;

use fusionraid_core::meta::image::Image;
use fusionraid_core::meta::layout::SUPERBLOCK_BYTES;
use fusionraid_core::meta::recover::region;
use fusionraid_core::meta::{Journal, JournalConfig, Record};
use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::fusion::durable::meta_layout;
use fusionraid_core::scheme::fusion::{
    FusionConfig, FusionScheme, LayoutKind, Level, PoolGeometry, VolumeConfig,
};
use fusionraid_core::volume::Loc;
use fusionraid_core::{Data, DevOp, Engine, EngineConfig, Op, Request};

const BS: u64 = 64 * 1024;

fn config(volume_bytes: u64, journal: bool) -> FusionConfig {
    let pool = PoolGeometry {
        disks: 29,
        disk_bytes: u64::MAX / 4,
        block_size: BS,
        data_offset: 0,
        layout: LayoutKind::Mols,
        hdds: Vec::new(),
    };
    let mut cfg = FusionConfig::new(
        pool,
        vec![VolumeConfig::new("bench", Level::Raid5, 7, volume_bytes)],
    );
    if journal {
        cfg.journal = Some(JournalConfig {
            pool_id: 1,
            ..Default::default()
        });
    }
    cfg.pool.data_offset = meta_layout(&cfg).map_or(1 << 20, |l| l.end().div_ceil(4096) * 4096);
    cfg
}

/// 4 KiB random writes; returns (ns per write, metadata writes per user write, flushes per user write).
fn write_cost(journal: bool, n: u64) -> (f64, f64, f64) {
    let cfg = config(64 << 30, journal);
    let meta_end = if journal { cfg.pool.data_offset } else { 0 };
    let scheme = FusionScheme::new(cfg).expect("config");
    let mut ecfg = EngineConfig::new(29);
    ecfg.size_only = true;
    let mut e = Engine::new(ecfg, Box::new(scheme), 0);
    let mut rng = Rng::new(5);
    let (mut meta_writes, mut flushes) = (0u64, 0u64);
    let mut now = 0u64;
    let t = Instant::now();
    for i in 0..n {
        now += 2_000;
        let off = rng.below((64u64 << 30) / 4096) * 4096;
        let op = Op::Write {
            offset: off,
            data: Data::Size(4096),
            fua: false,
        };
        e.submit(
            Request {
                id: i,
                volume: 0,
                op,
            },
            now,
        )
        .expect("not busy");
        if i % 256 == 0 {
            e.handle_timeout(now);
        }
        loop {
            let mut any = false;
            while let Some(io) = e.poll_device_io() {
                any = true;
                match io.op {
                    DevOp::Flush => flushes += 1,
                    DevOp::Write { offset, .. } if offset < meta_end => meta_writes += 1,
                    _ => {}
                }
                let r = match io.op {
                    DevOp::Read { len, .. } => Ok(Some(Data::Size(len))),
                    _ => Ok(None),
                };
                e.handle_completion(io.id, r, now).expect("known I/O");
            }
            while let Some(r) = e.poll_reply() {
                assert!(r.result.is_ok());
                any = true;
            }
            if !any {
                break;
            }
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    (ns, meta_writes as f64 / n as f64, flushes as f64 / n as f64)
}

/// Build the checkpoint of a fully mapped `gib` GiB volume on 29 members, then time recovery.
fn recovery(gib: u64) -> (u64, f64) {
    let cfg = config(gib << 30, true);
    let layout = meta_layout(&cfg).expect("journaled");
    let blocks = (gib << 30) / BS;
    let mut img = Image::empty(&[(blocks, (BS / 4096) as u16)]);
    // Every block in a RAID stripe, six per stripe (the layout of a volume written once).
    for ub in 0..blocks {
        let flbn = (ub / 6) * 7 + ub % 6;
        img.apply(&Record::Whole {
            vol: 0,
            ub,
            loc: Loc::Raid(flbn),
        })
        .unwrap();
    }
    let bytes = img.encode();
    let mut j = Journal::new(cfg.journal.clone().unwrap(), layout.clone(), 0, 1, 0, true);
    let sealed = j.seal_checkpoint(&bytes).unwrap();
    let (off, _) = region(&layout);
    let mut regions: Vec<Vec<u8>> = vec![Vec::new(); 29];
    for u in &sealed.units {
        for &(d, o) in &u.places {
            let r = &mut regions[d.index()];
            let end = (o - off) as usize + u.bytes.len();
            if r.len() < end {
                r.resize(end, 0);
            }
            r[(o - off) as usize..end].copy_from_slice(&u.bytes);
        }
    }
    assert!(off == SUPERBLOCK_BYTES);
    let refs: Vec<Option<&[u8]>> = regions.iter().map(|r| Some(r.as_slice())).collect();
    let t = Instant::now();
    let (s, rep) = FusionScheme::recover(cfg, &refs, 0).expect("recovers");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(rep.checkpoint_bytes, bytes.len() as u64);
    drop(s);
    (bytes.len() as u64, secs)
}

fn main() {
    let n = 100_000;
    let (off_ns, _, _) = write_cost(false, n);
    let (on_ns, mw, fl) = write_cost(true, n);
    println!(
        "4 KiB random write, engine CPU: journal off {off_ns:.0} ns, on {on_ns:.0} ns (ratio {:.2}); per user write {mw:.4} metadata writes, {fl:.4} flushes",
        on_ns / off_ns
    );
    for gib in [16u64, 64, 256] {
        let (bytes, secs) = recovery(gib);
        println!(
            "recovery of a fully mapped {gib} GiB volume: checkpoint {:.1} MiB, {:.3} s ({:.0} MiB/s)",
            bytes as f64 / (1 << 20) as f64,
            secs,
            bytes as f64 / (1 << 20) as f64 / secs
        );
    }
}
