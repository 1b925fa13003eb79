//! Rebuild time vs pool size (issue 6): a FusionRAID RAID5 4+1 volume holding the same data
//! per member on pools of growing size; one member fails and the time until the rebuild has
//! moved everything off it is measured in virtual time (clean `dc` devices, no user load).
//! Declustering spreads the rebuild's reads and writes over every survivor, so the time
//! should fall as the pool grows. RAID stripes get their lost column rebuilt into a donor
//! block (one free block per lost block), so small pools rebuild too; replicated blocks are
//! moved whole.
//!
//! Each pool is run a second time with a blank device taking the failed slot at once: what
//! was on the member is then rebuilt in place onto that one device (`in place` column).
//!
//! `cargo bench -p fusionraid-sim --bench rebuild`; results in docs/BENCHMARKS.md.

use fusionraid_core::scheme::fusion::LayoutKind;
use fusionraid_sim::workload::Workload;
use fusionraid_sim::{Load, Scenario, Sim};

const PER_MEMBER: u64 = 384 << 20;

fn main() {
    println!("members  volume   rebuild(virtual s)  rebuilt GiB/s  in place(virtual s)  report");
    for disks in [8usize, 12, 20, 24, 29] {
        let sc = scenario(disks);
        let bytes = sc.volume_bytes.expect("sized");
        let wall = std::time::Instant::now();
        let mut sim = Sim::new(&sc).expect("scenario");
        let (ns, reports) = sim
            .rebuild_after_failure(3, 3_600_000_000_000)
            .expect("rebuild finishes");
        let mut sim = Sim::new(&sc).expect("scenario");
        let (in_place_ns, in_place) = sim
            .rebuild_in_place_after_failure(3, 3_600_000_000_000)
            .expect("rebuild in place finishes");
        let secs = ns as f64 / 1e9;
        println!(
            "{disks:>7}  {:>5} MiB  {secs:>18.3}  {:>13.2}  {:>19.3}  {}; in place: {} (wall {:.1} s)",
            bytes >> 20,
            rebuilt(&reports) as f64 * 65536.0 / (1u64 << 30) as f64 / secs,
            in_place_ns as f64 / 1e9,
            reports.join("; "),
            in_place.join("; "),
            wall.elapsed().as_secs_f64()
        );
    }
}

/// The same user data per member at every pool size (4 data blocks per 5).
fn scenario(disks: usize) -> Scenario {
    let mut sc = Scenario::default_mix(1.0);
    sc.pool.disks = disks;
    sc.pool.aged = false;
    sc.pool.layout = Some(LayoutKind::Permutation { seed: 1 });
    sc.width = 5;
    sc.load = Load::Workloads {
        list: vec![Workload::Tpcc],
        scale: 1.0,
    };
    let bytes = (PER_MEMBER * disks as u64 * 4 / 5) / (64 << 10) * (64 << 10);
    sc.volume_bytes = Some(bytes);
    sc
}

/// Blocks moved plus columns rebuilt into spare space, from the reports ("done: M blocks
/// moved, C columns rebuilt into spare space in T s").
fn rebuilt(reports: &[String]) -> u64 {
    reports
        .iter()
        .map(|r| {
            let w: Vec<&str> = r.split_whitespace().collect();
            let n = |i: usize| w.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
            n(1) + n(4)
        })
        .sum()
}
