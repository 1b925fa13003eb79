//! The journal's bookkeeping: sequence numbers, commit generations, record packing and ring
//! space. It decides *what* to write where; the scheme issues the I/O (`durable.rs`).
//!
//! Terms:
//! - *sequence number* (seq): position of a journal block in the metadata history. A
//!   checkpoint takes one too: it covers every record before it, and replay starts after it.
//! - *generation*: one commit. Records appended between two seals belong to the open
//!   generation; stripes freed meanwhile are held until that generation is durable.

use super::frame::{self, BLOCK_PAYLOAD};
use super::layout::MetaLayout;
use super::record::Record;
use crate::types::{DiskId, Nanos};

#[derive(Clone, Debug, PartialEq)]
pub struct JournalConfig {
    /// Identifies this pool's metadata (from the superblock); other bytes are ignored.
    pub pool_id: u64,
    /// Journal ring bytes per member.
    pub journal_bytes: u64,
    /// Commit at least this often while records are pending: bounds what an unflushed
    /// crash loses and how long freed stripes stay held.
    pub commit_interval_ns: Nanos,
    /// How the checkpoint area was sized when the pool was created (part of the on-disk
    /// layout: it places the second checkpoint slot).
    pub image_bound: ImageBound,
}

/// The rule that sized a pool's checkpoint area (`durable::max_image_bytes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ImageBound {
    /// Pools whose superblocks predate version 2: every volume's zone counted as three
    /// stripes per data stripe, plus 4096. A spare share above `2 - copies x
    /// replicated_fraction` can outgrow it.
    ThreeStripes,
    /// The zone's own stripe count, its spare share taken as at least
    /// `sizing::AUTO_SPARE_MAX`: the area is sized before `auto` is resolved and must hold
    /// whatever it resolves to.
    #[default]
    Zone,
}

impl Default for JournalConfig {
    fn default() -> Self {
        JournalConfig {
            pool_id: 0,
            journal_bytes: 4 << 20,
            commit_interval_ns: 20_000_000,
            image_bound: ImageBound::Zone,
        }
    }
}

/// One metadata write unit (a journal block or a checkpoint chunk) and its copies' places.
pub struct Unit {
    pub bytes: Vec<u8>,
    pub places: Vec<(DiskId, u64)>,
}

/// A sealed commit: what to write once the data it covers is flushed.
pub struct Sealed {
    pub generation: u64,
    pub units: Vec<Unit>,
    /// `(seq, checkpoint generation)` when this commit is a checkpoint.
    pub checkpoint: Option<(u64, u64)>,
    /// A checkpoint flagged as a clean shutdown's last write.
    pub clean: bool,
    pub records: usize,
}

pub struct Journal {
    pub cfg: JournalConfig,
    pub layout: MetaLayout,
    next_seq: u64,
    ckpt_seq: u64,
    ckpt_gen: u64,
    /// Encoded record payloads not sealed yet; the last is being filled.
    open: Vec<Vec<u8>>,
    open_records: usize,
    /// Generation records appended now will be committed in.
    open_gen: u64,
    durable_gen: u64,
    force_checkpoint: bool,
}

impl Journal {
    /// Continue a history whose newest checkpoint is (`ckpt_seq`, `ckpt_gen`) and whose
    /// largest sequence number seen anywhere is `max_seq`. The first commit is a checkpoint
    /// when `checkpoint_first` (after recovery: blocks past a gap must never be replayed, so
    /// a fresh checkpoint above every seen seq supersedes them).
    pub fn new(
        cfg: JournalConfig,
        layout: MetaLayout,
        ckpt_seq: u64,
        ckpt_gen: u64,
        max_seq: u64,
        checkpoint_first: bool,
    ) -> Self {
        Journal {
            cfg,
            layout,
            next_seq: max_seq.max(ckpt_seq) + 1,
            ckpt_seq,
            ckpt_gen,
            open: Vec::new(),
            open_records: 0,
            open_gen: 1,
            durable_gen: 0,
            force_checkpoint: checkpoint_first,
        }
    }

