//! Framing of journal blocks and checkpoint chunks: a header naming the pool, the position
//! in the metadata history and the payload length, and a CRC-32C over header and payload.
//! Anything that does not frame correctly (torn write, stale data of another pool, never
//! written) is simply not metadata.
//!
//! ```text
//! journal block (4096 bytes)            checkpoint chunk (256 KiB)
//!  0 magic "FRJRNL01"                    0 magic "FRCKPT01"
//!  8 pool id        u64                  8 pool id          u64
//! 16 sequence       u64                 16 checkpoint seq   u64 (replay starts after it)
//! 24 payload length u32                 24 generation       u64 (slot = generation mod 2)
//! 28 crc32c         u32                 32 chunk index      u32
//! 32 records...                         36 chunk count      u32
//!                                       40 image length     u64
//!                                       48 payload length   u32
//!                                       52 crc32c           u32
//!                                       56 flags            u8 (bit 0: clean shutdown)
//!                                       57 reserved (0)     7 bytes
//!                                       64 image bytes...
//! ```
//! The CRC is computed with its own field zero. All integers little endian. Builds that do
//! not record clean shutdowns treat the flags byte as reserved (0) and ignore it.

/// Journal block size: the atomic unit of the journal (a torn block fails its checksum).
pub const JOURNAL_BLOCK: u64 = 4096;
/// Checkpoint chunk size (header included).
pub const CHUNK_BYTES: u64 = 256 << 10;

pub const BLOCK_MAGIC: [u8; 8] = *b"FRJRNL01";
pub const CHUNK_MAGIC: [u8; 8] = *b"FRCKPT01";
pub const BLOCK_HEADER: usize = 32;
pub const CHUNK_HEADER: usize = 64;
/// Offset of a chunk's flags byte.
const CHUNK_FLAGS: usize = 56;
/// Flag: the checkpoint was the last thing `serve` wrote before a clean shutdown.
const FLAG_CLEAN: u8 = 1;
/// Record bytes one journal block carries.
pub const BLOCK_PAYLOAD: usize = JOURNAL_BLOCK as usize - BLOCK_HEADER;

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

fn crc_with_zero_field(b: &[u8], field: usize) -> u32 {
    let c = crc32c::crc32c(&b[..field]);
    let c = crc32c::crc32c_append(c, &[0; 4]);
    crc32c::crc32c_append(c, &b[field + 4..])
}

/// A full 4 KiB journal block holding `payload` (at most `BLOCK_PAYLOAD` bytes).
pub fn encode_block(pool: u64, seq: u64, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() <= BLOCK_PAYLOAD, "journal block overfull");
    let mut b = vec![0u8; JOURNAL_BLOCK as usize];
    b[0..8].copy_from_slice(&BLOCK_MAGIC);
    b[8..16].copy_from_slice(&pool.to_le_bytes());
    b[16..24].copy_from_slice(&seq.to_le_bytes());
    b[24..28].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    b[BLOCK_HEADER..BLOCK_HEADER + payload.len()].copy_from_slice(payload);
    let crc = crc_with_zero_field(&b[..BLOCK_HEADER + payload.len()], 28);
    b[28..32].copy_from_slice(&crc.to_le_bytes());
    b
}

/// The sequence number and records of a valid block of `pool`, or None.
pub fn decode_block(pool: u64, b: &[u8]) -> Option<(u64, &[u8])> {
    if b.len() < BLOCK_HEADER || b[0..8] != BLOCK_MAGIC || u64_at(b, 8) != pool {
        return None;
    }
    let len = u32_at(b, 24) as usize;
    if len > BLOCK_PAYLOAD || BLOCK_HEADER + len > b.len() {
        return None;
    }
    let end = BLOCK_HEADER + len;
    (crc_with_zero_field(&b[..end], 28) == u32_at(b, 28))
        .then(|| (u64_at(b, 16), &b[BLOCK_HEADER..end]))
}

/// What a checkpoint chunk header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkHeader {
    pub seq: u64,
    pub generation: u64,
    pub index: u32,
    pub count: u32,
    pub image_len: u64,
    /// Written by a clean shutdown as its last metadata (flags bit 0).
    pub clean: bool,
}

/// Bytes of image one chunk carries.
pub const CHUNK_PAYLOAD: usize = CHUNK_BYTES as usize - CHUNK_HEADER;

