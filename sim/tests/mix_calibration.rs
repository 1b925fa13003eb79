//! Device-model calibration under the paper's workload mix (§5.3): one aged `dc` member fed
//! its share of the mix (`workload::member_load`) and watched by the engine's spike detector
//! (`spike_probe`). The calibration against the device-level sources alone is in
//! `devices/tests/calibration.rs`.
//!
//! Prints `model vs source` lines; run with `--nocapture` to see them.

use fusionraid_core::Nanos;
use fusionraid_core::detector::DetectorConfig;
use fusionraid_devices::{AgeSpec, DeviceModel, OpKind, SsdModel, preset};
use fusionraid_sim::spike_probe::probe;
use fusionraid_sim::workload::{MemberGeometry, MemberIo, Mix, Workload, member_load};

const MS: Nanos = 1_000_000;

// ---------------------------------------------------------------------------------------
// Aged datacenter drive under its share of the paper's 4-workload mix (§5.3).

/// The paper's mix (TPC-C, YCSB-A, TensorFlow, VirtualDesktop at Table-4 rates) as one
/// member of the 29-SSD RAID5 6+1 pool receives it, over `secs` seconds.
fn member_share_of_mix(secs: u64, seed: u64) -> Vec<MemberIo> {
    let mix = [
        Workload::Tpcc,
        Workload::YcsbA,
        Workload::TensorFlow,
        Workload::VirtualDesktop,
    ];
    // Each volume is sized to its workload's footprint; zones hold data and parity (7/6),
    // the replicated area (10% of the data, twice) and spare stripes (25%).
    let logical: u64 = mix.iter().map(|w| w.spec().footprint).sum();
    let region = (logical as f64 * 7.0 / 6.0 * 1.45 / 29.0) as u64 / 65536 * 65536;
    let records = Mix::of_workloads(&mix, seed, secs * 1_000 * MS);
    member_load(records, &MemberGeometry::paper(region, seed))
}

/// Paper §5.3: on its aged D3-S4510 pool under the TPC-C + YCSB-A + TF + VD mix, one SSD
/// saw 4.85 spikes per minute lasting 3.79 ms each (detector of §4.3, redirection off). That
/// is a per-device measurement under a known per-device load, which `member_load` derives
/// from Table 4 and the write-path rules alone. The paper does not give the detector's
/// threshold t for it; the engine's default (t = 5 ms, x-high 2) is used for the assertion
/// and a sweep of t is printed.
///
/// Tolerance: spike rate and mean spike length within 2x of the source, both ways (a model
/// without spikes fails, as one with hundreds per minute does). The drive-wide internal
/// events (FTL metadata writes) may hold the member at most 0.6% of the time: Tail at Store
/// (FAST'16) found SSDs more than 2x slower than their RAID-group peers 0.6% of the time,
/// every cause included. The spikes come from the discrete events, which follow GC: the
/// same load on a fresh drive (no cleaning) shows none.
#[test]
fn aged_dc_spikes_under_the_paper_mix() {
    use fusionraid_devices::presets::{DC_SPIKE_MS, DC_SPIKES_PER_MIN};
    let secs = 120;
    let load = member_share_of_mix(secs, 1);
    let wr: Vec<&MemberIo> = load.iter().filter(|x| x.kind == OpKind::Write).collect();
    let rd = load.len() - wr.len();
    let wbytes: u64 = wr.iter().map(|x| x.len).sum();
    println!(
        "per-member load of the mix (29 x RAID5 6+1): {:.0} writes/s ({:.1} MB/s, mean {:.1} KiB), {:.0} reads/s, {:.1}% conversion traffic",
        wr.len() as f64 / secs as f64,
        wbytes as f64 / secs as f64 / 1e6,
        wbytes as f64 / wr.len() as f64 / 1024.0,
        rd as f64 / secs as f64,
        100.0 * load.iter().filter(|x| x.background).count() as f64 / load.len() as f64
    );
    let run = |slot_ns: Nanos, aged: bool, upto: Nanos| {
        let mut dev = SsdModel::new(preset("dc").unwrap());
        if aged {
            dev.age(&AgeSpec::paper());
        }
        let cfg = DetectorConfig {
            slot_ns,
            ..DetectorConfig::paper_dc()
        };
        let r = probe(
            &mut dev,
            load.iter()
                .take_while(|x| x.at < upto)
                .map(|x| (x.at, x.kind, x.offset, x.len)),
            cfg,
        );
        (r, dev.stats())
    };
    for slot in [300_000, 400_000] {
        let (r, _) = run(slot, true, Nanos::MAX);
        println!(
            "  detector t = {:.0} ms: {:.1} spikes/min, mean {:.2} ms, {:.4}% unresponsive",
            slot as f64 * 10.0 / 1e6,
            r.spikes_per_minute(),
            r.mean_spike_ms(),
            100.0 * r.unresponsive_share()
        );
    }
    let (r, stats) = run(DetectorConfig::paper_dc().slot_ns, true, Nanos::MAX);
    let source_share = DC_SPIKES_PER_MIN * DC_SPIKE_MS / 60e3;
    let stall_share = stats.stall_ns as f64 / r.span_ns as f64;
    println!(
        "aged dc under its share of the mix, t = 5 ms: {:.2} spikes/min (source {DC_SPIKES_PER_MIN}), mean {:.2} ms (source {DC_SPIKE_MS}), {:.4}% of the time unresponsive (source {:.4}%); flash WA {:.3}, {} urgent GC passes, {} erases, {} metadata writes holding the drive {:.3}% of the time (Tail at Store: slow 0.6% of the time)",
        r.spikes_per_minute(),
        r.mean_spike_ms(),
        100.0 * r.unresponsive_share(),
        100.0 * source_share,
        stats.write_amplification(),
        stats.gc_stalls,
        stats.erases,
        stats.map_write_stalls,
        100.0 * stall_share
    );
    let rate = r.spikes_per_minute();
    assert!(
        (DC_SPIKES_PER_MIN / 2.0..=DC_SPIKES_PER_MIN * 2.0).contains(&rate),
        "{rate} spikes/min"
    );
    let mean = r.mean_spike_ms();
    assert!(
        (DC_SPIKE_MS / 2.0..=DC_SPIKE_MS * 2.0).contains(&mean),
        "{mean} ms"
    );
    assert!(stall_share <= 0.006, "{stall_share}");
    // The member is aged and cleans: this is not a fresh drive passing by default.
    assert!(stats.gc_die_ns > 0 && stats.write_amplification() > 1.0);
    assert!(stats.erases > 0 && stats.map_write_stalls > 0);
    // A fresh drive under the same load (first 30 s) does not clean, so has no events.
    let (clean, clean_stats) = run(DetectorConfig::paper_dc().slot_ns, false, 30_000 * MS);
    assert_eq!(
        (
            clean.spikes,
            clean_stats.erases,
            clean_stats.map_write_stalls
        ),
        (0, 0, 0)
    );
}
