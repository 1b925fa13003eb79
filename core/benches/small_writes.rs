//! Engine CPU per 4 KiB random write with real data (issue 5's NBD write benchmark without
//! the NBD server, the driver or the kernel): the pool of `scripts/bench-nbd.sh` part A
//! (7 members of 1 GiB, one RAID5 4+1 volume of 1 GiB, 64 KiB blocks, journal on), members
//! held in memory by this file and completing at once, the volume written once in full,
//! then uniformly random 4 KiB writes over all of it, 16 in flight.
//!
//! `cargo bench -p fusionraid-core --bench small_writes [-- WRITES [SPARE_FRACTION [LOW_WATER]]]`
//! prints the CPU time per write (thread CPU time, so other load on the machine matters
//! less), device bytes per user byte, and what the background did. The copies into and out
//! of the memory members are included (the NBD server's `mem:` members make them too); their
//! share is estimated with wall time, which is right only on a quiet machine. `WARM=N` first
//! runs N unmeasured writes (to reach the steady state of cleaning). For instruction counts
//! that do not move with the machine's load, run the binary under
//! `valgrind --tool=callgrind --toggle-collect='*small_writes*measure*'`: only the measured
//! writes are counted. `STEER=1` runs the steered policies (`fusionraid+`, equal weights: no
//! curves) to compare their cost, `STEER=noseg` the same without read/write segregation.
//! `LEVEL=raid6 WIDTH=6` makes it RAID6 4+2. `ROWS=US` turns parity-row writes on (`FusionConfig::row_ns`, US microseconds).
//! `LEVEL=mirror` (or `mirror3`) makes the volume a mirror instead of RAID5 4+1.
//! On 7 members segregation leaves every member a writer (a pair set spans 10 members:
//! `min_writers`), so `STEER=1` costs what `noseg` does; `DISKS=29 READS=0.9` (29 members
//! sharing the same memory, 90% of the requests 4 KiB random reads) leaves 10 writers and
//! measures what segregation costs the engine. The last line says how many writes were
//! steered and how many members ended in write mode.

/// The allocator the `fusionraid` binary runs with (cli/src/main.rs).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::Instant;

use fusionraid_core::meta::JournalConfig;
use fusionraid_core::rng::Rng;
use fusionraid_core::scheme::fusion::{
    FusionConfig, FusionScheme, LayoutKind, Level, PoolGeometry, VolumeConfig,
};
use fusionraid_core::{Data, DevOp, Engine, EngineConfig, Op, Request};

