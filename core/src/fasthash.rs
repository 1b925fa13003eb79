//! A fast, fixed hasher for the engine's integer-keyed maps (block numbers, stripe ids,
//! request handles).
//!
//! `std`'s default SipHash guards against hash flooding by untrusted keys, which the engine
//! never sees: its keys are block and stripe numbers it derived itself. SipHash cost a
//! measurable share of simulator time (lock tables, pins, patch lists), so these maps use a
//! folded 128-bit multiply instead (the mixing step of foldhash/wyhash): one multiply per
//! word, with good entropy in both the high bits (hashbrown's control byte) and the low bits
//! (its bucket index). The hasher is unseeded, so iteration order is also the same from run
//! to run.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Odd 64-bit constant (the golden ratio), the multiplier of the mix.
const K: u64 = 0x9e37_79b9_7f4a_7c15;

#[derive(Clone, Copy, Default)]
pub struct FoldHasher {
    h: u64,
}

impl FoldHasher {
    #[inline]
    fn mix(&mut self, x: u64) {
        let p = u128::from(self.h ^ x).wrapping_mul(u128::from(K));
        self.h = (p as u64) ^ ((p >> 64) as u64);
    }
}

impl Hasher for FoldHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.h
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.mix(u64::from_le_bytes(w));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.mix(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.mix(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.mix(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.mix(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.mix(i as u64);
    }
}

pub type FastBuild = BuildHasherDefault<FoldHasher>;
pub type FastMap<K, V> = HashMap<K, V, FastBuild>;
pub type FastSet<K> = HashSet<K, FastBuild>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn spreads_sequential_keys_over_low_and_high_bits() {
        let b = FastBuild::default();
        let mut low = [0u32; 64];
        let mut high = [0u32; 128];
        for k in 0u64..64_000 {
            let h = b.hash_one(k);
            low[(h & 63) as usize] += 1;
            high[(h >> 57) as usize] += 1;
        }
        // 1,000 expected per low bucket and 500 per control value: a bad mix (e.g. a plain
        // multiply's low bits on strided keys) would leave buckets empty or crowded.
        assert!(low.iter().all(|&c| (800..1200).contains(&c)), "{low:?}");
        assert!(high.iter().all(|&c| (380..620).contains(&c)), "{high:?}");
    }

    #[test]
    fn same_key_same_hash_across_builders() {
        let (a, b) = (FastBuild::default(), FastBuild::default());
        assert_eq!(a.hash_one(42u64), b.hash_one(42u64));
        assert_ne!(a.hash_one(42u64), a.hash_one(43u64));
        let mut m: FastMap<u64, u32> = FastMap::default();
        m.insert(7, 1);
        assert_eq!(m.get(&7), Some(&1));
    }
}
