//! Alibaba block traces (2020 release) CSV: `device_id,opcode,offset,length,timestamp` with
//! opcode `R` or `W`, offset and length in bytes and the timestamp in microseconds.

use super::fields::{scaled, split_fields, stream_id, uint};
use super::lines::{LineParser, looks_like_header};
use super::{IoKind, IoRecord};

const NAMES: [&str; 5] = [
    "device id",
    "opcode (R or W)",
    "offset in bytes",
    "length in bytes",
    "timestamp in us",
];

#[derive(Default)]
pub(crate) struct AlibabaParser {
    seen_line: bool,
}

impl LineParser for AlibabaParser {
    fn parse(&mut self, line: &str) -> Result<Option<IoRecord>, String> {
        if !std::mem::replace(&mut self.seen_line, true) && looks_like_header(line) {
            return Ok(None);
        }
        let [dev, op, off, len, ts] = split_fields(line, Some(','), &NAMES)?;
        let stream = stream_id(dev, 1, NAMES[0])?;
        let kind = match op {
            "R" | "r" => IoKind::Read,
            "W" | "w" => IoKind::Write,
            other => return Err(format!("field 2 ({}) is '{other}'", NAMES[1])),
        };
        Ok(Some(IoRecord {
            time_ns: scaled(uint(ts, 5, NAMES[4])?, 1_000, 5, NAMES[4])?,
            kind,
            offset: uint(off, 3, NAMES[2])?,
            len: uint(len, 4, NAMES[3])?,
            stream,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_line() {
        let r = AlibabaParser::default()
            .parse("419,W,8145101312,4096,1577808000000086")
            .unwrap()
            .unwrap();
        assert_eq!(
            r,
            IoRecord {
                time_ns: 1_577_808_000_000_086_000,
                kind: IoKind::Write,
                offset: 8_145_101_312,
                len: 4096,
                stream: 419
            }
        );
    }

    #[test]
    fn rejects_bad_opcode() {
        let e = AlibabaParser::default().parse("1,X,0,4096,5").unwrap_err();
        assert_eq!(e, "field 2 (opcode (R or W)) is 'X'");
    }
}
