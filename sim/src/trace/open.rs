//! Entry points: pick the parser for a format and assemble the reading pipeline.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use flate2::read::MultiGzDecoder;

use super::IoRecord;
use super::alibaba::AlibabaParser;
use super::blkparse::BlkparseParser;
use super::disksim::DiskSimParser;
use super::error::TraceError;
use super::fio::FioParser;
use super::format::TraceFormat;
use super::lines::{LineParser, LineSource, Numbered};
use super::msr::MsrParser;
use super::options::TraceOptions;
use super::order::Ordered;
use super::tencent::TencentParser;
use super::ties::SpreadTies;

/// A trace as a stream of records in time order, first record at time 0. A bad line yields an
/// error (and is skipped) and reading continues; an I/O error ends the stream. An error is
/// yielded as soon as it is found, so it may come out ahead of earlier records still held by
/// the reorder window or the tie buffer.
pub type TraceIter = Box<dyn Iterator<Item = Result<IoRecord, TraceError>> + Send>;

/// Open `path` and read it as `format` with the default [`TraceOptions`].
pub fn open_trace(path: impl AsRef<Path>, format: TraceFormat) -> Result<TraceIter, TraceError> {
    open_trace_with(path, format, &TraceOptions::default())
}

/// Open `path` and read it as `format`. Errors name the path as given.
pub fn open_trace_with(
    path: impl AsRef<Path>,
    format: TraceFormat,
    opts: &TraceOptions,
) -> Result<TraceIter, TraceError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let io = |source| TraceError::Io {
        file: name.clone(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    // 256 KiB: large sequential reads; the whole trace is never held.
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    // Opening a directory succeeds; reading it is where it fails, and says so.
    let head = reader.fill_buf().map_err(|e| {
        io(std::io::Error::new(
            e.kind(),
            format!("the trace could not be read: {e}"),
        ))
    })?;
    match Compression::sniff(head) {
        None => Ok(read_trace(reader, &name, format, opts)),
        // Published traces often come gzipped (SNIA's MSR Cambridge files): read as they are.
        Some(Compression::Gzip) => {
            let plain = BufReader::with_capacity(256 * 1024, MultiGzDecoder::new(reader));
            Ok(read_trace(plain, &name, format, opts))
        }
        Some(c) => Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "the trace is {}-compressed; decompress it first (`{} {name}`), \
                 gzip is read as it is",
                c.name(),
                c.command()
            ),
        ))),
    }
}

/// Compressed trace files, told by their first bytes whatever their name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compression {
    Gzip,
    Xz,
    Zstd,
    Bzip2,
}

impl Compression {
    fn sniff(head: &[u8]) -> Option<Self> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Some(Compression::Xz)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Compression::Zstd)
        } else if head.starts_with(b"BZh") {
            Some(Compression::Bzip2)
        } else {
            None
        }
    }
    fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
            Compression::Bzip2 => "bzip2",
        }
    }
    fn command(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip -dk",
            Compression::Xz => "xz -dk",
            Compression::Zstd => "zstd -d",
            Compression::Bzip2 => "bzip2 -dk",
        }
    }
}

/// Read a trace from any buffered reader; `name` is used in error messages.
pub fn read_trace<R: BufRead + Send + 'static>(
    mut reader: R,
    name: &str,
    format: TraceFormat,
    opts: &TraceOptions,
) -> TraceIter {
    let file: Arc<str> = name.into();
    match format {
        TraceFormat::DiskSim => {
            let p = DiskSimParser {
                time_unit_ns: opts.disksim_time_unit_ns,
                sector_size: opts.sector_size,
            };
            assemble(reader, p, file, format, opts)
        }
        TraceFormat::Msr => assemble(reader, MsrParser::default(), file, format, opts),
        TraceFormat::Alibaba => assemble(reader, AlibabaParser::default(), file, format, opts),
        TraceFormat::Tencent => {
            let p = TencentParser::new(opts.sector_size);
            assemble(reader, p, file, format, opts)
        }
        TraceFormat::Blkparse => {
            let p = BlkparseParser::new(opts.blkparse_event, opts.sector_size);
            assemble(reader, p, file, format, opts)
        }
        TraceFormat::Fio => {
            let p = FioParser::new(opts.fio_time_unit_ns);
            if is_fio_v2(&mut reader) {
                // No timestamps: spreading the shared time 0 over a tick would invent times.
                let no_spread = TraceOptions {
                    spread_ties: false,
                    ..opts.clone()
                };
                assemble(reader, p, file, format, &no_spread)
            } else {
                assemble(reader, p, file, format, opts)
            }
        }
    }
}

fn assemble<R, P>(
    reader: R,
    parser: P,
    file: Arc<str>,
    format: TraceFormat,
    opts: &TraceOptions,
) -> TraceIter
where
    R: BufRead + Send + 'static,
    P: LineParser + Send + 'static,
{
    let lines = LineSource::new(reader, parser, file.clone());
    let ordered = Ordered::new(lines, file.clone(), opts.reorder_window);
    let tick = format.tick_ns(opts);
    if opts.spread_ties && tick > 1 {
        let spread = SpreadTies::new(ordered, file, tick, TraceOptions::MAX_TIE_GROUP);
        Box::new(spread.map(strip))
    } else {
        Box::new(ordered.map(strip))
    }
}

/// Peek (without consuming) whether the buffered start of the stream is a v2 iolog header.
/// A read error here is left for the line reader to hit and report.
fn is_fio_v2<R: BufRead>(reader: &mut R) -> bool {
    reader
        .fill_buf()
        .map(|b| b.trim_ascii_start().starts_with(b"fio version 2 iolog"))
        .unwrap_or(false)
}

fn strip(r: Result<Numbered, TraceError>) -> Result<IoRecord, TraceError> {
    r.map(|n| n.rec)
}
