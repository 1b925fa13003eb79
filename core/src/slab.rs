//! A generational slab: stable u64 handles for jobs in flight. A stale handle (a completion
//! for a job already finished, e.g. the loser of a hedged read) resolves to None instead of
//! another job.

pub struct Slab<T> {
    slots: Vec<(u32, Option<T>)>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }
}

impl<T> Slab<T> {
    pub fn insert(&mut self, v: T) -> u64 {
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
        ((s.0 as u64) << 32) | idx as u64
    }

    fn slot(&self, h: u64) -> Option<usize> {
        let idx = (h & 0xffff_ffff) as usize;
        let s = self.slots.get(idx)?;
        (s.0 == (h >> 32) as u32 && s.1.is_some()).then_some(idx)
    }

    pub fn get_mut(&mut self, h: u64) -> Option<&mut T> {
        let i = self.slot(h)?;
        self.slots[i].1.as_mut()
    }
    pub fn get(&self, h: u64) -> Option<&T> {
        let i = self.slot(h)?;
        self.slots[i].1.as_ref()
    }
    pub fn remove(&mut self, h: u64) -> Option<T> {
        let i = self.slot(h)?;
        self.free.push(i as u32);
        self.live -= 1;
        self.slots[i].1.take()
    }
    /// Handles of all live entries (for periodic scans such as hedging).
    pub fn handles(&self) -> Vec<u64> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.1.is_some())
            .map(|(i, s)| ((s.0 as u64) << 32) | i as u64)
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
        let mut s = Slab::default();
        let a = s.insert(1);
        assert_eq!(s.remove(a), Some(1));
        let b = s.insert(2);
        assert_ne!(a, b);
        assert!(s.get(a).is_none());
        assert_eq!(s.get(b), Some(&2));
        assert_eq!(s.len(), 1);
    }
}
