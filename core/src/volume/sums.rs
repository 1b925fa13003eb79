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
    match crc32c::crc32c(page) {
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

pub struct PageSums {
    blocks: u64,
    pages_per_block: u16,
    /// Empty until the first checksum is set.
    sums: Vec<u32>,
}

impl PageSums {
    pub fn new(blocks: u64, pages_per_block: u16) -> Self {
        PageSums {
            blocks,
            pages_per_block,
            sums: Vec::new(),
        }
    }

    /// Does the table hold any checksum (has data ever been written)?
    pub fn active(&self) -> bool {
        !self.sums.is_empty()
    }

    fn index(&self, ub: u64, page: u16) -> usize {
        assert!(ub < self.blocks && page < self.pages_per_block);
        (ub * self.pages_per_block as u64 + page as u64) as usize
    }

    /// The checksums of pages `[first, first + count)` of `ub` (zeros when unknown).
    pub fn get(&self, ub: u64, first: u16, count: u16) -> Vec<u32> {
        if !self.active() {
            return Vec::new();
        }
        let i = self.index(ub, first);
        self.sums[i..i + count as usize].to_vec()
    }

    /// Pages `first..` of `ub` now hold data with these checksums.
    pub fn set(&mut self, ub: u64, first: u16, sums: &[u32]) {
        assert!(first as usize + sums.len() <= self.pages_per_block as usize);
        if !self.active() {
            if sums.iter().all(|&s| s == 0) {
                return;
            }
            self.sums = vec![0; (self.blocks * self.pages_per_block as u64) as usize];
        }
        let i = self.index(ub, first);
        self.sums[i..i + sums.len()].copy_from_slice(sums);
    }

    /// Every page of `ub` is unmapped: nothing to verify.
    pub fn clear_block(&mut self, ub: u64) {
        if self.active() {
            let i = self.index(ub, 0);
            self.sums[i..i + self.pages_per_block as usize].fill(0);
        }
    }

    pub fn memory_bytes(&self) -> u64 {
        self.sums.capacity() as u64 * 4
    }

    /// Checkpoint form: `present u8`, then (if 1) one little-endian u32 per page.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.active() as u8);
        if self.active() {
            out.reserve(self.sums.len() * 4);
            for s in &self.sums {
                out.extend_from_slice(&s.to_le_bytes());
            }
        }
    }

    /// Bytes `encode` may produce for a volume of this shape.
    pub fn max_encoded_len(blocks: u64, pages_per_block: u64) -> u64 {
        blocks
            .saturating_mul(pages_per_block)
            .saturating_mul(4)
            .saturating_add(1)
    }

    /// Install the table of a checkpoint (`bytes`: exactly one u32 per page).
    pub fn load(&mut self, bytes: &[u8]) -> Result<(), String> {
        let n = (self.blocks * self.pages_per_block as u64) as usize;
        if bytes.len() != n * 4 {
            return Err(format!(
                "checksum table of {} bytes for {n} pages",
                bytes.len()
            ));
        }
        self.sums = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4")))
            .collect();
        Ok(())
    }

    /// Compare pages read from a device (`data`, starting at the page `expect[0]` describes)
    /// with the checksums captured when the read was planned. Returns the index of the first
    /// page that fails (unknown checksums always pass).
    pub fn first_mismatch(expect: &[u32], data: &[u8]) -> Option<usize> {
        expect
            .iter()
            .zip(data.chunks(PAGE_SIZE as usize))
            .position(|(&e, page)| e != 0 && page_sum(page) != e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazily_allocated_and_cleared_per_block() {
        let mut s = PageSums::new(4, 16);
        assert!(!s.active());
        s.set(1, 3, &[0, 0]);
        assert!(!s.active(), "unknown checksums allocate nothing");
        s.set(1, 3, &[7, 8]);
        assert_eq!(s.get(1, 2, 3), vec![0, 7, 8]);
        s.clear_block(1);
        assert_eq!(s.get(1, 3, 2), vec![0, 0]);
        let mut out = Vec::new();
        s.encode(&mut out);
        assert_eq!(out.len() as u64, PageSums::max_encoded_len(4, 16));
        let mut t = PageSums::new(4, 16);
        t.load(&out[1..]).unwrap();
        assert_eq!(t.sums, s.sums);
        assert!(t.load(&out[2..]).is_err());
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
