//! Device-model calibration against device-level sources only (never array-level results):
//! the measured load-latency profiles (`data/ssd-profiles/`), the FusionRAID paper's SSD
//! spike study (§2.3) and the Pitfalls talk's over-provisioning speed-ups. The check under
//! the paper's workload mix needs the simulator's workloads and is in
//! `sim/tests/mix_calibration.rs`.
//!
//! Every test prints `model vs source` lines; run with `--nocapture` to see them.

use std::path::{Path, PathBuf};

use fusionraid_core::Nanos;
use fusionraid_devices::fit::{self, FitOptions};
use fusionraid_devices::fitted_fleet::PROFILED;
use fusionraid_devices::loadgen::{
    ClosedLoop, Pattern, Sample, Spike, find_spikes, mean, quantile, run_closed_loop,
};
use fusionraid_devices::profile::{Profile, load_device};
use fusionraid_devices::{AgeSpec, DeviceModel, OpKind, SsdModel, preset};

const MS: Nanos = 1_000_000;
const GIB: u64 = 1 << 30;

/// `FUSIONRAID_PROFILES`, or the shared data directory next to the checkout.
fn profiles_dir() -> PathBuf {
    std::env::var_os("FUSIONRAID_PROFILES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/ssd-profiles")
        })
}

fn ms(ns: impl Into<f64>) -> f64 {
    ns.into() / 1e6
}

// ---------------------------------------------------------------------------------------
// Fitted presets vs their measured curves.

const TOLERANCE: f64 = 0.35;

fn check_fitted(name: &str, serial: &str) {
    let cfg = preset(name).unwrap();
    let profiles = load_device(&profiles_dir(), serial).unwrap();
    // More requests than the fit uses: near a knee P99 converges slowly.
    let opts = FitOptions {
        requests: 60_000,
        seed: 99,
        ..FitOptions::default()
    };
    let mut worst: f64 = 1.0;
    for mix in [0, 100, 500, 1000] {
        let p: &Profile = profiles.iter().find(|p| p.write_permille == mix).unwrap();
        // Low / mid / high load below saturation (see `fit::check_rows`).
        let rows = fit::check_rows(p);
        assert_eq!(rows.len(), 3, "{serial} {mix}: need three distinct loads");
        for r in rows {
            let model = fit::model_p99_us(&cfg, p.write_fraction(), r.target_iops, &opts);
            let ratio = model / r.p99_us();
            println!(
                "{name} {:>4}w @ {:>7.0} IOPS: P99 model {:>6.0} us vs source {:>6.0} us ({}) ratio {:.2}",
                mix,
                r.target_iops,
                model,
                r.p99_us(),
                p.path.file_name().unwrap().to_string_lossy(),
                ratio
            );
            worst = if (ratio.ln()).abs() > worst.ln().abs() {
                ratio
            } else {
                worst
            };
            assert!(
                (ratio - 1.0).abs() <= TOLERANCE,
                "{name} {mix}w at {} IOPS: model {model:.0} us vs measured {:.0} us",
                r.target_iops,
                r.p99_us()
            );
        }
    }
    println!("{name}: worst model/source P99 ratio {worst:.2}");
}

#[test]
fn pm1725a_reproduces_its_profiles() {
    check_fitted("pm1725a", "S39WNA0KB01161");
}

#[test]
fn sn200_reproduces_its_profiles() {
    check_fitted("sn200", "SDM00001C5D1");
}

/// The fitting routine itself, on reduced effort so the test stays fast: it must run on the
/// CSVs and land close to the curves. (`refit_reproduces_frozen_presets` checks the frozen
/// presets are exactly its full-effort output.)
#[test]
fn fitting_routine_runs_on_device_data() {
    let profiles = load_device(&profiles_dir(), "S39WNA0KB01161").unwrap();
    let opts = FitOptions {
        requests: 2_000,
        rounds: 1,
        ..FitOptions::default()
    };
    let r = fit::fit_profiles("quick", &profiles, &opts).unwrap();
    let robust = fit::robust_log_error(&r.points);
    println!(
        "quick fit of PM1725a: {:?}, rms log error P99 {:.3}, P90 {:.3}, robust (what the fit minimises) {robust:.3}",
        r.params,
        r.rms_log_error,
        fit::rms_log_error_p90(&r.points)
    );
    assert!(r.rms_log_error < 0.4, "{}", r.rms_log_error);
}

