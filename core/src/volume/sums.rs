//! Page checksums: the CRC-32C of every 4 KiB page of user data, indexed by *logical* page
//! (user block x pages per block + page), kept with the mapping and journaled with it.
//!
//! Logical, not physical: moving data (conversion, relocation, rebuild) never changes a
//! checksum, so only user writes produce checksum records. A read verifies each page it got
//! from a device against the checksum of the page it asked for; a page that fails is read
//! again from another copy or rebuilt from parity, and the block is queued for repair.
//!
//! A stored value of 0 means "unknown": the page was never written with data, or it was
//! trimmed, or the engine runs in size-only mode. A CRC that happens to be 0 is stored as 1
//! (so a page whose CRC is 1 matches it too: one more collision in 2^32). The table is
//! allocated on the first write that carries data, so size-only simulations of huge pools
//! pay nothing for it.

use crate::types::PAGE_SIZE;

/// The stored form of a page's CRC-32C (never 0, which means unknown).
pub fn page_sum(page: &[u8]) -> u32 {
    debug_assert_eq!(page.len() as u64, PAGE_SIZE);
    match super::page_crc::page_crc(page) {
        0 => 1,
        c => c,
    }
}

/// The checksums of consecutive pages.
pub fn sums_of(data: &[u8]) -> Vec<u32> {
    data.chunks(PAGE_SIZE as usize).map(page_sum).collect()
}

/// The checksum of a page of zeros.
pub fn zero_page_sum() -> u32 {
    page_sum(&[0u8; PAGE_SIZE as usize])
}

/// User blocks per chunk of the table: chunks are allocated when first written, so the
/// table costs 0.1% of the data *written*, not of the volume's size.
const CHUNK_BLOCKS: u64 = 256;

pub struct PageSums {
    blocks: u64,
    pages_per_block: u16,
    /// Per chunk of `CHUNK_BLOCKS` user blocks, its pages' checksums (None: nothing in the
    /// chunk has a checksum yet). Empty until the first checksum is set.
    chunks: Vec<Option<Box<[u32]>>>,
    allocated: usize,
}

impl PageSums {
    pub fn new(blocks: u64, pages_per_block: u16) -> Self {
        PageSums {
            blocks,
            pages_per_block,
            chunks: Vec::new(),
            allocated: 0,
        }
    }

    /// Does the table hold any checksum (has data ever been written)?
    pub fn active(&self) -> bool {
        self.allocated > 0
    }

    fn chunk_pages(&self) -> usize {
        (CHUNK_BLOCKS * self.pages_per_block as u64) as usize
    }

    /// (chunk, index in the chunk) of page `page` of `ub`.
    fn place(&self, ub: u64, page: u16) -> (usize, usize) {
        assert!(ub < self.blocks && page < self.pages_per_block);
        let c = (ub / CHUNK_BLOCKS) as usize;
        let i = ((ub % CHUNK_BLOCKS) * self.pages_per_block as u64 + page as u64) as usize;
        (c, i)
    }

    /// The checksums of pages `[first, first + count)` of `ub` (zeros when unknown; empty
    /// when the table holds nothing at all).
    pub fn get(&self, ub: u64, first: u16, count: u16) -> Vec<u32> {
        if !self.active() {
            return Vec::new();
        }
        let (c, i) = self.place(ub, first);
        match &self.chunks[c] {
            Some(ch) => ch[i..i + count as usize].to_vec(),
            None => vec![0; count as usize],
        }
    }

    /// The checksums of pages `[first, first + count)` of `ub` in place, without a copy;
    /// None when none of them is known (their chunk was never written).
    pub fn slice(&self, ub: u64, first: u16, count: u16) -> Option<&[u32]> {
        if !self.active() {
            return None;
        }
        let (c, i) = self.place(ub, first);
        self.chunks[c]
            .as_deref()
            .map(|ch| &ch[i..i + count as usize])
    }

    /// Pages `first..` of `ub` now hold data with these checksums.
    pub fn set(&mut self, ub: u64, first: u16, sums: &[u32]) {
        assert!(first as usize + sums.len() <= self.pages_per_block as usize);
        let (c, i) = self.place(ub, first);
        if self.chunks.get(c).is_none_or(|ch| ch.is_none()) {
            if sums.iter().all(|&s| s == 0) {
                return;
            }
            if self.chunks.is_empty() {
                self.chunks = vec![None; self.blocks.div_ceil(CHUNK_BLOCKS) as usize];
            }
            self.chunks[c] = Some(vec![0; self.chunk_pages()].into_boxed_slice());
            self.allocated += 1;
        }
        let ch = self.chunks[c].as_mut().expect("allocated");
        ch[i..i + sums.len()].copy_from_slice(sums);
    }

    /// Every page of `ub` is unmapped: nothing to verify.
    pub fn clear_block(&mut self, ub: u64) {
        if !self.active() {
            return;
        }
        let (c, i) = self.place(ub, 0);
        if let Some(ch) = self.chunks[c].as_mut() {
            ch[i..i + self.pages_per_block as usize].fill(0);
        }
    }

