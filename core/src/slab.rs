//! A generational slab: stable handles for jobs in flight. A stale handle (a completion
//! for a job already finished, e.g. the loser of a hedged read) resolves to None instead of
//! another job. A handle is 64 bits (generation, index); a scheme may give it a type of its
//! own ([`Handle`]) so job handles can not be mixed up with other numbers.

use std::marker::PhantomData;

/// A slab handle's type: a 64-bit value as the slab made it.
pub trait Handle: Copy {
    fn from_raw(raw: u64) -> Self;
    fn raw(self) -> u64;
}

impl Handle for u64 {
    fn from_raw(raw: u64) -> Self {
        raw
    }
    fn raw(self) -> u64 {
        self
    }
}

pub struct Slab<T, H: Handle = u64> {
    slots: Vec<(u32, Option<T>)>,
    free: Vec<u32>,
    live: usize,
    handle: PhantomData<H>,
}

impl<T, H: Handle> Default for Slab<T, H> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            handle: PhantomData,
        }
    }
}

impl<T, H: Handle> Slab<T, H> {
    pub fn insert(&mut self, v: T) -> H {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push((0, None));
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[idx as usize];
        s.0 = s.0.wrapping_add(1);
        s.1 = Some(v);
        self.live += 1;
        H::from_raw(((s.0 as u64) << 32) | idx as u64)
    }

    fn slot(&self, h: H) -> Option<usize> {
        let h = h.raw();
        let idx = (h & 0xffff_ffff) as usize;
        let s = self.slots.get(idx)?;
        (s.0 == (h >> 32) as u32 && s.1.is_some()).then_some(idx)
    }

    pub fn get_mut(&mut self, h: H) -> Option<&mut T> {
        let i = self.slot(h)?;
        self.slots[i].1.as_mut()
    }
    pub fn get(&self, h: H) -> Option<&T> {
        let i = self.slot(h)?;
        self.slots[i].1.as_ref()
    }
    pub fn remove(&mut self, h: H) -> Option<T> {
        let i = self.slot(h)?;
        self.free.push(i as u32);
        self.live -= 1;
        self.slots[i].1.take()
    }
    /// Handles of all live entries (for periodic scans such as hedging).
    pub fn handles(&self) -> Vec<H> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.1.is_some())
            .map(|(i, s)| H::from_raw(((s.0 as u64) << 32) | i as u64))
            .collect()
    }
    pub fn len(&self) -> usize {
        self.live
    }
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn stale_handles_do_not_alias() {
        let mut s: Slab<i32> = Slab::default();
        let a = s.insert(1);
        assert_eq!(s.remove(a), Some(1));
        let b = s.insert(2);
        assert_ne!(a, b);
        assert!(s.get(a).is_none());
        assert_eq!(s.get(b), Some(&2));
        assert_eq!(s.len(), 1);
    }
}
