//! `blkparse` text output in its default format:
//! `maj,min cpu sequence seconds.nanoseconds pid action rwbs sector + sectors [process]`.
//!
//! Only one action is replayed (`Q` queued or `D` issued, see `BlkEvent`); the other event
//! lines are skipped. The direction comes from the RWBS letters: `D` (discard, also secure
//! erase `DE`) is a trim, else `W` a write, else `R` a read; anything else (`N`, a bare flush
//! `F...`) is skipped, as are requests without a sector range or with zero sectors (empty
//! pre-flushes such as `Q FWS [jbd2]`): they move no data.
//! Lines whose first field is not `maj,min` are blkparse's per-CPU and total summaries and
//! are skipped too. Devices become streams 0, 1, ... in order of first appearance.

use fusionraid_core::Nanos;

use super::fields::{decimal_ns, scaled, uint};
use super::lines::LineParser;
use super::options::BlkEvent;
use super::{IoKind, IoRecord};

const SECOND: Nanos = 1_000_000_000;

pub(crate) struct BlkparseParser {
    event: BlkEvent,
    sector_size: u64,
    /// `(major, minor)` of each device seen, in stream order. Small: one entry per device.
    devices: Vec<(u32, u32)>,
}

impl BlkparseParser {
    pub(crate) fn new(event: BlkEvent, sector_size: u64) -> Self {
        BlkparseParser {
            event,
            sector_size,
            devices: Vec::new(),
        }
    }

    fn stream_of(&mut self, dev: (u32, u32)) -> Result<u32, String> {
        if let Some(i) = self.devices.iter().position(|d| *d == dev) {
            return Ok(i as u32);
        }
        let i = u32::try_from(self.devices.len()).map_err(|_| "too many devices".to_string())?;
        self.devices.push(dev);
        Ok(i)
    }
}

/// `"8,16"` -> `(8, 16)`; `None` for anything else.
fn device(token: &str) -> Option<(u32, u32)> {
    let (maj, min) = token.split_once(',')?;
    Some((maj.parse().ok()?, min.parse().ok()?))
}

fn kind_of(rwbs: &str) -> Option<IoKind> {
    if rwbs.contains('D') {
        Some(IoKind::Trim)
    } else if rwbs.contains('W') {
        Some(IoKind::Write)
    } else if rwbs.contains('R') {
        Some(IoKind::Read)
    } else {
        None
    }
}

impl LineParser for BlkparseParser {
    fn parse(&mut self, line: &str) -> Result<Option<IoRecord>, String> {
        let mut tok = line.split_whitespace();
        let Some(dev) = tok.next().and_then(device) else {
            return Ok(None); // a summary line, not an event
        };
        let mut field = |i: usize, name: &str| {
            tok.next()
                .ok_or_else(|| format!("event line ends before field {i} ({name})"))
        };
        let _cpu = field(2, "cpu")?;
        let _seq = field(3, "sequence number")?;
        let time = field(4, "time in s")?;
        let _pid = field(5, "pid")?;
        let action = field(6, "action")?;
        if action != self.event.action() {
            return Ok(None);
        }
        let rwbs = field(7, "RWBS")?;
        let Some(kind) = kind_of(rwbs) else {
            return Ok(None);
        };
        // Requests without data (an empty pre-flush `FWS`) end with the process name here.
        let sector = match tok.next() {
            None => return Ok(None),
            Some(t) if t.starts_with('[') => return Ok(None),
            Some(t) => t,
        };
        let mut field = |i: usize, name: &str| {
            tok.next()
                .ok_or_else(|| format!("event line ends before field {i} ({name})"))
        };
        let plus = field(9, "'+'")?;
        let count = field(10, "sector count")?;
        if plus != "+" {
            return Err(format!("field 9 should be '+', found '{plus}'"));
        }
        let count = uint(count, 10, "sector count")?;
        if count == 0 {
            return Ok(None);
        }
        let sector = uint(sector, 8, "sector")?;
        Ok(Some(IoRecord {
            time_ns: decimal_ns(time, SECOND, 4, "time in s")?,
            kind,
            offset: scaled(sector, self.sector_size, 8, "sector")?,
            len: scaled(count, self.sector_size, 10, "sector count")?,
            stream: self.stream_of(dev)?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_events_become_records_and_others_are_skipped() {
        let mut p = BlkparseParser::new(BlkEvent::Queue, 512);
        let q = "  8,0    3        3     0.000003540   697  Q   W 223490 + 8 [kjournald]";
        let r = p.parse(q.trim()).unwrap().unwrap();
        assert_eq!(
            r,
            IoRecord {
                time_ns: 3540,
                kind: IoKind::Write,
                offset: 223_490 * 512,
                len: 4096,
                stream: 0
            }
        );
        let d = "8,0 3 4 0.000004 697 D W 223490 + 8 [kjournald]";
        assert_eq!(p.parse(d), Ok(None));
        assert_eq!(p.parse("8,0 1 5 0.1 0 Q FWS [jbd2]"), Ok(None));
        assert_eq!(p.parse("CPU0 (8,0):"), Ok(None));
        assert_eq!(p.parse("Total (8,0):"), Ok(None));
        let t = p
            .parse("8,16 0 1 1.5 9 Q DS 100 + 16 [fstrim]")
            .unwrap()
            .unwrap();
        assert_eq!(
            (t.kind, t.stream, t.time_ns),
            (IoKind::Trim, 1, 1_500_000_000)
        );
    }

    #[test]
    fn issue_events_selectable() {
        let mut p = BlkparseParser::new(BlkEvent::Issue, 512);
        assert_eq!(p.parse("8,0 0 1 0.0 1 Q R 8 + 8 [a]"), Ok(None));
        let r = p.parse("8,0 0 2 0.5 1 D RA 8 + 8 [a]").unwrap().unwrap();
        assert_eq!(r.kind, IoKind::Read);
    }

    #[test]
    fn malformed_event_lines_are_errors() {
        let mut p = BlkparseParser::new(BlkEvent::Queue, 512);
        assert!(
            p.parse("8,0 0 1 0.0 1 Q W 8 +")
                .unwrap_err()
                .contains("field 10")
        );
        assert!(
            p.parse("8,0 0 1 0.0 1 Q W x + 8 [a]")
                .unwrap_err()
                .contains("field 8")
        );
        assert!(
            p.parse("8,0 0 1 zero 1 Q W 8 + 8 [a]")
                .unwrap_err()
                .contains("field 4")
        );
        assert!(
            p.parse("8,0 0 1 0.0 1 Q W 8 - 8 [a]")
                .unwrap_err()
                .contains("'+'")
        );
    }
}
