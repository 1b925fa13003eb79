//! Fuzzing every trace reader: random bytes, and valid traces of each format changed in
//! structure-aware ways (truncated, flipped bytes, hostile field values, duplicated, deleted
//! and swapped lines, unicode). Reading must never panic and always end; every error names
//! the file and a line that exists; every record is in time order from 0 and addresses a
//! range that fits in 64 bits.
//!
//! `FUSIONRAID_FUZZ_CASES=N` sets the cases per property (default 256) for long soaks.

use std::io::Cursor;

use fusionraid_sim::trace::{IoKind, TraceError, TraceFormat, TraceOptions, read_trace};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("FUSIONRAID_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

const NAME: &str = "fuzz.trace";

fn format() -> impl Strategy<Value = TraceFormat> {
    proptest::sample::select(TraceFormat::ALL.to_vec())
}

/// Reader options, including coarse clocks that make tie spreading do arithmetic.
fn options() -> impl Strategy<Value = TraceOptions> {
    (
        0usize..4,
        any::<bool>(),
        prop_oneof![Just(1u64), Just(1_000), Just(1_000_000), Just(u64::MAX)],
        prop_oneof![Just(1u64), Just(1_000), Just(u64::MAX)],
        prop_oneof![Just(512u64), Just(4096), Just(1 << 40)],
    )
        .prop_map(|(w, spread, dunit, funit, sector)| TraceOptions {
            reorder_window: w,
            spread_ties: spread,
            disksim_time_unit_ns: dunit,
            fio_time_unit_ns: funit,
            sector_size: sector,
            ..TraceOptions::default()
        })
}

/// One request of a generated trace: time step, kind, offset and length in sectors, stream.
type Req = (u64, IoKind, u64, u64, u32);

fn reqs() -> impl Strategy<Value = Vec<Req>> {
    let kind = prop_oneof![Just(IoKind::Read), Just(IoKind::Write)];
    proptest::collection::vec((0u64..3, kind, 0u64..1 << 30, 1u64..256, 0u32..4), 0..24)
}

/// Renders `reqs` as a valid trace of `f` (times are in each format's own unit; fio logs
/// in version 2, without timestamps but with waits, when `v2`).
fn render(f: TraceFormat, v2: bool, reqs: &[Req]) -> String {
    let mut out = Vec::new();
    let mut t = 0u64;
    match f {
        TraceFormat::Msr => out.push("Timestamp,Hostname,DiskNumber,Type,Offset,Size,Resp".into()),
        TraceFormat::Fio if v2 => out.push("fio version 2 iolog".into()),
        TraceFormat::Fio => out.push("fio version 3 iolog".into()),
        _ => {}
    }
    for &(dt, kind, sec, n, s) in reqs {
        t += dt;
        let w = kind == IoKind::Write;
        if f == TraceFormat::Fio && v2 && dt > 0 {
            out.push(format!("/dev/sd{s} wait {dt} 0"));
        }
        out.push(match f {
            // Half units: with a coarse clock unit, ties and fractions meet in the spreader.
            TraceFormat::DiskSim => {
                let frac = if t % 2 == 1 { ".5" } else { "" };
                format!("{}{frac} {s} {sec} {n} {}", t / 2, u8::from(!w))
            }
            TraceFormat::Msr => {
                let ty = if w { "Write" } else { "Read" };
                format!("{t},host,{s},{ty},{},{},77", sec * 512, n * 512)
            }
            TraceFormat::Alibaba => {
                let op = if w { "W" } else { "R" };
                format!("{s},{op},{},{},{t}", sec * 512, n * 512)
            }
            TraceFormat::Tencent => format!("{t},{sec},{n},{},{s}", u8::from(w)),
            TraceFormat::Blkparse => {
                let rw = if w { "WS" } else { "R" };
                format!("8,{s} 0 1 {t}.000000001 42 Q {rw} {sec} + {n} [fio]")
            }
            TraceFormat::Fio if v2 => {
                let a = if w { "write" } else { "read" };
                format!("/dev/sd{s} {a} {} {}", sec * 512, n * 512)
            }
            TraceFormat::Fio => {
                let a = if w { "write" } else { "read" };
                format!("{t} /dev/sd{s} {a} {} {}", sec * 512, n * 512)
            }
        });
    }
    out.join("\n")
}

/// Field values a trace writer should never produce.
const HOSTILE: &[&str] = &[
    "",
    "-1",
    "-0",
    "nan",
    "inf",
    "1e9",
    "0x10",
    "1.5",
    ".",
    "1..2",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "99999999999999999999.999999999999999999999",
    "4294967296",
    "R",
    "W",
    "Q",
    "+",
    "[x]",
    "\u{202e}",
    "１",
    "\u{0}",
];

#[derive(Clone, Debug)]
enum Mutation {
    Truncate(usize),
    Flip(usize, u8),
    /// Replace field `f` of line `l` (fields split on commas or whitespace) with a hostile value.
    Field(usize, usize, &'static str),
    Duplicate(usize),
    Delete(usize),
    Swap(usize, usize),
    Insert(usize, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => (any::<usize>(), 1u8..=255).prop_map(|(p, m)| Mutation::Flip(p, m)),
        4 => (any::<usize>(), any::<usize>(), proptest::sample::select(HOSTILE))
            .prop_map(|(l, f, v)| Mutation::Field(l, f, v)),
        1 => any::<usize>().prop_map(Mutation::Duplicate),
        1 => any::<usize>().prop_map(Mutation::Delete),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        1 => (any::<usize>(), "\\PC{1,6}|\n|\r\n|#|,|\t").prop_map(|(p, s)| Mutation::Insert(p, s)),
    ]
}

fn apply(text: &[u8], m: &Mutation) -> Vec<u8> {
    let pick = |n: usize, len: usize| if len == 0 { 0 } else { n % len };
    let mut lines: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let join = |lines: Vec<Vec<u8>>| lines.join(&b'\n');
    match m {
        Mutation::Truncate(at) => text[..pick(*at, text.len() + 1)].to_vec(),
        Mutation::Flip(at, mask) => {
            let mut b = text.to_vec();
            if !b.is_empty() {
                let i = pick(*at, b.len());
                b[i] ^= mask;
            }
            b
        }
        Mutation::Field(l, f, v) => {
            let i = pick(*l, lines.len());
            let line = String::from_utf8_lossy(&lines[i]).into_owned();
            let sep = if line.contains(',') { ',' } else { ' ' };
            let mut fields: Vec<&str> = line.split(sep).collect();
            let j = pick(*f, fields.len());
            fields[j] = v;
            lines[i] = fields.join(&sep.to_string()).into_bytes();
            join(lines)
        }
        Mutation::Duplicate(l) => {
            let i = pick(*l, lines.len());
            lines.insert(i, lines[i].clone());
            join(lines)
        }
        Mutation::Delete(l) => {
            lines.remove(pick(*l, lines.len()));
            join(lines)
        }
        Mutation::Swap(a, b) => {
            let (a, b) = (pick(*a, lines.len()), pick(*b, lines.len()));
            lines.swap(a, b);
            join(lines)
        }
        Mutation::Insert(at, s) => {
            let mut b = text.to_vec();
            let i = pick(*at, b.len() + 1);
            b.splice(i..i, s.bytes());
            b
        }
    }
}

/// Reads `bytes` completely and checks the reader's promises; returns (records, errors).
fn read_checked(bytes: &[u8], f: TraceFormat, opts: &TraceOptions) -> (usize, usize) {
    let lines = bytes.split(|&b| b == b'\n').count() as u64;
    let mut it = read_trace(Cursor::new(bytes.to_vec()), NAME, f, opts);
    let (mut recs, mut errs) = (0usize, 0usize);
    let mut last = None;
    // Each line yields at most one record and one error (plus one tie-group report), so
    // anything beyond this bound is a reader that does not end.
    for _ in 0..=(3 * lines + 3) {
        let Some(item) = it.next() else {
            return (recs, errs);
        };
        match item {
            Ok(r) => {
                recs += 1;
                match last {
                    None => assert_eq!(r.time_ns, 0, "first record at {}", r.time_ns),
                    Some(t) => assert!(r.time_ns >= t, "time went back: {} after {t}", r.time_ns),
                }
                last = Some(r.time_ns);
                assert!(
                    r.offset.checked_add(r.len).is_some(),
                    "record past 2^64: {r:?}"
                );
            }
            Err(e) => {
                errs += 1;
                let TraceError::Line { line, .. } = &e else {
                    panic!("an in-memory trace gave an I/O error: {e}");
                };
                assert!((1..=lines).contains(line), "line {line} of {lines}: {e}");
                let msg = e.to_string();
                assert!(msg.starts_with(&format!("{NAME}:{line}: ")), "{msg}");
                assert!(msg.len() > NAME.len() + 4, "empty message: {msg}");
            }
        }
    }
    panic!("the reader did not end after {} lines", lines);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// The generator's traces are valid: every request comes out, no errors.
    #[test]
    fn generated_traces_read_entirely(f in format(), v2 in any::<bool>(), reqs in reqs()) {
        let text = render(f, v2, &reqs);
        let (recs, errs) = read_checked(text.as_bytes(), f, &TraceOptions::default());
        prop_assert_eq!((recs, errs), (reqs.len(), 0), "{}", text);
    }

    #[test]
    fn random_bytes(
        f in format(),
        opts in options(),
        bytes in proptest::collection::vec(any::<u8>(), 0..1024),
    ) {
        read_checked(&bytes, f, &opts);
    }

    /// Random lines built from field-like tokens: gets past the splitters more often than
    /// random bytes do.
    #[test]
    fn token_soup(
        f in format(),
        opts in options(),
        lines in proptest::collection::vec(
            proptest::collection::vec(
                prop_oneof![
                    proptest::sample::select(HOSTILE).prop_map(str::to_string),
                    "[0-9]{1,20}",
                    "[0-9]{1,3}\\.[0-9]{1,12}",
                    Just("8,0".to_string()),
                    Just("Read".to_string()),
                    Just("write".to_string()),
                    Just("fio version 2 iolog".to_string()),
                    Just("/dev/sda".to_string()),
                    Just("wait".to_string()),
                ],
                0..8,
            ),
            0..12,
        ),
        sep in prop_oneof![Just(","), Just(" "), Just("\t")],
    ) {
        let text: Vec<String> = lines.iter().map(|l| l.join(sep)).collect();
        read_checked(text.join("\n").as_bytes(), f, &opts);
    }

    #[test]
    fn mutated_traces(
        f in format(),
        opts in options(),
        v2 in any::<bool>(),
        reqs in reqs(),
        ms in proptest::collection::vec(mutation(), 1..5),
    ) {
        let text = ms.iter().fold(render(f, v2, &reqs).into_bytes(), |t, m| apply(&t, m));
        read_checked(&text, f, &opts);
    }
}

/// Found by `mutated_traces`: a range past 2^64 must be refused, not accepted as a record.
#[test]
fn a_range_past_2_64_is_an_error_naming_the_line() {
    let text = "1,h,0,Read,0,4096,1\n2,h,0,Read,18446744073709551615,512,1\n";
    let out: Vec<_> = read_trace(
        Cursor::new(text.as_bytes().to_vec()),
        NAME,
        TraceFormat::Msr,
        &TraceOptions::default(),
    )
    .collect();
    assert_eq!(out.len(), 2);
    // The error may come out ahead of the record the tie spreader still holds.
    let errs: Vec<String> = out
        .iter()
        .filter_map(|r| r.as_ref().err())
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errs.len(), 1);
    let e = &errs[0];
    assert!(e.starts_with("fuzz.trace:2: request of 512 bytes"), "{e}");
}
