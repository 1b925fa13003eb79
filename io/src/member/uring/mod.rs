//! `file:PATH`: a file or block device through io_uring with O_DIRECT.
//!
//! All file members of a pool share one ring ([`ring::SharedRing`]) whose eventfd is the
//! loop's [`Waker`], so the kernel wakes the loop when an operation finishes and one system
//! call submits the work of every member. Data is staged in page-aligned buffers (registered
//! fixed buffers when a slot is free): the engine's payloads are plain `Vec`s, which
//! O_DIRECT can not use. When the ring is full, operations wait in the member's `waiting`
//! queue, which the engine's in-flight limits bound.
//!
//! Mapping: read/write -> READ(_FIXED)/WRITE(_FIXED) (FUA -> RWF_DSYNC), flush ->
//! FSYNC(DATASYNC), trim -> FALLOCATE(ZERO_RANGE | KEEP_SIZE) on a reserved regular file,
//! whose space must stay allocated (reserve.rs; XFS passes the discard down, ext4 marks the
//! range unwritten), FALLOCATE(PUNCH_HOLE | KEEP_SIZE) on a thin file or a block device. A
//! trim the file system or device does not support (tmpfs has no ZERO_RANGE) succeeds as a
//! no-op: trims are advisory, and any error would make the engine fail the member. A write
//! the file system refuses for space is held and tried again (`no_space.rs`).

mod reserve;
pub use reserve::FileSpace;
pub mod ring;

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

use fusionraid_core::{Data, DevError, DevOp, IoResult, Nanos};
use io_uring::{opcode, types};

use super::aligned::AlignedBuf;
use super::no_space::{DEFAULT_NO_SPACE_WAIT_NS, NoSpace, Queued};
use super::smart::SmartMonitor;
use super::{Completion, Member, MemberError};
use ring::{Buf, Inflight, Kind, RingState, SharedRing};

pub struct FileMember {
    name: String,
    file: File,
    size: u64,
    ring: SharedRing,
    id: u32,
    in_kernel: usize,
    waiting: VecDeque<Queued>,
    /// Writes the file system refused for space, waiting to be tried again.
    no_space: NoSpace,
    ready: Vec<Completion>,
    notes: Vec<String>,
    /// SMART / Health reads of the NVMe controller under a block device, when there is one.
    smart: Option<SmartMonitor>,
    /// The exclusive lock on the file (see `lock_exclusive`), held while this member lives.
    _lock: Arc<File>,
    /// A regular file that keeps its space (`FileSpace::Reserved`): a trim zeroes its range
    /// and keeps it allocated (reserve.rs); otherwise a trim punches the range out.
    keeps_space: bool,
}

/// The member files this process holds locked, by (device, inode): a second `FileMember`
/// of the same file in this process (a failed member replaced by the same device while
/// the old one is still open) shares the lock instead of being refused.
static LOCKED: Mutex<Vec<(FileKey, Weak<File>)>> = Mutex::new(Vec::new());

/// A file's (device, inode).
type FileKey = (u64, u64);

