//! GF(2^8) with Linux md's RAID6 conventions: polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d)
//! and generator g = 2 (H. Peter Anvin, "The mathematics of RAID-6").
//!
//! Tables are computed at compile time, so there is no lazy initialisation and no runtime
//! cost. Bulk multiplication by a constant uses one 256-entry row of [`MUL`] per call: a
//! single indexed load per byte, no branches.

/// The reduction polynomial without its x^8 term; what a carry out of bit 7 folds back in.
const POLY_LOW: u8 = 0x1d;

/// `EXP[i] = g^i`, doubled in length so `LOG[a] + LOG[b]` indexes it without a modulo.
pub const EXP: [u8; 510] = build_exp();
/// `LOG[a]` with `g^LOG[a] = a` for nonzero `a`; `LOG[0]` is meaningless (0).
pub const LOG: [u8; 256] = build_log();
/// Full product table: `MUL[a][b] = a * b`. 64 KiB; rows are handed out as lookup tables.
pub static MUL: [[u8; 256]; 256] = build_mul();

/// Multiplication by x (= g = 2) of a single element. Written so that a loop of it becomes
/// vector code: the doubling is a byte add and the mask (0xff when bit 7 is set, 0
/// otherwise) a signed compare with zero, both of which exist for every byte lane.
#[inline(always)]
pub const fn mul2(a: u8) -> u8 {
    a.wrapping_add(a) ^ (POLY_LOW & ((a as i8) >> 7) as u8)
}

pub fn mul(a: u8, b: u8) -> u8 {
    MUL[a as usize][b as usize]
}

/// `g^i` for any exponent (the group has order 255).
pub fn pow_g(i: usize) -> u8 {
    EXP[i % 255]
}

/// The inverse of a nonzero element. Callers only invert values proven nonzero.
pub fn inv(a: u8) -> u8 {
    assert!(a != 0, "GF(256): zero has no inverse");
    EXP[(255 - LOG[a as usize] as usize) % 255]
}

/// `dst[i] = c * dst[i]`.
pub fn mul_slice_in_place(c: u8, dst: &mut [u8]) {
    let row = &MUL[c as usize];
    for b in dst {
        *b = row[*b as usize];
    }
}

const fn build_exp() -> [u8; 510] {
    let mut t = [0u8; 510];
    let mut v: u8 = 1;
    let mut i = 0;
    while i < 510 {
        t[i] = v;
        v = mul2(v);
        i += 1;
    }
    t
}

const fn build_log() -> [u8; 256] {
    let exp = build_exp();
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 255 {
        t[exp[i] as usize] = i as u8;
        i += 1;
    }
    t
}

const fn build_mul() -> [[u8; 256]; 256] {
    let exp = build_exp();
    let log = build_log();
    let mut t = [[0u8; 256]; 256];
    let mut a = 1;
    while a < 256 {
        let mut b = 1;
        while b < 256 {
            t[a][b] = exp[log[a] as usize + log[b] as usize];
            b += 1;
        }
        a += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Carry-less multiply then reduce: the textbook definition, independent of the tables.
    fn slow_mul(a: u8, b: u8) -> u8 {
        let mut acc: u16 = 0;
        for bit in 0..8 {
            if b >> bit & 1 == 1 {
                acc ^= (a as u16) << bit;
            }
        }
        for bit in (8..16).rev() {
            if acc >> bit & 1 == 1 {
                acc ^= 0x11d << (bit - 8);
            }
        }
        acc as u8
    }

    #[test]
    fn tables_agree_with_the_definition() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(mul(a, b), slow_mul(a, b), "{a} * {b}");
            }
            if a != 0 {
                assert_eq!(mul(a, inv(a)), 1);
            }
            assert_eq!(mul2(a), slow_mul(a, 2));
        }
        // g = 2 is a generator: its powers cover all 255 nonzero elements.
        let mut seen = [false; 256];
        for i in 0..255 {
            seen[pow_g(i) as usize] = true;
        }
        assert!(seen[1..].iter().all(|&s| s) && !seen[0]);
    }
}