    pub fn memory_bytes(&self) -> u64 {
        (self.chunks.capacity() * 16 + self.allocated * self.chunk_pages() * 4) as u64
    }

    /// Checkpoint form: `chunks present u32`, then per allocated chunk its index u32 and
    /// one little-endian u32 per page of it (`CHUNK_BLOCKS` blocks; the last chunk of a
    /// volume is stored whole too).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.allocated as u32).to_le_bytes());
        for (c, ch) in self.chunks.iter().enumerate() {
            if let Some(ch) = ch {
                out.extend_from_slice(&(c as u32).to_le_bytes());
                out.reserve(ch.len() * 4);
                for s in ch.iter() {
                    out.extend_from_slice(&s.to_le_bytes());
                }
            }
        }
    }

    /// Bytes `encode` may produce for a volume of this shape.
    pub fn max_encoded_len(blocks: u64, pages_per_block: u64) -> u64 {
        let chunks = blocks.div_ceil(CHUNK_BLOCKS);
        chunks
            .saturating_mul(
                CHUNK_BLOCKS
                    .saturating_mul(pages_per_block)
                    .saturating_mul(4)
                    + 4,
            )
            .saturating_add(4)
    }

    /// Read what `encode` wrote from `take` (which hands out the next n bytes).
    pub fn decode<'a>(
        &mut self,
        mut take: impl FnMut(usize) -> Result<&'a [u8], String>,
    ) -> Result<(), String> {
        let u32_of = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("4"));
        let n = u32_of(take(4)?) as usize;
        let total = self.blocks.div_ceil(CHUNK_BLOCKS) as usize;
        if n > total {
            return Err(format!("{n} checksum chunks for a volume of {total}"));
        }
        for _ in 0..n {
            let c = u32_of(take(4)?) as usize;
            if c >= total || self.chunks.get(c).is_some_and(|x| x.is_some()) {
                return Err(format!("checksum chunk {c} out of range or repeated"));
            }
            let bytes = take(self.chunk_pages() * 4)?;
            if self.chunks.is_empty() {
                self.chunks = vec![None; total];
            }
            self.chunks[c] = Some(bytes.chunks_exact(4).map(u32_of).collect());
            self.allocated += 1;
        }
        Ok(())
    }

    /// Compare pages read from a device (`data`, starting at the page `expect[0]` describes)
    /// with the checksums captured when the read was planned. Returns the index of the first
    /// page that fails (unknown checksums always pass).
    pub fn first_mismatch(expect: &[u32], data: &[u8]) -> Option<usize> {
        Self::mismatches(expect, data).next()
    }

    /// Indexes of the pages of `data` that do not match their checksums in `expect`.
    pub fn mismatches<'a>(expect: &'a [u32], data: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
        expect
            .iter()
            .zip(data.chunks(PAGE_SIZE as usize))
            .enumerate()
            .filter(|(_, (e, page))| **e != 0 && page_sum(page) != **e)
            .map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazily_allocated_by_chunk_and_cleared_per_block() {
        let mut s = PageSums::new(1000, 16);
        assert!(!s.active());
        s.set(1, 3, &[0, 0]);
        assert!(!s.active(), "unknown checksums allocate nothing");
        s.set(1, 3, &[7, 8]);
        s.set(999, 15, &[9]);
        assert_eq!(s.get(1, 2, 3), vec![0, 7, 8]);
        assert_eq!(s.get(600, 0, 2), vec![0, 0], "a chunk never written");
        assert_eq!(s.slice(600, 0, 2), None);
        assert_eq!(s.slice(1, 2, 3), Some(&[0, 7, 8][..]));
        assert_eq!(s.allocated, 2);
        let mut out = Vec::new();
        s.encode(&mut out);
        assert!(out.len() as u64 <= PageSums::max_encoded_len(1000, 16));
        let mut t = PageSums::new(1000, 16);
        let mut at = 0;
        t.decode(|n| {
            let r = out.get(at..at + n).ok_or("short".to_string());
            at += n;
            r
        })
        .unwrap();
        assert_eq!(at, out.len());
        assert_eq!(t.get(999, 15, 1), vec![9]);
        assert_eq!(t.get(1, 3, 2), vec![7, 8]);
        let mut u = PageSums::new(1000, 16);
        let short = &out[..out.len() - 1];
        let mut at = 0;
        assert!(
            u.decode(|n| {
                let r = short.get(at..at + n).ok_or("short".to_string());
                at += n;
                r
            })
            .is_err()
        );
        s.clear_block(1);
        assert_eq!(s.get(1, 3, 2), vec![0, 0]);
    }

    #[test]
    fn a_flipped_bit_is_found_and_unknown_pages_pass() {
        let mut data = vec![0x5Au8; 3 * PAGE_SIZE as usize];
        let mut expect = sums_of(&data);
        assert_eq!(PageSums::first_mismatch(&expect, &data), None);
        data[PAGE_SIZE as usize + 100] ^= 1;
        assert_eq!(PageSums::first_mismatch(&expect, &data), Some(1));
        expect[1] = 0;
        assert_eq!(PageSums::first_mismatch(&expect, &data), None);
        assert_ne!(zero_page_sum(), 0);
    }
}
