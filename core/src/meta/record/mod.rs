//! Journal records: the mapping changes of FusionRAID volumes, in the order they happened.
//!
//! ```text
//! tag u8 | volume u8 | fields
//!   1 Whole     ub u64, loc u40              the whole block now lives at loc (or is unmapped)
//!   2 Patch     ub u64, loc u40, first u16, count u16   pages [first, first+count) at loc
//!   3 Retarget  ub u64, from u40, to u40     conversion: references to `from` now name `to`
//!   4 SetCreate copies u8, stripes u32 x copies, slots u16, then slots x copies column bytes
//!   5 Written   ub u64, loc u40, first u16, count u16, crc32c u32 x count
//!               a user write: pages [first, first+count) at loc (the whole block when they
//!               are all of it), with the checksums of their new content
//!   6 Remap     stripe u32, col u8, donor u32, dcol u8
//!               rebuild: column col of the stripe now lives in column dcol of the donor
//!               stripe (its rebuilt content is written and flushed before this record)
//!   7 Unremap   stripe u32, col u8
//!               rebalance: the column is back in its home block
//!   8 MemberFailed  member u16 (volume byte 0)
//!               the member failed: from here on writes skip it, so its contents go stale
//!               and it must never serve again as it is, even if it reads back after a
//!               restart (`serve` fails it again until `replace` puts a device in its slot)
//!   9 MemberReplaced  member u16 (volume byte 0)
//!               a new device took the member's slot (one of slot generation 0: written
//!               so only for that generation, as builds before generations did)
//!  10 PatchAt   ub u64, loc u40, first u16, count u16, at u16
//!               pages [first, first+count) now live at pages [at, at+count) of the block
//!               at loc (the cleaner moved them; a `Patch` whose pages sit at their own
//!               positions is written as tag 2)
//!  11 WrittenAt ub u64, loc u40, first u16, count u16, at u16, crc32c u32 x count
//!               a user write into pages [at, at+count) of the block at loc (a pack); a
//!               `Written` at its own positions is written as tag 5
//!  12 Offloaded stripe u32, slot u16, copy u8, at u16, count u16, hdd u16, pos u64,
//!               offset u64
//!               write offload (issue 21): pages [at, at+count) of copy `copy` of replica
//!               slot `slot` of the pair set whose first stripe is `stripe` were written to
//!               the log of HDD member `hdd` at log position `pos`, device offset `offset`
//!               (the log's start + pos modulo its length), not to the copy's SSD place
//!  13 Restored  stripe u32, cols u32
//!               rebuild in place: the columns in mask `cols` of the stripe are no longer
//!               stale (rebuilt and written in place, remapped to a rebuilt donor, or the
//!               stripe was freed); see `space/stale.rs`
//!  14 MemberReplaced  member u16, generation u32 (volume byte 0)
//!               a new device took the member's slot; its superblock carries
//!               `generation`, which tells it from every device that held the slot
//!               before (`meta::image`)
//! ```
//! A `Written` record carries its checksums in the same record as the mapping change, so
//! recovery never applies one without the other.
//! A location is a packed BMT location (`Loc::pack`, 5 bytes).

use super::le_reader::LeReader;
use crate::volume::Loc;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    Whole {
        vol: u8,
        ub: u64,
        loc: Loc,
    },
    /// Pages `[first, first + count)` of `ub` at pages `[at, at + count)` of `loc`'s block.
    Patch {
        vol: u8,
        ub: u64,
        loc: Loc,
        first: u16,
        count: u16,
        at: u16,
    },
    Retarget {
        vol: u8,
        ub: u64,
        from: Loc,
        to: Loc,
    },
    SetCreate {
        vol: u8,
        stripes: Vec<u32>,
        /// Per slot, the column of its block in each stripe.
        cols: Vec<[u8; 3]>,
    },
    Written {
        vol: u8,
        ub: u64,
        loc: Loc,
        first: u16,
        /// The page of `loc`'s block that holds page `first`.
        at: u16,
        /// One per page written (`sums.len()` is the page count).
        sums: Vec<u32>,
    },
    Remap {
        vol: u8,
        stripe: u32,
        col: u8,
        donor: u32,
        dcol: u8,
    },
    Unremap {
        vol: u8,
        stripe: u32,
        col: u8,
    },
    /// A replica copy's pages in an HDD log; its pair set named by the set's first stripe.
    Offloaded {
        vol: u8,
        stripe: u32,
        extent: LogExtent,
    },
    /// Stale columns `cols` (a mask) of `stripe` hold their contents again.
    Restored {
        vol: u8,
        stripe: u32,
        cols: u32,
    },
    /// Pool-wide, not a volume's: member `member` failed.
    MemberFailed {
        member: u16,
    },
    /// Pool-wide: a new device, of slot generation `generation`, took member `member`'s
    /// slot.
    MemberReplaced {
        member: u16,
        generation: u32,
    },
}

