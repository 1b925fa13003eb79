//! Parity checked against a byte-at-a-time reference written straight from the definition.

use super::gf256::{mul2, pow_g};
use super::*;
use proptest::prelude::*;

/// Multiplication in GF(2^8) mod 0x11d by shift-and-add, with no tables.
fn ref_mul(mut a: u8, mut b: u8) -> u8 {
    let mut acc = 0u8;
    while b != 0 {
        if b & 1 == 1 {
            acc ^= a;
        }
        a = mul2(a);
        b >>= 1;
    }
    acc
}

fn ref_pow2(i: usize) -> u8 {
    (0..i).fold(1u8, |acc, _| ref_mul(acc, 2))
}

/// P and Q of `data` straight from the definition: P = XOR D_i, Q = sum g^i D_i.
fn ref_pq(data: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>) {
    let len = data[0].len();
    let mut p = vec![0u8; len];
    let mut q = vec![0u8; len];
    for (i, d) in data.iter().enumerate() {
        let coeff = ref_pow2(i);
        for b in 0..len {
            p[b] ^= d[b];
            q[b] ^= ref_mul(coeff, d[b]);
        }
    }
    (p, q)
}

fn pq(data: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>) {
    let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
    let mut p = vec![0xAAu8; data[0].len()];
    let mut q = vec![0x55u8; data[0].len()];
    gen_pq(&refs, &mut p, &mut q);
    (p, q)
}

fn stripe_strategy() -> impl Strategy<Value = Vec<Vec<u8>>> {
    (1usize..=14, 0usize..200).prop_flat_map(|(ndata, len)| {
        prop::collection::vec(prop::collection::vec(any::<u8>(), len..=len), ndata..=ndata)
    })
}

/// Destroys `missing` in a copy of the full stripe, rebuilds, and compares.
fn rebuild_and_compare(full: &[Vec<u8>], nparity: usize, missing: &[usize]) {
    let mut cols: Vec<Vec<u8>> = full.to_vec();
    for &m in missing {
        cols[m]
            .iter_mut()
            .for_each(|b| *b = b.wrapping_mul(31).wrapping_add(7));
    }
    let garbled = cols.clone();
    let mut views: Vec<&mut [u8]> = cols.iter_mut().map(|c| c.as_mut_slice()).collect();
    reconstruct(&mut views, nparity, missing).unwrap();
    assert_eq!(cols, full, "nparity {nparity}, missing {missing:?}");
    // Data only: the data columns come back, missing parity stays as it was.
    let mut cols = garbled.clone();
    let mut views: Vec<&mut [u8]> = cols.iter_mut().map(|c| c.as_mut_slice()).collect();
    super::reconstruct_data(&mut views, nparity, missing).unwrap();
    let ndata = full.len() - nparity;
    assert_eq!(cols[..ndata], full[..ndata], "data, missing {missing:?}");
    assert_eq!(
        cols[ndata..],
        garbled[ndata..],
        "parity, missing {missing:?}"
    );
}

#[test]
fn q_of_a_unit_column_is_a_power_of_g() {
    // With every data column zero except D_i = 1, Q must be g^i: column i's coefficient.
    for ndata in [1, 2, 5, 16, 255] {
        for i in 0..ndata {
            let mut data = vec![vec![0u8; 3]; ndata];
            data[i] = vec![1; 3];
            let (p, q) = pq(&data);
            assert_eq!(p, vec![1; 3]);
            assert_eq!(q, vec![pow_g(i); 3], "ndata {ndata} i {i}");
            assert_eq!(pow_g(i), ref_pow2(i));
        }
    }
}

/// One stripe's data columns with the P and Q they must produce.
type KnownAnswer = (&'static [&'static [u8]], &'static [u8], &'static [u8]);

