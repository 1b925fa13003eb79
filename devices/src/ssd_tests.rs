//! Behavioural unit tests of the SSD model (the calibration against sources is in
//! `tests/calibration.rs`).

use fusionraid_core::Nanos;
use fusionraid_core::rng::Rng;
use proptest::prelude::*;

use crate::config::ProgramSuspend;
use crate::presets::{consumer, dc};
use crate::{AgeSpec, DeviceModel, LatencyDist, OpKind, SsdModel};

const US: Nanos = 1_000;
const MS: Nanos = 1_000_000;

/// `dc` with constant latencies so single requests can be checked exactly.
fn exact() -> crate::SsdConfig {
    let mut c = dc();
    c.read_latency = LatencyDist::constant(36_000.0);
    c.write_latency = LatencyDist::constant(37_000.0);
    c
}

#[test]
fn unloaded_latency_and_transfer_time() {
    let mut m = SsdModel::new(exact());
    assert_eq!(m.submit(0, OpKind::Read, 0, 4096), 36 * US);
    assert_eq!(m.submit(MS, OpKind::Write, 0, 4096), MS + 37 * US);
    // 64 KiB read: 60 KiB more over the 560 MB/s link.
    let t = 10 * MS;
    let done = m.submit(t, OpKind::Read, 1 << 30, 65536);
    let extra = crate::xfer_ns(65536, 560.0) - crate::xfer_ns(4096, 560.0);
    assert_eq!(done - t, 36 * US + extra);
    assert!((extra as f64 - 61_440.0 / 0.56).abs() < 2.0);
}