/// Bytes that are not a well-formed record sequence.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed journal record at byte {at}: {what}")]
pub struct RecordError {
    pub at: usize,
    pub what: &'static str,
}

fn put_loc(out: &mut Vec<u8>, l: Loc) {
    out.extend_from_slice(&l.pack().to_le_bytes()[..5]);
}

/// `tag, vol, ub u64, loc u40, first u16, count u16`: a run of pages of a block (what
/// `Reader::pages` reads back), under tag `own` when the pages sit at their own positions
/// in the block at `loc`, else under tag `placed` and followed by `at u16` (`Reader::placed`).
fn put_run(
    out: &mut Vec<u8>,
    [own, placed]: [u8; 2],
    vol: u8,
    ub: u64,
    loc: Loc,
    (first, count, at): (u16, u16, u16),
) {
    out.extend_from_slice(&[if at == first { own } else { placed }, vol]);
    out.extend_from_slice(&ub.to_le_bytes());
    put_loc(out, loc);
    out.extend_from_slice(&first.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    if at != first {
        out.extend_from_slice(&at.to_le_bytes());
    }
}

/// Pages `[at, at + count)` of copy `copy` (1 or 2: copy 0 is never offloaded) of replica
/// slot `slot` of a pair set, written to HDD member `hdd`'s log at log position `pos`
/// (bytes appended to that log before it), device offset `offset`. One type for the
/// journal record, the checkpoint image and the running engine (`Vol::offloaded`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogExtent {
    pub slot: u16,
    pub copy: u8,
    pub at: u16,
    pub count: u16,
    pub hdd: u16,
    pub pos: u64,
    pub offset: u64,
}

impl LogExtent {
    /// Bytes of `stripe u32` and the extent, as records and images store them.
    pub const ENCODED_LEN: usize = 29;

    /// The HDD member holding the extent.
    pub fn disk(&self) -> crate::types::DiskId {
        crate::types::DiskId(u32::from(self.hdd))
    }

    /// Bytes the extent takes in its log.
    pub fn bytes(&self) -> u64 {
        u64::from(self.count) * crate::types::PAGE_SIZE
    }

    /// The device offset of page `page` of the slot, one of the extent's pages.
    pub fn offset_of(&self, page: u16) -> u64 {
        debug_assert!((self.at..self.at + self.count).contains(&page));
        self.offset + u64::from(page - self.at) * crate::types::PAGE_SIZE
    }

    /// `stripe u32, slot u16, copy u8, at u16, count u16, hdd u16, pos u64, offset u64`.
    pub fn encode(&self, stripe: u32, out: &mut Vec<u8>) {
        out.extend_from_slice(&stripe.to_le_bytes());
        out.extend_from_slice(&self.slot.to_le_bytes());
        out.push(self.copy);
        out.extend_from_slice(&self.at.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.hdd.to_le_bytes());
        out.extend_from_slice(&self.pos.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
    }

    /// The inverse of `encode` (`b` is `ENCODED_LEN` bytes), refusing pages outside a
    /// block or a copy that is never offloaded.
    pub fn decode(b: &[u8]) -> Result<(u32, LogExtent), &'static str> {
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
        let stripe = u32::from_le_bytes(b[0..4].try_into().expect("4"));
        let e = LogExtent {
            slot: u16_at(4),
            copy: b[6],
            at: u16_at(7),
            count: u16_at(9),
            hdd: u16_at(11),
            pos: u64_at(13),
            offset: u64_at(21),
        };
        if e.count == 0 || u32::from(e.at) + u32::from(e.count) > 256 || !(1..=2).contains(&e.copy)
        {
            return Err("offloaded pages out of bounds");
        }
        Ok((stripe, e))
    }
}

