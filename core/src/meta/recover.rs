//! Recovery: rebuild the durable state from what the members hold.
//!
//! 1. Of the checkpoints whose every chunk has at least one valid copy, take the newest
//!    generation (a torn checkpoint is simply not valid; the other slot still is).
//! 2. Replay journal blocks with consecutive sequence numbers after the checkpoint's. The
//!    first missing number ends the replay: nothing after it was ever acknowledged as
//!    durable, because commits complete in order.
//!
//! Pure: the driver reads every member's metadata region and passes the bytes.

use std::collections::{BTreeMap, HashMap};

use super::frame;
use super::image::Image;
use super::layout::{CHUNK_BYTES, JOURNAL_BLOCK, MetaLayout, SUPERBLOCK_BYTES};
use super::record::Record;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    pub checkpoint_seq: u64,
    pub checkpoint_generation: u64,
    pub checkpoint_bytes: u64,
    pub blocks_replayed: u64,
    pub records_replayed: u64,
    /// Largest sequence number found anywhere (the next history starts above it).
    pub max_seq_seen: u64,
    /// Valid blocks past the first gap: written but never committed, so not replayed.
    pub blocks_ignored: u64,
    pub members_missing: usize,
    /// Members the metadata says failed and were not replaced since: stale, whatever
    /// they hold (`serve` fails them again at start).
    pub members_failed: Vec<u16>,
}

impl std::fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "checkpoint seq {} (generation {}, {} bytes), replayed {} journal blocks ({} records), ignored {} uncommitted blocks, {} members unreadable",
            self.checkpoint_seq,
            self.checkpoint_generation,
            self.checkpoint_bytes,
            self.blocks_replayed,
            self.records_replayed,
            self.blocks_ignored,
            self.members_missing
        )?;
        if !self.members_failed.is_empty() {
            write!(f, ", members failed earlier {:?}", self.members_failed)?;
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecoveryError {
    #[error(
        "no valid metadata checkpoint on the members (not a pool `create` initialised, or more members lost than the metadata has copies)"
    )]
    NoCheckpoint,
    #[error("metadata corrupted: {0}")]
    Corrupt(String),
}

/// Bytes a driver must read from every member for recovery: `[offset, offset + len)`.
pub fn region(layout: &MetaLayout) -> (u64, u64) {
    (SUPERBLOCK_BYTES, layout.end() - SUPERBLOCK_BYTES)
}

type ChunkKey = (u64, u64, u32, u64); // generation, seq, count, image length