/// Take an exclusive advisory lock (flock) on a member's file or block device, so that a
/// second `fusionraid serve` (or `create`) of the same members is refused instead of two
/// engines writing the same blocks, each destroying the other's data.
fn lock_exclusive(file: &File, meta: &std::fs::Metadata) -> io::Result<Arc<File>> {
    let key = (meta.dev(), meta.ino());
    let mut locked = LOCKED.lock().unwrap_or_else(|p| p.into_inner());
    locked.retain(|(_, w)| w.strong_count() > 0);
    if let Some(held) = locked
        .iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, w)| w.upgrade())
    {
        return Ok(held);
    }
    // A duplicate of the descriptor: it holds the lock (of the shared open file
    // description) for as long as any member of this process uses the file.
    let holder = file.try_clone()?;
    // SAFETY: flock on a descriptor we own; no memory is involved.
    if unsafe { libc::flock(holder.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let holder = Arc::new(holder);
    locked.push((key, Arc::downgrade(&holder)));
    Ok(holder)
}

/// How long a member held by another process is waited for: a process killed with I/O in
/// flight keeps its files (and their locks) until the kernel has torn its io_uring down,
/// a moment after the process itself is gone.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3);

/// `lock_exclusive`, tried again for up to `LOCK_PATIENCE` while another process holds it.
fn lock_with_patience(file: &File, meta: &std::fs::Metadata) -> io::Result<Arc<File>> {
    let until = std::time::Instant::now() + LOCK_PATIENCE;
    loop {
        match lock_exclusive(file, meta) {
            Err(e)
                if e.raw_os_error() == Some(libc::EWOULDBLOCK)
                    && std::time::Instant::now() < until =>
            {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            r => return r,
        }
    }
}

fn open_file(path: &Path, direct: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

fn block_device_size(f: &File) -> io::Result<u64> {
    // BLKGETSIZE64 = _IOR(0x12, 114, size_t)
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    let mut size: u64 = 0;
    // SAFETY: the ioctl writes one u64 into `size`, which outlives the call.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size)
}

/// Why a member whose file system refused a write for longer than the patience failed,
/// and how to keep it from happening (a thin member, or a file system that can not
/// preallocate).
fn full_hint(patience: Nanos) -> String {
    format!(
        ": its file system stayed full for {} s (member files kept with file_space = \
         \"reserved\", the default, are allocated in full and never refused)",
        patience / 1_000_000_000
    )
}

/// Whether a write's result is the file system refusing it for space: ENOSPC, EDQUOT, or a
/// write ended early (the kernel stops a write at the point its file system filled up;
/// the range was checked against the member's size before it went).
fn refused_for_space(res: i32, len: usize) -> bool {
    [-libc::ENOSPC, -libc::EDQUOT].contains(&res) || (res >= 0 && (res as usize) < len)
}

/// Creates the missing member file `path`; a missing /dev node is a missing device, never
/// a file to create.
fn create_missing(name: &str, path: &Path, size: u64, space: FileSpace) -> Result<(), MemberError> {
    if path.starts_with("/dev") {
        return Err(MemberError::new(
            name,
            format!("{} does not exist (no such device)", path.display()),
        ));
    }
    reserve::create(path, size, space)
        .map_err(|e| MemberError::new(name, format!("{} {e}", path.display())))
}

impl FileMember {
    /// Opens (and with `create_size`, first creates, allocated as `space` says) the member
    /// at `path`.
    pub fn open(
        name: &str,
        path: &Path,
        create_size: Option<u64>,
        space: FileSpace,
        ring: SharedRing,
    ) -> Result<FileMember, MemberError> {
        let reserved = space == FileSpace::Reserved;
        let err = |what: &str, e: io::Error| {
            MemberError::new(name, format!("{what} {}: {e}", path.display()))
        };
        if let (Some(size), false) = (create_size, path.exists()) {
            create_missing(name, path, size, space)?;
        }
        let mut notes = Vec::new();
        let file = match open_file(path, true) {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                let note =
                    "O_DIRECT is not supported here (tmpfs?): buffered I/O, flush still syncs";
                tracing::warn!(member = name, "{note}");
                notes.push(note.to_string());
                open_file(path, false).map_err(|e| err("opening", e))?
            }
            Err(e) => return Err(err("opening", e)),
        };
        let meta = file.metadata().map_err(|e| err("inspecting", e))?;
        let lock = lock_with_patience(&file, &meta).map_err(|e| {
            if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                MemberError {
                    in_use: true,
                    ..MemberError::new(
                        name,
                        format!(
                            "{} is in use by another process (another `fusionraid serve` \
                             or `create` of this pool?)",
                            path.display()
                        ),
                    )
                }
            } else {
                err("locking", e)
            }
        })?;
        let size = if meta.file_type().is_block_device() {
            block_device_size(&file).map_err(|e| err("sizing block device", e))?
        } else if meta.is_file() {
            meta.len()
        } else {
            return Err(MemberError::new(
                name,
                format!(
                    "{} is neither a regular file nor a block device",
                    path.display()
                ),
            ));
        };
        let keeps_space = meta.is_file() && reserved;
        if keeps_space
            && let Some(note) = reserve::on_open(&file, size).map_err(|e| err("allocating", e))?
        {
            tracing::warn!(member = name, "{note}");
            notes.push(note);
        }
        let smart = if meta.file_type().is_block_device() {
            SmartMonitor::for_block_device(name, meta.rdev())
        } else {
            None
        };
        let id = ring.lock().register_member();
        Ok(FileMember {
            name: name.to_string(),
            file,
            size,
            ring,
            id,
            in_kernel: 0,
            waiting: VecDeque::new(),
            no_space: NoSpace::new(DEFAULT_NO_SPACE_WAIT_NS),
            ready: Vec::new(),
            notes,
            smart,
            _lock: lock,
            keeps_space,
        })
    }

    /// How long a write its file system refuses for space is tried again before the
    /// member fails (0: fail at once).
    pub fn set_no_space_wait(&mut self, patience: Nanos) {
        self.no_space = NoSpace::new(patience);
    }

    fn fail(&mut self, tag: u64, msg: String) {
        self.ready.push(Completion {
            tag,
            result: Err(DevError(format!("{}: {msg}", self.name))),
        });
    }

    /// Starts `op` in the ring, which has a free slot.
    fn start(&mut self, st: &mut RingState, q: Queued) {
        let Queued { tag, op, refused } = q;
        let fd = types::Fd(self.file.as_raw_fd());
        let (kind, offset, len, fua) = shape(&op);
        if kind != Kind::Flush && offset.checked_add(len).is_none_or(|end| end > self.size) {
            let m = format!(
                "range {offset}+{len} beyond the member's {} bytes",
                self.size
            );
            return self.fail(tag, m);
        }
        let n = len as usize;
        let mut buf = match kind {
            Kind::Read | Kind::Write => match st.pool.as_mut().and_then(|p| p.take(n)) {
                Some(i) => Buf::Fixed(i),
                None => Buf::Heap(AlignedBuf::new(n)),
            },
            Kind::Flush | Kind::Trim => Buf::None,
        };
        let entry = match op {
            DevOp::Read { .. } => match &mut buf {
                Buf::Fixed(i) => {
                    let p = st.pool.as_mut().expect("fixed slot without pool").ptr(*i);
                    opcode::ReadFixed::new(fd, p, n as u32, *i)
                        .offset(offset)
                        .build()
                }
                Buf::Heap(b) => opcode::Read::new(fd, b.as_mut_ptr(), n as u32)
                    .offset(offset)
                    .build(),
                Buf::None => unreachable!("reads always have a buffer"),
            },
            DevOp::Write { data, fua, .. } => {
                let Some(bytes) = data.bytes() else {
                    st.release(&buf);
                    return self.fail(tag, "size-only write to a real member".into());
                };
                let flags = if fua { libc::RWF_DSYNC } else { 0 };
                match &mut buf {
                    Buf::Fixed(i) => {
                        let pool = st.pool.as_mut().expect("fixed slot without pool");
                        pool.slice_mut(*i, n).copy_from_slice(bytes);
                        opcode::WriteFixed::new(fd, pool.ptr(*i), n as u32, *i)
                            .offset(offset)
                            .rw_flags(flags)
                            .build()
                    }
                    Buf::Heap(b) => {
                        b.as_mut_slice().copy_from_slice(bytes);
                        opcode::Write::new(fd, b.as_mut_ptr(), n as u32)
                            .offset(offset)
                            .rw_flags(flags)
                            .build()
                    }
                    Buf::None => unreachable!("writes always have a buffer"),
                }
            }
            DevOp::Flush => opcode::Fsync::new(fd)
                .flags(types::FsyncFlags::DATASYNC)
                .build(),
            DevOp::Trim { .. } => opcode::Fallocate::new(fd, len)
                .offset(offset)
                .mode(self.trim_mode())
                .build(),
        };
        let op = Inflight {
            member: self.id,
            tag,
            kind,
            offset,
            len: n,
            buf,
            fua,
            refused,
        };
        // SAFETY: the entry's buffer is `op.buf` (a heap buffer that moves with `op` but
        // whose allocation does not move) or a fixed slot; the ring keeps both until the
        // completion is reaped.
        unsafe { st.push(entry, op) };
        self.in_kernel += 1;
    }

    /// A reserved regular file's range is zeroed in place (it keeps its space); anything
    /// else's is punched out.
    fn trim_mode(&self) -> i32 {
        let how = if self.keeps_space {
            libc::FALLOC_FL_ZERO_RANGE
        } else {
            libc::FALLOC_FL_PUNCH_HOLE
        };
        how | libc::FALLOC_FL_KEEP_SIZE
    }

    fn finish(&self, st: &mut RingState, op: &Inflight, res: i32) -> IoResult {
        let err = |what: &str, e: String| {
            DevError(format!(
                "{}: {what} at {}+{}: {e}",
                self.name, op.offset, op.len
            ))
        };
        let os = |r: i32| io::Error::from_raw_os_error(-r).to_string();
        match op.kind {
            Kind::Read | Kind::Write => {
                let what = if op.kind == Kind::Read {
                    "read"
                } else {
                    "write"
                };
                if res < 0 && [libc::ENOSPC, libc::EDQUOT].contains(&-res) {
                    let hint = full_hint(self.no_space.patience());
                    Err(err(what, format!("{}{hint}", os(res))))
                } else if res < 0 {
                    Err(err(what, os(res)))
                } else if res as usize != op.len {
                    Err(err(what, short_transfer(op.kind, res as usize, op.len)))
                } else if op.kind == Kind::Read {
                    Ok(Some(Data::Bytes(staged(st, op).to_vec())))
                } else {
                    Ok(None)
                }
            }
            Kind::Flush if res < 0 => Err(err("flush", os(res))),
            Kind::Flush => Ok(None),
            Kind::Trim => {
                // A file system too full to split an extent for ZERO_RANGE refuses a trim
                // for space: the range stays as it was, which a trim allows.
                let unsupported = [
                    libc::EOPNOTSUPP,
                    libc::EINVAL,
                    libc::ENOTTY,
                    libc::ENODEV,
                    libc::ENOSPC,
                    libc::EDQUOT,
                ];
                if res < 0 && !unsupported.contains(&-res) {
                    Err(err("trim", os(res)))
                } else {
                    Ok(None)
                }
            }
        }
    }
}

impl Member for FileMember {
    fn name(&self) -> &str {
        &self.name
    }
    fn size_bytes(&self) -> u64 {
        self.size
    }

    fn submit(&mut self, tag: u64, op: DevOp, _now: Nanos) {
        let ring = self.ring.clone();
        let mut st = ring.lock();
        // Keep submission order: once something waits, everything after it waits too.
        let q = Queued::new(tag, op);
        if self.waiting.is_empty() && st.has_free_slot() {
            self.start(&mut st, q);
        } else {
            self.waiting.push_back(q);
        }
    }

    fn commit(&mut self) {
        self.ring.lock().submit();
    }

    fn uncommitted(&self) -> bool {
        self.ring.lock().unsubmitted()
    }

    fn reap(&mut self, now: Nanos, out: &mut Vec<Completion>) {
        out.append(&mut self.ready);
        let ring = self.ring.clone();
        let mut st = ring.lock();
        for (op, res) in st.take_done(self.id) {
            self.in_kernel -= 1;
            if op.kind == Kind::Write && refused_for_space(res, op.len) {
                let since = op.refused.unwrap_or(now);
                if self.no_space.may_hold(since, now) {
                    let write = DevOp::Write {
                        offset: op.offset,
                        data: Data::Bytes(staged(&mut st, &op).to_vec()),
                        fua: op.fua,
                    };
                    st.release(&op.buf);
                    self.no_space.hold(&self.name, op.tag, write, since, now);
                    continue;
                }
            }
            let result = self.finish(&mut st, &op, res);
            if op.refused.is_some() && result.is_ok() {
                self.no_space.written(&self.name, now);
            }
            st.release(&op.buf);
            out.push(Completion {
                tag: op.tag,
                result,
            });
        }
        self.no_space.requeue_due(now, &mut self.waiting);
        while st.has_free_slot() {
            let Some(q) = self.waiting.pop_front() else {
                break;
            };
            self.start(&mut st, q);
        }
        drop(st);
        out.append(&mut self.ready);
    }

    fn next_deadline(&self) -> Option<Nanos> {
        self.no_space.next_retry()
    }

    fn inflight(&self) -> usize {
        self.in_kernel + self.waiting.len() + self.ready.len() + self.no_space.len()
    }

    fn notes(&self) -> Vec<String> {
        let mut n = self.notes.clone();
        n.extend(self.no_space.note());
        n.extend(self.smart.as_ref().and_then(|s| s.note()));
        n
    }

    fn wear(&self) -> Option<f64> {
        self.smart.as_ref()?.health().map(|h| h.wear())
    }

    fn device_written_bytes(&self) -> Option<u64> {
        self.smart.as_ref()?.health().map(|h| h.bytes_written())
    }
}

/// An operation's kind, range and FUA flag.
fn shape(op: &DevOp) -> (Kind, u64, u64, bool) {
    match op {
        DevOp::Read { offset, len } => (Kind::Read, *offset, *len, false),
        DevOp::Write {
            offset, data, fua, ..
        } => (Kind::Write, *offset, data.len(), *fua),
        DevOp::Flush => (Kind::Flush, 0, 0, false),
        DevOp::Trim { offset, len } => (Kind::Trim, *offset, *len, false),
    }
}

/// The bytes of a read or write's staging buffer.
fn staged<'a>(st: &'a mut RingState, op: &'a Inflight) -> &'a [u8] {
    match &op.buf {
        Buf::Fixed(i) => st
            .pool
            .as_mut()
            .expect("fixed slot without pool")
            .slice_mut(*i, op.len),
        Buf::Heap(b) => b.as_slice(),
        Buf::None => unreachable!("reads and writes always have a buffer"),
    }
}

/// Why a read or write moved fewer bytes than asked, in words. The kernel ends a write to a
/// file early when its filesystem fills up (the error comes only from a next write, which
/// never comes: the member fails on this one), and a read early at the end of the file;
/// the operator reading "member failed" needs that hint more than the byte count.
fn short_transfer(kind: Kind, done: usize, asked: usize) -> String {
    let hint = if kind == Kind::Write {
        "the filesystem or device is full?"
    } else {
        "beyond the end of the file?"
    };
    format!("short transfer of {done} of {asked} bytes ({hint})")
}

#[cfg(test)]
mod tests;
