//! Line-at-a-time reading shared by all formats: line numbers, length cap, UTF-8 check, blank
//! and `#` comment lines, and turning a parser's message into a `file:line:` error.

use std::io::{BufRead, Read};
use std::sync::Arc;

use super::IoRecord;
use super::error::TraceError;

/// Longest line accepted. Real trace lines are < 200 bytes; the cap keeps a corrupt file (or a
/// binary one passed by mistake) from growing the line buffer without bound.
pub(crate) const MAX_LINE: usize = 64 * 1024;

/// A parsed record with the line it came from, for later error messages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Numbered {
    pub line: u64,
    pub rec: IoRecord,
}

/// One format's grammar.
pub(crate) trait LineParser {
    /// Parse one trimmed, non-empty, non-comment line. `Ok(None)` means the line is valid but
    /// carries no request (a header, a file action, a flush, an event type not replayed...).
    fn parse(&mut self, line: &str) -> Result<Option<IoRecord>, String>;
}

/// True when a CSV line's first field starts with a letter: a column-name header, which some
/// redistributions of the MSR, Alibaba and Tencent traces add. Only checked on the first line.
pub(crate) fn looks_like_header(line: &str) -> bool {
    line.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
}

/// Iterator over the records of one trace stream, in file order.
pub(crate) struct LineSource<R, P> {
    reader: R,
    parser: P,
    file: Arc<str>,
    line_no: u64,
    buf: Vec<u8>,
    done: bool,
}

impl<R: BufRead, P: LineParser> LineSource<R, P> {
    pub(crate) fn new(reader: R, parser: P, file: Arc<str>) -> Self {
        LineSource {
            reader,
            parser,
            file,
            line_no: 0,
            buf: Vec::with_capacity(256),
            done: false,
        }
    }
}

impl<R: BufRead, P: LineParser> Iterator for LineSource<R, P> {
    type Item = Result<Numbered, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            self.buf.clear();
            let limit = MAX_LINE as u64 + 1;
            match (&mut self.reader)
                .take(limit)
                .read_until(b'\n', &mut self.buf)
            {
                Err(source) => {
                    self.done = true;
                    return Some(Err(TraceError::Io {
                        file: self.file.to_string(),
                        source,
                    }));
                }
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(_) => {}
            }
            self.line_no += 1;
            if self.buf.len() > MAX_LINE && self.buf.last() != Some(&b'\n') {
                // We cannot find the next line start without reading the rest, so stop here.
                self.done = true;
                let msg = format!("line is longer than {MAX_LINE} bytes; is this a text trace?");
                return Some(Err(TraceError::line(&self.file, self.line_no, msg)));
            }
            let Ok(text) = std::str::from_utf8(&self.buf) else {
                let msg = "line is not valid UTF-8 text";
                return Some(Err(TraceError::line(&self.file, self.line_no, msg)));
            };
            let text = text.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            match self.parser.parse(text) {
                Ok(Some(rec)) if rec.offset.checked_add(rec.len).is_none() => {
                    // Every format takes offset and length separately; a range that wraps
                    // around 2^64 is no request, and would overflow wherever it is used.
                    let msg = format!(
                        "request of {} bytes at offset {} ends beyond 2^64 bytes",
                        rec.len, rec.offset
                    );
                    return Some(Err(TraceError::line(&self.file, self.line_no, msg)));
                }
                Ok(Some(rec)) => {
                    return Some(Ok(Numbered {
                        line: self.line_no,
                        rec,
                    }));
                }
                Ok(None) => continue,
                Err(msg) => return Some(Err(TraceError::line(&self.file, self.line_no, msg))),
            }
        }
        None
    }
}
