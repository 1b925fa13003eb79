//! Bulk kernels: XOR and the P/Q syndrome.
//!
//! Every kernel is a plain loop over bytes that the compiler turns into vector code (each
//! operation acts on each byte on its own), compiled twice: for the baseline x86-64 build
//! (16-byte vectors) and for AVX2 (32 bytes), picked at run time where the CPU has AVX2
//! (checked once and cached by the standard library), so the build itself stays portable.
//! The syndrome walks the columns in blocks of [`CHUNK`] bytes so P, Q and the current data
//! chunk stay in L1 while every column is folded in.

use super::gf256::mul2;

/// Bytes processed per pass over all columns: small enough that P, Q and one data chunk fit
/// in a 32 KiB L1 cache.
const CHUNK: usize = 4096;

/// `dst ^= src` (RAID5 parity is nothing but this).
pub fn xor_into(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "xor_into: length mismatch");
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { xor_bytes_avx2(dst, src) };
    }
    xor_bytes(dst, src)
}

#[inline(always)]
fn xor_bytes(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= *s;
    }
}

/// `xor_bytes` compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn xor_bytes_avx2(dst: &mut [u8], src: &[u8]) {
    xor_bytes(dst, src)
}

/// `a ^ b` as a new buffer, written as it is computed (no copy of either first).
pub(super) fn xor_of(a: &[u8], b: &[u8]) -> Vec<u8> {
    map_pair(a, b, |x, y| x ^ y)
}

/// `g*a ^ b` as a new buffer: Q of the top two columns of a stripe, `a` the higher.
pub(super) fn q_of_pair(a: &[u8], b: &[u8]) -> Vec<u8> {
    map_pair(a, b, |x, y| mul2(x) ^ y)
}

/// `f` of each pair of bytes of two columns, as a new buffer; vectors as wide as
/// `xor_into`'s.
#[inline(always)]
fn map_pair(a: &[u8], b: &[u8], f: impl Fn(u8, u8) -> u8) -> Vec<u8> {
    assert_eq!(a.len(), b.len(), "length mismatch");
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { map_pair_avx2(a, b, f) };
    }
    map_pair_bytes(a, b, f)
}

#[inline(always)]
fn map_pair_bytes(a: &[u8], b: &[u8], f: impl Fn(u8, u8) -> u8) -> Vec<u8> {
    a.iter().zip(b).map(|(x, y)| f(*x, *y)).collect()
}

/// `map_pair_bytes` compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn map_pair_avx2(a: &[u8], b: &[u8], f: impl Fn(u8, u8) -> u8) -> Vec<u8> {
    map_pair_bytes(a, b, f)
}

/// `xor_bytes` itself, whatever the CPU (tests compare the two).
#[cfg(test)]
pub(super) fn xor_into_plain(dst: &mut [u8], src: &[u8]) {
    xor_bytes(dst, src)
}

/// Whether the AVX2 builds of the kernels may run on this CPU.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn avx2() -> bool {
    std::is_x86_feature_detected!("avx2")
}

/// `q = g*q ^ src` and, if given, `p ^= src`: one Horner step of the Q syndrome.
#[inline(always)]
fn fold_column(q: Option<&mut [u8]>, p: Option<&mut [u8]>, src: Option<&[u8]>) {
    match (q, p, src) {
        (Some(q), Some(p), Some(src)) => {
            for ((qb, pb), sb) in q.iter_mut().zip(p.iter_mut()).zip(src) {
                *qb = mul2(*qb) ^ sb;
                *pb ^= sb;
            }
        }
        // A column treated as zero: Q still advances one power of g.
        (Some(q), _, None) => q.iter_mut().for_each(|qb| *qb = mul2(*qb)),
        (Some(q), None, Some(src)) => {
            for (qb, sb) in q.iter_mut().zip(src) {
                *qb = mul2(*qb) ^ sb;
            }
        }
        (None, Some(p), Some(src)) => xor_bytes(p, src),
        (None, _, _) => {}
    }
}