impl Record {
    #[allow(
        clippy::too_many_lines,
        reason = "one arm per record kind, each its bytes as the module documents them"
    )]
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Record::Whole { vol, ub, loc } => {
                out.extend_from_slice(&[1, *vol]);
                out.extend_from_slice(&ub.to_le_bytes());
                put_loc(out, *loc);
            }
            Record::Patch {
                vol,
                ub,
                loc,
                first,
                count,
                at,
            } => put_run(out, [2, 10], *vol, *ub, *loc, (*first, *count, *at)),
            Record::Retarget { vol, ub, from, to } => {
                out.extend_from_slice(&[3, *vol]);
                out.extend_from_slice(&ub.to_le_bytes());
                put_loc(out, *from);
                put_loc(out, *to);
            }
            Record::SetCreate { vol, stripes, cols } => {
                out.extend_from_slice(&[4, *vol, stripes.len() as u8]);
                for s in stripes {
                    out.extend_from_slice(&s.to_le_bytes());
                }
                out.extend_from_slice(&(cols.len() as u16).to_le_bytes());
                for c in cols {
                    out.extend_from_slice(&c[..stripes.len()]);
                }
            }
            Record::Written {
                vol,
                ub,
                loc,
                first,
                at,
                sums,
            } => {
                let count = sums.len() as u16;
                put_run(out, [5, 11], *vol, *ub, *loc, (*first, count, *at));
                for s in sums {
                    out.extend_from_slice(&s.to_le_bytes());
                }
            }
            Record::Remap {
                vol,
                stripe,
                col,
                donor,
                dcol,
            } => {
                out.extend_from_slice(&[6, *vol]);
                out.extend_from_slice(&stripe.to_le_bytes());
                out.push(*col);
                out.extend_from_slice(&donor.to_le_bytes());
                out.push(*dcol);
            }
            Record::Unremap { vol, stripe, col } => {
                out.extend_from_slice(&[7, *vol]);
                out.extend_from_slice(&stripe.to_le_bytes());
                out.push(*col);
            }
            Record::Offloaded {
                vol,
                stripe,
                extent,
            } => {
                out.extend_from_slice(&[12, *vol]);
                extent.encode(*stripe, out);
            }
            Record::Restored { vol, stripe, cols } => {
                out.extend_from_slice(&[13, *vol]);
                out.extend_from_slice(&stripe.to_le_bytes());
                out.extend_from_slice(&cols.to_le_bytes());
            }
            Record::MemberFailed { member } => {
                out.extend_from_slice(&[8, 0]);
                out.extend_from_slice(&member.to_le_bytes());
            }
            Record::MemberReplaced { member, generation } => {
                out.extend_from_slice(&[if *generation == 0 { 9 } else { 14 }, 0]);
                out.extend_from_slice(&member.to_le_bytes());
                if *generation != 0 {
                    out.extend_from_slice(&generation.to_le_bytes());
                }
            }
        }
    }

    /// The volume a record belongs to (None for the pool-wide member records).
    pub fn vol(&self) -> Option<u8> {
        Some(match self {
            Record::Whole { vol, .. }
            | Record::Patch { vol, .. }
            | Record::Retarget { vol, .. }
            | Record::SetCreate { vol, .. }
            | Record::Written { vol, .. }
            | Record::Remap { vol, .. }
            | Record::Unremap { vol, .. }
            | Record::Offloaded { vol, .. }
            | Record::Restored { vol, .. } => *vol,
            Record::MemberFailed { .. } | Record::MemberReplaced { .. } => return None,
        })
    }

    pub fn encoded_len(&self) -> usize {
        match self {
            Record::Whole { .. } => 15,
            Record::Patch { first, at, .. } => {
                if first == at {
                    19
                } else {
                    21
                }
            }
            Record::Retarget { .. } => 20,
            Record::SetCreate { stripes, cols, .. } => {
                5 + 4 * stripes.len() + cols.len() * stripes.len()
            }
            Record::Written {
                first, at, sums, ..
            } => 19 + 2 * usize::from(first != at) + 4 * sums.len(),
            Record::Remap { .. } => 12,
            Record::Unremap { .. } => 7,
            Record::Offloaded { .. } => 2 + LogExtent::ENCODED_LEN,
            Record::Restored { .. } => 10,
            Record::MemberFailed { .. } => 4,
            Record::MemberReplaced { generation, .. } => {
                if *generation == 0 {
                    4
                } else {
                    8
                }
            }
        }
    }

    /// Decode every record of a journal block's payload.
    pub fn decode_all(b: &[u8]) -> Result<Vec<Record>, RecordError> {
        let mut r = Reader {
            le: LeReader::new(b),
            start: 0,
        };
        let mut out = Vec::new();
        while !r.le.is_empty() {
            r.start = r.le.at();
            out.push(r.record()?);
        }
        Ok(out)
    }
}

/// Reads one record at a time; every error, running out of bytes included, names the byte
/// the record began at.
struct Reader<'a> {
    le: LeReader<'a>,
    /// Where the record being read began.
    start: usize,
}

