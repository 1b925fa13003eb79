//! One HDD's write log: an append-only circular region written at its head, so every
//! offloaded copy is a sequential write near where the last one ended (the HDD's cheapest
//! operation, SeRW's log). Extents die when the pair set holding their copy converts or is
//! freed; the tail advances over dead extents only, so the head never wraps onto a live one.
//! When no room is left before the tail, offloading to this HDD stops until extents die.

use std::collections::VecDeque;

/// An extent's position in the log's lifetime: bytes appended before it (monotonic). Its
/// place on the device is `start + pos % len`.
pub type LogPos = u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Extent {
    pos: LogPos,
    len: u64,
    live: bool,
}

#[derive(Clone, Debug)]
pub struct HddLog {
    /// First byte of the log on the member, and its length.
    start: u64,
    len: u64,
    /// Next append, and the oldest byte still held (everything before is reusable).
    head: LogPos,
    tail: LogPos,
    /// Extents from the tail on, in append order (padding to the end of the region is a
    /// dead extent).
    extents: VecDeque<Extent>,
    live_bytes: u64,
}

impl HddLog {
    pub fn new(start: u64, len: u64) -> Self {
        HddLog {
            start,
            len,
            head: 0,
            tail: 0,
            extents: VecDeque::new(),
            live_bytes: 0,
        }
    }

    /// The log after a restart, from the live extents (position, length) recovery found:
    /// the tail at the oldest, the head after the newest, the gaps between them dead.
    /// Refused when they overlap or span more than the log: no running log held that.
    pub fn recovered(start: u64, len: u64, mut live: Vec<(LogPos, u64)>) -> Result<Self, String> {
        live.sort_unstable();
        let mut log = HddLog::new(start, len);
        if let Some(&(first, _)) = live.first() {
            (log.head, log.tail) = (first, first);
        }
        for (pos, n) in live {
            if pos < log.head {
                return Err(format!("log extents at {pos} and before it overlap"));
            }
            if pos % len + n > len {
                return Err(format!("log extent at {pos} runs past the end of the log"));
            }
            if pos > log.head {
                log.extents.push_back(Extent {
                    pos: log.head,
                    len: pos - log.head,
                    live: false,
                });
            }
            log.extents.push_back(Extent {
                pos,
                len: n,
                live: true,
            });
            log.head = pos + n;
            log.live_bytes += n;
        }
        if log.head - log.tail > len {
            return Err(format!(
                "live log extents span {} bytes of a {len}-byte log",
                log.head - log.tail
            ));
        }
        Ok(log)
    }

    /// First byte of the log on its member, and the log's length.
    pub fn start(&self) -> u64 {
        self.start
    }
    #[allow(
        clippy::len_without_is_empty,
        reason = "a log's length is its region's"
    )]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Bytes held by extents still live.
    pub fn live_bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Extents the log tracks (live, or dead behind a live one).
    pub fn tracked(&self) -> usize {
        self.extents.len()
    }

    /// Room for `len` bytes at the head, wrapping to the start of the region when they do
    /// not fit before its end: the log position and the device offset, or None when the
    /// log is full up to its tail.
    pub fn append(&mut self, len: u64) -> Option<(LogPos, u64)> {
        assert!(len > 0);
        let at = self.head % self.len;
        let pad = if at + len > self.len {
            self.len - at
        } else {
            0
        };
        if self.head + pad + len - self.tail > self.len {
            return None;
        }
        if pad > 0 {
            self.extents.push_back(Extent {
                pos: self.head,
                len: pad,
                live: false,
            });
            self.head += pad;
            self.drop_dead_front();
        }
        let pos = self.head;
        self.extents.push_back(Extent {
            pos,
            len,
            live: true,
        });
        self.head += len;
        self.live_bytes += len;
        Some((pos, self.start + pos % self.len))
    }

    /// The extent at `pos` holds nothing any more; the tail moves past every dead extent at
    /// the front.
    pub fn kill(&mut self, pos: LogPos) {
        let i = self
            .extents
            .binary_search_by_key(&pos, |e| e.pos)
            .expect("killing an extent the log does not hold");
        let e = &mut self.extents[i];
        assert!(e.live, "log extent at {pos} killed twice");
        e.live = false;
        self.live_bytes -= e.len;
        self.drop_dead_front();
    }

    /// The tail moves past the dead extents at the front.
    fn drop_dead_front(&mut self) {
        while let Some(front) = self.extents.front()
            && !front.live
        {
            self.tail = front.pos + front.len;
            self.extents.pop_front();
        }
    }

    /// The device offset of the extent at `pos`.
    pub fn offset(&self, pos: LogPos) -> u64 {
        self.start + pos % self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_are_sequential_and_wrap_only_over_dead_extents() {
        let mut l = HddLog::new(1000, 100);
        let (a, oa) = l.append(40).unwrap();
        let (b, ob) = l.append(40).unwrap();
        assert_eq!((oa, ob), (1000, 1040), "sequential at the head");
        // 30 more do not fit before the end (20 left) and would wrap onto a live extent.
        assert_eq!(l.append(30), None);
        // The second dies first: the tail stays behind the live first one.
        l.kill(b);
        assert_eq!(l.append(30), None);
        assert_eq!(l.live_bytes(), 40);
        l.kill(a);
        assert_eq!(l.live_bytes(), 0);
        // Now the region is free: 30 bytes skip the 20 at the end and land at the start.
        let (c, oc) = l.append(30).unwrap();
        assert_eq!(oc, 1000);
        assert_eq!(l.offset(c), 1000);
        let (_, od) = l.append(70).unwrap();
        assert_eq!(od, 1030);
        assert_eq!(l.append(1), None, "full");
        l.kill(c);
        assert!(l.append(30).is_some());
    }

    #[test]
    fn a_recovered_log_keeps_its_live_extents_and_appends_after_them() {
        // Live extents at 120 and 180 (positions wrap a 100-byte log at 100 and 200).
        let mut l = HddLog::recovered(1000, 100, vec![(180, 10), (120, 40)]).unwrap();
        assert_eq!(l.live_bytes(), 50);
        // 10 bytes left at the end (190..200), then the region up to 120 is full.
        let (p, off) = l.append(10).unwrap();
        assert_eq!((p, off), (190, 1090));
        assert_eq!(l.append(30), None, "would wrap onto the extent at 120");
        l.kill(120);
        assert_eq!(l.append(30).map(|x| x.1), Some(1000));
        assert!(
            HddLog::recovered(0, 100, vec![(0, 40), (30, 10)]).is_err(),
            "overlap"
        );
        assert!(
            HddLog::recovered(0, 100, vec![(0, 40), (90, 20)]).is_err(),
            "past the end"
        );
        assert!(
            HddLog::recovered(0, 100, vec![(0, 40), (120, 10)]).is_err(),
            "span"
        );
    }

    #[test]
    #[should_panic(expected = "killed twice")]
    fn killing_twice_is_a_bug() {
        let mut m = HddLog::new(0, 100);
        let (x, _) = m.append(10).unwrap();
        let (y, _) = m.append(10).unwrap();
        m.kill(y);
        m.kill(y);
        let _ = x;
    }
}
