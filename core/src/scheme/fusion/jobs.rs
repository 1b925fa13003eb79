//! The state of every request and background task in flight, one [`Job`] each.

use super::pairs::SlotRef;
use crate::engine::api::Data;
use crate::engine::iotable::IoTag;
use crate::meta::journal::Sealed;
use crate::slab::Handle;
use crate::space::Moved;
use crate::types::{DiskId, Nanos};
use crate::volume::Loc;

/// A job's handle in the scheme's slab (generation and index): what a device I/O's tag, a
/// parked writer and a relocation's reads carry back to their job.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct JobId(u64);

impl Handle for JobId {
    fn from_raw(raw: u64) -> Self {
        JobId(raw)
    }
    fn raw(self) -> u64 {
        self.0
    }
}

impl std::fmt::LowerHex for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::LowerHex::fmt(&self.0, f)
    }
}

impl JobId {
    /// The job a device I/O's tag names.
    pub fn of(tag: IoTag) -> Self {
        JobId(tag.job)
    }
    /// The tag of this job's device I/O number `part`.
    pub fn tag(self, part: u32) -> IoTag {
        IoTag { job: self.0, part }
    }
}

pub enum Job {
    Read(ReadJob),
    Write(WriteJob),
    Flush(FlushJob),
    Convert(ConvertJob),
    Reloc(RelocJob),
    Commit(CommitJob),
    Scrub(ScrubJob),
    Column(ColumnJob),
    Trim(TrimJob),
    Row(RowJob),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Read,
    Write,
    Flush,
    Convert,
    Reloc,
    Commit,
    Scrub,
    Column,
    Trim,
    Row,
}

impl Job {
    pub fn kind(&self) -> Kind {
        match self {
            Job::Read(_) => Kind::Read,
            Job::Write(_) => Kind::Write,
            Job::Flush(_) => Kind::Flush,
            Job::Convert(_) => Kind::Convert,
            Job::Reloc(_) => Kind::Reloc,
            Job::Commit(_) => Kind::Commit,
            Job::Scrub(_) => Kind::Scrub,
            Job::Column(_) => Kind::Column,
            Job::Trim(_) => Kind::Trim,
            Job::Row(_) => Kind::Row,
        }
    }
}

/// Who reads: a user (reply when done) or a relocation (feed its gathered blocks).
#[derive(Clone, Copy, Debug)]
pub enum ReadPurpose {
    User {
        id: u64,
        at: Nanos,
    },
    Reloc {
        job: JobId,
        index: usize,
    },
    /// The result went out; the job lingers only for hedged duplicates still in flight.
    Delivered,
}

/// How a read part is being served.
#[derive(Debug)]
pub enum PartMode {
    /// One device read from the block's location (or one replica).
    Direct {
        stripe: u32,
    },
    /// Rebuilt from the other columns of the stripe (the target disk is slow or failed).
    Rebuild {
        target: usize,
        missing: Vec<usize>,
        cols: Vec<Option<Vec<u8>>>,
        waiting: u32,
    },
    Done,
}

/// A run of pages of one user block served from one location.
#[derive(Debug)]
pub struct ReadPart {
    /// User block the pages belong to.
    pub ub: u64,
    pub first: u16,
    pub count: u16,
    /// The page of the block at `loc` that holds page `first` (patch.rs `Seg::at`).
    pub at: u16,
    /// Byte offset of this run in the job's buffer.
    pub buf_off: usize,
    pub loc: Loc,
    pub mode: PartMode,
    pub tries: u8,
    /// Device reads of this part still in flight (hedging may add one).
    pub inflight: u32,
    pub issued_at: Nanos,
    pub hedged: bool,
    /// (tag code, stripe) of each device read in flight; its pin is released on completion.
    pub pins: Vec<(u32, u32)>,
    /// The pages' checksums when the part was planned (empty: none kept). The data at the
    /// planned location can not change while the read pins its stripe; the checksums can
    /// (a write completing meanwhile), so they are captured with the location.
    pub expect: Vec<u32>,
    /// Copies of `loc` whose data failed its checksum: bit i for replica copy i,
    /// `BAD_RAID` for the RAID block itself (then it is rebuilt from parity).
    pub bad: u8,
    /// The latest bytes read for these pages that failed their checksum. When no copy is
    /// good the pages are lost; a relocation still moves these bytes (the pages' checksums,
    /// unchanged, go on saying they are lost), so that lost data never pins the space it
    /// sits in: a conversion or cleaning that waits for it would wait forever.
    pub lost_copy: Option<Vec<u8>>,
}