const BS: u64 = 64 * 1024;
/// Members of the pool (`DISKS=N` for another count: the members then share the same 7 GiB
/// of memory, each `7 GiB / N` rounded down to whole blocks).
fn disks() -> usize {
    std::env::var("DISKS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7)
}
fn disk_bytes() -> u64 {
    (7u64 << 30) / disks() as u64 / BS * BS
}
const VOLUME: u64 = 1 << 30;
/// The metadata area: RAID6's checkpoints need more than 8 MiB.
fn data_offset() -> u64 {
    static AT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *AT.get_or_init(|| {
        if std::env::var("LEVEL").is_ok_and(|l| l == "raid6") {
            16 << 20
        } else {
            8 << 20
        }
    })
}
const QD: usize = 16;

/// Members in memory; copies in and out are timed apart from the engine.
struct Members {
    disks: Vec<Vec<u8>>,
    copy_ns: u64,
    bytes_written: u64,
    /// Of `bytes_written`, the metadata area's (journal and checkpoints).
    meta_written: u64,
    bytes_read: u64,
}

impl Members {
    fn new() -> Members {
        Members {
            disks: (0..disks())
                .map(|_| vec![0u8; disk_bytes() as usize])
                .collect(),
            copy_ns: 0,
            bytes_written: 0,
            meta_written: 0,
            bytes_read: 0,
        }
    }

    /// Complete every device I/O at once; returns the replies seen.
    fn pump(&mut self, e: &mut Engine, now: u64) -> usize {
        let mut replies = 0;
        loop {
            let mut any = false;
            while let Some(io) = e.poll_device_io() {
                any = true;
                let t = Instant::now();
                let disk = &mut self.disks[io.disk.index()];
                let r = match io.op {
                    DevOp::Read { offset, len } => {
                        self.bytes_read += len;
                        let (o, l) = (offset as usize, len as usize);
                        Ok(Some(Data::Bytes(disk[o..o + l].to_vec())))
                    }
                    DevOp::Write { offset, data, .. } => {
                        let b = data.bytes().expect("the bench carries data");
                        self.bytes_written += b.len() as u64;
                        if offset < data_offset() {
                            self.meta_written += b.len() as u64;
                        }
                        disk[offset as usize..offset as usize + b.len()].copy_from_slice(b);
                        Ok(None)
                    }
                    _ => Ok(None),
                };
                self.copy_ns += t.elapsed().as_nanos() as u64;
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
}

fn engine(spare: f64, low_water: Option<f64>) -> Engine {
    let pool = PoolGeometry {
        disks: disks(),
        disk_bytes: disk_bytes(),
        block_size: BS,
        data_offset: data_offset(),
        layout: LayoutKind::Mols,
        hdds: Vec::new(),
    };
    let level: Level = std::env::var("LEVEL")
        .map_or(Ok(Level::Raid5), |l| l.parse())
        .expect("LEVEL: raid5, mirror or mirror3");
    let width = level.fixed_width().unwrap_or_else(|| {
        std::env::var("WIDTH")
            .ok()
            .and_then(|w| w.parse().ok())
            .unwrap_or(5)
    });
    let mut vol = VolumeConfig::new("bench", level, width, VOLUME);
    vol.spare_fraction = spare;
    let mut cfg = FusionConfig::new(pool, vec![vol]);
    cfg.journal = Some(JournalConfig::default());
    // STEER=1: FusionRAID with Sandook's steering (fusionraid+), for its CPU cost;
    // STEER=noseg: the same without read/write segregation.
    match std::env::var("STEER").as_deref() {
        Ok("1") => cfg.steer = Some(fusionraid_core::steer::SteerConfig::default()),
        Ok("noseg") => {
            cfg.steer = Some(fusionraid_core::steer::SteerConfig {
                segregation: false,
                ..Default::default()
            })
        }
        _ => {}
    }
    if let Some(w) = low_water {
        cfg.conversion.spare_low_water = w;
    }
    // ROWS=US: parity-row writes, a one-page write held up to US microseconds.
    if let Some(us) = std::env::var("ROWS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        cfg.row_ns = Some(us * 1000);
    }
    let scheme = FusionScheme::new(cfg).expect("config");
    Engine::new(EngineConfig::new(disks()), Box::new(scheme), 0)
}

/// CPU time of this thread: the other load of a shared machine moves it much less than
/// wall time.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec for the kernel to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `n` random 4 KiB requests, `QD` in flight, 30 us of virtual time between submissions:
/// writes, or with `READS=F` a share F of reads (what makes segregation leave members in
/// read mode: a write-only load keeps every member a writer).
fn drive(e: &mut Engine, m: &mut Members, now: &mut u64, n: u64, rng: &mut Rng) -> u64 {
    let pages = VOLUME / 4096;
    let reads: f64 = std::env::var("READS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    let mut in_flight = 0usize;
    let mut done = 0u64;
    let mut sent = 0u64;
    let mut payload = vec![0u8; 4096];
    while done < n {
        while in_flight < QD && sent < n {
            *now += 30_000; // 33K writes per second offered, as over NBD
            payload[..8].copy_from_slice(&sent.to_le_bytes());
            // The draw for the kind only with reads on: a write-only run keeps its offsets.
            let read = reads > 0.0 && (rng.below(1 << 20) as f64) < reads * (1 << 20) as f64;
            let offset = rng.below(pages) * 4096;
            let op = if read {
                Op::Read { offset, len: 4096 }
            } else {
                Op::Write {
                    offset,
                    data: Data::Bytes(payload.clone()),
                    fua: false,
                }
            };
            let r = Request {
                id: sent,
                volume: 0,
                op,
            };
            e.submit(r, *now).expect("not busy");
            sent += 1;
            in_flight += 1;
        }
        let got = m.pump(e, *now);
        in_flight -= got;
        done += got as u64;
        if got == 0 {
            // Every write in flight waits for the background: let time pass.
            *now += 100_000;
        }
        if let Some(d) = e.poll_timeout()
            && d <= *now
        {
            e.handle_timeout(*now);
        }
    }
    done
}

/// The measured writes: a function of its own, so callgrind can count it alone.
#[inline(never)]
fn measure(e: &mut Engine, m: &mut Members, now: &mut u64, n: u64, rng: &mut Rng) -> u64 {
    drive(e, m, now, n, rng)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let writes: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(300_000);
    let spare: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(0.25);
    let low_water: Option<f64> = args.get(2).and_then(|s| s.parse().ok());
    let mut e = engine(spare, low_water);
    let mut m = Members::new();
    let mut now = 0u64;
    // Write the volume once in full stripes, as the NBD benchmark's fill does.
    let stripe = 4 * BS;
    for i in 0..VOLUME / stripe {
        now += 100_000;
        let r = Request {
            id: u64::MAX - i,
            volume: 0,
            op: Op::Write {
                offset: i * stripe,
                data: Data::Bytes(vec![i as u8; stripe as usize]),
                fua: false,
            },
        };
        e.submit(r, now).expect("not busy");
        m.pump(&mut e, now);
        e.handle_timeout(now);
        m.pump(&mut e, now);
    }
    // Optionally reach the steady state of cleaning first (WARM=N writes), outside the
    // measured function, so a callgrind run counts only the steady state.
    let mut rng = Rng::new(2);
    let warm: u64 = std::env::var("WARM")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    drive(&mut e, &mut m, &mut now, warm, &mut rng);
    let before = e.stats().clone();
    let (w0, r0, mw0) = (m.bytes_written, m.bytes_read, m.meta_written);
    m.copy_ns = 0;
    let cpu = thread_cpu_ns();
    let done = measure(&mut e, &mut m, &mut now, writes, &mut rng);
    let cpu = thread_cpu_ns() - cpu;
    let st = e.stats();
    let user = done * 4096;
    let level = e.volume_status(0).map(|s| s.level).unwrap_or_default();
    let reads = std::env::var("READS").unwrap_or_else(|_| "0".into());
    println!(
        "4 KiB random requests (reads {reads}), {} members of {} MiB in memory, {level} 1 GiB volume, spare {spare}, QD {QD}, journal on:",
        disks(),
        disk_bytes() >> 20
    );
    println!(
        "  {done} requests: {:.0} ns of thread CPU per request (engine and member copies; {:.2} s), of which about {:.0} ns in member copies (wall time, so only when the machine is quiet)",
        cpu as f64 / done as f64,
        cpu as f64 / 1e9,
        m.copy_ns as f64 / done as f64,
    );
    println!(
        "  device bytes per user byte: written {:.2} (metadata {:.2}), read {:.2}",
        (m.bytes_written - w0) as f64 / user as f64,
        (m.meta_written - mw0) as f64 / user as f64,
        (m.bytes_read - r0) as f64 / user as f64
    );
    println!(
        "  conversions {} relocations {} stripe writes {} replica writes {} parity rows {} (virtual time {:.1} s)",
        st.conversions - before.conversions,
        st.relocations - before.relocations,
        st.full_stripe_writes - before.full_stripe_writes,
        st.replicated_block_writes - before.replicated_block_writes,
        st.row_writes - before.row_writes,
        now as f64 / 1e9
    );
    let writers = e.disks().steering().map_or(disks(), |s| {
        (0..disks())
            .filter(|&d| s.is_writer(fusionraid_core::types::DiskId(d as u32)))
            .count()
    });
    println!(
        "  redirected writes {} steered pair sets {}; members in write mode at the end {writers} of {}",
        st.redirected_writes - before.redirected_writes,
        st.steered_pair_sets - before.steered_pair_sets,
        disks()
    );
}