/// Every frozen fit: one per profiled serial (`fitted_fleet::PROFILED`). The named presets
/// `pm1725a` and `sn200` are an earlier, P99-only fit kept fixed (see `fitted.rs`), so they
/// are not re-checked here. `FUSIONRAID_REFIT=name,name` re-checks only those presets.
#[test]
#[ignore = "full-effort fits, ~3-8 s each in release: run when the model changes, then refreeze the presets"]
fn refit_reproduces_frozen_presets() {
    let fits: Vec<(&str, &str)> = PROFILED.iter().map(|d| (d.name, d.serial)).collect();
    let only = std::env::var("FUSIONRAID_REFIT").unwrap_or_default();
    let wanted = |name: &str| only.is_empty() || only.split(',').any(|n| n.trim() == name);
    let mut checked = 0;
    for (name, serial) in fits.into_iter().filter(|(n, _)| wanted(n)) {
        let profiles = load_device(&profiles_dir(), serial).unwrap();
        let r = fit::fit_profiles(name, &profiles, &FitOptions::default()).unwrap();
        println!("{name}: {:?} rms {:.3}", r.params, r.rms_log_error);
        for p in &r.points {
            println!(
                "  {:>4}w {:>8.0} IOPS P90 model {:>6.0} us vs source {:>6.0} us, P99 model {:>6.0} us vs source {:>6.0} us",
                p.write_permille,
                p.target_iops,
                p.model_p90_us,
                p.measured_p90_us,
                p.model_p99_us,
                p.measured_p99_us
            );
        }
        assert_eq!(r.config, preset(name).unwrap(), "refreeze {name}");
        checked += 1;
    }
    assert!(
        checked > 0,
        "FUSIONRAID_REFIT={only} names no fitted preset"
    );
}

// ---------------------------------------------------------------------------------------
// Consumer drive: buffer-flush spikes and GC spikes (paper §2.3).

fn seq_writes(dev: &mut dyn DeviceModel, start: Nanos, span: u64, dur: Nanos) -> Vec<Sample> {
    // Queue depth 4: the mean latency (~0.6 ms) then puts 3-12 ms stalls at 5-20x it, the
    // ratio §2.3 reports; the paper does not state its fio queue depth.
    let spec = ClosedLoop {
        queue_depth: 4,
        kind: OpKind::Write,
        io_bytes: 64 << 10,
        pattern: Pattern::Sequential { start: 0, span },
        duration_ns: dur,
        seed: 5,
    };
    run_closed_loop(dev, start, &spec)
}

fn median_of(xs: impl Iterator<Item = Nanos>) -> f64 {
    let v: Vec<Nanos> = xs.collect();
    quantile(&v, 0.5) as f64
}

