//! Byte-granular access to a block-aligned backend, by read-modify-write.
//!
//! Our volumes advertise a 4 KiB minimum block, and clients that honour
//! NBD_INFO_BLOCK_SIZE (qemu, the kernel) align their I/O themselves. Some do
//! not: libnbd-based nbdfuse rejects sub-block writes client-side instead of
//! doing read-modify-write, so `mkfs.ext4` on an nbdfuse file fails against
//! a 4 KiB export. [`RmwBackend`] wraps such a backend, advertises a minimum
//! block of 1, and turns each unaligned request into aligned ones:
//!
//! * reads read the covering aligned range and return the requested slice;
//! * writes read the partial edge blocks, merge, and write the covering
//!   aligned range in one request;
//! * write-zeroes merge zeroes into the edge blocks and zero the interior;
//! * trims shrink to the aligned interior (the spec allows this).
//!
//! A merge must not race another write to the same block (two clients
//! patching different sectors of one block would lose one patch), so every
//! write-type request holds an exclusive lock on its aligned range until the
//! inner backend completes it; conflicting requests wait in FIFO order.
//! Reads take no lock: overlapping in-flight requests have no defined order
//! in NBD, and the locks already keep every block's contents consistent.

use std::sync::{Arc, Mutex};

use crate::backend::{Backend, Command, CommandKind, Completer};
use crate::error::ErrorCode;
use crate::export::ExportInfo;

use locks::LockTable;

mod locks;
#[cfg(test)]
mod tests;

/// Wraps `inner` so clients may use any offset and length.
pub struct RmwBackend<B: Backend> {
    inner: Arc<B>,
    locks: Arc<LockTable>,
    /// (inner block size, size) per export, refreshed by `exports()` (which
    /// the server calls at every handshake) so `submit` does not have to
    /// rebuild the export list for every request.
    geometry: Mutex<Vec<(u64, u64)>>,
}

impl<B: Backend> RmwBackend<B> {
    pub fn new(inner: Arc<B>) -> Self {
        RmwBackend {
            inner,
            locks: Arc::new(LockTable::default()),
            geometry: Mutex::new(Vec::new()),
        }
    }

    pub fn inner(&self) -> &Arc<B> {
        &self.inner
    }

    fn refresh(&self) -> Vec<ExportInfo> {
        let exports = self.inner.exports();
        *self.geometry.lock().unwrap_or_else(|p| p.into_inner()) = exports
            .iter()
            .map(|e| (u64::from(e.block_size.minimum.max(1)), e.size))
            .collect();
        exports
    }

    fn geometry(&self, export: usize) -> Option<(u64, u64)> {
        let cached = self
            .geometry
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(export)
            .copied();
        cached.or_else(|| {
            self.refresh();
            self.geometry
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(export)
                .copied()
        })
    }
}

impl<B: Backend> Backend for RmwBackend<B> {
    fn exports(&self) -> Vec<ExportInfo> {
        self.refresh()
            .into_iter()
            .map(|mut e| {
                let block = e.block_size.minimum.max(1);
                e.block_size.preferred = e.block_size.preferred.max(block);
                // Room for the up-to-two extra edge blocks of an unaligned
                // request, so what we send inside stays within the inner max.
                e.block_size.maximum = e
                    .block_size
                    .maximum
                    .saturating_sub(2 * block)
                    .max(e.block_size.preferred);
                e.block_size.minimum = 1;
                e
            })
            .collect()
    }

    fn submit(&self, export: usize, cmd: Command, done: Completer) {
        let Some((block, size)) = self.geometry(export) else {
            done.fail(ErrorCode::Inval);
            return;
        };
        let op = Op {
            inner: self.inner.clone(),
            locks: self.locks.clone(),
            export,
            handle: cmd.handle,
            block,
            size,
        };
        op.run(cmd.kind, done);
    }

    fn idle(&self) {
        self.inner.idle()
    }

    fn rejected(&self, export: usize, error: ErrorCode) {
        self.inner.rejected(export, error)
    }
}

/// Everything one request needs, cheap to clone into completion closures.
struct Op<B: Backend> {
    inner: Arc<B>,
    locks: Arc<LockTable>,
    export: usize,
    handle: u64,
    block: u64,
    size: u64,
}

impl<B: Backend> Clone for Op<B> {
    fn clone(&self) -> Self {
        Op {
            inner: self.inner.clone(),
            locks: self.locks.clone(),
            ..*self
        }
    }
}

impl<B: Backend> Op<B> {
    fn down(&self, x: u64) -> u64 {
        x - x % self.block
    }

