//! Replaying the real TPC-C excerpt (DiskSim format) in both pacing modes.

use fusionraid_sim::trace::{ReplayMode, TraceFormat};
use fusionraid_sim::{Load, Scenario, Sim};

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/data/traces/tpcc-small.trace"
);
/// Requests in the excerpt.
const RECORDS: u64 = 6999;

fn scenario(mode: ReplayMode) -> Scenario {
    let mut sc = Scenario::default_mix(1.0);
    sc.pool.capacity_bytes = Some(16 << 30);
    sc.volume_bytes = Some(4 << 30);
    sc.load = Load::Trace {
        path: TRACE.into(),
        format: TraceFormat::DiskSim,
        mode,
    };
    sc.duration_ns = None;
    sc
}

#[test]
fn timestamp_replay_completes_every_request() {
    let r = Sim::new(&scenario(ReplayMode::Timestamp { speed: 1.0 }))
        .unwrap()
        .run()
        .unwrap();
    let q = &r.requests;
    assert_eq!(q.trace_errors, 0, "{:?}", q.first_trace_error);
    assert_eq!(q.arrived, RECORDS);
    assert_eq!(q.completed, RECORDS);
    assert_eq!(q.failed, 0);
    // The excerpt spans about 0.14 s and is 37% writes.
    assert!(r.virtual_s > 0.1 && r.virtual_s < 1.0, "{}", r.virtual_s);
    let wr = q.writes as f64 / q.completed as f64;
    assert!((wr - 0.37).abs() < 0.05, "write share {wr}");
    assert_eq!(r.latency.workloads.len(), 1);
    assert_eq!(r.latency.workloads[0].name, "trace");
    assert!(r.latency.all.read.p50_us > 0.0);

    // Twice as fast: the same requests in about half the time.
    let fast = Sim::new(&scenario(ReplayMode::Timestamp { speed: 2.0 }))
        .unwrap()
        .run()
        .unwrap();
    assert_eq!(fast.requests.completed, RECORDS);
    assert!(
        fast.virtual_s < r.virtual_s * 0.7,
        "{} vs {}",
        fast.virtual_s,
        r.virtual_s
    );
}

#[test]
fn closed_loop_replay_keeps_the_queue_depth() {
    let mut sc = scenario(ReplayMode::ClosedLoop { queue_depth: 16 });
    sc.max_requests = 8; // half the queue depth waits in the driver's hold queue
    let r = Sim::new(&sc).unwrap().run().unwrap();
    let q = &r.requests;
    assert_eq!(q.completed, RECORDS);
    assert!(q.held > 0 && q.max_held <= 8, "{q:?}");
    assert_eq!(q.dropped, 0);
    // A duration cuts the replay short.
    let mut sc = scenario(ReplayMode::ClosedLoop { queue_depth: 4 });
    sc.duration_ns = Some(5_000_000);
    let r = Sim::new(&sc).unwrap().run().unwrap();
    assert!(r.requests.completed > 0 && r.requests.completed < RECORDS);
}

#[test]
fn missing_trace_is_a_clear_error() {
    let mut sc = scenario(ReplayMode::Timestamp { speed: 1.0 });
    sc.load = Load::Trace {
        path: "/nonexistent/x.trace".into(),
        format: TraceFormat::DiskSim,
        mode: ReplayMode::Timestamp { speed: 1.0 },
    };
    let e = Sim::new(&sc).err().expect("missing file").to_string();
    assert!(e.contains("/nonexistent/x.trace"), "{e}");
}

#[test]
fn looped_trace_runs_next_to_generated_workloads() {
    let mut sc = scenario(ReplayMode::Timestamp { speed: 1.0 });
    sc.load = Load::TraceMix {
        path: TRACE.into(),
        format: TraceFormat::DiskSim,
        speed: 1.0,
        list: vec![fusionraid_sim::workload::Workload::Proxy],
        scale: 1.0,
    };
    // About 2.2 rounds of the 0.136 s excerpt.
    sc.duration_ns = Some(300_000_000);
    let r = Sim::new(&sc).unwrap().run().unwrap();
    let names: Vec<&str> = r
        .latency
        .workloads
        .iter()
        .map(|w| w.name.as_str())
        .collect();
    assert_eq!(names, ["trace", "proxy"]);
    let trace = &r.latency.workloads[0];
    assert!(
        trace.requests > 2 * RECORDS && trace.requests < 3 * RECORDS,
        "{}",
        trace.requests
    );
    assert!(r.latency.workloads[1].requests > 0);
    assert_eq!(r.requests.completed, r.requests.arrived);
    assert_eq!(r.requests.trace_errors, 0);
    // Without a duration a looped trace would never end.
    sc.duration_ns = None;
    assert!(Sim::new(&sc).is_err());
}

