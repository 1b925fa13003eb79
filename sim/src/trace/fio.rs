//! fio iologs, versions 2 and 3 (chosen by the mandatory first line
//! `fio version 2 iolog` / `fio version 3 iolog`).
//!
//! * v2: `filename action` (add, open, close) or `filename action offset length`. There are no
//!   timestamps: every record is at time 0 except after `wait N` lines, which advance the clock
//!   by N microseconds. Replay v2 logs closed-loop (`ReplayMode::ClosedLoop`).
//! * v3: the same lines prefixed by a timestamp since the start of the run (microseconds as fio
//!   writes them; see `TraceOptions::fio_time_unit_ns`). `wait` is not part of v3 and, as fio
//!   itself does, is ignored.
//!
//! `read`/`write`/`trim` become records; `sync`/`datasync` and file actions carry no data and
//! are skipped. Files become streams 0, 1, ... in order of `add` (or first use).

use fusionraid_core::Nanos;

use super::fields::{scaled, uint};
use super::lines::LineParser;
use super::{IoKind, IoRecord};

pub(crate) struct FioParser {
    time_unit_ns: Nanos,
    version: Option<u8>,
    /// File names in stream order; one entry per distinct file.
    files: Vec<String>,
    /// v2 only: the time reached through `wait` lines.
    v2_clock_ns: Nanos,
}

impl FioParser {
    pub(crate) fn new(time_unit_ns: Nanos) -> Self {
        FioParser {
            time_unit_ns,
            version: None,
            files: Vec::new(),
            v2_clock_ns: 0,
        }
    }

    fn stream_of(&mut self, file: &str) -> Result<u32, String> {
        let i = match self.files.iter().position(|f| f == file) {
            Some(i) => i,
            None => {
                self.files.push(file.to_string());
                self.files.len() - 1
            }
        };
        u32::try_from(i).map_err(|_| "too many files".to_string())
    }

    fn header(&mut self, line: &str) -> Result<Option<IoRecord>, String> {
        self.version = match line {
            "fio version 2 iolog" => Some(2),
            "fio version 3 iolog" => Some(3),
            _ => {
                return Err(format!(
                    "not a fio iolog: expected 'fio version 2 iolog' or 'fio version 3 iolog', \
                     found '{line}'"
                ));
            }
        };
        Ok(None)
    }

    fn file_action(&mut self, file: &str, action: &str, at: usize) -> Result<(), String> {
        match action {
            "add" | "open" | "close" => self.stream_of(file).map(|_| ()),
            other => Err(format!("field {at} (file action) is '{other}'")),
        }
    }

    /// An `action offset length` line; `at` is the 1-based position of the action field.
    fn io_action(
        &mut self,
        time_ns: Nanos,
        fields: [&str; 4],
        at: usize,
    ) -> Result<Option<IoRecord>, String> {
        let [file, action, off, len] = fields;
        let kind = match action {
            "read" => IoKind::Read,
            "write" => IoKind::Write,
            "trim" => IoKind::Trim,
            "sync" | "datasync" => return Ok(None),
            "wait" if self.version == Some(2) => {
                let us = uint(off, at + 1, "wait in us")?;
                let ns = scaled(us, 1_000, at + 1, "wait in us")?;
                self.v2_clock_ns = self.v2_clock_ns.saturating_add(ns);
                return Ok(None);
            }
            "wait" => return Ok(None),
            other => return Err(format!("field {at} (action) is '{other}'")),
        };
        let offset = uint(off, at + 1, "offset in bytes")?;
        let len = uint(len, at + 2, "length in bytes")?;
        Ok(Some(IoRecord {
            time_ns,
            kind,
            offset,
            len,
            stream: self.stream_of(file)?,
        }))
    }
}

impl LineParser for FioParser {
    fn parse(&mut self, line: &str) -> Result<Option<IoRecord>, String> {
        let Some(version) = self.version else {
            return self.header(line);
        };
        let mut tok = [""; 6];
        let mut n = 0;
        for t in line.split_whitespace() {
            if n < tok.len() {
                tok[n] = t;
            }
            n += 1;
        }
        match (version, n) {
            (2, 2) => self.file_action(tok[0], tok[1], 2).map(|_| None),
            (2, 4) => {
                let clock = self.v2_clock_ns;
                self.io_action(clock, [tok[0], tok[1], tok[2], tok[3]], 2)
            }
            (3, 3 | 5) => {
                let ts = uint(tok[0], 1, "timestamp")?;
                let time_ns = scaled(ts, self.time_unit_ns, 1, "timestamp")?;
                if n == 3 {
                    self.file_action(tok[1], tok[2], 3).map(|_| None)
                } else {
                    self.io_action(time_ns, [tok[1], tok[2], tok[3], tok[4]], 3)
                }
            }
            (2, _) => Err(format!(
                "expected 'filename action' or 'filename action offset length', found {n} fields"
            )),
            _ => Err(format!(
                "expected 'timestamp filename action' or \
                 'timestamp filename action offset length', found {n} fields"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(time_ns: Nanos, kind: IoKind, offset: u64, len: u64, stream: u32) -> IoRecord {
        IoRecord {
            time_ns,
            kind,
            offset,
            len,
            stream,
        }
    }

    #[test]
    fn v2_has_no_clock_but_wait() {
        let mut p = FioParser::new(1_000);
        assert_eq!(p.parse("fio version 2 iolog"), Ok(None));
        assert_eq!(p.parse("/dev/sdb add"), Ok(None));
        assert_eq!(p.parse("/dev/sda add"), Ok(None));
        assert_eq!(p.parse("/dev/sda open"), Ok(None));
        let r = p.parse("/dev/sda write 4096 8192").unwrap();
        assert_eq!(r, Some(rec(0, IoKind::Write, 4096, 8192, 1)));
        assert_eq!(p.parse("/dev/sda wait 250 0"), Ok(None));
        assert_eq!(p.parse("/dev/sda sync 0 0"), Ok(None));
        let r = p.parse("/dev/sdb trim 0 4096").unwrap();
        assert_eq!(r, Some(rec(250_000, IoKind::Trim, 0, 4096, 0)));
        assert!(
            p.parse("/dev/sda frobnicate")
                .unwrap_err()
                .contains("file action")
        );
        assert!(
            p.parse("/dev/sda read x 4096")
                .unwrap_err()
                .contains("field 3")
        );
    }

    #[test]
    fn v3_timestamps_in_us() {
        let mut p = FioParser::new(1_000);
        p.parse("fio version 3 iolog").unwrap();
        assert_eq!(p.parse("0 /dev/nvme0n1 add"), Ok(None));
        let r = p.parse("878 /dev/nvme0n1 read 0 16384").unwrap();
        assert_eq!(r, Some(rec(878_000, IoKind::Read, 0, 16384, 0)));
        assert_eq!(p.parse("900 /dev/nvme0n1 wait 5 0"), Ok(None));
        assert!(
            p.parse("/dev/nvme0n1 read 0 4096")
                .unwrap_err()
                .contains("4 fields")
        );
        assert!(
            p.parse("x /dev/nvme0n1 close")
                .unwrap_err()
                .contains("field 1")
        );
    }

    #[test]
    fn missing_header_is_an_error() {
        let mut p = FioParser::new(1_000);
        assert!(
            p.parse("/dev/sda add")
                .unwrap_err()
                .contains("not a fio iolog")
        );
    }
}