    pub fn open_generation(&self) -> u64 {
        self.open_gen
    }
    pub fn durable_generation(&self) -> u64 {
        self.durable_gen
    }
    pub fn pending_records(&self) -> usize {
        self.open_records
    }
    /// Journal blocks the open generation fills so far.
    pub fn open_blocks(&self) -> usize {
        self.open.len()
    }
    pub fn checkpoint_seq(&self) -> u64 {
        self.ckpt_seq
    }

    /// Append the records of one event. A group that fits in a block never straddles two
    /// (a conversion's retargets must replay all or nothing); larger groups (big writes,
    /// whose parts may land independently anyway) are split.
    pub fn append(&mut self, group: &[Record]) {
        if group.is_empty() {
            return;
        }
        let len: usize = group.iter().map(Record::encoded_len).sum();
        let fits = |open: &Vec<Vec<u8>>, n: usize| {
            open.last()
                .is_some_and(|b: &Vec<u8>| b.len() + n <= BLOCK_PAYLOAD)
        };
        if len <= BLOCK_PAYLOAD {
            if !fits(&self.open, len) {
                self.open.push(Vec::with_capacity(BLOCK_PAYLOAD));
            }
            let b = self.open.last_mut().expect("open block");
            for r in group {
                r.encode(b);
            }
        } else {
            for r in group {
                let n = r.encoded_len();
                assert!(n <= BLOCK_PAYLOAD, "a record larger than a journal block");
                if !fits(&self.open, n) {
                    self.open.push(Vec::with_capacity(BLOCK_PAYLOAD));
                }
                r.encode(self.open.last_mut().expect("open block"));
            }
        }
        self.open_records += group.len();
    }

    /// Make the next commit a checkpoint.
    pub fn force_checkpoint(&mut self) {
        self.force_checkpoint = true;
    }

    /// Should the next commit be a checkpoint? (Half the ring used, or forced.)
    pub fn wants_checkpoint(&self) -> bool {
        self.force_checkpoint
            || self.next_seq + self.open.len() as u64 - self.ckpt_seq > self.layout.capacity() / 2
    }

    /// Seal the open generation as journal blocks. Returns None when writing them would
    /// wrap the ring onto blocks the newest durable checkpoint still needs: checkpoint then.
    pub fn seal_blocks(&mut self) -> Option<Sealed> {
        let n = self.open.len() as u64;
        if self.force_checkpoint
            || (n > 0 && self.next_seq + n - 1 > self.ckpt_seq + self.layout.capacity())
        {
            return None;
        }
        let mut units = Vec::with_capacity(self.open.len());
        for payload in std::mem::take(&mut self.open) {
            let seq = self.next_seq;
            self.next_seq += 1;
            units.push(Unit {
                bytes: frame::encode_block(self.cfg.pool_id, seq, &payload),
                places: self.layout.journal_places(seq).collect(),
            });
        }
        Some(self.sealed(units, None, false))
    }

    /// Seal the open generation as a checkpoint of `image` (the state including every record
    /// appended so far, which therefore need no journal blocks).
    pub fn seal_checkpoint(&mut self, image: &[u8]) -> Result<Sealed, String> {
        self.seal_image(image, false)
    }

    /// As `seal_checkpoint`, flagged as a clean shutdown's last write: recovery reports a
    /// clean shutdown when this is the newest valid checkpoint and no block follows it.
    pub fn seal_clean_checkpoint(&mut self, image: &[u8]) -> Result<Sealed, String> {
        self.seal_image(image, true)
    }

    fn seal_image(&mut self, image: &[u8], clean: bool) -> Result<Sealed, String> {
        let seq = self.next_seq;
        self.next_seq += 1;
        // A failed checkpoint keeps its generation: retrying it must overwrite the torn slot,
        // never the other one, which holds the newest valid checkpoint.
        let generation = self.ckpt_gen + 1;
        let slot = generation % 2;
        let chunks = frame::encode_chunks(self.cfg.pool_id, seq, generation, image, clean);
        if chunks.len() as u64 > self.layout.max_chunks {
            return Err(format!(
                "checkpoint image of {} bytes exceeds the metadata area ({} chunks)",
                image.len(),
                self.layout.max_chunks
            ));
        }
        self.open.clear();
        let units = chunks
            .into_iter()
            .enumerate()
            .map(|(i, bytes)| Unit {
                bytes,
                places: self.layout.chunk_places(slot, i as u64).collect(),
            })
            .collect();
        Ok(self.sealed(units, Some((seq, generation)), clean))
    }

