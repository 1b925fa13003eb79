//! Parity: RAID5 XOR and RAID6 P+Q over GF(2^8), compatible with Linux md.
//!
//! A stripe is `ndata` data columns followed by its parity columns, all the same length.
//! P is the XOR of the data columns. Q is `sum_i g^i * D_i` over GF(2^8) with polynomial
//! 0x11d and generator g = 2, D_0 being the first data column: the definition of md's
//! `gen_syndrome` (lib/raid6), so the bytes on the devices are what an md RAID5/RAID6 array
//! would hold for the same data.

mod gf256;
mod kernels;
mod reconstruct;
#[cfg(test)]
mod tests;

pub use kernels::xor_into;
pub use reconstruct::{reconstruct, reconstruct_data};

/// Why a parity operation could not run. All of these are caller bugs or corrupt requests;
/// none is a data-integrity verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParityError {
    #[error("{missing} columns missing but only {nparity} parity columns to rebuild them from")]
    TooManyMissing { missing: usize, nparity: usize },
    #[error("column {index} is {len} bytes long, expected {expected}")]
    LengthMismatch {
        index: usize,
        len: usize,
        expected: usize,
    },
    #[error("unsupported parity column count {0} (1 for RAID5, 2 for RAID6)")]
    BadParityCount(usize),
    #[error("a stripe of {cols} columns with {nparity} parity columns has no data column")]
    NoData { cols: usize, nparity: usize },
    #[error("{ndata} data columns exceed the {max} that Q can tell apart")]
    TooManyData { ndata: usize, max: usize },
    #[error("missing column {index} does not exist in a stripe of {cols} columns")]
    NoSuchColumn { index: usize, cols: usize },
    #[error("column {0} is listed as missing twice")]
    DuplicateMissing(usize),
}

/// Q gives data column i the coefficient g^i; g has order 255, so beyond 255 data columns two
/// columns would share a coefficient and a double loss could not be solved.
pub const MAX_PQ_DATA: usize = 255;

/// P = XOR of `data`. All slices must have `p`'s length.
pub fn gen_p(data: &[&[u8]], p: &mut [u8]) {
    let len = p.len();
    kernels::syndrome(data, |_| false, len, Some(p), None);
}

/// The parity columns of `data` as new buffers: P, and Q too when `nparity` is 2. Each
/// starts as the syndrome of the top two data columns, written as it is computed (no
/// buffer is zeroed or copied first: the background's stripes paid a 64 KiB memset per
/// parity column, then a copy), and takes the other columns in.
pub fn new_parity(data: &[&[u8]], nparity: usize) -> Vec<Vec<u8>> {
    assert!(
        (1..=2).contains(&nparity) && !data.is_empty() && data.len() <= MAX_PQ_DATA,
        "{nparity} parity columns over {} data columns",
        data.len()
    );
    let n = data.len();
    if n >= 2 {
        let (top, next) = (data[n - 1], data[n - 2]);
        assert_eq!(top.len(), next.len(), "length mismatch");
        let mut p = kernels::xor_of(top, next);
        if nparity == 1 {
            kernels::fold_below_top(&data[..n - 1], Some(&mut p), None);
            return vec![p];
        }
        let mut q = kernels::q_of_pair(top, next);
        kernels::fold_below_top(&data[..n - 1], Some(&mut p), Some(&mut q));
        return vec![p, q];
    }
    // One data column: P and Q are copies of it (g^0 = 1).
    vec![data[0].to_vec(); nparity]
}

/// P and Q of `data` (md's RAID6 syndrome). All slices must have the same length.
pub fn gen_pq(data: &[&[u8]], p: &mut [u8], q: &mut [u8]) {
    assert!(
        data.len() <= MAX_PQ_DATA,
        "{} data columns: too many for P+Q",
        data.len()
    );
    let len = p.len();
    kernels::syndrome(data, |_| false, len, Some(p), Some(q));
}

/// Folds a change of data column `col_index` from `old` to `new` into existing parity,
/// without reading the other columns: P ^= old ^ new, Q ^= g^col_index * (old ^ new). This is
/// the read-modify-write path of the RAID5/RAID6 baselines.
pub fn update_parity_delta(
    col_index: usize,
    old: &[u8],
    new: &[u8],
    p: &mut [u8],
    q: Option<&mut [u8]>,
) {
    let len = p.len();
    assert!(
        old.len() == len && new.len() == len,
        "update_parity_delta: length mismatch"
    );
    match q {
        None => {
            xor_into(p, old);
            xor_into(p, new);
        }
        Some(q) => {
            assert_eq!(q.len(), len, "update_parity_delta: Q length mismatch");
            assert!(
                col_index < MAX_PQ_DATA,
                "data column {col_index} out of Q's range"
            );
            let row = &gf256::MUL[gf256::pow_g(col_index) as usize];
            for (((pb, qb), o), n) in p.iter_mut().zip(q.iter_mut()).zip(old).zip(new) {
                let delta = o ^ n;
                *pb ^= delta;
                *qb ^= row[delta as usize];
            }
        }
    }
}