/// `ReadPart::bad` bit for a RAID block that failed its checksum.
pub const BAD_RAID: u8 = 1 << 7;
/// `ReadPart::bad` bit for a reconstruction (around a slow member) that failed its checksum.
pub const BAD_REBUILD: u8 = 1 << 6;

pub struct ReadJob {
    pub vol: usize,
    pub purpose: ReadPurpose,
    /// The assembled result, allocated when the first part arrives (a job served whole by
    /// one device read takes that read's buffer instead: no zeroing, no copy).
    pub buf: Option<Vec<u8>>,
    /// Bytes the job reads.
    pub len: usize,
    pub parts: Vec<ReadPart>,
    pub pending: usize,
    pub error: Option<String>,
    /// Some pages had no good copy and were delivered as last read (relocations only).
    pub lost: bool,
}

#[derive(Clone, Debug)]
pub enum WriteKind {
    Data(Data),
    /// The payloads of requests gathered into one write (`gather.rs`), in offset order and
    /// back to back from the job's offset, each a whole number of blocks.
    Gathered(Vec<Data>),
    Zeroes(u64),
    Trim(u64),
}

impl WriteKind {
    pub fn len(&self) -> u64 {
        match self {
            WriteKind::Data(d) => d.len(),
            WriteKind::Gathered(parts) => parts.iter().map(Data::len).sum(),
            WriteKind::Zeroes(n) | WriteKind::Trim(n) => *n,
        }
    }

    /// Bytes `[start, start + len)` of the payload (offsets from the write's own), which
    /// lie in one of a gathered write's parts: pieces never cross a block. None without
    /// bytes (size-only mode, zeroes, trims).
    pub fn bytes_at(&self, start: usize, len: usize) -> Option<&[u8]> {
        match self {
            WriteKind::Data(d) => d.bytes().map(|b| &b[start..start + len]),
            WriteKind::Gathered(parts) => {
                let (i, at) = part_at(parts.iter().map(|p| p.len() as usize), start, len);
                parts[i].bytes().map(|b| &b[at..at + len])
            }
            _ => None,
        }
    }
}

/// Which of consecutive parts of lengths `lens` holds `[start, start + len)`, and where in
/// it that range begins.
pub fn part_at(lens: impl Iterator<Item = usize>, start: usize, len: usize) -> (usize, usize) {
    let mut base = 0;
    for (i, l) in lens.enumerate() {
        if start < base + l {
            assert!(
                start + len <= base + l,
                "range {start}+{len} crosses a part"
            );
            return (i, start - base);
        }
        base += l;
    }
    panic!("range {start}+{len} beyond the payload ({base} bytes)")
}

/// Another request a gathered write answers (the job's own `id` is the first one's).
#[derive(Clone, Copy, Debug)]
pub struct Rider {
    pub id: u64,
    pub at: Nanos,
    pub fua: bool,
}

/// Where a piece of a write goes.
#[derive(Clone, Copy, Debug)]
pub enum Dest {
    /// A data column of a fresh full stripe.
    Stripe { stripe: u32, col: usize },
    /// A replica slot.
    Slot(SlotRef),
    /// Nothing to write: the block becomes unmapped (trim, or zeroes of a whole block).
    Unmap,
}

#[derive(Clone, Copy, Debug)]
pub struct Piece {
    pub ub: u64,
    pub first: u16,
    pub count: u16,
    /// Where in the destination block the pages go (a pack's next free pages; elsewhere
    /// their own positions).
    pub at: u16,
    pub dest: Dest,
}

