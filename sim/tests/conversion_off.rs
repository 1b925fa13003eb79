//! With conversion off (`[conversion] enabled = false`), a pool whose replicated area fills
//! still converts rather than write each small write into a zero-padded full stripe: the
//! padded stripes cost a stripe of device writes per block and the cleaner's work to
//! compact them again (engine write amplification 5.6x and a P99 of 8.7 ms in this run
//! before; docs/BENCHMARKS.md, "RocksDB", conversion off).

use fusionraid_sim::workload::parse_synthetic;
use fusionraid_sim::{Load, Scenario, Sim};

/// 8 aged `dc` members of 3 GiB, one RAID5 3+1 volume of 6 GiB (prefilled), 64 KiB
/// random writes with half reads: 2.5 GiB of writes in 20 s fill the replicated area.
fn overwrites(conversion: bool) -> fusionraid_sim::stats::Report {
    let mut sc = Scenario::default_mix(20.0);
    sc.pool.disks = 8;
    sc.pool.capacity_bytes = Some(3 << 30);
    sc.width = 4;
    sc.volume_bytes = Some(6 << 30);
    sc.scheme_options.conversion = conversion;
    sc.load = Load::Synthetic {
        tenants: vec![parse_synthetic("read=0.5,bs=64k,iops=4k,footprint=6G", "w").unwrap()],
    };
    Sim::new(&sc).unwrap().run().unwrap()
}

#[test]
fn a_full_replicated_area_converts_even_with_conversion_off() {
    let off = overwrites(false);
    let on = overwrites(true);
    let e = &off.engine;
    // The replicated area filled: conversion ran although it is off.
    assert!(e.conversions > 1000, "{e:?}");
    // Hardly any write took a padded stripe (one block each, a 3+1 stripe per block).
    assert!(
        e.full_stripe_writes * 100 < e.replicated_block_writes,
        "{e:?}"
    );
    // Close to the pool with conversion on, far from a stripe per block.
    let (wa_off, wa_on) = (
        off.write_amplification.engine,
        on.write_amplification.engine,
    );
    assert!(wa_off < 3.0 && wa_off < wa_on * 1.25, "{wa_off} {wa_on}");
    assert_eq!(off.requests.completed, off.requests.arrived);
    assert_eq!(off.requests.dropped, 0);
}