    fn up(&self, x: u64) -> Option<u64> {
        match x % self.block {
            0 => Some(x),
            r => x.checked_add(self.block - r),
        }
    }

    fn aligned(&self, offset: u64, len: u64) -> bool {
        offset.is_multiple_of(self.block) && len.is_multiple_of(self.block)
    }

    fn submit(&self, kind: CommandKind, done: Completer) {
        self.inner.submit(
            self.export,
            Command {
                handle: self.handle,
                kind,
            },
            done,
        );
    }

    /// A completer that runs `f` with the inner result.
    fn then(&self, f: impl FnOnce(Result<Vec<u8>, ErrorCode>) + Send + 'static) -> Completer {
        Completer::from_fn(self.handle, f)
    }

    fn run(self, kind: CommandKind, done: Completer) {
        match kind {
            CommandKind::Read { offset, len } => self.read(offset, len, done),
            CommandKind::Flush => self.submit(CommandKind::Flush, done),
            CommandKind::Write { offset, data, fua } => {
                let Some(range) = self.cover(offset, data.len() as u64) else {
                    return done.fail(ErrorCode::NoSpc);
                };
                self.locked(range, done, move |op, done| {
                    op.write(offset, data, fua, done)
                });
            }
            CommandKind::WriteZeroes {
                offset,
                len,
                no_hole,
                fua,
            } => {
                let Some(range) = self.cover(offset, u64::from(len)) else {
                    return done.fail(ErrorCode::NoSpc);
                };
                self.locked(range, done, move |op, done| {
                    op.write_zeroes(offset, len, no_hole, fua, done)
                });
            }
            CommandKind::Trim { offset, len, fua } => {
                // Only whole blocks can be discarded; the rest of the range
                // keeps its data, which a trim permits.
                let Some(start) = self.up(offset) else {
                    return done.ok();
                };
                let end = self.down(offset.saturating_add(u64::from(len)));
                if end <= start {
                    return done.ok();
                }
                let len = (end - start) as u32;
                self.locked((start, end), done, move |op, done| {
                    op.submit(
                        CommandKind::Trim {
                            offset: start,
                            len,
                            fua,
                        },
                        done,
                    )
                });
            }
        }
    }

    /// The aligned range covering `offset..offset+len`, if inside the export.
    fn cover(&self, offset: u64, len: u64) -> Option<(u64, u64)> {
        let end = self.up(offset.checked_add(len)?)?;
        (end <= self.size).then(|| (self.down(offset), end))
    }

    /// Runs `f` holding the lock on `range`; the lock is released when the
    /// completer `f` receives has been completed (or dropped).
    fn locked(
        self,
        range: (u64, u64),
        done: Completer,
        f: impl FnOnce(Op<B>, Completer) + Send + 'static,
    ) {
        let locks = self.locks.clone();
        let key = (self.export, range.0, range.1);
        let release = Completer::from_fn(self.handle, move |r| {
            locks.release(key);
            done.complete(r);
        });
        let op = self.clone();
        self.locks.acquire(key, Box::new(move || f(op, release)));
    }

    fn read(self, offset: u64, len: u32, done: Completer) {
        let len64 = u64::from(len);
        if self.aligned(offset, len64) {
            return self.submit(CommandKind::Read { offset, len }, done);
        }
        let Some((start, end)) = self.cover(offset, len64) else {
            return done.fail(ErrorCode::Inval);
        };
        let Ok(cover_len) = u32::try_from(end - start) else {
            return done.fail(ErrorCode::Inval);
        };
        let want = (offset - start) as usize..(offset - start) as usize + len as usize;
        self.submit(
            CommandKind::Read {
                offset: start,
                len: cover_len,
            },
            self.then(move |r| {
                let slice = r.and_then(|d| d.get(want).map(<[u8]>::to_vec).ok_or(ErrorCode::Io));
                done.complete(slice)
            }),
        );
    }

    fn write(self, offset: u64, data: Vec<u8>, fua: bool, done: Completer) {
        let len = data.len() as u64;
        if self.aligned(offset, len) {
            return self.submit(CommandKind::Write { offset, data, fua }, done);
        }
        self.with_edges(offset, offset + len, done, move |op, edges, done| {
            // One covering buffer: edge blocks as read, payload on top.
            let start = op.down(offset);
            let end = op.up(offset + len).unwrap_or(offset + len);
            let mut buf = vec![0u8; (end - start) as usize];
            for (at, block) in edges {
                let i = (at - start) as usize;
                buf[i..i + block.len()].copy_from_slice(&block);
            }
            let i = (offset - start) as usize;
            buf[i..i + data.len()].copy_from_slice(&data);
            op.submit(
                CommandKind::Write {
                    offset: start,
                    data: buf,
                    fua,
                },
                done,
            );
        });
    }