#[test]
fn consumer_flush_and_gc_spikes() {
    let mut dev = SsdModel::new(preset("consumer").unwrap());
    // 1. Clean drive, sequential 64 KiB writes: buffer-flush spikes only.
    let s = seq_writes(&mut dev, 0, 200 * GIB, 4_000 * MS);
    let lat: Vec<Nanos> = s.iter().map(Sample::latency).collect();
    let m = mean(&lat);
    let flush = find_spikes(&s, (3.0 * m) as Nanos, MS);
    let dur = median_of(flush.iter().map(Spike::duration));
    let height = median_of(flush.iter().map(|x| x.height));
    println!(
        "consumer flush spikes: {} in 4 s, median duration {:.1} ms (source 3-12 ms), median height {:.1}x mean latency {:.2} ms (source 5-20x)",
        flush.len(),
        ms(dur),
        height / m,
        ms(m)
    );
    assert!(flush.len() >= 5, "{}", flush.len());
    for sp in &flush {
        assert!((2.5..=13.5).contains(&ms(sp.duration() as f64)), "{sp:?}");
        assert!(
            (4.0..=25.0).contains(&(sp.height as f64 / m)),
            "{sp:?} mean {m}"
        );
    }
    let h = height / m;
    assert!((5.0..=20.0).contains(&h), "{h}");
    assert_eq!(dev.stats().gc_stalls, 0);

    // 2. GC: a drive filled once, then a 2 GiB logical space rewritten over and over
    //    (§2.3's setup). The first ~9 GiB use up the erased pool; then GC passes begin.
    let mut dev = SsdModel::new(preset("consumer").unwrap());
    dev.age(&AgeSpec::filled());
    let s = seq_writes(&mut dev, 0, 2 * GIB, 30_000 * MS);
    assert!(dev.stats().gc_stalls >= 5, "{:?}", dev.stats());
    let lat: Vec<Nanos> = s.iter().map(Sample::latency).collect();
    let m = mean(&lat);
    let all = find_spikes(&s, (3.0 * m) as Nanos, MS);
    // GC spikes are the ones far above any flush stall (> 50 ms).
    let (gc, fl): (Vec<Spike>, Vec<Spike>) = all.iter().partition(|x| x.height > 50 * MS);
    let gc_dur = median_of(gc.iter().map(Spike::duration));
    let gc_h = median_of(gc.iter().map(|x| x.height));
    let fl_dur = median_of(fl.iter().map(Spike::duration));
    let fl_h = median_of(fl.iter().map(|x| x.height));
    let gaps: Vec<Nanos> = gc.windows(2).map(|w| w[1].start - w[0].end).collect();
    let gap = median_of(gaps.iter().copied());
    println!(
        "consumer GC spikes: {} (flush {}), height {:.0}x flush (source ~21x), duration {:.0}x flush (source ~18x), quiet gap {:.1}x GC spike (source ~10x); GC spike {:.0} ms",
        gc.len(),
        fl.len(),
        gc_h / fl_h,
        gc_dur / fl_dur,
        gap / gc_dur,
        ms(gc_dur)
    );
    assert!(gc.len() >= 4, "{}", gc.len());
    assert!(
        (8.0..=40.0).contains(&(gc_h / fl_h)),
        "height ratio {}",
        gc_h / fl_h
    );
    assert!(
        (8.0..=40.0).contains(&(gc_dur / fl_dur)),
        "duration ratio {}",
        gc_dur / fl_dur
    );
    assert!(
        (5.0..=20.0).contains(&(gap / gc_dur)),
        "gap ratio {}",
        gap / gc_dur
    );
}

// ---------------------------------------------------------------------------------------
// Datacenter drive: no periodic spikes when clean; >100 ms under aged random writes.

#[test]
fn dc_sequential_writes_show_no_periodic_spikes() {
    let mut dev = SsdModel::new(preset("dc").unwrap());
    let s = seq_writes(&mut dev, 0, 200 * GIB, 3_000 * MS);
    let lat: Vec<Nanos> = s.iter().map(Sample::latency).collect();
    let m = mean(&lat);
    let p999 = quantile(&lat, 0.999) as f64;
    let max = *lat.iter().max().unwrap() as f64;
    let mb_s = s.len() as f64 * 65536.0 / 3.0 / 1e6;
    println!(
        "dc sequential 64 KiB writes: {mb_s:.0} MB/s (source 195 MB/s measured), mean {:.2} ms, P99.9 {:.2} ms, max {:.2} ms: max/mean {:.1} (source: no periodic spikes)",
        ms(m),
        ms(p999),
        ms(max),
        max / m
    );
    assert!(max / m < 3.0);
    assert_eq!(dev.stats().stalls(), 0);
    assert!((mb_s - 195.0).abs() < 20.0, "{mb_s}");
}