/// Computes P (XOR of data) and/or Q (sum of g^i * D_i) of `data` into `p` / `q`, treating
/// the columns for which `skip(i)` holds as all zeros (their slices are not read and may be
/// empty). Every other column and both outputs must have length `len`.
pub(super) fn syndrome<S: AsRef<[u8]>>(
    data: &[S],
    skip: impl Fn(usize) -> bool,
    len: usize,
    p: Option<&mut [u8]>,
    q: Option<&mut [u8]>,
) {
    for (i, d) in data.iter().enumerate() {
        assert!(
            skip(i) || d.as_ref().len() == len,
            "data column {i}: length mismatch"
        );
    }
    assert!(
        p.as_ref().is_none_or(|p| p.len() == len),
        "P: length mismatch"
    );
    assert!(
        q.as_ref().is_none_or(|q| q.len() == len),
        "Q: length mismatch"
    );
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { syndrome_avx2(data, skip, len, p, q) };
    }
    syndrome_loops(data, skip, len, p, q)
}

/// `syndrome_loops` compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn syndrome_avx2<S: AsRef<[u8]>>(
    data: &[S],
    skip: impl Fn(usize) -> bool,
    len: usize,
    p: Option<&mut [u8]>,
    q: Option<&mut [u8]>,
) {
    syndrome_loops(data, skip, len, p, q)
}

/// `syndrome` after its length checks; also what runs without AVX2 (tests compare the two
/// builds).
#[inline(always)]
pub(super) fn syndrome_loops<S: AsRef<[u8]>>(
    data: &[S],
    skip: impl Fn(usize) -> bool,
    len: usize,
    mut p: Option<&mut [u8]>,
    mut q: Option<&mut [u8]>,
) {
    let top = (0..data.len()).rev().find(|&i| !skip(i));
    for start in (0..len).step_by(CHUNK) {
        let end = (start + CHUNK).min(len);
        let mut pc = p.as_deref_mut().map(|p| &mut p[start..end]);
        let mut qc = q.as_deref_mut().map(|q| &mut q[start..end]);
        // Horner's rule from the highest column down: Q = (..(D_top g + D_top-1) g ..) + D_0.
        // Seeding with the top column saves one pass over zeros.
        let Some(top) = top else {
            pc.iter_mut().chain(qc.iter_mut()).for_each(|c| c.fill(0));
            continue;
        };
        let seed = &data[top].as_ref()[start..end];
        pc.iter_mut()
            .chain(qc.iter_mut())
            .for_each(|c| c.copy_from_slice(seed));
        for i in (0..top).rev() {
            let src = (!skip(i)).then(|| &data[i].as_ref()[start..end]);
            fold_column(qc.as_deref_mut(), pc.as_deref_mut(), src);
        }
    }
}

/// `syndrome` for outputs that already hold a copy of the last data column (so they need no
/// zeroing first: `super::new_parity`): folds the other columns in, from the top down.
pub(super) fn fold_below_top(data: &[&[u8]], p: Option<&mut [u8]>, q: Option<&mut [u8]>) {
    let len = data.last().map_or(0, |d| d.len());
    assert!(
        data.iter().all(|d| d.len() == len)
            && p.as_ref().is_none_or(|p| p.len() == len)
            && q.as_ref().is_none_or(|q| q.len() == len),
        "length mismatch"
    );
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { fold_below_top_avx2(data, len, p, q) };
    }
    fold_below_top_loops(data, len, p, q)
}

/// `fold_below_top_loops` compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fold_below_top_avx2(data: &[&[u8]], len: usize, p: Option<&mut [u8]>, q: Option<&mut [u8]>) {
    fold_below_top_loops(data, len, p, q)
}

/// `fold_below_top` after its length checks; also what runs without AVX2 (tests compare
/// the two builds).
#[inline(always)]
pub(super) fn fold_below_top_loops(
    data: &[&[u8]],
    len: usize,
    mut p: Option<&mut [u8]>,
    mut q: Option<&mut [u8]>,
) {
    for start in (0..len).step_by(CHUNK) {
        let end = (start + CHUNK).min(len);
        let mut pc = p.as_deref_mut().map(|p| &mut p[start..end]);
        let mut qc = q.as_deref_mut().map(|q| &mut q[start..end]);
        for d in data[..data.len() - 1].iter().rev() {
            fold_column(qc.as_deref_mut(), pc.as_deref_mut(), Some(&d[start..end]));
        }
    }
}
