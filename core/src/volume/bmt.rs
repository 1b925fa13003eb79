//! Block Mapping Table (BMT): user block number -> [`Loc`], one packed 40-bit entry per
//! user block of the volume (paper §4.4): bit 39 = P (the block has a patch list), bit 38 =
//! W (replicated), bits 0..38 = FLBN. Five bytes per 64 KiB block is 0.0076% of the space
//! it maps.
//!
//! Deviation from the paper: there the FLBN field of a patched entry becomes the head of
//! the patch list; here it keeps the base location and the list lives in [`super::patch`],
//! keyed by user block, so the base never needs a list node of its own.

use super::loc::Loc;

const ENTRY_BYTES: usize = 5;
const P_BIT: u64 = 1 << 39;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub base: Loc,
    pub patched: bool,
}

pub struct Bmt {
    bytes: Vec<u8>,
    blocks: u64,
    mapped: u64,
}

impl Bmt {
    pub fn new(blocks: u64) -> Self {
        let mut bytes = vec![0u8; blocks as usize * ENTRY_BYTES];
        let empty = Loc::Unmapped.pack().to_le_bytes();
        for e in bytes.chunks_exact_mut(ENTRY_BYTES) {
            e.copy_from_slice(&empty[..ENTRY_BYTES]);
        }
        Bmt {
            bytes,
            blocks,
            mapped: 0,
        }
    }

    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    #[inline]
    fn raw(&self, ub: u64) -> u64 {
        assert!(
            ub < self.blocks,
            "user block {ub} past the BMT ({})",
            self.blocks
        );
        let i = ub as usize * ENTRY_BYTES;
        let mut b = [0u8; 8];
        b[..ENTRY_BYTES].copy_from_slice(&self.bytes[i..i + ENTRY_BYTES]);
        u64::from_le_bytes(b)
    }

    #[inline]
    pub fn get(&self, ub: u64) -> Entry {
        let v = self.raw(ub);
        Entry {
            base: Loc::unpack(v & !P_BIT),
            patched: v & P_BIT != 0,
        }
    }

    pub fn set(&mut self, ub: u64, e: Entry) {
        let old = self.get(ub);
        let was = old.base != Loc::Unmapped || old.patched;
        let is = e.base != Loc::Unmapped || e.patched;
        let v = e.base.pack() | if e.patched { P_BIT } else { 0 };
        match (was, is) {
            (false, true) => self.mapped += 1,
            (true, false) => self.mapped -= 1,
            _ => {}
        }
        let i = ub as usize * ENTRY_BYTES;
        self.bytes[i..i + ENTRY_BYTES].copy_from_slice(&v.to_le_bytes()[..ENTRY_BYTES]);
        // The packed value read back (it decodes to `e`: packing round-trips).
        assert_eq!(self.raw(ub), v, "BMT entry did not read back");
    }

    /// The packed table (5 bytes per block), for checkpoints.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// A table from checkpoint bytes (5 per block).
    pub fn from_bytes(blocks: u64, bytes: Vec<u8>) -> Result<Bmt, &'static str> {
        if bytes.len() as u64 != blocks * ENTRY_BYTES as u64 {
            return Err("BMT length does not match the volume's block count");
        }
        let mut t = Bmt {
            bytes,
            blocks,
            mapped: 0,
        };
        t.mapped = (0..blocks)
            .filter(|&ub| {
                let e = t.get(ub);
                e.base != Loc::Unmapped || e.patched
            })
            .count() as u64;
        Ok(t)
    }

    /// User blocks with any data (base or patches).
    pub fn mapped_blocks(&self) -> u64 {
        self.mapped
    }

    pub fn memory_bytes(&self) -> u64 {
        self.bytes.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_independent_and_counted() {
        let mut b = Bmt::new(10);
        assert_eq!(b.get(3).base, Loc::Unmapped);
        b.set(
            3,
            Entry {
                base: Loc::Rep(77),
                patched: true,
            },
        );
        b.set(
            4,
            Entry {
                base: Loc::Raid((1 << 38) - 2),
                patched: false,
            },
        );
        assert_eq!(
            b.get(3),
            Entry {
                base: Loc::Rep(77),
                patched: true
            }
        );
        assert_eq!(b.get(4).base, Loc::Raid((1 << 38) - 2));
        assert_eq!(b.get(2).base, Loc::Unmapped);
        assert_eq!(b.get(5).base, Loc::Unmapped);
        assert_eq!(b.mapped_blocks(), 2);
        b.set(
            3,
            Entry {
                base: Loc::Unmapped,
                patched: false,
            },
        );
        assert_eq!(b.mapped_blocks(), 1);
        assert_eq!(b.memory_bytes(), 50);
    }
}