#[test]
fn same_seed_same_completions() {
    let run = |seed: u64| {
        let mut m = SsdModel::new(consumer().with_seed(seed));
        let mut rng = Rng::new(42);
        let mut t = 0;
        (0..5_000)
            .map(|_| {
                t += rng.below(20 * US);
                let kind = if rng.unit() < 0.3 {
                    OpKind::Write
                } else {
                    OpKind::Read
                };
                m.submit(t, kind, rng.below(1 << 20) * 4096, 4096 << rng.below(5))
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

#[test]
fn speed_factor_stretches_service() {
    let mut slow = SsdModel::new(exact().with_speed_factor(2.0));
    assert_eq!(slow.submit(0, OpKind::Read, 0, 4096), 72 * US);
    let mut m = SsdModel::new(exact());
    m.set_speed_factor(3.0);
    assert_eq!(m.submit(0, OpKind::Read, 0, 4096), 108 * US);
}

#[test]
fn sustained_writes_settle_at_flash_rate() {
    let mut m = SsdModel::new(exact());
    let mut t = 0;
    let mut last = 0;
    // Keep 8 sequential 128 KiB writes in flight for 2 s of virtual time.
    let mut inflight = std::collections::VecDeque::new();
    let mut off = 0;
    while t < 2_000 * MS {
        while inflight.len() < 8 {
            let done = m.submit(t, OpKind::Write, off, 128 << 10);
            off += 128 << 10;
            inflight.push_back(done);
        }
        t = inflight.pop_front().unwrap().max(t);
        last = t;
    }
    let mb_s = off as f64 / (last as f64 / 1e3);
    // The buffer first absorbs 32 MiB at the 280 MB/s link rate; then 195 MB/s.
    assert!((195.0..215.0).contains(&mb_s), "{mb_s}");
}

#[test]
fn flush_spike_blocks_reads_too() {
    let mut c = consumer();
    c.read_latency = LatencyDist::constant(50_000.0);
    let every = c.flush_spikes.unwrap().every_bytes;
    let mut m = SsdModel::new(c);
    let mut t = 0;
    let mut off = 0;
    // Write exactly up to the flush threshold, paced below the link rate.
    while off < every {
        m.submit(t, OpKind::Write, off, 1 << 20);
        off += 1 << 20;
        t += 3 * MS;
    }
    assert_eq!(m.stats().flush_stalls, 1);
    let read = m.submit(t, OpKind::Read, 1 << 40, 4096) - t;
    // The flush began at the last write's admission (about 3 ms before `t`) and lasts 3-12
    // ms, so a read now waits for what is left of it, or, if it is over, nothing.
    assert!(read == 50 * US || read > 50 * US + 100 * US, "{read}");
    assert!(read <= 12 * MS, "{read}");
}

#[test]
fn reads_wait_for_programs_unless_suspended() {
    let mut c = exact();
    c.channels = 1;
    c.dies_per_channel = 1;
    c.program_ns = 2 * MS;
    let run = |c: crate::SsdConfig| {
        let mut m = SsdModel::new(c.clone());
        // One program unit of writes, then a read on the (only) die while it programs.
        for i in 0..16 {
            m.submit(0, OpKind::Write, i * 4096, 4096);
        }
        m.submit(500 * US, OpKind::Read, 1 << 30, 4096) - 500 * US
    };
    let blocked = run(c.clone());
    // The program started at ~37 us of admission... it ends around 2 ms; the read waits.
    assert!(blocked > 1_400 * US, "{blocked}");
    c.program_suspend = Some(ProgramSuspend {
        suspend_ns: 50 * US,
        max_per_program: 1,
    });
    let suspended = run(c);
    assert_eq!(suspended, 50 * US + 36 * US);
}

#[test]
fn trim_lowers_utilisation_and_gc_cost() {
    let mut m = SsdModel::new(dc());
    m.age(&AgeSpec::paper());
    let u_full = m.flash().utilisation();
    let cap = m.capacity_bytes();
    m.submit(0, OpKind::Trim, 0, cap / 2);
    assert_eq!(m.stats().trims, 1);
    assert!((m.flash().utilisation() / u_full - 0.5).abs() < 1e-3);
}

#[test]
fn random_overwrites_amplify_sequential_do_not() {
    let mut aged = SsdModel::new(dc());
    aged.age(&AgeSpec::paper());
    let mut rng = Rng::new(1);
    let cap = aged.capacity_bytes();
    let mut t = 0;
    // The first ~2 GiB land in the erased space the idle drive restored; measure after.
    let mut write = |n: usize, t: &mut Nanos| {
        for _ in 0..n {
            *t = aged.submit(*t, OpKind::Write, rng.below(cap / 65536) * 65536, 65536);
        }
        aged.stats()
    };
    let before = write(40_000, &mut t);
    let after = write(20_000, &mut t);
    let wa = (after.flash_bytes_written - before.flash_bytes_written) as f64
        / (after.bytes_written - before.bytes_written) as f64;
    assert!(wa > 3.0 && wa < 8.0, "{wa}");

    let mut filled = SsdModel::new(dc());
    filled.age(&AgeSpec::filled());
    let mut t = 0;
    for i in 0..200_000u64 {
        t = filled.submit(t, OpKind::Write, (i * 65536) % (8 << 30), 65536);
    }
    let wa = filled.stats().write_amplification();
    assert!(wa < 1.2, "{wa}");
}

#[test]
fn non_plp_flush_waits_for_the_buffer() {
    let mut m = SsdModel::new(consumer());
    for i in 0..4 {
        m.submit(0, OpKind::Write, i * 4096, 4096);
    }
    let done = m.submit(100 * US, OpKind::Flush, 0, 0);
    // The 16 KiB left in the buffer is programmed (a quarter-unit program of ~0.26 ms).
    assert!(done > 300 * US, "{done}");
    let mut m = SsdModel::new(dc());
    m.submit(0, OpKind::Write, 0, 4096);
    assert!(m.submit(100 * US, OpKind::Flush, 0, 0) < 200 * US);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn completions_never_precede_arrivals(
        ops in proptest::collection::vec((0u64..50_000, 0u8..4, 0u64..1 << 28, 1u64..1 << 20), 1..300),
        aged in any::<bool>(),
    ) {
        for cfg in [dc(), consumer()] {
            let mut m = SsdModel::new(cfg);
            if aged {
                m.age(&AgeSpec::paper());
            }
            let mut t = 0;
            for &(gap, k, off, len) in &ops {
                t += gap;
                let kind = [OpKind::Read, OpKind::Write, OpKind::Trim, OpKind::Flush][k as usize];
                let done = m.submit(t, kind, off * 4096, len);
                prop_assert!(done >= t);
            }
        }
    }
}

#[test]
fn huge_write_is_paced_by_flash() {
    let mut m = SsdModel::new(exact());
    // 256 MiB in one request: far beyond the 32 MiB buffer, so the acknowledgement waits
    // until all but the buffer's worth has been programmed at 195 MB/s.
    let len = 256u64 << 20;
    let done = m.submit(0, OpKind::Write, 0, len);
    let floor = ((len - (32 << 20)) as f64 / 195e6 * 1e9) as Nanos;
    assert!(done > floor, "{done} {floor}");
    assert!(done < floor + 200 * MS, "{done} {floor}");
}

/// Members of a fleet leave ageing at independent points of their flush and GC cycles (drawn
/// from each one's seed), not all at the same erased level with the same flush counter.
#[test]
fn aged_members_have_their_own_phase() {
    let aged = |seed: u64| {
        let mut m = SsdModel::new(consumer().with_seed(seed));
        m.age(&AgeSpec::paper());
        m
    };
    let crate::GcPolicy::Blocking {
        low_bytes,
        high_bytes,
        ..
    } = consumer().gc
    else {
        panic!("consumer GC is blocking")
    };
    let levels: Vec<f64> = (0..200).map(|s| aged(s).flash().free_bytes()).collect();
    assert!(
        levels
            .iter()
            .all(|&l| l >= low_bytes as f64 && l <= high_bytes as f64)
    );
    let mean = levels.iter().sum::<f64>() / levels.len() as f64;
    let mid = (low_bytes + high_bytes) as f64 / 2.0;
    // Uniform over the range: the standard error of 200 draws is ~2% of the range.
    assert!((mean - mid).abs() < 0.08 * (high_bytes - low_bytes) as f64);
    assert_eq!(aged(7).flash().free_bytes(), aged(7).flash().free_bytes());

    // Sequential writes from the same start: the first flush stall comes after a different
    // amount of data on each member.
    let first_stall = |seed: u64| {
        let mut m = aged(seed);
        let mut t = 0;
        for i in 0..4096u64 {
            let done = m.submit(t, OpKind::Write, i * 65536, 65536);
            if done - t > 3 * MS {
                return i;
            }
            t = done;
        }
        u64::MAX
    };
    let firsts: Vec<u64> = (0..6).map(first_stall).collect();
    assert!(firsts.iter().all(|&i| i < 4096), "{firsts:?}");
    let distinct: std::collections::BTreeSet<_> = firsts.iter().collect();
    assert!(distinct.len() >= 5, "{firsts:?}");
    // A datacenter drive has no flush cycle and its idle GC restores one level: unchanged.
    let dc_level = |seed: u64| {
        let mut m = SsdModel::new(dc().with_seed(seed));
        m.age(&AgeSpec::paper());
        m.flash().free_bytes()
    };
    assert_eq!(dc_level(1), dc_level(2));
}

/// An aged `dc` rewriting 1 GiB cleans in idle time: with discrete events each 16 MiB of
/// victims cleaned is erased on a die in one 5 ms piece and FTL metadata writes hold the
/// drive, so reads meet waits of milliseconds that the same drive without the events never
/// shows; a fresh drive (nothing to clean) has no events at all.
#[test]
fn internal_events_follow_cleaning_and_hold_requests() {
    use crate::events::{InternalEvents, MapWrites};
    let events = InternalEvents {
        discrete_erases: true,
        map_writes: Some(MapWrites {
            per_cleaned_bytes: 64 << 20,
            min_ns: 8 * MS,
            max_ns: 8 * MS,
        }),
    };
    let run = |events: InternalEvents, aged: bool| {
        let mut c = exact();
        c.events = events;
        let mut m = SsdModel::new(c);
        if aged {
            m.age(&AgeSpec::paper());
        }
        let mut rng = Rng::new(3);
        let mut worst = 0;
        // A 64 KiB write every ms (65 MB/s) into 1 GiB and a 4 KiB read 0.5 ms later, 10 s.
        for i in 0..10_000u64 {
            let t = i * MS;
            m.submit(t, OpKind::Write, rng.below(1 << 14) * 65536, 65536);
            let r = t + MS / 2;
            worst = worst.max(m.submit(r, OpKind::Read, rng.below(1 << 20) * 4096, 4096) - r);
        }
        (m.stats(), worst)
    };
    let (st, worst) = run(events, true);
    let cleaned = st.flash_bytes_written as f64; // steady state: cleaned ~ programmed
    let blocks = cleaned / (16 << 20) as f64;
    assert!(
        (st.erases as f64) > 0.8 * blocks && (st.erases as f64) < 1.2 * blocks,
        "{} erases for {blocks:.0} blocks",
        st.erases
    );
    let maps = cleaned / (64 << 20) as f64;
    assert!(
        (st.map_write_stalls as f64) > 0.5 * maps && (st.map_write_stalls as f64) < 1.5 * maps,
        "{} metadata writes, ~{maps:.0} expected",
        st.map_write_stalls
    );
    assert!(worst > 5 * MS, "{worst}");
    let (plain, plain_worst) = run(InternalEvents::default(), true);
    assert_eq!((plain.erases, plain.map_write_stalls), (0, 0));
    assert!(plain_worst < 4 * MS, "{plain_worst}");
    let (fresh, _) = run(events, false);
    assert_eq!((fresh.erases, fresh.map_write_stalls), (0, 0));
}
