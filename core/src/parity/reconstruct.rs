//! Rebuilding lost columns of a stripe from the survivors.
//!
//! With P alone one lost column is the XOR of the rest. With P and Q any two can be rebuilt;
//! the only case needing algebra is two lost data columns x < y, where (Anvin, "The
//! mathematics of RAID-6") with Pxy = P ^ (XOR of surviving data) = Dx ^ Dy and
//! Qxy = Q ^ (syndrome of surviving data) = g^x Dx ^ g^y Dy:
//!   Dx = (Qxy ^ g^y Pxy) / (g^x ^ g^y),  Dy = Pxy ^ Dx.

use super::gf256::{MUL, inv, mul, mul_slice_in_place, pow_g};
use super::kernels::{syndrome, xor_into};
use super::{MAX_PQ_DATA, ParityError};

/// `cols` = data columns followed by `nparity` (1 or 2) parity columns, all the same length.
/// Rebuilds the columns listed in `missing` (at most `nparity`, any mix of data, P and Q) in
/// place from the others; the contents of missing columns on entry are ignored.
pub fn reconstruct(
    cols: &mut [&mut [u8]],
    nparity: usize,
    missing: &[usize],
) -> Result<(), ParityError> {
    rebuild(cols, nparity, missing, true)
}

/// [`reconstruct`] for a reader that wants data columns only: the parity columns listed in
/// `missing` are erasures (columns not read) and are left as they were, not recomputed.
pub fn reconstruct_data(
    cols: &mut [&mut [u8]],
    nparity: usize,
    missing: &[usize],
) -> Result<(), ParityError> {
    rebuild(cols, nparity, missing, false)
}

fn rebuild(
    cols: &mut [&mut [u8]],
    nparity: usize,
    missing: &[usize],
    parity_too: bool,
) -> Result<(), ParityError> {
    let len = validate(cols, nparity, missing)?;
    let ndata = cols.len() - nparity;
    let p_idx = ndata;
    let q_idx = (nparity == 2).then_some(ndata + 1);
    let mut lost_data: Vec<usize> = missing.iter().copied().filter(|&i| i < ndata).collect();
    lost_data.sort_unstable();
    let p_lost = missing.contains(&p_idx);
    let q_lost = q_idx.is_some_and(|q| missing.contains(&q));

    match *lost_data.as_slice() {
        [] => {}
        [x] if !p_lost => {
            // Dx = P ^ XOR of the other data columns.
            let dx = std::mem::take(&mut cols[x]);
            syndrome(&cols[..ndata], |i| i == x, len, Some(&mut *dx), None);
            xor_into(dx, cols[p_idx]);
            cols[x] = dx;
        }
        [x] => {
            // P is gone too, so use Q: Dx = (Q ^ Q of the others) / g^x.
            let q_idx = q_idx.expect("two losses imply RAID6");
            let dx = std::mem::take(&mut cols[x]);
            syndrome(&cols[..ndata], |i| i == x, len, None, Some(&mut *dx));
            xor_into(dx, cols[q_idx]);
            mul_slice_in_place(inv(pow_g(x)), dx);
            cols[x] = dx;
        }
        [x, y] => {
            let q_idx = q_idx.expect("two losses imply RAID6");
            let dy = std::mem::take(&mut cols[y]);
            let dx = std::mem::take(&mut cols[x]);
            // Park Pxy in Dx's buffer and Qxy in Dy's, then solve byte by byte.
            syndrome(
                &cols[..ndata],
                |i| i == x || i == y,
                len,
                Some(&mut *dx),
                Some(&mut *dy),
            );
            xor_into(dx, cols[p_idx]);
            xor_into(dy, cols[q_idx]);
            let denom_inv = inv(pow_g(x) ^ pow_g(y));
            let q_row = &MUL[denom_inv as usize];
            let p_row = &MUL[mul(pow_g(y), denom_inv) as usize];
            for (bx, by) in dx.iter_mut().zip(dy.iter_mut()) {
                let (pxy, qxy) = (*bx, *by);
                let d = p_row[pxy as usize] ^ q_row[qxy as usize];
                *bx = d;
                *by = pxy ^ d;
            }
            cols[x] = dx;
            cols[y] = dy;
        }
        _ => unreachable!("validate bounds the number of missing columns"),
    }

    // Data is complete now, so lost parity is simply recomputed.
    if parity_too && (p_lost || q_lost) {
        let mut p = p_lost.then(|| std::mem::take(&mut cols[p_idx]));
        let mut q = match q_idx {
            Some(qi) if q_lost => Some(std::mem::take(&mut cols[qi])),
            _ => None,
        };
        syndrome(
            &cols[..ndata],
            |_| false,
            len,
            p.as_deref_mut(),
            q.as_deref_mut(),
        );
        if let Some(p) = p {
            cols[p_idx] = p;
        }
        if let (Some(q), Some(qi)) = (q, q_idx) {
            cols[qi] = q;
        }
    }
    Ok(())
}

/// Checks the request and returns the common column length.
fn validate(cols: &[&mut [u8]], nparity: usize, missing: &[usize]) -> Result<usize, ParityError> {
    if !(1..=2).contains(&nparity) {
        return Err(ParityError::BadParityCount(nparity));
    }
    if cols.len() <= nparity {
        return Err(ParityError::NoData {
            cols: cols.len(),
            nparity,
        });
    }
    let ndata = cols.len() - nparity;
    if nparity == 2 && ndata > MAX_PQ_DATA {
        return Err(ParityError::TooManyData {
            ndata,
            max: MAX_PQ_DATA,
        });
    }
    let expected = cols[0].len();
    if let Some((index, c)) = cols.iter().enumerate().find(|(_, c)| c.len() != expected) {
        return Err(ParityError::LengthMismatch {
            index,
            len: c.len(),
            expected,
        });
    }
    for (n, &index) in missing.iter().enumerate() {
        if index >= cols.len() {
            return Err(ParityError::NoSuchColumn {
                index,
                cols: cols.len(),
            });
        }
        if missing[..n].contains(&index) {
            return Err(ParityError::DuplicateMissing(index));
        }
    }
    if missing.len() > nparity {
        return Err(ParityError::TooManyMissing {
            missing: missing.len(),
            nparity,
        });
    }
    Ok(expected)
}
