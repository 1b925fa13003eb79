//! Data mode: the members' contents, and the payloads users write.
//!
//! Simulated members are hundreds of GB, so contents are kept sparsely, per 4 KiB page. User
//! payloads are built so that every page repeats one 64-bit word; XOR parity and GF(2^8)
//! arithmetic work byte by byte, so parity pages repeat a word too, and almost every page a
//! member ever holds is stored as 8 bytes. Pages that do not repeat a word are kept in full.
//! Never-written member space reads as `0xEE` bytes, so a read of space the engine never
//! wrote shows up as a mismatch instead of passing for zeros; except for the in-place
//! baselines, which assume zeroed members (md `--assume-clean`) and read unwritten blocks
//! from their home: their members start zeroed.

use std::collections::HashMap;

use fusionraid_core::PAGE_SIZE;

const PAGE: usize = PAGE_SIZE as usize;
/// What never-written member space holds.
pub const UNWRITTEN: u64 = 0xEEEE_EEEE_EEEE_EEEE;

enum Page {
    Word(u64),
    Full(Box<[u8]>),
}

/// The word a page repeats, if it does.
pub fn page_word(page: &[u8]) -> Option<u64> {
    let w = u64::from_le_bytes(page[..8].try_into().expect("8 bytes"));
    page.chunks_exact(8)
        .all(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")) == w)
        .then_some(w)
}

pub fn fill_word(out: &mut [u8], w: u64) {
    let b = w.to_le_bytes();
    for c in out.chunks_exact_mut(8) {
        c.copy_from_slice(&b);
    }
}

/// Sparse contents of every member.
pub struct Store {
    disks: Vec<HashMap<u64, Page>>,
    /// The word never-written space reads as: [`UNWRITTEN`], or 0 for schemes that rely on
    /// zeroed members (`Scheme::members_start_zeroed`).
    fill: u64,
}

impl Store {
    pub fn new(disks: usize) -> Self {
        Store::with_fill(disks, UNWRITTEN)
    }

    pub fn with_fill(disks: usize, fill: u64) -> Self {
        Store {
            disks: (0..disks).map(|_| HashMap::new()).collect(),
            fill,
        }
    }

    pub fn write(&mut self, disk: usize, offset: u64, data: &[u8]) {
        assert!(
            offset.is_multiple_of(PAGE_SIZE) && data.len().is_multiple_of(PAGE),
            "device write at {offset}+{} is not page-aligned",
            data.len()
        );
        let map = &mut self.disks[disk];
        for (i, p) in data.chunks_exact(PAGE).enumerate() {
            let page = offset / PAGE_SIZE + i as u64;
            let v = match page_word(p) {
                Some(w) => Page::Word(w),
                None => Page::Full(p.into()),
            };
            map.insert(page, v);
        }
    }

    pub fn read(&self, disk: usize, offset: u64, len: u64) -> Vec<u8> {
        assert!(
            offset.is_multiple_of(PAGE_SIZE) && len.is_multiple_of(PAGE_SIZE),
            "device read at {offset}+{len} is not page-aligned"
        );
        let map = &self.disks[disk];
        let mut out = vec![0u8; len as usize];
        for (i, chunk) in out.chunks_exact_mut(PAGE).enumerate() {
            match map.get(&(offset / PAGE_SIZE + i as u64)) {
                Some(Page::Word(w)) => fill_word(chunk, *w),
                Some(Page::Full(b)) => chunk.copy_from_slice(b),
                None => fill_word(chunk, self.fill),
            }
        }
        out
    }

    /// Pages held in full (not as a word): a measure of how compact the store is.
    #[cfg(test)]
    pub fn full_pages(&self) -> usize {
        self.disks
            .iter()
            .map(|m| m.values().filter(|p| matches!(p, Page::Full(_))).count())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_compact_and_full_pages() {
        let mut s = Store::new(2);
        let mut data = vec![0u8; 3 * PAGE];
        fill_word(&mut data[..PAGE], 7);
        fill_word(&mut data[PAGE..2 * PAGE], 9);
        data[2 * PAGE + 5] = 1;
        s.write(1, 8192, &data);
        assert_eq!(s.read(1, 8192, 3 * PAGE as u64), data);
        assert_eq!(s.full_pages(), 1);
        let fresh = s.read(0, 0, PAGE as u64);
        assert_eq!(page_word(&fresh), Some(UNWRITTEN));
    }
}