pub struct WriteJob {
    pub vol: usize,
    pub id: u64,
    pub at: Nanos,
    pub fua: bool,
    pub offset: u64,
    pub kind: WriteKind,
    pub ub_first: u64,
    pub ub_end: u64,
    pub pieces: Vec<Piece>,
    pub stripes: Vec<u32>,
    pub pending: u32,
    pub failed: bool,
    pub tries: u8,
    /// Patches may wait for the replicated area to make room; cleared once waiting proved
    /// useless (nothing could start), so the write falls back to a zero-padded stripe.
    pub may_wait: bool,
    /// When the current placement's device writes went out.
    pub issued_at: Nanos,
    /// With write hedging on: the member of each device write of the current placement
    /// (by tag part), and whether it has landed.
    pub io_disks: Vec<DiskId>,
    pub landed: Vec<bool>,
    /// The other placement of the same request while both are in flight (write_hedge.rs):
    /// the first to land answers, the other is abandoned.
    pub twin: Option<JobId>,
    /// Placed a second time already (a request is hedged once).
    pub hedged: bool,
    /// A placement that lost to its twin: its device writes still land, then its blocks
    /// are released; it never answers the user.
    pub abandoned: bool,
    /// The other requests this write answers when it was gathered (`gather.rs`).
    pub riders: Vec<Rider>,
}

impl WriteJob {
    /// A request not placed yet: user blocks `blocks` of volume `vol`.
    pub fn new(
        vol: usize,
        id: u64,
        at: Nanos,
        fua: bool,
        offset: u64,
        kind: WriteKind,
        blocks: std::ops::Range<u64>,
    ) -> Self {
        WriteJob {
            vol,
            id,
            at,
            fua,
            offset,
            kind,
            ub_first: blocks.start,
            ub_end: blocks.end,
            pieces: Vec::new(),
            stripes: Vec::new(),
            pending: 0,
            failed: false,
            tries: 0,
            may_wait: true,
            issued_at: at,
            io_disks: Vec::new(),
            landed: Vec::new(),
            twin: None,
            hedged: false,
            abandoned: false,
            riders: Vec::new(),
        }
    }
}

/// A user write carried by a parity row (rows.rs).
pub struct RowPart {
    pub id: u64,
    pub at: Nanos,
    pub offset: u64,
    pub fua: bool,
    /// The row's height in pages, shared with its device write.
    pub data: Data,
}

/// One parity row of a row stripe in flight: part `i` in data column `i` at pages
/// `page..page + pages`, and the parity pages. Without parts: the zeros that close a
/// stripe early, from `page` to the end of every column.
pub struct RowJob {
    pub vol: usize,
    pub stripe: u32,
    pub page: u16,
    pub pages: u16,
    pub parts: Vec<RowPart>,
    pub pending: u32,
    pub failed: bool,
    pub issued_at: Nanos,
    /// Columns whose device write has landed (bit per column).
    pub landed: u64,
    /// The other placement of the same writes while both are in flight (a hedged row,
    /// row_hedge.rs): the first to land answers.
    pub twin: Option<JobId>,
    /// Lost to its twin: its writes still land, then it ends without mapping anything.
    pub abandoned: bool,
    /// Hedged already, or the hedge itself: never hedged (again).
    pub hedged: bool,
    /// The second placement of its writes.
    pub is_hedge: bool,
}

pub struct FlushJob {
    pub id: u64,
    pub at: Nanos,
    pub pending: u32,
}

/// In-position conversion of one pair set (paper §4.2, Fig. 7).
pub struct ConvertJob {
    pub vol: usize,
    pub set: u32,
    /// Index (in the set) of the stripe that keeps its copies as RAID data.
    pub keep: usize,
    pub cols: Vec<Option<Vec<u8>>>,
    pub pending: u32,
    pub writing: bool,
    pub failed: bool,
}

/// A run of pages a relocation moves: pages `[first, first+count)` of user block `ub`, read
/// from where the plan found them (`from`) into the target stripe where the layout placed
/// them.
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    pub ub: u64,
    pub first: u16,
    pub count: u16,
    /// Where they go: pages `[at, at + count)` of the target stripe's column `col`.
    pub col: usize,
    pub at: u16,
    /// Where they are: pages `[from_at, from_at + count)` of RAID block `from`.
    pub from: u64,
    pub from_at: u16,
}

