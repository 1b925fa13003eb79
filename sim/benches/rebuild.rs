//! Rebuild time vs pool size (issue 6): a FusionRAID RAID5 4+1 volume holding the same data
//! per member on pools of growing size; one member fails and the time until the rebuild has
//! moved everything off it is measured in virtual time (clean `dc` devices, no user load).
//! Declustering spreads the rebuild's reads and writes over every survivor, so the time
//! should fall as the pool grows. (A rebuild moves blocks into stripes clear of the failed
//! member, so it needs free zone space of n/(n-w) times the data: 4+1 stripes from 20
//! members up with the default spare share; 6+1 needs 29.)
//!
//! `cargo bench -p fusionraid-sim --bench rebuild`; results in docs/BENCHMARKS.md.

use fusionraid_core::scheme::fusion::LayoutKind;
use fusionraid_sim::workload::Workload;
use fusionraid_sim::{Load, Scenario, Sim};

const PER_MEMBER: u64 = 384 << 20;

fn main() {
    println!("members  volume   rebuild(virtual s)  moved GiB/s  report");
    for disks in [20usize, 24, 29] {
        let mut sc = Scenario::default_mix(1.0);
        sc.pool.disks = disks;
        sc.pool.aged = false;
        sc.pool.layout = Some(LayoutKind::Permutation { seed: 1 });
        sc.width = 5;
        sc.load = Load::Workloads {
            list: vec![Workload::Tpcc],
            scale: 1.0,
        };
        // Same user data per member at every pool size (4 data blocks per 5).
        let bytes = (PER_MEMBER * disks as u64 * 4 / 5) / (64 << 10) * (64 << 10);
        sc.volume_bytes = Some(bytes);
        let wall = std::time::Instant::now();
        let mut sim = Sim::new(&sc).expect("scenario");
        let (ns, reports) = sim
            .rebuild_after_failure(3, 3_600_000_000_000)
            .expect("rebuild finishes");
        let moved: u64 = reports
            .iter()
            .filter_map(|r| r.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum();
        let secs = ns as f64 / 1e9;
        println!(
            "{disks:>7}  {:>5} MiB  {secs:>18.3}  {:>11.2}  {} (wall {:.1} s)",
            bytes >> 20,
            moved as f64 * 65536.0 / (1u64 << 30) as f64 / secs,
            reports.join("; "),
            wall.elapsed().as_secs_f64()
        );
    }
}