/// Rebuild the image of volumes shaped `shapes` from the members' metadata regions (each
/// `region(layout)` bytes, None for a member that could not be read).
pub fn recover_image(
    pool: u64,
    layout: &MetaLayout,
    regions: &[Option<&[u8]>],
    shapes: &[(u64, u16)],
) -> Result<(Image, RecoveryReport), RecoveryError> {
    assert_eq!(regions.len(), layout.members, "one region per member");
    let (base, len) = region(layout);
    let mut report = RecoveryReport {
        members_missing: regions
            .iter()
            .filter(|r| r.is_none_or(|b| (b.len() as u64) < len))
            .count(),
        ..Default::default()
    };
    let at = |m: usize, off: u64, n: u64| -> Option<&[u8]> {
        let b = regions[m]?;
        let o = (off - base) as usize;
        b.get(o..o + n as usize)
    };

    // 1. Checkpoints.
    let mut found: HashMap<ChunkKey, BTreeMap<u32, &[u8]>> = HashMap::new();
    for slot in 0..2 {
        for m in 0..layout.members {
            for pos in 0..layout.slot_chunks {
                let off = layout.checkpoint_offset(slot) + pos * CHUNK_BYTES;
                let Some(b) = at(m, off, CHUNK_BYTES) else {
                    continue;
                };
                if let Some((h, payload)) = frame::decode_chunk(pool, b) {
                    found
                        .entry((h.generation, h.seq, h.count, h.image_len))
                        .or_default()
                        .insert(h.index, payload);
                }
            }
        }
    }
    let best = found
        .iter()
        .filter(|((_, _, count, len), chunks)| {
            chunks.len() == *count as usize
                && chunks.values().map(|p| p.len() as u64).sum::<u64>() == *len
        })
        .max_by_key(|(k, _)| k.0);
    let Some((&(generation, ckpt_seq, _, image_len), chunks)) = best else {
        return Err(RecoveryError::NoCheckpoint);
    };
    let mut bytes = Vec::with_capacity(image_len as usize);
    for p in chunks.values() {
        bytes.extend_from_slice(p);
    }
    let mut image = Image::decode(&bytes, shapes)
        .map_err(|e| RecoveryError::Corrupt(format!("checkpoint generation {generation}: {e}")))?;
    report.checkpoint_seq = ckpt_seq;
    report.checkpoint_generation = generation;
    report.checkpoint_bytes = image_len;
    report.max_seq_seen = ckpt_seq;

    // 2. Journal.
    let mut blocks: BTreeMap<u64, &[u8]> = BTreeMap::new();
    for m in 0..layout.members {
        for slot in 0..layout.ring_slots {
            let off = layout.journal_offset() + slot * JOURNAL_BLOCK;
            let Some(b) = at(m, off, JOURNAL_BLOCK) else {
                continue;
            };
            if let Some((seq, payload)) = frame::decode_block(pool, b) {
                report.max_seq_seen = report.max_seq_seen.max(seq);
                if seq > ckpt_seq {
                    blocks.entry(seq).or_insert(payload);
                }
            }
        }
    }
    for (next, (&seq, payload)) in (ckpt_seq + 1..).zip(blocks.iter()) {
        if seq != next {
            break;
        }
        let recs = Record::decode_all(payload)
            .map_err(|e| RecoveryError::Corrupt(format!("journal block {seq}: {e}")))?;
        for r in &recs {
            image
                .apply(r)
                .map_err(|e| RecoveryError::Corrupt(format!("journal block {seq}: {e}")))?;
        }
        report.blocks_replayed += 1;
        report.records_replayed += recs.len() as u64;
    }
    report.blocks_ignored = blocks.len() as u64 - report.blocks_replayed;
    report.members_failed = image.failed.iter().copied().collect();
    Ok((image, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::journal::{Journal, JournalConfig, Sealed};
    use crate::volume::Loc;

    struct Members(Vec<Vec<u8>>);
    impl Members {
        fn write(&mut self, s: &Sealed, skip_member: Option<u32>) {
            for u in &s.units {
                for &(d, off) in &u.places {
                    if Some(d.0) == skip_member {
                        continue;
                    }
                    let o = (off - SUPERBLOCK_BYTES) as usize;
                    self.0[d.index()][o..o + u.bytes.len()].copy_from_slice(&u.bytes);
                }
            }
        }
        fn regions(&self) -> Vec<Option<&[u8]>> {
            self.0.iter().map(|b| Some(b.as_slice())).collect()
        }
    }

    #[test]
    fn replays_up_to_the_first_gap_and_survives_a_lost_member() {
        let layout = MetaLayout::new(4, 2, 16 * 4096, 1 << 20);
        let shapes = [(64u64, 16u16)];
        let mut m = Members(vec![vec![0u8; region(&layout).1 as usize]; 4]);
        let regions = m.regions();
        assert_eq!(
            recover_image(9, &layout, &regions, &shapes).err(),
            Some(RecoveryError::NoCheckpoint)
        );
        let cfg = JournalConfig {
            pool_id: 9,
            ..Default::default()
        };
        let mut j = Journal::new(cfg, layout.clone(), 0, 0, 0, true);
        let s = j.seal_checkpoint(&Image::empty(&shapes).encode()).unwrap();
        m.write(&s, None);
        j.committed(&s);
        for ub in 0..5u64 {
            j.append(&[Record::Whole {
                vol: 0,
                ub,
                loc: Loc::Raid(ub * 3),
            }]);
            let s = j.seal_blocks().unwrap();
            // Block 4 (ub 3) never reaches any member: ub 4 must not be replayed either.
            if ub != 3 {
                m.write(&s, Some(1));
            }
            j.committed(&s);
        }
        // Member 1 is lost entirely (every unit still has its other copy).
        let mut regions = m.regions();
        regions[1] = None;
        let (img, rep) = recover_image(9, &layout, &regions, &shapes).unwrap();
        assert_eq!(
            (rep.blocks_replayed, rep.blocks_ignored, rep.members_missing),
            (3, 1, 1)
        );
        for ub in 0..3 {
            assert_eq!(img.vols[0].bmt.get(ub).base, Loc::Raid(ub * 3));
        }
        assert_eq!(img.vols[0].bmt.get(4).base, Loc::Unmapped);
        assert_eq!(rep.max_seq_seen, 6);
        assert!(
            recover_image(10, &layout, &m.regions(), &shapes).is_err(),
            "other pool id"
        );
    }
}
