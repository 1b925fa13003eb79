//! A user read served by several device reads, as the baselines' read paths issue them:
//! each lands at its offset in one result buffer (pages no read covers stay zero: they are
//! unmapped), the first error is kept, and the reply goes out once the last one is in.

use super::array::Outcome;
use crate::engine::api::read_result;
use crate::engine::ctx::Ctx;
use crate::types::Nanos;

pub struct Gather {
    id: u64,
    at: Nanos,
    len: u64,
    /// None in size-only mode.
    buf: Option<Vec<u8>>,
    /// Device reads not back yet.
    pub pending: u32,
    err: Option<String>,
}

impl Gather {
    /// Request `id` reads `len` bytes, served by `parts` device reads.
    pub fn new(ctx: &Ctx, id: u64, len: u64, parts: u32) -> Self {
        Gather {
            id,
            at: ctx.now,
            len,
            buf: (!ctx.size_only).then(|| vec![0u8; len as usize]),
            pending: parts,
            err: None,
        }
    }

    /// Puts `bytes` at byte `off` of the result (a device's data, or a buffer's).
    pub fn put(&mut self, off: u64, bytes: &[u8]) {
        if let Some(buf) = &mut self.buf {
            let off = off as usize;
            buf[off..off + bytes.len()].copy_from_slice(bytes);
        }
    }

    /// Keeps `why` unless an earlier error is kept already.
    pub fn fail(&mut self, why: String) {
        self.err.get_or_insert(why);
    }

    /// Takes one device read's outcome, its data landing at byte `off`; true when it was
    /// the last read to come back.
    pub fn part_done(&mut self, off: u64, out: Outcome) -> bool {
        match out {
            Ok(Some(b)) => self.put(off, &b),
            Ok(None) => {}
            Err(e) => self.fail(e),
        }
        self.pending -= 1;
        self.pending == 0
    }

    /// Answers the request: the data, or the first error.
    pub fn reply(self, ctx: &mut Ctx) {
        ctx.reply(self.id, self.at, read_result(self.err, self.buf, self.len));
    }
}