/// Known answers worked out independently of this crate (by hand and with a separate
/// shift-and-add script) from md's RAID6 definition, so they are byte-identical to what md
/// writes: Q = sum g^i D_i, g = 2, polynomial 0x11d, D_0 = first data disk. E.g. in the first
/// case Q = 0xff ^ 2*0xff = 0xff ^ 0xe3 = 0x1c in the last byte.
#[test]
fn known_answer_vectors() {
    let cases: [KnownAnswer; 3] = [
        (
            &[&[0x01, 0x02, 0x80, 0xff], &[0x01, 0x02, 0x80, 0xff]],
            &[0x00, 0x00, 0x00, 0x00],
            &[0x03, 0x06, 0x9d, 0x1c],
        ),
        (
            &[
                &[0x11, 0x22, 0x33],
                &[0x44, 0x55, 0x66],
                &[0x77, 0x88, 0x99],
            ],
            &[0x22, 0xff, 0xcc],
            &[0x58, 0x92, 0xa1],
        ),
        (
            &[
                &[0x00],
                &[0x00],
                &[0x00],
                &[0x00],
                &[0x00],
                &[0x00],
                &[0x00],
                &[0x01],
            ],
            &[0x01],
            &[0x80],
        ),
    ];
    for (data, want_p, want_q) in cases {
        let owned: Vec<Vec<u8>> = data.iter().map(|d| d.to_vec()).collect();
        assert_eq!(
            ref_pq(&owned),
            (want_p.to_vec(), want_q.to_vec()),
            "reference drifted"
        );
        assert_eq!(pq(&owned), (want_p.to_vec(), want_q.to_vec()));
    }
}

#[test]
fn bad_requests_are_errors() {
    let mut a = [0u8; 4];
    let mut b = [0u8; 4];
    let mut c = [0u8; 3];
    let mut cols: Vec<&mut [u8]> = vec![&mut a, &mut b, &mut c];
    assert!(matches!(
        reconstruct(&mut cols, 1, &[0]),
        Err(ParityError::LengthMismatch { index: 2, .. })
    ));
    let mut c = [0u8; 4];
    let mut cols: Vec<&mut [u8]> = vec![&mut a, &mut b, &mut c];
    assert_eq!(
        reconstruct(&mut cols, 3, &[]),
        Err(ParityError::BadParityCount(3))
    );
    assert_eq!(
        reconstruct(&mut cols, 1, &[0, 1]),
        Err(ParityError::TooManyMissing {
            missing: 2,
            nparity: 1
        })
    );
    assert_eq!(
        reconstruct(&mut cols, 1, &[3]),
        Err(ParityError::NoSuchColumn { index: 3, cols: 3 })
    );
    assert_eq!(
        reconstruct(&mut cols, 2, &[1, 1]),
        Err(ParityError::DuplicateMissing(1))
    );
    let mut cols: Vec<&mut [u8]> = vec![&mut a, &mut b];
    assert_eq!(
        reconstruct(&mut cols, 2, &[]),
        Err(ParityError::NoData {
            cols: 2,
            nparity: 2
        })
    );
}

