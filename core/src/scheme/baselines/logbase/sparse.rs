//! A sparse table of `u32` entries, allocated in leaves on first write, so a mapping table over
//! a large address space costs memory only where it was written. `u32::MAX` means "none".

const LEAF_BITS: u32 = 10;
const LEAF: usize = 1 << LEAF_BITS;
pub const NONE: u32 = u32::MAX;

#[derive(Default)]
pub struct SparseU32 {
    leaves: Vec<Option<Box<[u32]>>>,
    len: u64,
    set: u64,
}

impl SparseU32 {
    pub fn new(len: u64) -> Self {
        let n = len.div_ceil(LEAF as u64) as usize;
        SparseU32 {
            leaves: (0..n).map(|_| None).collect(),
            len,
            set: 0,
        }
    }
    pub fn len(&self) -> u64 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Entries that are not `NONE`.
    pub fn count(&self) -> u64 {
        self.set
    }
    pub fn get(&self, i: u64) -> u32 {
        assert!(i < self.len, "index {i} beyond {}", self.len);
        match &self.leaves[(i >> LEAF_BITS) as usize] {
            Some(l) => l[(i as usize) & (LEAF - 1)],
            None => NONE,
        }
    }
    /// Store `v` at `i`, returning the previous value.
    pub fn set(&mut self, i: u64, v: u32) -> u32 {
        assert!(i < self.len, "index {i} beyond {}", self.len);
        let slot = &mut self.leaves[(i >> LEAF_BITS) as usize];
        if slot.is_none() {
            if v == NONE {
                return NONE;
            }
            *slot = Some(vec![NONE; LEAF].into_boxed_slice());
        }
        let leaf = slot.as_mut().expect("leaf allocated");
        let old = std::mem::replace(&mut leaf[(i as usize) & (LEAF - 1)], v);
        match (old == NONE, v == NONE) {
            (true, false) => self.set += 1,
            (false, true) => self.set -= 1,
            _ => {}
        }
        old
    }
    /// Bytes of memory the allocated leaves take.
    pub fn memory_bytes(&self) -> u64 {
        let leaves = self.leaves.iter().filter(|l| l.is_some()).count() as u64;
        leaves * LEAF as u64 * 4 + self.leaves.len() as u64 * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn set_get_count() {
        let mut m = SparseU32::new(5000);
        assert_eq!(m.get(4999), NONE);
        assert_eq!(m.set(4999, 7), NONE);
        assert_eq!(m.set(4999, 8), 7);
        assert_eq!(m.count(), 1);
        assert_eq!(m.set(4999, NONE), 8);
        assert_eq!(m.count(), 0);
        assert_eq!(m.set(3, NONE), NONE);
    }
}