impl<'a> Reader<'a> {
    fn malformed(&self, what: &'static str) -> RecordError {
        RecordError {
            at: self.start,
            what,
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        self.le
            .take(n)
            .map_err(|_| self.malformed("truncated record"))
    }
    fn u8(&mut self) -> Result<u8, RecordError> {
        self.le.u8().map_err(|_| self.malformed("truncated record"))
    }
    fn u16(&mut self) -> Result<u16, RecordError> {
        self.le
            .u16()
            .map_err(|_| self.malformed("truncated record"))
    }
    fn u32(&mut self) -> Result<u32, RecordError> {
        self.le
            .u32()
            .map_err(|_| self.malformed("truncated record"))
    }
    fn u64(&mut self) -> Result<u64, RecordError> {
        self.le
            .u64()
            .map_err(|_| self.malformed("truncated record"))
    }
    fn loc(&mut self) -> Result<Loc, RecordError> {
        let mut v = [0u8; 8];
        v[..5].copy_from_slice(self.take(5)?);
        let raw = u64::from_le_bytes(v);
        if raw >> 39 != 0 {
            return Err(self.malformed("location with bits above 39"));
        }
        Ok(Loc::unpack(raw))
    }
    /// `ub u64, loc u40, first u16, count u16` of a run of pages of a block (at most 256
    /// pages: a 1 MiB block).
    fn pages(&mut self) -> Result<(u64, Loc, u16, u16), RecordError> {
        let ub = self.u64()?;
        let loc = self.loc()?;
        let first = self.u16()?;
        let count = self.u16()?;
        if count == 0 || first as u32 + count as u32 > 256 {
            return Err(self.malformed("page range out of bounds"));
        }
        Ok((ub, loc, first, count))
    }

    /// `at u16`: where a run of `count` pages sits in the block at its location.
    fn placed(&mut self, count: u16) -> Result<u16, RecordError> {
        let at = self.u16()?;
        if at as u32 + count as u32 > 256 {
            return Err(self.malformed("pages placed out of bounds"));
        }
        Ok(at)
    }

    #[allow(
        clippy::too_many_lines,
        reason = "one arm per record tag, each reading that record's fields in order"
    )]
    fn record(&mut self) -> Result<Record, RecordError> {
        let tag = self.u8()?;
        let vol = self.u8()?;
        Ok(match tag {
            1 => Record::Whole {
                vol,
                ub: self.u64()?,
                loc: self.loc()?,
            },
            2 | 10 => {
                let (ub, loc, first, count) = self.pages()?;
                let at = if tag == 10 {
                    self.placed(count)?
                } else {
                    first
                };
                Record::Patch {
                    vol,
                    ub,
                    loc,
                    first,
                    count,
                    at,
                }
            }
            3 => Record::Retarget {
                vol,
                ub: self.u64()?,
                from: self.loc()?,
                to: self.loc()?,
            },
            4 => {
                let copies = self.u8()? as usize;
                if !(2..=3).contains(&copies) {
                    return Err(self.malformed("pair set with other than 2 or 3 copies"));
                }
                let mut stripes = Vec::with_capacity(copies);
                for _ in 0..copies {
                    stripes.push(self.u32()?);
                }
                let n = self.u16()? as usize;
                let mut cols = Vec::with_capacity(n.min(64));
                for _ in 0..n {
                    let mut c = [0u8; 3];
                    c[..copies].copy_from_slice(self.take(copies)?);
                    cols.push(c);
                }
                Record::SetCreate { vol, stripes, cols }
            }
            5 | 11 => {
                let (ub, loc, first, count) = self.pages()?;
                let at = if tag == 11 {
                    self.placed(count)?
                } else {
                    first
                };
                let mut sums = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    sums.push(self.u32()?);
                }
                Record::Written {
                    vol,
                    ub,
                    loc,
                    first,
                    at,
                    sums,
                }
            }
            6 => Record::Remap {
                vol,
                stripe: self.u32()?,
                col: self.u8()?,
                donor: self.u32()?,
                dcol: self.u8()?,
            },
            7 => Record::Unremap {
                vol,
                stripe: self.u32()?,
                col: self.u8()?,
            },
            12 => {
                let raw = self.take(LogExtent::ENCODED_LEN)?;
                let (stripe, extent) =
                    LogExtent::decode(raw).map_err(|what| self.malformed(what))?;
                Record::Offloaded {
                    vol,
                    stripe,
                    extent,
                }
            }
            13 => Record::Restored {
                vol,
                stripe: self.u32()?,
                cols: self.u32()?,
            },
            8 | 9 | 14 if vol != 0 => {
                return Err(self.malformed("member record with a volume byte"));
            }
            8 => Record::MemberFailed {
                member: self.u16()?,
            },
            9 => Record::MemberReplaced {
                member: self.u16()?,
                generation: 0,
            },
            14 => {
                let member = self.u16()?;
                match self.u32()? {
                    0 => return Err(self.malformed("member replaced with generation 0")),
                    generation => Record::MemberReplaced { member, generation },
                }
            }
            _ => {
                return Err(self.malformed("unknown record tag"));
            }
        })
    }
}

#[cfg(test)]
mod tests;
