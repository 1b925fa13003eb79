//! Engine CPU cost and metadata size (issue 2 benchmarks), in size-only mode with devices that
//! complete instantly, so only the engine's own work is measured.
//!
//! `cargo bench -p fusionraid-core --bench engine` prints ns per request for 4 KiB random
//! writes (replicated path), 4 KiB random reads, full-stripe writes, and metadata bytes per
//! logical TiB after the volume is written once and its replicated area is in use.
//! Results and the machine they came from are recorded in docs/BENCHMARKS.md.

use std::time::Instant;

use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::fusion::{
    FusionConfig, FusionScheme, LayoutKind, Level, PoolGeometry, VolumeConfig,
};
use fusionraid_core::{Data, DevOp, Engine, EngineConfig, Op, Request};

const BS: u64 = 64 * 1024;
const TIB: u64 = 1 << 40;

fn engine(volume_bytes: u64) -> Engine {
    let pool = PoolGeometry {
        disks: 29,
        disk_bytes: u64::MAX / 4,
        block_size: BS,
        data_offset: 1 << 20,
        layout: LayoutKind::Mols,
        hdds: Vec::new(),
    };
    let cfg = FusionConfig::new(
        pool,
        vec![VolumeConfig::new("bench", Level::Raid5, 7, volume_bytes)],
    );
    let scheme = FusionScheme::new(cfg).expect("config");
    let mut ecfg = EngineConfig::new(29);
    ecfg.size_only = true;
    Engine::new(ecfg, Box::new(scheme), 0)
}

/// Complete every device I/O at once and collect replies; returns replies seen.
fn pump(e: &mut Engine, now: u64) -> usize {
    let mut replies = 0;
    loop {
        let mut any = false;
        while let Some(io) = e.poll_device_io() {
            any = true;
            let r = match io.op {
                DevOp::Read { len, .. } => Ok(Some(Data::Size(len))),
                _ => Ok(None),
            };
            e.handle_completion(io.id, r, now).expect("known I/O");
        }
        while let Some(r) = e.poll_reply() {
            assert!(r.result.is_ok(), "request failed: {:?}", r.result);
            replies += 1;
            any = true;
        }
        if !any {
            return replies;
        }
    }
}

fn run(e: &mut Engine, now: &mut u64, n: u64, mut make: impl FnMut(u64) -> Op) -> f64 {
    let t = Instant::now();
    for i in 0..n {
        *now += 2_000; // 2 us of virtual time per request: 500K IOPS offered
        e.submit(
            Request {
                id: i,
                volume: 0,
                op: make(i),
            },
            *now,
        )
        .expect("not busy");
        pump(e, *now);
        if i % 1024 == 0 {
            e.handle_timeout(*now);
            pump(e, *now);
        }
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let mut rng = Rng::new(42);
    // CPU cost on a 64 GiB volume (fits any machine).
    let size = 64u64 << 30;
    let mut e = engine(size);
    let mut now = 0u64;
    let pages = size / 4096;
    let stripe_bytes = 6 * BS;
    let full = run(&mut e, &mut now, 50_000, |i| Op::Write {
        offset: (i * stripe_bytes) % size,
        data: Data::Size(stripe_bytes),
        fua: false,
    });
    let w4k = run(&mut e, &mut now, 200_000, |_| Op::Write {
        offset: rng.below(pages) * 4096,
        data: Data::Size(4096),
        fua: false,
    });
    let mut rng2 = Rng::new(7);
    let r4k = run(&mut e, &mut now, 200_000, |_| Op::Read {
        offset: rng2.below(pages) * 4096,
        len: 4096,
    });
    let st = e.stats().clone();
    println!("engine CPU cost (size-only, instant devices, 29 disks, RAID5 6+1, 64 KiB blocks):");
    println!("  full-stripe write (384 KiB): {full:8.0} ns/request");
    println!("  4 KiB random write:          {w4k:8.0} ns/request");
    println!("  4 KiB random read:           {r4k:8.0} ns/request");
    println!(
        "  (conversions {} relocations {} write amplification {:.2})",
        st.conversions,
        st.relocations,
        st.write_amplification()
    );

    // Metadata per logical TiB: a 1 TiB volume written once in full stripes, then 4 KiB
    // random writes until the replicated area is busy.
    let mut e = engine(TIB);
    let mut now = 0u64;
    let stripes = TIB / stripe_bytes;
    let t = Instant::now();
    run(&mut e, &mut now, stripes, |i| Op::Write {
        offset: i * stripe_bytes,
        data: Data::Size(stripe_bytes),
        fua: false,
    });
    let mut rng3 = Rng::new(9);
    let pages = TIB / 4096;
    run(&mut e, &mut now, 1_000_000, |_| Op::Write {
        offset: rng3.below(pages) * 4096,
        data: Data::Size(4096),
        fua: false,
    });
    let busy = e.volume_status(0).expect("volume");
    // Then the pool goes idle and conversion catches up, as it would between bursts.
    for _ in 0..10_000 {
        now += 100_000_000;
        e.handle_timeout(now);
        pump(&mut e, now);
        if e.volume_status(0).expect("volume").conversion_backlog < 16 {
            break;
        }
    }
    println!(
        "  while busy (conversion paused by foreground load): {} bytes = {:.4}%",
        busy.metadata_bytes,
        busy.metadata_bytes as f64 / TIB as f64 * 100.0
    );
    let vs = e.volume_status(0).expect("volume");
    let bmt = TIB / BS * 5;
    println!(
        "  of which BMT (5 bytes per 64 KiB block): {bmt} bytes = {:.4}%",
        bmt as f64 / TIB as f64 * 100.0
    );
    let pct = vs.metadata_bytes as f64 / TIB as f64 * 100.0;
    println!(
        "metadata for a 1 TiB volume after a full write, 1M random 4 KiB writes and idle conversion ({:.1} s):",
        t.elapsed().as_secs_f64()
    );
    println!(
        "  after conversion: {} bytes = {:.4}% of logical capacity (paper: 0.0084%)",
        vs.metadata_bytes, pct
    );
    println!(
        "  replicated area {} MiB, RAID area {} MiB, backlog {} pair sets",
        vs.replicated_bytes >> 20,
        vs.raid_bytes >> 20,
        vs.conversion_backlog
    );
}