/// Paper §2.3 / Fig. 4b: an aged DC drive under constant random 64 KiB writes runs normally
/// until GC is triggered, then latency goes far beyond 100 ms, with overlapping spikes, for
/// about a minute. The aged state starts with the erased space an idle drive's background GC
/// restores, so GC is not triggered at once.
#[test]
fn aged_dc_random_64k_writes_exceed_100ms() {
    let mut dev = SsdModel::new(preset("dc").unwrap());
    dev.age(&AgeSpec::paper());
    let cap = dev.capacity_bytes();
    let secs = 90;
    let spec = ClosedLoop {
        queue_depth: 32,
        kind: OpKind::Write,
        io_bytes: 64 << 10,
        pattern: Pattern::Random {
            start: 0,
            span: cap,
        },
        duration_ns: secs * 1_000 * MS,
        seed: 3,
    };
    let s = run_closed_loop(&mut dev, 0, &spec);
    let lat: Vec<Nanos> = s.iter().map(Sample::latency).collect();
    let over = lat.iter().filter(|&&l| l > 100 * MS).count();
    let max = *lat.iter().max().unwrap();
    let spikes = find_spikes(&s, 100 * MS, 50 * MS);
    let first = spikes.first().map_or(0, |x| x.start);
    let span: Nanos = spikes.iter().map(Spike::duration).sum();
    println!(
        "aged dc, random 64 KiB writes QD32 for {secs} s: first >100 ms request after {:.1} s, then >100 ms latency over {:.1} s (source: far beyond 100 ms for ~60 s once GC is triggered, overlapping spikes); max {:.0} ms, {:.0}% of requests > 100 ms, WA {:.1}",
        first as f64 / 1e9,
        span as f64 / 1e9,
        ms(max as f64),
        100.0 * over as f64 / lat.len() as f64,
        dev.stats().write_amplification()
    );
    assert!(max > 100 * MS);
    // Not at once, but within the run; then tens of seconds of >100 ms latency.
    assert!(first > 1_000 * MS && first < 45_000 * MS, "{first}");
    assert!(span > 20_000 * MS, "{span}");
    assert!(over as f64 > 0.02 * lat.len() as f64);
}

// ---------------------------------------------------------------------------------------
// Over-provisioning (Pitfalls): sustained random-write IOPS vs user-left spare capacity.

fn sustained_random_write_iops(spare: f64) -> f64 {
    let mut dev = SsdModel::new(preset("consumer").unwrap());
    dev.age(&AgeSpec::with_spare(spare));
    let used = ((dev.capacity_bytes() as f64 * (1.0 - spare)) as u64) & !4095;
    let spec = ClosedLoop {
        queue_depth: 32,
        kind: OpKind::Write,
        io_bytes: 4096,
        pattern: Pattern::Random {
            start: 0,
            span: used,
        },
        duration_ns: 6_000 * MS,
        seed: 8,
    };
    let s = run_closed_loop(&mut dev, 0, &spec);
    // Skip the first second (buffer filling, first GC pass).
    let n = s.iter().filter(|x| x.submit >= 1_000 * MS).count();
    n as f64 / 5.0
}

#[test]
fn spare_capacity_lifts_sustained_random_writes() {
    let base = sustained_random_write_iops(0.0);
    let mut last = base;
    for spare in [0.125, 0.25, 0.5] {
        let iops = sustained_random_write_iops(spare);
        println!(
            "consumer 4 KiB random writes, {:>4.1}% spare: {:>6.0} IOPS, {:.1}x the 0% case (source: up to 19x at 50%, 600 -> 11,500 IOPS)",
            spare * 100.0,
            iops,
            iops / base
        );
        assert!(iops > last);
        last = iops;
    }
    println!("consumer 4 KiB random writes,  0.0% spare: {base:>6.0} IOPS");
    assert!(last / base >= 10.0, "{}", last / base);
    assert!(last / base <= 25.0, "{}", last / base);
}