/// A trace whose timestamps (or whose replay speed) put an arrival beyond the simulator's
/// year of virtual time fails the run with a clear error, rather than a panic on an
/// overflowing device clock (near u64::MAX ns) or a report of centuries of virtual time.
#[test]
fn arrivals_beyond_a_year_are_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("fusionraid-far-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let far = dir.join("far.trace");
    // A write at 0, a read at u64::MAX ns (MQSim DiskSim: nanoseconds).
    std::fs::write(&far, "0 0 0 8 0\n18446744073709551615 0 8 8 1\n").unwrap();
    let mut sc = scenario(ReplayMode::Timestamp { speed: 1.0 });
    sc.prefill = false;
    sc.load = Load::Trace {
        path: far.clone(),
        format: TraceFormat::DiskSim,
        mode: ReplayMode::Timestamp { speed: 1.0 },
    };
    let e = Sim::new(&sc)
        .unwrap()
        .run()
        .map(|_| ())
        .expect_err("beyond a year");
    let e = e.to_string();
    assert!(e.contains("beyond") && e.contains("year"), "{e}");
    // A day later is fine (the device models' clocks are far from overflow).
    std::fs::write(&far, "0 0 0 8 0\n86400000000000 0 8 8 1\n").unwrap();
    let r = Sim::new(&sc).unwrap().run().unwrap();
    assert_eq!(r.requests.completed, 2);
    // The real excerpt replayed at a tiny speed spreads over far more than a year.
    let mut sc = scenario(ReplayMode::Timestamp { speed: 1e-300 });
    sc.prefill = false;
    let e = Sim::new(&sc)
        .unwrap()
        .run()
        .map(|_| ())
        .expect_err("beyond a year");
    assert!(e.to_string().contains("beyond"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A trace that cannot be read (here a directory: opening it succeeds, reading fails) fails
/// the run: the read error is not one "unreadable line skipped", and an empty replay with
/// exit status 0 would hide it.
#[test]
fn a_trace_that_cannot_be_read_fails_the_run() {
    let dir = std::env::temp_dir().join(format!("fusionraid-dir-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut sc = scenario(ReplayMode::Timestamp { speed: 1.0 });
    sc.prefill = false;
    sc.load = Load::Trace {
        path: dir.clone(),
        format: TraceFormat::DiskSim,
        mode: ReplayMode::ClosedLoop { queue_depth: 4 },
    };
    let e = match Sim::new(&sc) {
        Err(e) => e.to_string(),
        Ok(sim) => sim.run().map(|_| ()).expect_err("a directory").to_string(),
    };
    assert!(
        e.contains("could not be read") && e.contains("directory"),
        "{e}"
    );
    // The looped trace (read whole at set-up) too.
    sc.load = Load::TraceMix {
        path: dir.clone(),
        format: TraceFormat::DiskSim,
        speed: 1.0,
        list: vec![],
        scale: 1.0,
    };
    sc.duration_ns = Some(1_000_000);
    let e = Sim::new(&sc)
        .map(|_| ())
        .expect_err("a directory")
        .to_string();
    assert!(
        e.contains("could not be read") && e.contains("directory"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `sc` to an error (set-up or run), as its message.
fn failure(sc: &Scenario) -> String {
    match Sim::new(sc) {
        Err(e) => e.to_string(),
        Ok(sim) => sim
            .run()
            .map(|_| ())
            .expect_err("the run must fail")
            .to_string(),
    }
}

/// A trace of which no line is a request (read in the wrong format, empty) replayed nothing
/// and reported zero latencies and zero IOPS as a successful run.
#[test]
fn a_trace_with_no_request_fails_the_run() {
    let mut sc = scenario(ReplayMode::Timestamp { speed: 1.0 });
    sc.prefill = false;
    // The DiskSim excerpt read as MSR CSV: every line unreadable.
    sc.load = Load::Trace {
        path: TRACE.into(),
        format: TraceFormat::Msr,
        mode: ReplayMode::Timestamp { speed: 1.0 },
    };
    let e = failure(&sc);
    assert!(
        e.contains("no request could be read") && e.contains("6999 unreadable lines"),
        "{e}"
    );
    let empty = std::env::temp_dir().join(format!("fusionraid-empty-{}.trace", std::process::id()));
    std::fs::write(&empty, "").unwrap();
    sc.load = Load::Trace {
        path: empty.clone(),
        format: TraceFormat::DiskSim,
        mode: ReplayMode::ClosedLoop { queue_depth: 4 },
    };
    let e = failure(&sc);
    std::fs::remove_file(&empty).unwrap();
    assert!(e.contains("the trace holds no request"), "{e}");
}

/// A warm-up longer than the trace left every request out of the statistics: a report of
/// zeros, and success (workload runs refuse it up front; a trace's length is known only
/// once replayed).
#[test]
fn a_warm_up_longer_than_the_trace_fails_the_run() {
    let mut sc = scenario(ReplayMode::Timestamp { speed: 1.0 });
    sc.prefill = false;
    sc.warmup_ns = 100_000_000_000;
    let e = failure(&sc);
    assert!(
        e.contains("every request of the trace arrived within the warm-up"),
        "{e}"
    );
    // A warm-up shorter than the trace measures what follows it.
    sc.warmup_ns = 50_000_000;
    let r = Sim::new(&sc).unwrap().run().unwrap();
    assert!(r.latency.all.all.count > 0 && r.latency.all.all.count < RECORDS);
}
