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
    /// Each replaced slot's generation (`meta::image`); a slot not listed is at 0.
    pub slot_generations: std::collections::BTreeMap<u16, u32>,
    /// The checkpoint recovered from is flagged as a clean shutdown's last write.
    pub checkpoint_clean: bool,
}

impl RecoveryReport {
    /// The last run stopped cleanly: its final checkpoint, flagged clean, is the newest valid
    /// one and nothing was written after it. A crash during that checkpoint leaves it torn
    /// (the previous one, not flagged, is recovered with the journal after it), and a run
    /// that went on after it wrote blocks numbered above it, so neither counts as clean.
    pub fn clean_shutdown(&self) -> bool {
        self.checkpoint_clean && self.blocks_replayed == 0 && self.blocks_ignored == 0
    }

    /// The checkpoint recovered from is the one `create` wrote (generation 1) and nothing
    /// followed it: the pool was never served (or its first run wrote nothing durable).
    pub fn fresh_pool(&self) -> bool {
        self.clean_shutdown() && self.checkpoint_generation == 1
    }
}

/// Bytes with their binary unit: "512 B", "160 KiB", "1.5 GiB" (as `fusionraid status`).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    let t = format!("{v:.1}");
    let t = t.strip_suffix(".0").unwrap_or(&t);
    format!("{t} {}", UNITS[u])
}

impl std::fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ckpt = format!(
            "checkpoint seq {}, generation {}, {}",
            self.checkpoint_seq,
            self.checkpoint_generation,
            human_bytes(self.checkpoint_bytes)
        );
        if self.fresh_pool() {
            write!(f, "new pool, first start since create ({ckpt}")?;
        } else if self.clean_shutdown() {
            write!(f, "clean shutdown ({ckpt}")?;
        } else {
            write!(
                f,
                "recovered after crash: replayed {} records ({} journal blocks after {ckpt}; \
                 ignored {} uncommitted blocks",
                self.records_replayed, self.blocks_replayed, self.blocks_ignored
            )?;
        }
        if self.members_missing > 0 || !self.clean_shutdown() {
            write!(f, "; {} members unreadable", self.members_missing)?;
        }
        if !self.members_failed.is_empty() {
            write!(f, "; members failed earlier {:?}", self.members_failed)?;
        }
        write!(f, ")")
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
/// A chunk's payload and whether it is flagged clean.
type Chunk<'a> = (&'a [u8], bool);

/// The members' metadata regions, addressed by member offset.
struct Regions<'a> {
    regions: &'a [Option<&'a [u8]>],
    base: u64,
}

impl<'a> Regions<'a> {
    /// `n` bytes at offset `off` of member `m`, if it was read that far.
    fn at(&self, m: usize, off: u64, n: u64) -> Option<&'a [u8]> {
        let b = self.regions[m]?;
        let o = (off - self.base) as usize;
        b.get(o..o + n as usize)
    }
}

/// Rebuild the image of volumes shaped `shapes` from the members' metadata regions (each
/// `region(layout)` bytes, None for a member that could not be read): the newest complete
/// checkpoint, then the journal blocks after it up to the first gap.
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
    let regions = Regions { regions, base };
    let mut image = newest_checkpoint(pool, layout, &regions, shapes, &mut report)?;
    replay_journal(pool, layout, &regions, &mut image, &mut report)?;
    report.members_failed = image.failed.iter().copied().collect();
    report.slot_generations = image.generations.clone();
    Ok((image, report))
}

/// The newest checkpoint whose every chunk was found, decoded.
fn newest_checkpoint(
    pool: u64,
    layout: &MetaLayout,
    regions: &Regions,
    shapes: &[(u64, u16)],
    report: &mut RecoveryReport,
) -> Result<Image, RecoveryError> {
    let mut found: HashMap<ChunkKey, BTreeMap<u32, Chunk>> = HashMap::new();
    for slot in 0..2 {
        for m in 0..layout.members {
            for pos in 0..layout.slot_chunks {
                let off = layout.checkpoint_offset(slot) + pos * CHUNK_BYTES;
                let Some(b) = regions.at(m, off, CHUNK_BYTES) else {
                    continue;
                };
                if let Some((h, payload)) = frame::decode_chunk(pool, b) {
                    found
                        .entry((h.generation, h.seq, h.count, h.image_len))
                        .or_default()
                        .insert(h.index, (payload, h.clean));
                }
            }
        }
    }
    let best = found
        .iter()
        .filter(|((_, _, count, len), chunks)| {
            chunks.len() == *count as usize
                && chunks.values().map(|p| p.0.len() as u64).sum::<u64>() == *len
        })
        .max_by_key(|(k, _)| k.0);
    let Some((&(generation, ckpt_seq, _, image_len), chunks)) = best else {
        return Err(RecoveryError::NoCheckpoint);
    };
    let mut bytes = Vec::with_capacity(image_len as usize);
    for (p, _) in chunks.values() {
        bytes.extend_from_slice(p);
    }
    // Every chunk of one checkpoint carries the same flag (one seal writes them all).
    report.checkpoint_clean = chunks.values().all(|&(_, clean)| clean);
    let image = Image::decode(&bytes, shapes)
        .map_err(|e| RecoveryError::Corrupt(format!("checkpoint generation {generation}: {e}")))?;
    report.checkpoint_seq = ckpt_seq;
    report.checkpoint_generation = generation;
    report.checkpoint_bytes = image_len;
    report.max_seq_seen = ckpt_seq;
    Ok(image)
}

/// Applies the journal blocks after the checkpoint, in sequence, up to the first gap.
fn replay_journal(
    pool: u64,
    layout: &MetaLayout,
    regions: &Regions,
    image: &mut Image,
    report: &mut RecoveryReport,
) -> Result<(), RecoveryError> {
    let ckpt_seq = report.checkpoint_seq;
    let mut blocks: BTreeMap<u64, &[u8]> = BTreeMap::new();
    for m in 0..layout.members {
        for slot in 0..layout.ring_slots {
            let off = layout.journal_offset() + slot * JOURNAL_BLOCK;
            let Some(b) = regions.at(m, off, JOURNAL_BLOCK) else {
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
    Ok(())
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