    fn write_zeroes(self, offset: u64, len: u32, no_hole: bool, fua: bool, done: Completer) {
        let end = offset + u64::from(len);
        if self.aligned(offset, u64::from(len)) {
            return self.submit(
                CommandKind::WriteZeroes {
                    offset,
                    len,
                    no_hole,
                    fua,
                },
                done,
            );
        }
        self.with_edges(offset, end, done, move |op, edges, done| {
            // Edge blocks get zeroes merged in and are rewritten; whole
            // blocks in between are zeroed natively. One reply for all.
            let interior = (op.up(offset).unwrap_or(end), op.down(end));
            let has_interior = interior.1 > interior.0;
            let join = Join::new(edges.len() + usize::from(has_interior), done);
            for (at, mut block) in edges {
                let lo = offset.max(at) - at;
                let hi = end.min(at + block.len() as u64) - at;
                block[lo as usize..hi as usize].fill(0);
                let j = join.clone();
                op.submit(
                    CommandKind::Write {
                        offset: at,
                        data: block,
                        fua,
                    },
                    op.then(move |r| j.part(r)),
                );
            }
            if has_interior {
                let j = join.clone();
                op.submit(
                    CommandKind::WriteZeroes {
                        offset: interior.0,
                        len: (interior.1 - interior.0) as u32,
                        no_hole,
                        fua,
                    },
                    op.then(move |r| j.part(r)),
                );
            }
        });
    }

    /// Reads the one or two blocks that `start..end` covers only partly,
    /// then calls `merge` with `(block offset, contents)` pairs. If a read
    /// fails, `done` fails with its error and `merge` never runs.
    fn with_edges<F>(self, start: u64, end: u64, done: Completer, merge: F)
    where
        F: FnOnce(Op<B>, Vec<(u64, Vec<u8>)>, Completer) + Send + 'static,
    {
        let mut blocks = Vec::with_capacity(2);
        if !start.is_multiple_of(self.block) {
            blocks.push(self.down(start));
        }
        if !end.is_multiple_of(self.block) && !blocks.contains(&self.down(end)) {
            blocks.push(self.down(end));
        }
        let gather = Arc::new(Mutex::new(Gather {
            remaining: blocks.len(),
            edges: Vec::with_capacity(blocks.len()),
            error: None,
            next: Some((merge, done)),
        }));
        for at in blocks {
            let g = gather.clone();
            let op = self.clone();
            self.submit(
                CommandKind::Read {
                    offset: at,
                    len: self.block as u32,
                },
                self.then(move |r| {
                    let mut s = g.lock().unwrap_or_else(|p| p.into_inner());
                    match r {
                        Ok(d) if d.len() as u64 == op.block => s.edges.push((at, d)),
                        // A short read would leave holes in the merge.
                        Ok(_) | Err(_) => {
                            s.error.get_or_insert(r.err().unwrap_or(ErrorCode::Io));
                        }
                    }
                    s.remaining -= 1;
                    if s.remaining > 0 {
                        return;
                    }
                    let Some((merge, done)) = s.next.take() else {
                        return;
                    };
                    let (edges, error) = (std::mem::take(&mut s.edges), s.error);
                    drop(s);
                    match error {
                        Some(e) => done.fail(e),
                        None => merge(op, edges, done),
                    }
                }),
            );
        }
    }
}

struct Gather<F> {
    remaining: usize,
    edges: Vec<(u64, Vec<u8>)>,
    error: Option<ErrorCode>,
    next: Option<(F, Completer)>,
}

/// Completes `done` once all `parts` sub-requests have finished: with the
/// first error if any failed.
struct Join {
    state: Mutex<(usize, Option<ErrorCode>, Option<Completer>)>,
}

impl Join {
    fn new(parts: usize, done: Completer) -> Arc<Join> {
        Arc::new(Join {
            state: Mutex::new((parts, None, Some(done))),
        })
    }

    fn part(&self, r: Result<Vec<u8>, ErrorCode>) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.0 -= 1;
        if let Err(e) = r {
            s.1.get_or_insert(e);
        }
        if s.0 == 0
            && let Some(done) = s.2.take()
        {
            let err = s.1;
            drop(s);
            match err {
                Some(e) => done.fail(e),
                None => done.ok(),
            }
        }
    }
}
