//! The random requests of a data-mode run: reads, writes, trims, write-zeroes and flushes
//! over random ranges, each recorded with what reads in flight over it may see.

use std::rc::Rc;

use fusionraid_core::{Data, Op, PAGE_SIZE, Request};

use crate::model::Model;
use crate::oracle::{PS, Pending, PendingRead, Submitted, WKind, WriteRec, overlaps};

impl Model<'_> {
    /// A random range of a volume of `size` bytes: whole blocks one time in three, else pages.
    pub fn random_range(&mut self, size: u64) -> (u64, u64) {
        let bs = self.sc.cfg.block_size;
        let pages = size / PAGE_SIZE;
        if self.r.below(3) == 0 {
            let blocks = size / bs;
            let b0 = self.r.below(blocks);
            let nb = 1 + self.r.below((blocks - b0).min(8));
            (b0 * bs, nb * bs)
        } else {
            let p0 = self.r.below(pages);
            let n = 1 + self.r.below((pages - p0).min(3 * bs / PAGE_SIZE));
            (p0 * PAGE_SIZE, n * PAGE_SIZE)
        }
    }

    /// Submits a random request: a read, a write, a trim, a write-zeroes or a flush.
    pub fn issue(&mut self) {
        let vol = self.r.below(self.sc.cfg.volumes.len() as u64) as usize;
        let size = self.sc.cfg.volumes[vol];
        let kind = match self.r.below(100) {
            0..=39 => 1,
            40..=79 => 0,
            80..=85 => 2,
            86..=91 => 3,
            _ => 4,
        };
        let (offset, len) = self.random_range(size);
        let id = self.next_id;
        self.next_id += 1;
        let (op, entry) = match kind {
            0 => (Op::Read { offset, len }, self.read(vol, offset, len)),
            4 => (Op::Flush, Pending::Flush),
            _ => self.write(id, kind, vol, offset, len),
        };
        self.pending.insert(id, entry);
        assert!(
            self.d.submit(Request {
                id,
                volume: vol as u32,
                op
            }),
            "engine busy below its bound"
        );
        self.issued += 1;
    }

    /// A read of `len` bytes at `offset` of `vol`, with what it may see.
    pub fn read(&self, vol: usize, offset: u64, len: u64) -> Pending {
        let (o, l) = (offset as usize, len as usize);
        let cands: Vec<Rc<WriteRec>> = self
            .pending
            .values()
            .filter_map(|p| match p {
                Pending::Write(w) if w.vol == vol && overlaps(w.offset, w.len, offset, len) => {
                    Some(w.clone())
                }
                _ => None,
            })
            .collect();
        Pending::Read(PendingRead {
            vol,
            offset,
            len,
            base: self.oracle.data[vol][o..o + l].to_vec(),
            base_unknown: self.oracle.unknown[vol][o / PS..(o + l) / PS].to_vec(),
            cands,
        })
    }

    /// A write (`kind` 1), trim (2) or write-zeroes (3) `id` of `len` bytes at `offset` of
    /// `vol`; reads in flight over its range may see it too.
    pub fn write(
        &mut self,
        id: u64,
        kind: u32,
        vol: usize,
        offset: u64,
        len: u64,
    ) -> (Op, Pending) {
        let (op, wk) = match kind {
            1 => {
                let mut data = vec![0u8; len as usize];
                let tag = self.r.next_u64();
                for (i, chunk) in data.chunks_mut(8).enumerate() {
                    chunk.copy_from_slice(&(tag ^ i as u64).to_le_bytes());
                }
                let op = Op::Write {
                    offset,
                    data: Data::Bytes(data.clone()),
                    fua: self.r.below(4) == 0,
                };
                (op, WKind::Data(data))
            }
            2 => (Op::Trim { offset, len }, WKind::Trim),
            _ => {
                let fua = self.r.below(2) == 0;
                (Op::WriteZeroes { offset, len, fua }, WKind::Zeroes)
            }
        };
        let w = Rc::new(WriteRec {
            vol,
            offset,
            len,
            kind: wk,
        });
        for p in self.pending.values_mut() {
            if let Pending::Read(pr) = p
                && pr.vol == vol
                && overlaps(pr.offset, pr.len, offset, len)
            {
                pr.cands.push(w.clone());
            }
        }
        self.history.push(Submitted {
            id,
            at: self.d.now,
            acked: None,
            w: w.clone(),
        });
        (op, Pending::Write(w))
    }
}