/// Relocation: gather up to one stripe's worth of live pages (cleaning), or of whole user
/// blocks (rebuild, repair), into a fresh full stripe, then free what they left behind.
/// Whole user blocks take columns `0..blocks.len()`; moved pages (`segments`) the columns
/// after them.
pub struct RelocJob {
    pub vol: usize,
    pub stripe: u32,
    pub blocks: Vec<u64>,
    /// Pages moved (read index `blocks.len() + i`), laid out after the whole blocks.
    pub segments: Vec<Segment>,
    /// The blocks `segments` belong to and their mappings when read (compared like
    /// `snapshot`).
    pub owners: Vec<(u64, crate::volume::Entry, Vec<crate::volume::PatchNode>)>,
    /// The RAID block each moved item leaves (counted in `Vol::leaving` meanwhile).
    pub leaving: Vec<u64>,
    /// Each block's mapping when its data was read. Relocation takes no block locks: at the
    /// end it moves only blocks whose mapping is still exactly this (a write that landed
    /// meanwhile is newer and wins).
    pub snapshot: Vec<(crate::volume::Entry, Vec<crate::volume::PatchNode>)>,
    /// Stripes pinned for the job's lifetime, so no location of the snapshot can be reused
    /// (and come back equal) before the comparison.
    pub pins: Vec<u32>,
    pub data: Vec<Option<Vec<u8>>>,
    pub reads_left: usize,
    pub pending: u32,
    pub writing: bool,
    pub failed: bool,
    /// Part of a rebuild (counted in `Vol::rebuild_running`).
    pub rebuild: bool,
    /// Moving blocks off a copy that failed its checksum.
    pub repair: bool,
    /// Reads with lost pages (no good copy): moved as they were, not repaired.
    pub lost: Vec<bool>,
}

/// A metadata commit (durable.rs): the sealed generation, its flushes and unit writes.
pub struct CommitJob {
    pub sealed: Sealed,
    pub flushing: usize,
    pub writing: usize,
    pub unit_ok: Vec<bool>,
}

/// One device read of a check.
pub struct CheckRead {
    pub ub: u64,
    pub stripe: u32,
    /// The FLBN read when it is a RAID block (None: a replica).
    pub raid: Option<u64>,
    /// The location read, and which of its copies.
    pub loc: Loc,
    pub copy: u8,
    /// Checksums of the pages read, captured with the location.
    pub expect: Vec<u32>,
}

/// A scrub check in flight: the copies of a few user blocks, or one RAID stripe.
pub struct ScrubJob {
    pub vol: usize,
    pub reads: Vec<CheckRead>,
    /// The stripe of a parity check (its columns arrive in `cols`).
    pub parity_of: Option<u32>,
    pub cols: Vec<Option<Vec<u8>>>,
    pub pending: u32,
    pub writing: bool,
    pub failed: bool,
    pub pins: Vec<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnMode {
    /// Reconstruct lost columns into donor blocks.
    Rebuild,
    /// Copy a remapped column back to its home block.
    Home,
}

/// Rebuild of a stripe's lost columns into donor blocks, or a remapped column's way home
/// (column.rs).
pub struct ColumnJob {
    pub vol: usize,
    pub stripe: u32,
    pub mode: ColumnMode,
    /// Rebuild: the lost columns and the donor column reserved for each. Home: the one
    /// column going back.
    pub moves: Vec<Moved>,
    /// Rebuild: stale columns (space/stale.rs), rebuilt where they are.
    pub in_place: Vec<u8>,
    /// Rebuild: every column of the stripe (lost ones stay None until reconstructed).
    /// Home: the one column read from its donor.
    pub cols: Vec<Option<Vec<u8>>>,
    pub pending: u32,
    pub writing: bool,
    pub failed: bool,
}

/// Discards of a batch of spare stripes (trim.rs): the stripes stay pinned until every
/// discard is answered, so none is handed out while a discard could still land on it.
pub struct TrimJob {
    /// None: a chunk of the members' space beyond the zones.
    pub vol: Option<usize>,
    pub stripes: Vec<u32>,
    pub pending: u32,
}
