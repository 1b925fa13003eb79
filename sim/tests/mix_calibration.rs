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
/// Tolerance: at most 3x the source's spike rate and 3x its share of time unresponsive.
/// Only the upper side is asserted: the model has no multi-millisecond internal events
/// besides GC (erases and map updates are spread over GC work), so it shows fewer and
/// shorter spikes than the source (docs/DEVICE_MODELS.md); before the ageing fix it showed
/// hundreds per minute and was unresponsive most of the time.
#[test]
fn aged_dc_spikes_under_the_paper_mix() {
    const SOURCE_PER_MIN: f64 = 4.85;
    const SOURCE_MS: f64 = 3.79;
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
    let run = |slot_ns: Nanos| {
        let mut dev = SsdModel::new(preset("dc").unwrap());
        dev.age(&AgeSpec::paper());
        let cfg = DetectorConfig {
            slot_ns,
            ..DetectorConfig::paper_dc()
        };
        let r = probe(
            &mut dev,
            load.iter().map(|x| (x.at, x.kind, x.offset, x.len)),
            cfg,
        );
        (r, dev.stats())
    };
    for slot in [200_000, 300_000, 400_000] {
        let (r, _) = run(slot);
        println!(
            "  detector t = {:.0} ms: {:.1} spikes/min, mean {:.2} ms, {:.4}% unresponsive",
            slot as f64 * 10.0 / 1e6,
            r.spikes_per_minute(),
            r.mean_spike_ms(),
            100.0 * r.unresponsive_share()
        );
    }
    let (r, stats) = run(DetectorConfig::paper_dc().slot_ns);
    let source_share = SOURCE_PER_MIN * SOURCE_MS / 60e3;
    println!(
        "aged dc under its share of the mix, t = 5 ms: {:.2} spikes/min (source {SOURCE_PER_MIN}), mean {:.2} ms (source {SOURCE_MS}), {:.4}% of the time unresponsive (source {:.4}%); flash WA {:.3}, {} urgent GC passes",
        r.spikes_per_minute(),
        r.mean_spike_ms(),
        100.0 * r.unresponsive_share(),
        100.0 * source_share,
        stats.write_amplification(),
        stats.gc_stalls
    );
    assert!(r.spikes_per_minute() <= 3.0 * SOURCE_PER_MIN);
    assert!(r.unresponsive_share() <= 3.0 * source_share);
    // The member is aged and cleans: this is not a fresh drive passing by default.
    assert!(stats.gc_die_ns > 0 && stats.write_amplification() > 1.0);
}
