//! Data mode: what each user page should read back, to check read replies.
//!
//! Every write gives each of its pages a fresh word (see [`super::store`]). A read can only
//! be checked for pages no write touched while the read was outstanding: the oracle keeps,
//! per written page, the acknowledged word, the writes in flight, and the logical times of
//! the last write submission and acknowledgement. Pages written by overlapping writes, or
//! trimmed, have no defined content and are skipped until the next clean write.

use std::collections::HashMap;

use fusionraid_core::PAGE_SIZE;

use super::store::page_word;

#[derive(Clone, Copy, Debug, Default)]
struct PageState {
    /// The content once no write is in flight; `None` = unspecified.
    acked: Option<u64>,
    /// Word of the latest submitted write (None for a trim).
    last_word: Option<u64>,
    pending: u32,
    /// Two writes overlapped: the content is whichever landed last.
    ambiguous: bool,
    last_submit: u64,
    last_ack: u64,
}

#[derive(Default)]
pub struct Oracle {
    pages: HashMap<(u32, u64), PageState>,
    /// Seed of the prefill words, per volume that was prefilled.
    prefilled: HashMap<u32, u64>,
    clock: u64,
    pub verified_reads: u64,
    pub mismatches: u64,
    pub first_mismatch: Option<String>,
}

/// A word for page `page` of volume `vol` written by the `n`-th write: never 0 (unwritten
/// user space reads as zeros) and never the member fill pattern.
pub fn word_for(seed: u64, vol: u32, page: u64, n: u64) -> u64 {
    let mut z = seed ^ (u64::from(vol) << 56) ^ page.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ n;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    if z == 0 || z == super::store::UNWRITTEN {
        1
    } else {
        z
    }
}

impl Oracle {
    /// Volume `vol` was prefilled with `word_for(seed, vol, page, 0)`.
    pub fn set_prefilled(&mut self, vol: u32, seed: u64) {
        self.prefilled.insert(vol, seed);
    }

    /// What a page no write of the run touched holds.
    fn base(&self, vol: u32, page: u64) -> u64 {
        self.prefilled
            .get(&vol)
            .map_or(0, |&seed| word_for(seed, vol, page, 0))
    }

    /// A logical timestamp for a read submission.
    pub fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// A write (`words` = one per page) or a trim (`words` = None) of `pages` pages from
    /// `first` was handed to the engine.
    pub fn write_submitted(&mut self, vol: u32, first: u64, pages: u64, words: Option<&[u64]>) {
        let now = self.tick();
        for i in 0..pages {
            let base = self.base(vol, first + i);
            let st = self.pages.entry((vol, first + i)).or_insert(PageState {
                acked: Some(base),
                ..PageState::default()
            });
            if st.pending > 0 {
                st.ambiguous = true;
            }
            st.pending += 1;
            st.last_submit = now;
            st.last_word = words.map(|w| w[i as usize]);
        }
    }

    /// That write was answered (`ok` = success).
    pub fn write_done(&mut self, vol: u32, first: u64, pages: u64, ok: bool) {
        let now = self.tick();
        for i in 0..pages {
            let st = self
                .pages
                .get_mut(&(vol, first + i))
                .expect("page of a submitted write");
            st.pending -= 1;
            st.last_ack = now;
            if !ok {
                st.ambiguous = true;
            }
            if st.pending == 0 {
                st.acked = if st.ambiguous { None } else { st.last_word };
                st.ambiguous = false;
            }
        }
    }

    /// Checks a read of `data` at page `first` of `vol`, submitted at logical time `since`.
    pub fn check_read(&mut self, vol: u32, first: u64, data: &[u8], since: u64) {
        let mut checked = false;
        for (i, p) in data.chunks_exact(PAGE_SIZE as usize).enumerate() {
            let page = first + i as u64;
            let expect = match self.pages.get(&(vol, page)) {
                None => Some(self.base(vol, page)),
                Some(st) if st.pending == 0 && st.last_submit < since && st.last_ack < since => {
                    st.acked
                }
                Some(_) => None,
            };
            let Some(want) = expect else { continue };
            checked = true;
            if page_word(p) != Some(want) {
                self.mismatches += 1;
                if self.first_mismatch.is_none() {
                    self.first_mismatch = Some(format!(
                        "volume {vol} page {page}: expected word {want:#018x}, read {:?}",
                        page_word(p).map(|w| format!("{w:#018x}"))
                    ));
                }
            }
        }
        if checked {
            self.verified_reads += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::store::fill_word;

    fn page(w: u64) -> Vec<u8> {
        let mut p = vec![0u8; PAGE_SIZE as usize];
        fill_word(&mut p, w);
        p
    }

    #[test]
    fn checks_only_settled_pages() {
        let mut o = Oracle::default();
        let t0 = o.tick();
        o.check_read(0, 5, &page(0), t0);
        assert_eq!((o.verified_reads, o.mismatches), (1, 0));
        o.write_submitted(0, 5, 1, Some(&[42]));
        let during = o.tick();
        o.write_done(0, 5, 1, true);
        // Submitted while the write was in flight: either value is fine, nothing checked.
        o.check_read(0, 5, &page(0), during);
        assert_eq!(o.verified_reads, 1);
        let after = o.tick();
        o.check_read(0, 5, &page(42), after);
        o.check_read(0, 5, &page(41), after);
        assert_eq!((o.verified_reads, o.mismatches), (3, 1));
        // Overlapping writes leave the page unspecified until a clean write.
        o.write_submitted(0, 5, 1, Some(&[1]));
        o.write_submitted(0, 5, 1, Some(&[2]));
        o.write_done(0, 5, 1, true);
        o.write_done(0, 5, 1, true);
        let t = o.tick();
        o.check_read(0, 5, &page(1), t);
        assert_eq!(o.verified_reads, 3);
        assert!(word_for(1, 0, 0, 0) != 0);
    }
}
