//! Building a stripe's columns and their parity: for new full stripes (`stripe_columns`,
//! whose data columns may be parts of the user's payload) and for stripes the background
//! rewrites from columns it read (`fill_parity`).

use super::jobs::{Dest, Piece};
use crate::engine::api::{Data, SharedBytes};
use crate::parity;
use crate::types::PAGE_SIZE;

/// The parity columns `par` (one: P; two: P and Q) of the data columns `data`.
fn gen_parity(data: &[&[u8]], par: &mut [Vec<u8>]) {
    match par {
        [p] => parity::gen_p(data, p),
        [p, q] => parity::gen_pq(data, p, q),
        _ => unreachable!("1 or 2 parity columns"),
    }
}

/// Append the `nparity` parity columns of the data columns `cols` (new buffers, none
/// zeroed first: `parity::new_parity`).
pub(super) fn push_parity(cols: &mut Vec<Vec<u8>>, nparity: usize) {
    let data: Vec<&[u8]> = cols.iter().map(|c| c.as_slice()).collect();
    let par = parity::new_parity(&data, nparity);
    cols.extend(par);
}

/// The columns of a new full stripe `s`: a data column one piece covers whole is that part
/// of the user's payload (`bytes_of`), shared, not copied; the others are built (missing
/// pages zero); the parity is computed from them.
pub(super) fn stripe_columns(
    s: u32,
    width: usize,
    nparity: usize,
    bs: u64,
    pieces: &[Piece],
    bytes_of: impl Fn(&Piece) -> SharedBytes,
) -> Vec<Data> {
    let dcols = width - nparity;
    let mut whole: Vec<Option<SharedBytes>> = vec![None; dcols];
    let mut built: Vec<Option<Vec<u8>>> = vec![None; dcols];
    for p in pieces {
        let Dest::Stripe { stripe, col } = p.dest else {
            continue;
        };
        if stripe != s {
            continue;
        }
        assert!(col < dcols, "a piece in a parity column");
        let src = bytes_of(p);
        if p.first == 0 && src.len() as u64 == bs {
            assert!(
                whole[col].is_none() && built[col].is_none(),
                "two pieces, one column"
            );
            whole[col] = Some(src);
        } else {
            let at = p.first as usize * PAGE_SIZE as usize;
            let c = built[col].get_or_insert_with(|| vec![0u8; bs as usize]);
            c[at..at + src.len()].copy_from_slice(src.as_slice());
        }
    }
    let zero = vec![0u8; bs as usize];
    let mut par = vec![vec![0u8; bs as usize]; nparity];
    {
        let data: Vec<&[u8]> = (0..dcols)
            .map(|c| match (&whole[c], &built[c]) {
                (Some(w), _) => w.as_slice(),
                (None, Some(b)) => b.as_slice(),
                (None, None) => zero.as_slice(),
            })
            .collect();
        gen_parity(&data, &mut par);
    }
    let mut out: Vec<Data> = whole
        .into_iter()
        .zip(built)
        .map(|(w, b)| match (w, b) {
            (Some(w), _) => Data::Shared(w),
            (None, Some(b)) => Data::Bytes(b),
            (None, None) => Data::Bytes(zero.clone()),
        })
        .collect();
    out.extend(par.into_iter().map(Data::Bytes));
    out
}