/// Cut `image` into framed chunks (each a full `CHUNK_BYTES`), flagged `clean` when the
/// checkpoint is a clean shutdown's last write.
pub fn encode_chunks(
    pool: u64,
    seq: u64,
    generation: u64,
    image: &[u8],
    clean: bool,
) -> Vec<Vec<u8>> {
    let count = image.len().div_ceil(CHUNK_PAYLOAD).max(1);
    (0..count)
        .map(|i| {
            let part = &image
                [(i * CHUNK_PAYLOAD).min(image.len())..((i + 1) * CHUNK_PAYLOAD).min(image.len())];
            let mut b = vec![0u8; CHUNK_BYTES as usize];
            b[0..8].copy_from_slice(&CHUNK_MAGIC);
            b[8..16].copy_from_slice(&pool.to_le_bytes());
            b[16..24].copy_from_slice(&seq.to_le_bytes());
            b[24..32].copy_from_slice(&generation.to_le_bytes());
            b[32..36].copy_from_slice(&(i as u32).to_le_bytes());
            b[36..40].copy_from_slice(&(count as u32).to_le_bytes());
            b[40..48].copy_from_slice(&(image.len() as u64).to_le_bytes());
            b[48..52].copy_from_slice(&(part.len() as u32).to_le_bytes());
            if clean {
                b[CHUNK_FLAGS] = FLAG_CLEAN;
            }
            b[CHUNK_HEADER..CHUNK_HEADER + part.len()].copy_from_slice(part);
            let crc = crc_with_zero_field(&b[..CHUNK_HEADER + part.len()], 52);
            b[52..56].copy_from_slice(&crc.to_le_bytes());
            b
        })
        .collect()
}

/// A valid chunk of `pool`: its header and payload.
pub fn decode_chunk(pool: u64, b: &[u8]) -> Option<(ChunkHeader, &[u8])> {
    if b.len() < CHUNK_HEADER || b[0..8] != CHUNK_MAGIC || u64_at(b, 8) != pool {
        return None;
    }
    let len = u32_at(b, 48) as usize;
    if len > CHUNK_PAYLOAD || CHUNK_HEADER + len > b.len() {
        return None;
    }
    let end = CHUNK_HEADER + len;
    if crc_with_zero_field(&b[..end], 52) != u32_at(b, 52) {
        return None;
    }
    let h = ChunkHeader {
        seq: u64_at(b, 16),
        generation: u64_at(b, 24),
        index: u32_at(b, 32),
        count: u32_at(b, 36),
        image_len: u64_at(b, 40),
        clean: b[CHUNK_FLAGS] & FLAG_CLEAN != 0,
    };
    (h.index < h.count).then_some((h, &b[CHUNK_HEADER..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_round_trip_and_rejects_damage() {
        let b = encode_block(42, 9, b"hello records");
        assert_eq!(decode_block(42, &b), Some((9, &b"hello records"[..])));
        assert_eq!(decode_block(43, &b), None, "other pool");
        for at in [0, 10, 17, 25, 29, 33, 40] {
            let mut c = b.clone();
            c[at] ^= 0x10;
            assert_eq!(decode_block(42, &c), None, "flip at {at}");
        }
        assert_eq!(decode_block(42, &vec![0u8; 4096]), None);
    }

    #[test]
    fn chunks_round_trip_and_reject_damage() {
        let image: Vec<u8> = (0..CHUNK_PAYLOAD * 2 + 100)
            .map(|i| (i * 7) as u8)
            .collect();
        let chunks = encode_chunks(5, 77, 3, &image, false);
        assert_eq!(chunks.len(), 3);
        let mut back = Vec::new();
        for (i, c) in chunks.iter().enumerate() {
            let (h, p) = decode_chunk(5, c).expect("valid");
            assert_eq!(
                (h.index as usize, h.count, h.seq, h.generation, h.clean),
                (i, 3, 77, 3, false)
            );
            back.extend_from_slice(p);
        }
        assert_eq!(back, image);
        let mut c = chunks[1].clone();
        c[CHUNK_HEADER + 1000] ^= 1;
        assert!(decode_chunk(5, &c).is_none());
        assert_eq!(
            encode_chunks(5, 1, 1, &[], false).len(),
            1,
            "an empty image is one chunk"
        );
    }

    #[test]
    fn the_clean_flag_is_byte_56_and_covered_by_the_checksum() {
        let clean = encode_chunks(5, 9, 2, b"image", true);
        let plain = encode_chunks(5, 9, 2, b"image", false);
        assert_eq!((clean[0][56], plain[0][56]), (1, 0));
        assert!(decode_chunk(5, &clean[0]).unwrap().0.clean);
        assert!(!decode_chunk(5, &plain[0]).unwrap().0.clean);
        // Apart from the flag and the CRC, the chunks are the same bytes: an older build
        // (which ignores byte 56) reads a clean checkpoint like any other.
        let differ: Vec<usize> = (0..CHUNK_HEADER)
            .filter(|&i| clean[0][i] != plain[0][i])
            .collect();
        assert!(differ.iter().all(|&i| i == 56 || (52..56).contains(&i)));
        let mut c = clean[0].clone();
        c[56] = 0;
        assert!(
            decode_chunk(5, &c).is_none(),
            "a cleared flag fails the CRC"
        );
    }
}
