//! The CRC-32C of one 4 KiB page, fast: every write, conversion and relocation checksums
//! pages (one write costs about three), and the general-purpose `crc32c` crate spent about
//! 2,000 instructions on each (bounds-checked short chunks); this is about a third of that.
//!
//! The page is cut into three lanes of 1,360 bytes run side by side through the SSE 4.2
//! `crc32` instruction (its latency hides behind the other two lanes), then joined: a CRC
//! register is linear over GF(2), so the first two lanes' registers are carried over the
//! bytes after them with a table per byte of the register (`Shift`), and XORed with the
//! third's. The last 16 bytes go through the instruction as they are. Other CPUs use the
//! crate. The result is the standard CRC-32C (tests compare it with the crate's).

use crate::types::PAGE_SIZE;

const PAGE: usize = PAGE_SIZE as usize;
/// Bytes per lane: three lanes of 170 words, then 2 words of tail.
const LANE: usize = 1360;
/// The reflected CRC-32C polynomial.
const POLY: u32 = 0x82F6_3B78;

/// The CRC-32C of `page` (exactly one page).
pub fn page_crc(page: &[u8]) -> u32 {
    let page: &[u8; PAGE] = page.try_into().expect("one page");
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, checked just above.
        return unsafe { x86::page_crc(page, shifts()) };
    }
    crc32c::crc32c(page)
}

/// A register carried over a fixed number of zero bytes, as four tables (one per byte of
/// the register: the map is linear, so the bytes' images XOR together).
struct Shift([[u32; 256]; 4]);

impl Shift {
    fn new(bytes: usize) -> Self {
        // The image of each bit of the register, fed `bytes` zero bytes one bit at a time.
        let mut bit_image = [0u32; 32];
        for (i, img) in bit_image.iter_mut().enumerate() {
            let mut r = 1u32 << i;
            for _ in 0..bytes * 8 {
                r = (r >> 1) ^ (POLY & (r & 1).wrapping_neg());
            }
            *img = r;
        }
        let mut t = [[0u32; 256]; 4];
        for (k, table) in t.iter_mut().enumerate() {
            for (b, e) in table.iter_mut().enumerate() {
                *e = (0..8)
                    .filter(|j| b & (1 << j) != 0)
                    .fold(0, |acc, j| acc ^ bit_image[8 * k + j]);
            }
        }
        Shift(t)
    }

    #[inline]
    fn apply(&self, r: u32) -> u32 {
        let t = &self.0;
        t[0][(r & 0xff) as usize]
            ^ t[1][((r >> 8) & 0xff) as usize]
            ^ t[2][((r >> 16) & 0xff) as usize]
            ^ t[3][(r >> 24) as usize]
    }
}

/// Carry over one lane, and over two.
fn shifts() -> &'static (Shift, Shift) {
    static SHIFTS: std::sync::OnceLock<(Shift, Shift)> = std::sync::OnceLock::new();
    SHIFTS.get_or_init(|| (Shift::new(LANE), Shift::new(2 * LANE)))
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{LANE, PAGE, Shift};
    use std::arch::x86_64::_mm_crc32_u64;

    #[inline]
    fn word(w: &[u8]) -> u64 {
        u64::from_le_bytes(w.try_into().expect("8 bytes"))
    }

    #[target_feature(enable = "sse4.2")]
    pub(super) fn page_crc(p: &[u8; PAGE], (one, two): &(Shift, Shift)) -> u32 {
        let (mut a, mut b, mut c) = (u64::from(u32::MAX), 0u64, 0u64);
        let (la, rest) = p.split_at(LANE);
        let (lb, rest) = rest.split_at(LANE);
        let lanes = la.chunks_exact(8).zip(lb.chunks_exact(8));
        for ((x, y), z) in lanes.zip(rest[..LANE].chunks_exact(8)) {
            a = _mm_crc32_u64(a, word(x));
            b = _mm_crc32_u64(b, word(y));
            c = _mm_crc32_u64(c, word(z));
        }
        let mut r = u64::from(two.apply(a as u32) ^ one.apply(b as u32) ^ c as u32);
        for w in p[3 * LANE..].chunks_exact(8) {
            r = _mm_crc32_u64(r, word(w));
        }
        !(r as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_crate_on_varied_pages() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut pages = vec![vec![0u8; PAGE], vec![0xffu8; PAGE]];
        for _ in 0..20 {
            let p: Vec<u8> = (0..PAGE)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            pages.push(p);
        }
        let mut one_bit = vec![0u8; PAGE];
        one_bit[LANE - 1] = 0x80;
        pages.push(one_bit);
        for p in &pages {
            assert_eq!(page_crc(p), crc32c::crc32c(p));
        }
    }
}