    fn sealed(&mut self, units: Vec<Unit>, checkpoint: Option<(u64, u64)>, clean: bool) -> Sealed {
        let s = Sealed {
            generation: self.open_gen,
            units,
            checkpoint,
            clean,
            records: self.open_records,
        };
        self.open_gen += 1;
        self.open_records = 0;
        s
    }

    /// Every unit of `s` has at least one durable copy.
    pub fn committed(&mut self, s: &Sealed) {
        assert!(s.generation > self.durable_gen, "commits complete in order");
        self.durable_gen = s.generation;
        if let Some((seq, generation)) = s.checkpoint {
            self.ckpt_seq = seq;
            self.ckpt_gen = generation;
            self.force_checkpoint = false;
        }
    }

    /// Some unit of `s` could not be written anywhere: its sequence numbers are a hole no
    /// replay can cross, so only a new checkpoint makes later commits durable.
    pub fn commit_failed(&mut self, _s: &Sealed) {
        self.force_checkpoint = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::volume::Loc;

    fn j() -> Journal {
        let layout = MetaLayout::new(3, 2, 8 * 4096, 1 << 20);
        Journal::new(JournalConfig::default(), layout, 0, 1, 0, false)
    }

    #[test]
    fn groups_stay_in_one_block_and_generations_advance() {
        let mut j = j();
        let rec = Record::Whole {
            vol: 0,
            ub: 1,
            loc: Loc::Raid(2),
        };
        let per = BLOCK_PAYLOAD / 15;
        j.append(&vec![rec.clone(); per - 1]);
        j.append(&vec![rec.clone(); 3]);
        assert_eq!(
            j.open.len(),
            2,
            "a group that does not fit starts a new block"
        );
        let s = j.seal_blocks().unwrap();
        assert_eq!((s.generation, s.units.len(), s.records), (1, 2, per + 2));
        assert_eq!(j.open_generation(), 2);
        for u in &s.units {
            assert_eq!(u.places.len(), 2);
            let (seq, payload) = frame::decode_block(0, &u.bytes).unwrap();
            assert!(seq >= 1);
            assert!(!Record::decode_all(payload).unwrap().is_empty());
        }
        j.committed(&s);
        assert_eq!(j.durable_generation(), 1);
    }

    #[test]
    fn ring_full_forces_a_checkpoint() {
        let mut j = j();
        let cap = j.layout.capacity();
        let rec = Record::Whole {
            vol: 0,
            ub: 1,
            loc: Loc::Raid(2),
        };
        let mut sealed = 0;
        loop {
            j.append(&vec![rec.clone(); BLOCK_PAYLOAD / 15]);
            match j.seal_blocks() {
                Some(s) => {
                    j.committed(&s);
                    sealed += 1;
                }
                None => break,
            }
        }
        assert_eq!(
            sealed, cap,
            "exactly one ring of blocks after the checkpoint"
        );
        assert!(j.wants_checkpoint());
        let s = j.seal_checkpoint(b"image").unwrap();
        assert_eq!(s.checkpoint, Some((cap + 1, 2)));
        j.committed(&s);
        assert!(!j.wants_checkpoint());
        j.append(&[rec]);
        assert!(j.seal_blocks().is_some());
    }

    #[test]
    fn failed_checkpoint_retries_the_same_slot() {
        let mut j = j();
        let a = j.seal_checkpoint(b"x").unwrap();
        j.commit_failed(&a);
        let b = j.seal_checkpoint(b"y").unwrap();
        assert_eq!(a.checkpoint.unwrap().1, b.checkpoint.unwrap().1);
        assert_eq!(a.units[0].places, b.units[0].places);
        assert!(j.seal_blocks().is_none() || j.wants_checkpoint());
    }
}
