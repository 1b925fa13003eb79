//! SNIA IOTTA / MSR-Cambridge CSV:
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime` with the timestamp as a
//! Windows FILETIME (100 ns ticks since 1601), `Type` `Read` or `Write`, offset and size in
//! bytes. The disk number becomes the stream; the hostname and response time are not used
//! (each published file holds one host).

use super::fields::{scaled, split_fields, stream_id, uint};
use super::lines::{LineParser, looks_like_header};
use super::{IoKind, IoRecord};

// The seventh column, the response time, is not needed, so only six are split out.
const NAMES: [&str; 6] = [
    "timestamp in 100 ns ticks",
    "hostname",
    "disk number",
    "type (Read or Write)",
    "offset in bytes",
    "size in bytes",
];

#[derive(Default)]
pub(crate) struct MsrParser {
    seen_line: bool,
}

impl LineParser for MsrParser {
    fn parse(&mut self, line: &str) -> Result<Option<IoRecord>, String> {
        if !std::mem::replace(&mut self.seen_line, true) && looks_like_header(line) {
            return Ok(None);
        }
        let [ts, _host, disk, ty, off, size] = split_fields(line, Some(','), &NAMES)?;
        let time_ns = scaled(uint(ts, 1, NAMES[0])?, 100, 1, NAMES[0])?;
        let stream = stream_id(disk, 3, NAMES[2])?;
        let kind = if ty.eq_ignore_ascii_case("read") {
            IoKind::Read
        } else if ty.eq_ignore_ascii_case("write") {
            IoKind::Write
        } else {
            return Err(format!("field 4 ({}) is '{ty}'", NAMES[3]));
        };
        Ok(Some(IoRecord {
            time_ns,
            kind,
            offset: uint(off, 5, NAMES[4])?,
            len: uint(size, 6, NAMES[5])?,
            stream,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_line_and_skips_header() {
        let mut p = MsrParser::default();
        assert_eq!(
            p.parse("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"),
            Ok(None)
        );
        let r = p
            .parse("128166372003061629,hm,1,Read,3218866176,4096,2770")
            .unwrap()
            .unwrap();
        assert_eq!(r.time_ns, 12_816_637_200_306_162_900);
        assert_eq!(
            (r.kind, r.offset, r.len, r.stream),
            (IoKind::Read, 3_218_866_176, 4096, 1)
        );
        // A header is only recognised on the first line.
        assert!(p.parse("Timestamp,h,1,Read,0,1,1").is_err());
    }

    #[test]
    fn rejects_bad_type() {
        let mut p = MsrParser::default();
        let e = p.parse("1,hm,0,Flush,0,0,0").unwrap_err();
        assert_eq!(e, "field 4 (type (Read or Write)) is 'Flush'");
    }
}
