//! Tencent CBS (cloud block storage) CSV: `Timestamp,Offset,Size,IOType,VolumeID` with the
//! timestamp in whole seconds (Unix time), offset and size in sectors and IOType `0` = read,
//! `1` = write. Whole-second stamps put many requests on one instant: see
//! `TraceOptions::spread_ties`.

use fusionraid_core::Nanos;

use super::fields::{scaled, split_fields, stream_id, uint};
use super::lines::{LineParser, looks_like_header};
use super::{IoKind, IoRecord};

const NAMES: [&str; 5] = [
    "timestamp in s",
    "offset in sectors",
    "size in sectors",
    "IO type (0 = read, 1 = write)",
    "volume id",
];

const SECOND: Nanos = 1_000_000_000;

pub(crate) struct TencentParser {
    pub sector_size: u64,
    seen_line: bool,
}

impl TencentParser {
    pub(crate) fn new(sector_size: u64) -> Self {
        TencentParser {
            sector_size,
            seen_line: false,
        }
    }
}

impl LineParser for TencentParser {
    fn parse(&mut self, line: &str) -> Result<Option<IoRecord>, String> {
        if !std::mem::replace(&mut self.seen_line, true) && looks_like_header(line) {
            return Ok(None);
        }
        let [ts, off, size, ty, vol] = split_fields(line, Some(','), &NAMES)?;
        let time_ns = scaled(uint(ts, 1, NAMES[0])?, SECOND, 1, NAMES[0])?;
        let offset = scaled(uint(off, 2, NAMES[1])?, self.sector_size, 2, NAMES[1])?;
        let len = scaled(uint(size, 3, NAMES[2])?, self.sector_size, 3, NAMES[2])?;
        let kind = match ty {
            "0" => IoKind::Read,
            "1" => IoKind::Write,
            other => return Err(format!("field 4 ({}) is not 0 or 1: '{other}'", NAMES[3])),
        };
        Ok(Some(IoRecord {
            time_ns,
            kind,
            offset,
            len,
            stream: stream_id(vol, 5, NAMES[4])?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_line() {
        let r = TencentParser::new(512)
            .parse("1538323200,12132000,8,1,1283")
            .unwrap()
            .unwrap();
        assert_eq!(
            r,
            IoRecord {
                time_ns: 1_538_323_200 * SECOND,
                kind: IoKind::Write,
                offset: 12_132_000 * 512,
                len: 4096,
                stream: 1283
            }
        );
    }

    #[test]
    fn rejects_bad_type() {
        let e = TencentParser::new(512).parse("1,0,8,2,1").unwrap_err();
        assert!(e.starts_with("field 4 (IO type"), "{e}");
    }
}
