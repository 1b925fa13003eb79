//! What `create` overwrote on the members, kept so that a create failing part way (a member
//! whose writes fail, one device listed twice, found only after other members were
//! formatted) can put it back: no half-formatted pool is left behind, and running `create`
//! again once the problem is fixed needs no manual wiping and no `--force`.
//!
//! `create` writes little: a superblock at the start of each member and the empty pool's
//! first checkpoint. Each region is read before it is written; a failure writes the saved
//! bytes back where they differ, newest first, so a region written twice (two names for one
//! device) ends as it was before the first write.

use std::time::Duration;

use fusionraid_core::{Data, DevOp};
use fusionraid_io::Member;
use fusionraid_io::member::run_sync;

use crate::assemble::Io;

const TIMEOUT: Duration = Duration::from_secs(30);

/// Regions of members saved before `create` wrote them.
#[derive(Default)]
pub struct Undo {
    /// (member index, offset, the bytes there before), in the order they were saved.
    saved: Vec<(usize, u64, Vec<u8>)>,
}

impl Undo {
    /// Keep what member `i` holds at `offset..offset + len`, before it is written.
    pub fn save(
        &mut self,
        io: &Io,
        i: usize,
        m: &mut dyn Member,
        offset: u64,
        len: u64,
    ) -> anyhow::Result<()> {
        let data = run_sync(
            m,
            DevOp::Read { offset, len },
            &io.clock,
            &io.waker,
            TIMEOUT,
        )
        .map_err(|e| anyhow::anyhow!("`members[{i}]` ({}): reading: {e}", m.name()))?
        .ok_or_else(|| anyhow::anyhow!("`members[{i}]` ({}): read no data", m.name()))?;
        self.saved.push((i, offset, data));
        Ok(())
    }

    /// Write back everything saved that now differs, newest first. Returns, for each member
    /// it could not put back, why (such a member may still look like part of the failed
    /// pool).
    pub fn restore(self, io: &Io, members: &mut [Option<Box<dyn Member>>]) -> Vec<String> {
        let mut failed = Vec::new();
        for (i, offset, data) in self.saved.into_iter().rev() {
            let Some(m) = members.get_mut(i).and_then(Option::as_mut) else {
                continue;
            };
            // A write that failed changed nothing (or this region was written twice and is
            // back already): leave it, so a member refusing writes is not reported as left
            // changed.
            let read = DevOp::Read {
                offset,
                len: data.len() as u64,
            };
            if run_sync(m.as_mut(), read, &io.clock, &io.waker, TIMEOUT)
                .is_ok_and(|now| now.as_deref() == Some(&data[..]))
            {
                continue;
            }
            let write = DevOp::Write {
                offset,
                data: Data::Bytes(data),
                fua: true,
            };
            let r = run_sync(m.as_mut(), write, &io.clock, &io.waker, TIMEOUT)
                .and_then(|_| run_sync(m.as_mut(), DevOp::Flush, &io.clock, &io.waker, TIMEOUT));
            if let Err(e) = r {
                failed.push(format!("`members[{i}]` ({}): {e}", m.name()));
            }
        }
        failed
    }
}
