//! Where requests land: page-aligned offsets inside the footprint, with runs of sequential
//! requests and an optional hot region.

use fusionraid_core::rng::Rng;

/// Skewed access: `access_share` of the random (non-sequential) requests go to the first
/// `data_share` of the footprint, the rest to the remainder (e.g. 0.2 / 0.8 is the 80/20 rule).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hotspot {
    pub data_share: f64,
    pub access_share: f64,
}

impl Hotspot {
    pub fn problem(&self) -> Option<String> {
        let ok = self.data_share > 0.0
            && self.data_share < 1.0
            && (0.0..=1.0).contains(&self.access_share);
        (!ok).then(|| format!("bad hotspot {self:?}: shares must be in (0, 1) and [0, 1]"))
    }
}

/// Offset chooser for one direction (reads and writes each have their own, so a write run is
/// not broken by interleaved reads). Everything is in pages.
#[derive(Clone, Debug)]
pub(crate) struct Addresser {
    pages: u64,
    seq: f64,
    hot: Option<(u64, f64)>,
    cursor: u64,
}

impl Addresser {
    /// `pages` >= 1; `seq` is the probability that a request continues where the previous one
    /// of this direction ended (mean run length `1 / (1 - seq)` requests).
    pub(crate) fn new(pages: u64, seq: f64, hot: Option<Hotspot>, rng: &mut Rng) -> Self {
        let pages = pages.max(1);
        let hot = hot.and_then(|h| {
            let hot_pages = (pages as f64 * h.data_share) as u64;
            (hot_pages > 0 && hot_pages < pages).then_some((hot_pages, h.access_share))
        });
        let mut a = Addresser {
            pages,
            seq: if seq.is_finite() { seq } else { 0.0 },
            hot,
            cursor: 0,
        };
        a.cursor = a.random(rng, 1);
        a
    }

    /// First page of a request of `len` pages (`1..=pages`).
    pub(crate) fn next(&mut self, rng: &mut Rng, len: u64) -> u64 {
        let len = len.clamp(1, self.pages);
        // Draw the coin every time so the random stream does not depend on the cursor.
        let continue_run = rng.unit() < self.seq;
        let start = if continue_run && self.cursor + len <= self.pages {
            self.cursor
        } else {
            self.random(rng, len)
        };
        self.cursor = start + len;
        start
    }

    fn random(&self, rng: &mut Rng, len: u64) -> u64 {
        let (mut lo, mut hi) = (0, self.pages);
        if let Some((hot_pages, share)) = self.hot {
            (lo, hi) = if rng.unit() < share {
                (0, hot_pages)
            } else {
                (hot_pages, self.pages)
            };
            if hi - lo < len {
                (lo, hi) = (0, self.pages);
            }
        }
        lo + rng.below(hi - lo - len + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_inside_and_runs_are_sequential() {
        let mut rng = Rng::new(5);
        let mut a = Addresser::new(1000, 1.0, None, &mut rng);
        let first = a.next(&mut rng, 10);
        assert!(first + 10 <= 1000);
        let second = a.next(&mut rng, 10);
        if first + 20 <= 1000 {
            assert_eq!(second, first + 10);
        }
        for _ in 0..10_000 {
            let len = rng.below(2000) + 1;
            let p = a.next(&mut rng, len);
            assert!(p + len.min(1000) <= 1000);
        }
    }

    #[test]
    fn hotspot_concentrates_accesses() {
        let mut rng = Rng::new(6);
        let hot = Hotspot {
            data_share: 0.2,
            access_share: 0.8,
        };
        let mut a = Addresser::new(10_000, 0.0, Some(hot), &mut rng);
        let n = 50_000;
        let in_hot = (0..n).filter(|_| a.next(&mut rng, 1) < 2000).count();
        let share = in_hot as f64 / n as f64;
        assert!((share - 0.8).abs() < 0.02, "{share}");
    }

    #[test]
    fn one_page_footprint_works() {
        let mut rng = Rng::new(7);
        let mut a = Addresser::new(0, 0.5, None, &mut rng);
        assert_eq!(a.next(&mut rng, 64), 0);
    }
}
