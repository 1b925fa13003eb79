//! A set of page indices inside one chunk (at most 256 pages: a 1 MiB chunk of 4 KiB pages),
//! with the contiguous-run iteration every I/O planner here needs.

/// Largest number of pages a chunk may hold.
pub const MAX_PAGES: usize = 256;

#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct PageSet([u64; 4]);

impl std::fmt::Debug for PageSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.runs()).finish()
    }
}

impl PageSet {
    pub fn range(first: usize, count: usize) -> Self {
        let mut s = PageSet::default();
        s.insert_range(first, count);
        s
    }
    pub fn insert(&mut self, p: usize) {
        assert!(p < MAX_PAGES, "page {p} beyond a chunk");
        self.0[p / 64] |= 1 << (p % 64);
    }
    pub fn insert_range(&mut self, first: usize, count: usize) {
        assert!(
            first + count <= MAX_PAGES,
            "pages {first}+{count} beyond a chunk"
        );
        let mut p = first;
        let end = first + count;
        while p < end {
            let w = p / 64;
            let lo = p % 64;
            let hi = (end - w * 64).min(64);
            let mask = if hi - lo == 64 {
                u64::MAX
            } else {
                ((1u64 << (hi - lo)) - 1) << lo
            };
            self.0[w] |= mask;
            p = w * 64 + hi;
        }
    }
    pub fn remove(&mut self, p: usize) {
        if p < MAX_PAGES {
            self.0[p / 64] &= !(1 << (p % 64));
        }
    }
    pub fn contains(&self, p: usize) -> bool {
        p < MAX_PAGES && self.0[p / 64] & (1 << (p % 64)) != 0
    }
    pub fn union(&mut self, o: &PageSet) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a |= b;
        }
    }
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
    /// Pages in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(wi, &w)| {
            let mut bits = w;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(wi * 64 + b)
            })
        })
    }
    /// Maximal runs of consecutive pages as (first, count).
    pub fn runs(&self) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        for (wi, &w) in self.0.iter().enumerate() {
            let mut bits = w;
            let mut base = 0usize;
            while bits != 0 {
                let start = bits.trailing_zeros() as usize;
                let ones = (bits >> start).trailing_ones() as usize;
                let first = wi * 64 + base + start;
                match out.last_mut() {
                    Some((f, c)) if *f + *c == first => *c += ones,
                    _ => out.push((first, ones)),
                }
                let shift = start + ones;
                if shift >= 64 {
                    break;
                }
                bits >>= shift;
                base += shift;
            }
        }
        out
    }
    /// Every page of `0..pages` is in the set.
    pub fn is_full(&self, pages: usize) -> bool {
        let full = PageSet::range(0, pages);
        self.0.iter().zip(full.0).all(|(&a, b)| a & b == b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn runs_and_counts() {
        let mut s = PageSet::range(3, 4);
        s.insert(9);
        s.insert(255);
        assert_eq!(s.runs(), vec![(3, 4), (9, 1), (255, 1)]);
        assert_eq!(s.len(), 6);
        assert!(!s.is_full(16));
        assert!(PageSet::range(0, 16).is_full(16));
        let mut u = PageSet::range(0, 2);
        u.union(&s);
        assert_eq!(u.runs()[0], (0, 2));
        let big = PageSet::range(60, 140);
        assert_eq!(big.runs(), vec![(60, 140)]);
        assert_eq!(big.len(), 140);
        assert_eq!(big.iter().next(), Some(60));
        assert_eq!(big.iter().last(), Some(199));
        assert!(PageSet::range(0, 256).is_full(256));
        assert_eq!(PageSet::range(0, 256).runs(), vec![(0, 256)]);
        let mut holes = PageSet::range(0, 256);
        holes.remove(63);
        holes.remove(64);
        assert_eq!(holes.runs(), vec![(0, 63), (65, 191)]);
    }

    #[test]
    fn matches_a_plain_model() {
        let mut r = crate::rng::Rng::new(5);
        for _ in 0..200 {
            let mut s = PageSet::default();
            let mut m = [false; MAX_PAGES];
            for _ in 0..r.below(8) {
                let f = r.below(256) as usize;
                let c = r.below((256 - f) as u64 + 1) as usize;
                s.insert_range(f, c);
                m[f..f + c].iter_mut().for_each(|x| *x = true);
            }
            let want: Vec<usize> = (0..MAX_PAGES).filter(|&p| m[p]).collect();
            assert_eq!(s.iter().collect::<Vec<_>>(), want);
            let mut runs = Vec::new();
            for &p in &want {
                match runs.last_mut() {
                    Some((f, c)) if *f + *c == p => *c += 1,
                    _ => runs.push((p, 1)),
                }
            }
            assert_eq!(s.runs(), runs);
            let n = r.below(257) as usize;
            assert_eq!(s.is_full(n), m[..n].iter().all(|&x| x));
        }
    }
}