#[test]
fn long_columns_cross_chunk_boundaries() {
    // Longer than one internal chunk and not a multiple of 8, to exercise every tail path.
    let len = 3 * 4096 + 13;
    let data: Vec<Vec<u8>> = (0..6)
        .map(|i| (0..len).map(|b| (b * 7 + i * 131) as u8).collect())
        .collect();
    assert_eq!(pq(&data), ref_pq(&data));
    let (p, q) = ref_pq(&data);
    let mut full = data.clone();
    full.push(p);
    full.push(q);
    rebuild_and_compare(&full, 2, &[1, 4]);
    rebuild_and_compare(&full, 2, &[5, 7]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn pq_matches_reference(data in stripe_strategy()) {
        let (p, q) = pq(&data);
        let (rp, rq) = ref_pq(&data);
        prop_assert_eq!(&p, &rp);
        prop_assert_eq!(q, rq);
        let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
        let mut p1 = vec![0u8; data[0].len()];
        gen_p(&refs, &mut p1);
        prop_assert_eq!(p1, rp);
    }

    #[test]
    fn xor_into_matches_bytes(a in prop::collection::vec(any::<u8>(), 0..5000), seed: u8) {
        // Up to more than a page: the vector loops' bodies and every tail length.
        let b: Vec<u8> = a.iter().map(|x| x.wrapping_mul(seed) ^ 0x5a).collect();
        let mut d = a.clone();
        xor_into(&mut d, &b);
        let want: Vec<u8> = a.iter().zip(&b).map(|(x, y)| x ^ y).collect();
        prop_assert_eq!(&d, &want);
        let mut plain = a.clone();
        super::kernels::xor_into_plain(&mut plain, &b);
        prop_assert_eq!(plain, want);
    }

    #[test]
    fn pq_kernels_match_reference_past_a_page(ndata in 1usize..=6, len in 0usize..5000, seed: u8) {
        // Both builds of the syndrome (the dispatched one, AVX2 where the CPU has it, and the
        // baseline loops) over every vector-body and tail length up to more than a page.
        let data: Vec<Vec<u8>> = (0..ndata)
            .map(|c| (0..len).map(|i| (i as u8).wrapping_mul(seed | 1) ^ (c as u8 * 37)).collect())
            .collect();
        let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
        let (rp, rq) = ref_pq(&data);
        prop_assert_eq!(new_parity(&refs, 2), vec![rp.clone(), rq.clone()]);
        let (mut p, mut q) = (data[ndata - 1].clone(), data[ndata - 1].clone());
        super::kernels::fold_below_top_loops(&refs, len, Some(&mut p), Some(&mut q));
        prop_assert_eq!((&p, &q), (&rp, &rq));
        // The syndrome into buffers holding garbage, with a column skipped as if zero (as
        // reconstruction asks): dispatched and baseline builds.
        let skip = ndata / 2;
        let mut kept = data.clone();
        kept[skip].fill(0);
        let (sp, sq) = ref_pq(&kept);
        for plain in [false, true] {
            let (mut p, mut q) = (vec![0xa5u8; len], vec![0x5au8; len]);
            if plain {
                super::kernels::syndrome_loops(&refs, |i| i == skip, len, Some(&mut p), Some(&mut q));
            } else {
                super::kernels::syndrome(&refs, |i| i == skip, len, Some(&mut p), Some(&mut q));
            }
            prop_assert_eq!((&p, &q), (&sp, &sq));
        }
    }

    /// Every single and every pair of lost columns (data, P, Q in any mix) comes back.
    #[test]
    fn any_loss_within_tolerance_is_rebuilt(data in stripe_strategy(), raid6: bool) {
        let (p, q) = ref_pq(&data);
        let mut full = data.clone();
        full.push(p);
        let nparity = if raid6 { full.push(q); 2 } else { 1 };
        let cols = full.len();
        rebuild_and_compare(&full, nparity, &[]);
        for a in 0..cols {
            rebuild_and_compare(&full, nparity, &[a]);
            if nparity == 2 {
                for b in a + 1..cols {
                    rebuild_and_compare(&full, nparity, &[b, a]);
                }
            }
        }
    }

    #[test]
    fn delta_update_equals_recomputation(
        data in stripe_strategy(), col in any::<prop::sample::Index>(), salt: u8,
    ) {
        let col = col.index(data.len());
        let (mut p, mut q) = ref_pq(&data);
        let mut changed = data.clone();
        changed[col].iter_mut().for_each(|b| *b = b.rotate_left(3) ^ salt);
        update_parity_delta(col, &data[col], &changed[col], &mut p, Some(&mut q));
        prop_assert_eq!((p.clone(), q), ref_pq(&changed));
        let (mut p5, _) = ref_pq(&data);
        update_parity_delta(col, &data[col], &changed[col], &mut p5, None);
        prop_assert_eq!(p5, p);
    }
}

#[test]
fn new_parity_matches_the_syndrome_into_zeroed_buffers() {
    for ndata in 1..6 {
        let data: Vec<Vec<u8>> = (0..ndata)
            .map(|c| {
                (0..9000)
                    .map(|i| (i * 31 + c * 77 + i / 256) as u8)
                    .collect()
            })
            .collect();
        let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
        let (mut p, mut q) = (vec![0u8; 9000], vec![0u8; 9000]);
        gen_pq(&refs, &mut p, &mut q);
        assert_eq!(new_parity(&refs, 2), vec![p.clone(), q]);
        assert_eq!(new_parity(&refs, 1), vec![p]);
    }
}
