//! User writes, write-zeroes and trims of a log while they run: their range lock, their first
//! error, and their answer.

use std::collections::VecDeque;

use super::PS;
use crate::engine::api::{Data, Op, ReqError, Request};
use crate::engine::ctx::Ctx;
use crate::scheme::locks::BlockLocks;
use crate::slab::Slab;
use crate::types::{Nanos, PAGE_SIZE};

pub struct UserWrite {
    pub id: u64,
    pub at: Nanos,
    pub vol: usize,
    pub offset: u64,
    pub len: u64,
    /// The payload of a write; None for write-zeroes and trim, which unmap their range
    /// (unmapped pages read as zeros).
    pub data: Option<Data>,
    pub fua: bool,
    pub err: Option<ReqError>,
}

/// A request as a log scheme takes it.
pub enum Sorted {
    Read { offset: u64, len: u64 },
    Flush,
    Write(UserWrite),
}

impl Sorted {
    pub fn new(req: Request, at: Nanos) -> Self {
        let (offset, len, data, fua) = match req.op {
            Op::Read { offset, len } => return Sorted::Read { offset, len },
            Op::Flush => return Sorted::Flush,
            Op::Write { offset, data, fua } => (offset, data.len(), Some(data), fua),
            Op::WriteZeroes { offset, len, .. } | Op::Trim { offset, len } => {
                (offset, len, None, false)
            }
        };
        Sorted::Write(UserWrite {
            id: req.id,
            at,
            vol: req.volume as usize,
            offset,
            len,
            data,
            fua,
            err: None,
        })
    }
}

impl UserWrite {
    pub fn unmaps(&self) -> bool {
        self.data.is_none()
    }

    /// The write's first page in its volume.
    pub fn first_page(&self) -> u64 {
        self.offset / PAGE_SIZE
    }

    /// The pages of its volume it covers.
    fn page_range(&self) -> std::ops::Range<u64> {
        self.offset / PAGE_SIZE..(self.offset + self.len) / PAGE_SIZE
    }

    pub fn pages(&self) -> u32 {
        (self.len / PAGE_SIZE) as u32
    }

    /// Its payload from page `i` on (data mode).
    pub fn bytes_from(&self, i: u32) -> Option<&[u8]> {
        let b = self.data.as_ref()?.bytes()?;
        Some(&b[i as usize * PS..])
    }

    /// Files the write as the job `job` makes of it and takes its range lock. Returns the
    /// job's handle when it may start now; otherwise it starts once the writes before it on
    /// its range are answered (their `finish` hands it over).
    pub fn admit<J>(
        self,
        jobs: &mut Slab<J>,
        locks: &mut [BlockLocks<u64>],
        job: impl FnOnce(UserWrite) -> J,
    ) -> Option<u64> {
        let (vol, r) = (self.vol, self.page_range());
        let h = jobs.insert(job(self));
        locks[vol].acquire(r.start, r.end, h)
    }

    /// Keeps `e` unless an earlier error is kept already.
    pub fn fail(&mut self, e: &str) {
        self.err.get_or_insert_with(|| ReqError::Io(e.into()));
    }

    /// The log ran out of space for the rest of the write.
    pub fn no_space(&mut self) {
        self.err.get_or_insert(ReqError::NoSpace);
    }

    /// Answers the request and lets the writes waiting on its range go (into `ready`).
    pub fn finish(self, ctx: &mut Ctx, locks: &mut [BlockLocks<u64>], ready: &mut VecDeque<u64>) {
        let r = self.page_range();
        ready.extend(locks[self.vol].release(r.start, r.end));
        ctx.reply(self.id, self.at, self.err.map_or(Ok(None), Err));
    }
}
