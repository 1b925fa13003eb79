//! Trace readers against small fixtures (exact records), malformed input (errors name file and
//! line), the real MQSim TPC-C excerpt, replay pacing and remapping.

use std::io::Cursor;
use std::path::PathBuf;

use fusionraid_sim::trace::{
    Arrival, BlkEvent, IoKind, IoRecord, ReplayMode, Replayer, TraceError, TraceFormat,
    TraceOptions, TraceStats, VolumeRemap, open_trace, open_trace_with, read_trace,
};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn rec(time_ns: u64, kind: IoKind, offset: u64, len: u64, stream: u32) -> IoRecord {
    IoRecord {
        time_ns,
        kind,
        offset,
        len,
        stream,
    }
}

fn read_all(name: &str, format: TraceFormat, opts: &TraceOptions) -> Vec<IoRecord> {
    open_trace_with(fixture(name), format, opts)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

fn from_text(text: &'static str, name: &str, format: TraceFormat) -> Vec<Result<IoRecord, String>> {
    read_trace(
        Cursor::new(text.as_bytes()),
        name,
        format,
        &TraceOptions::default(),
    )
    .map(|r| r.map_err(|e| e.to_string()))
    .collect()
}

/// The error messages of a read, in the order they were yielded. (Errors can come out ahead
/// of records still held by the tie buffer or reorder window, so tests do not rely on their
/// position among records.)
fn errors(out: &[Result<IoRecord, String>]) -> Vec<&str> {
    out.iter()
        .filter_map(|r| r.as_ref().err().map(String::as_str))
        .collect()
}

use IoKind::{Read, Trim, Write};

#[test]
fn disksim_fixture() {
    let got = read_all(
        "disksim.trace",
        TraceFormat::DiskSim,
        &TraceOptions::default(),
    );
    assert_eq!(
        got,
        vec![
            rec(0, Read, 0, 4096, 0),
            rec(500, Write, 16 * 512, 8192, 1),
            rec(500, Write, 2048 * 512, 512, 0),
            rec(2000, Read, 4 * 512, 4096, 2),
        ]
    );
}

#[test]
fn disksim_bad_lines_name_file_and_line_and_reading_goes_on() {
    let path = fixture("disksim-bad.trace");
    let out: Vec<_> = open_trace(&path, TraceFormat::DiskSim).unwrap().collect();
    assert_eq!(out.len(), 4);
    let p = path.display().to_string();
    let e1 = out[1].as_ref().unwrap_err().to_string();
    assert_eq!(
        e1,
        format!("{p}:2: field 4 (size in sectors) is not a number: 'x'")
    );
    let e2 = out[2].as_ref().unwrap_err();
    assert_eq!(e2.line_number(), Some(3));
    assert!(e2.to_string().contains("field 5"), "{e2}");
    assert_eq!(out[0].as_ref().unwrap(), &rec(0, Read, 0, 4096, 0));
    assert_eq!(
        out[3].as_ref().unwrap(),
        &rec(300, Write, 24 * 512, 4096, 0)
    );
}

#[test]
fn missing_file_is_an_io_error_naming_it() {
    let Err(e) = open_trace("/nonexistent/x.trace", TraceFormat::Msr) else {
        panic!("opened a missing file");
    };
    assert!(matches!(e, TraceError::Io { .. }));
    assert!(e.to_string().starts_with("/nonexistent/x.trace: "), "{e}");
}

/// A file of `bytes` in the temporary directory, removed when the guard drops.
struct TempTrace(PathBuf);
impl TempTrace {
    fn new(name: &str, bytes: &[u8]) -> Self {
        let p = std::env::temp_dir().join(format!("fr-trace-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        TempTrace(p)
    }
}
impl Drop for TempTrace {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn gzipped_traces_are_read_as_they_are_and_other_compressions_refused_with_the_command() {
    use std::io::Write;
    let plain = std::fs::read(fixture("msr.csv")).unwrap();
    // Two gzip members, as `cat a.gz b.gz` makes: both are read.
    let half = plain.len() / 2;
    let cut = half + plain[half..].iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut gz = Vec::new();
    for part in [&plain[..cut], &plain[cut..]] {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(part).unwrap();
        gz.extend(e.finish().unwrap());
    }
    let f = TempTrace::new("msr.csv.gz", &gz);
    let got: Vec<IoRecord> = open_trace(&f.0, TraceFormat::Msr)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        got,
        read_all("msr.csv", TraceFormat::Msr, &TraceOptions::default())
    );

    let xz = TempTrace::new("t.xz", &[0xfd, b'7', b'z', b'X', b'Z', 0, 1, 2, 3]);
    let Err(e) = open_trace(&xz.0, TraceFormat::Msr) else {
        panic!("read an xz file as text");
    };
    assert!(matches!(e, TraceError::Io { .. }));
    assert!(
        e.to_string().contains("xz-compressed") && e.to_string().contains("xz -dk"),
        "{e}"
    );
}

#[test]
fn msr_fixture() {
    let got = read_all("msr.csv", TraceFormat::Msr, &TraceOptions::default());
    assert_eq!(
        got,
        vec![
            rec(0, Read, 3_218_866_176, 4096, 1),
            rec(1_332_052_600, Write, 3_154_264_064, 4096, 1),
            rec(2_332_061_600, Write, 1_585_938_432, 65536, 0),
        ]
    );
    let bad = from_text(
        "1,hm,0,Read,0,512,1\n2,hm,0,Read,0\n",
        "m.csv",
        TraceFormat::Msr,
    );
    assert_eq!(
        errors(&bad),
        [
            "m.csv:2: expected 6 fields (timestamp in 100 ns ticks, hostname, disk number, \
         type (Read or Write), offset in bytes, size in bytes), found 5"
        ]
    );
}

#[test]
fn alibaba_fixture_spreads_microsecond_ties() {
    let got = read_all(
        "alibaba.csv",
        TraceFormat::Alibaba,
        &TraceOptions::default(),
    );
    assert_eq!(
        got,
        vec![
            rec(0, Read, 126_703_644_672, 4096, 0),
            rec(100_000, Write, 5_540_118_528, 16384, 0),
            rec(100_500, Write, 0, 4096, 3),
        ]
    );
    let exact = TraceOptions {
        spread_ties: false,
        ..TraceOptions::default()
    };
    let got = read_all("alibaba.csv", TraceFormat::Alibaba, &exact);
    assert_eq!(got[2].time_ns, 100_000);
    let bad = from_text(
        "1,R,0,4096,10\n1,R,0,4k,11\n",
        "a.csv",
        TraceFormat::Alibaba,
    );
    assert_eq!(
        errors(&bad),
        ["a.csv:2: field 4 (length in bytes) is not a number: '4k'"]
    );
}

#[test]
fn tencent_fixture_spreads_whole_seconds() {
    let got = read_all(
        "tencent.csv",
        TraceFormat::Tencent,
        &TraceOptions::default(),
    );
    assert_eq!(
        got,
        vec![
            rec(0, Write, 12_132_000 * 512, 4096, 1283),
            rec(333_333_333, Read, 4000 * 512, 8192, 1283),
            rec(666_666_666, Write, 8 * 512, 4096, 7),
            rec(1_000_000_000, Read, 100 * 512, 4096, 7),
        ]
    );
    let bad = from_text("5,0,8,1,1\n5,0,8,1,-2\n", "t.csv", TraceFormat::Tencent);
    assert_eq!(
        errors(&bad),
        ["t.csv:2: field 5 (volume id) is not a number: '-2'"]
    );
}

#[test]
fn blkparse_fixture_queue_and_issue() {
    let got = read_all(
        "blkparse.txt",
        TraceFormat::Blkparse,
        &TraceOptions::default(),
    );
    assert_eq!(
        got,
        vec![
            rec(0, Write, 223_490 * 512, 4096, 0),
            rec(98_000, Read, 1024 * 512, 131_072, 1),
            rec(998_000, Trim, 4096 * 512, 1 << 20, 1),
        ]
    );
    let issue = TraceOptions {
        blkparse_event: BlkEvent::Issue,
        ..TraceOptions::default()
    };
    let got = read_all("blkparse.txt", TraceFormat::Blkparse, &issue);
    assert_eq!(got, vec![rec(0, Write, 223_490 * 512, 4096, 0)]);
    let bad = from_text(
        "8,0 0 1 0.1 5 Q W 12 + eight [x]\n",
        "b.txt",
        TraceFormat::Blkparse,
    );
    assert_eq!(
        bad[0].as_ref().unwrap_err(),
        "b.txt:1: field 10 (sector count) is not a number: 'eight'"
    );
}

#[test]
fn fio_v2_fixture_has_no_clock_except_waits() {
    let got = read_all("fio-v2.log", TraceFormat::Fio, &TraceOptions::default());
    assert_eq!(
        got,
        vec![
            rec(0, Write, 0, 4096, 0),
            rec(0, Read, 1 << 20, 65536, 1),
            rec(100_000, Trim, 8192, 4096, 0),
        ]
    );
}

#[test]
fn fio_v3_fixture_and_errors() {
    let got = read_all("fio-v3.log", TraceFormat::Fio, &TraceOptions::default());
    assert_eq!(
        got,
        vec![
            rec(0, Write, 0, 16384, 0),
            rec(10_000, Write, 16384, 16384, 0),
            rec(13_000, Read, 0, 4096, 0),
        ]
    );
    let bad = from_text("fio version 1 iolog\n", "f.log", TraceFormat::Fio);
    assert!(
        bad[0]
            .as_ref()
            .unwrap_err()
            .starts_with("f.log:1: not a fio iolog")
    );
    let bad = from_text(
        "fio version 3 iolog\n0 /dev/a add\n5 /dev/a scribble 0 4096\n",
        "f.log",
        TraceFormat::Fio,
    );
    assert_eq!(
        bad[0].as_ref().unwrap_err(),
        "f.log:3: field 3 (action) is 'scribble'"
    );
}

#[test]
fn out_of_order_is_an_error_or_sorted_within_a_window() {
    let text = "0,R,0,4096,100\n0,R,4096,4096,300\n0,R,8192,4096,200\n0,R,0,4096,400\n";
    let strict = from_text(text, "o.csv", TraceFormat::Alibaba);
    assert_eq!(strict.len(), 4);
    let e = errors(&strict);
    assert_eq!(e.len(), 1);
    assert!(
        e[0].starts_with("o.csv:3: time goes backwards: 200000 ns after a record at 300000 ns"),
        "{}",
        e[0]
    );
    let window = TraceOptions {
        reorder_window: 4,
        ..TraceOptions::default()
    };
    let sorted: Vec<u64> = read_trace(
        Cursor::new(text.as_bytes()),
        "o.csv",
        TraceFormat::Alibaba,
        &window,
    )
    .map(|r| r.unwrap().time_ns)
    .collect();
    assert_eq!(sorted, vec![0, 100_000, 200_000, 300_000]);
}

#[test]
fn binary_garbage_is_reported_not_panicked() {
    let text: &'static [u8] = b"\xff\xfe\x00garbage\n1,R,0,4096,5\n";
    let out: Vec<_> = read_trace(
        Cursor::new(text),
        "g.bin",
        TraceFormat::Alibaba,
        &TraceOptions::default(),
    )
    .collect();
    assert!(
        out[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("g.bin:1: line is not valid UTF-8")
    );
    assert!(out[1].is_ok());
    let long = vec![b'7'; 100_000];
    let out: Vec<_> = read_trace(
        Cursor::new(long),
        "l.txt",
        TraceFormat::DiskSim,
        &TraceOptions::default(),
    )
    .collect();
    assert_eq!(out.len(), 1);
    assert!(
        out[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("longer than")
    );
}

/// The MQSim TPC-C excerpt shipped with the project's shared data.
fn tpcc_path() -> Option<PathBuf> {
    let candidates = [
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/traces/tpcc-small.trace"),
        PathBuf::from("/work/shared/data/traces/tpcc-small.trace"),
    ];
    candidates.into_iter().find(|p| p.exists())
}

#[test]
fn real_tpcc_small_trace_parses_entirely() {
    let Some(path) = tpcc_path() else {
        eprintln!("tpcc-small.trace not found; skipping");
        return;
    };
    let mut stats = TraceStats::default();
    let mut prev = 0;
    for r in open_trace(&path, TraceFormat::DiskSim).unwrap() {
        let r = r.unwrap();
        assert!(r.time_ns >= prev);
        prev = r.time_ns;
        stats.add(&r);
    }
    println!("tpcc-small.trace: {stats}");
    assert_eq!(stats.records, 6999);
    assert_eq!(stats.first_ns, Some(0));
    assert_eq!(stats.span_ns(), 1_075_002_000 - 938_513_000);
    assert_eq!(stats.writes, 2618);
    assert_eq!(stats.reads, 4381);
    assert_eq!(stats.streams, 16);
    let mean = (stats.read_bytes + stats.write_bytes) as f64 / stats.records as f64;
    assert!((7.0..10.0).contains(&(mean / 1024.0)), "mean size {mean}");
}

#[test]
fn replay_speed_scaling_on_the_real_trace() {
    let Some(path) = tpcc_path() else {
        return;
    };
    let recs: Vec<IoRecord> = open_trace(&path, TraceFormat::DiskSim)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let span = recs.last().unwrap().time_ns;
    for speed in [1.0, 2.0, 0.5] {
        let mode = ReplayMode::Timestamp { speed };
        let mut rp = Replayer::new(mode, recs.iter().copied(), 1_000).unwrap();
        let mut last = 0;
        let mut n = 0;
        while let Arrival::Issue { at, record } = rp.next_arrival(0, 0) {
            assert!(at >= last);
            assert_eq!(record.time_ns, at);
            last = at;
            n += 1;
        }
        assert_eq!(n, recs.len());
        let want = 1_000 + (span as f64 / speed).round() as u64;
        assert_eq!(last, want, "speed {speed}");
    }
}

#[test]
fn closed_loop_keeps_queue_depth_outstanding() {
    // A toy driver: every request takes 100 us; at most 4 in flight.
    let recs: Vec<IoRecord> = (0..10u64)
        .map(|i| rec(i * 1_000_000, Read, 0, 4096, 0))
        .collect();
    let mode = ReplayMode::ClosedLoop { queue_depth: 4 };
    let mut rp = Replayer::new(mode, recs.into_iter(), 0).unwrap();
    let mut now = 0;
    let mut completions: Vec<u64> = Vec::new(); // completion times of in-flight requests
    let mut issued_at = Vec::new();
    loop {
        match rp.next_arrival(now, completions.len() as u32) {
            Arrival::Issue { at, .. } => {
                assert_eq!(at, now);
                issued_at.push(at);
                completions.push(at + 100_000);
                assert!(completions.len() <= 4);
            }
            Arrival::QueueFull | Arrival::Exhausted => {
                let Some(first) = completions.iter().copied().min() else {
                    break;
                };
                now = first;
                completions.retain(|&c| c != first);
            }
        }
    }
    // 10 requests, 4 at a time, 100 us each: issued at 0 (x4), 100 (x4), 200 (x2) us.
    assert_eq!(
        issued_at,
        vec![
            0, 0, 0, 0, 100_000, 100_000, 100_000, 100_000, 200_000, 200_000
        ]
    );
}

#[test]
fn remap_fits_a_trace_onto_a_small_volume() {
    let Some(path) = tpcc_path() else {
        return;
    };
    let m = VolumeRemap::new(1 << 30).unwrap();
    for r in open_trace(&path, TraceFormat::DiskSim).unwrap() {
        let r = m.apply(r.unwrap());
        assert_eq!(r.offset % 4096, 0);
        assert_eq!(r.len % 4096, 0);
        assert!(r.len >= 4096 && r.offset + r.len <= 1 << 30);
    }
}
