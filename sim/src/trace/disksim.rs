//! DiskSim ASCII traces as MQSim reads them:
//! `arrival_time device_number start_lba size type`, whitespace separated, with the start LBA
//! and size in sectors and type `1` = read, `0` = write. MQSim writes the arrival time in
//! nanoseconds; classic DiskSim traces use (fractional) milliseconds, selected through
//! `TraceOptions::disksim_time_unit_ns`.

use fusionraid_core::Nanos;

use super::fields::{decimal_ns, scaled, split_fields, stream_id, uint};
use super::lines::LineParser;
use super::{IoKind, IoRecord};

const NAMES: [&str; 5] = [
    "arrival time",
    "device number",
    "start LBA in sectors",
    "size in sectors",
    "type (1 = read, 0 = write)",
];

pub(crate) struct DiskSimParser {
    pub time_unit_ns: Nanos,
    pub sector_size: u64,
}

impl LineParser for DiskSimParser {
    fn parse(&mut self, line: &str) -> Result<Option<IoRecord>, String> {
        let [t, dev, lba, size, ty] = split_fields(line, None, &NAMES)?;
        let time_ns = decimal_ns(t, self.time_unit_ns, 1, NAMES[0])?;
        let stream = stream_id(dev, 2, NAMES[1])?;
        let offset = scaled(uint(lba, 3, NAMES[2])?, self.sector_size, 3, NAMES[2])?;
        let len = scaled(uint(size, 4, NAMES[3])?, self.sector_size, 4, NAMES[3])?;
        let kind = match ty {
            "1" => IoKind::Read,
            "0" => IoKind::Write,
            other => return Err(format!("field 5 ({}) is not 0 or 1: '{other}'", NAMES[4])),
        };
        Ok(Some(IoRecord {
            time_ns,
            kind,
            offset,
            len,
            stream,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> DiskSimParser {
        DiskSimParser {
            time_unit_ns: 1,
            sector_size: 512,
        }
    }

    #[test]
    fn parses_mqsim_line() {
        let r = p().parse("938513000 4 264719034 16 0").unwrap().unwrap();
        assert_eq!(
            r,
            IoRecord {
                time_ns: 938_513_000,
                kind: IoKind::Write,
                offset: 264_719_034 * 512,
                len: 8192,
                stream: 4
            }
        );
    }

    #[test]
    fn rejects_bad_fields() {
        assert_eq!(
            p().parse("1 2 3 x 1").unwrap_err(),
            "field 4 (size in sectors) is not a number: 'x'"
        );
        assert!(p().parse("1 2 3 4 7").unwrap_err().contains("not 0 or 1"));
        assert!(
            p().parse("1 2 3 4")
                .unwrap_err()
                .contains("expected 5 fields")
        );
    }

    #[test]
    fn millisecond_unit_accepts_decimals() {
        let mut ms = DiskSimParser {
            time_unit_ns: 1_000_000,
            sector_size: 512,
        };
        let r = ms.parse("12.5 0 8 8 1").unwrap().unwrap();
        assert_eq!(r.time_ns, 12_500_000);
        assert_eq!(r.kind, IoKind::Read);
    }
}
