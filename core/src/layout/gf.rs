//! Finite-field arithmetic over GF(q), q = p^r, for the MOLS layout.
//!
//! RAID+ builds its Latin squares as `m*x + y` in a field of order n (the pool size). For a
//! prime n that is arithmetic mod n; for n = p^r (8, 9, 16, 27, 32 ...) integers mod n are not
//! a field, so we build GF(p^r) as polynomials over GF(p) modulo an irreducible polynomial f
//! of degree r.
//!
//! Element encoding: an element is the polynomial `a_0 + a_1 X + ... + a_{r-1} X^{r-1}` with
//! digits `a_i` in `0..p`, stored as the integer `sum a_i p^i`, so elements are `0..q` and the
//! integers `0..p` are the prime subfield. Addition is digit-wise mod p (plain XOR when p = 2).
//! Multiplication goes through log/exp tables built from a generator of the multiplicative
//! group: we search for a *primitive* polynomial f (one for which X itself generates the
//! group), which is in particular irreducible, so the same search gives both the field and
//! its tables.

use super::GeometryError;

/// The largest field order we build. The tables cost 12 bytes per element, so this bounds
/// memory at a few megabytes; pools are far smaller than this.
pub const MAX_FIELD_ORDER: usize = 1 << 18;

/// The finite field GF(p^r). Elements are `u32` values in `0..order()`.
#[derive(Clone)]
pub struct GaloisField {
    p: u32,
    r: u32,
    q: u32,
    /// `exp[i] = g^i` for `i in 0..2(q-1)`: doubled so `log a + log b` never needs a modulo.
    exp: Vec<u32>,
    /// `log[a]` for nonzero `a`; `log[0]` is unused.
    log: Vec<u32>,
}

impl std::fmt::Debug for GaloisField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The tables are large and carry no information beyond (p, r).
        write!(f, "GF({}^{})", self.p, self.r)
    }
}

/// If `q` is a prime power p^r (q >= 2), returns (p, r).
pub fn prime_power(q: usize) -> Option<(u32, u32)> {
    if q < 2 {
        return None;
    }
    let p = smallest_prime_factor(q);
    let mut rest = q;
    let mut r = 0;
    while rest.is_multiple_of(p) {
        rest /= p;
        r += 1;
    }
    (rest == 1).then_some((p as u32, r))
}

fn smallest_prime_factor(q: usize) -> usize {
    let mut d = 2;
    while d * d <= q {
        if q.is_multiple_of(d) {
            return d;
        }
        d += 1;
    }
    q
}

impl GaloisField {
    /// Builds GF(q). Fails if q is not a prime power or exceeds [`MAX_FIELD_ORDER`].
    pub fn new(q: usize) -> Result<Self, GeometryError> {
        let (p, r) = prime_power(q).ok_or(GeometryError::NotPrimePower { disks: q })?;
        if q > MAX_FIELD_ORDER {
            return Err(GeometryError::Other(format!(
                "field order {q} is larger than the supported maximum {MAX_FIELD_ORDER}"
            )));
        }
        let q = q as u32;
        // Candidate monic polynomials X^r + c_{r-1} X^{r-1} + ... + c_0 are numbered by the
        // integer encoding of their low coefficients, exactly like elements. A primitive one
        // always exists (there are phi(q-1)/r of them), so the search terminates; in practice
        // within a handful of candidates.
        for low in 1..q {
            if let Some(exp) = powers_of_x_if_primitive(p, r, q, low) {
                let mut log = vec![0u32; q as usize];
                for (i, &e) in exp.iter().enumerate().take((q - 1) as usize) {
                    log[e as usize] = i as u32;
                }
                return Ok(GaloisField { p, r, q, exp, log });
            }
        }
        unreachable!("every finite field has a primitive polynomial");
    }

    /// The number of elements, q.
    pub fn order(&self) -> u32 {
        self.q
    }

    /// The characteristic p.
    pub fn characteristic(&self) -> u32 {
        self.p
    }

    /// The extension degree r (q = p^r).
    pub fn degree(&self) -> u32 {
        self.r
    }

    pub fn add(&self, a: u32, b: u32) -> u32 {
        self.check(a);
        self.check(b);
        if self.p == 2 {
            a ^ b
        } else if self.r == 1 {
            (a + b) % self.p
        } else {
            self.digitwise(a, b, |x, y, p| (x + y) % p)
        }
    }

    pub fn sub(&self, a: u32, b: u32) -> u32 {
        self.check(a);
        self.check(b);
        if self.p == 2 {
            a ^ b
        } else if self.r == 1 {
            (a + self.p - b) % self.p
        } else {
            self.digitwise(a, b, |x, y, p| (x + p - y) % p)
        }
    }

    pub fn neg(&self, a: u32) -> u32 {
        self.sub(0, a)
    }

    pub fn mul(&self, a: u32, b: u32) -> u32 {
        self.check(a);
        self.check(b);
        if a == 0 || b == 0 {
            return 0;
        }
        self.exp[(self.log[a as usize] + self.log[b as usize]) as usize]
    }

    /// The multiplicative inverse of a nonzero element. Zero has none: callers only invert
    /// values they have shown to be nonzero, so a zero here is a bug and panics.
    pub fn inv(&self, a: u32) -> u32 {
        self.check(a);
        assert!(a != 0, "GF({}): zero has no inverse", self.q);
        let l = self.log[a as usize];
        self.exp[((self.q - 1 - l) % (self.q - 1)) as usize]
    }

    fn check(&self, a: u32) {
        assert!(a < self.q, "{a} is not an element of GF({})", self.q);
    }

    fn digitwise(&self, mut a: u32, mut b: u32, op: impl Fn(u32, u32, u32) -> u32) -> u32 {
        let mut out = 0;
        let mut place = 1;
        for _ in 0..self.r {
            out += op(a % self.p, b % self.p, self.p) * place;
            a /= self.p;
            b /= self.p;
            place *= self.p;
        }
        out
    }
}

/// Walks X^0, X^1, ... modulo the monic polynomial with low coefficients `low`. If X has
/// order exactly q-1 the polynomial is primitive and the walk is the exp table (doubled).
fn powers_of_x_if_primitive(p: u32, r: u32, q: u32, low: u32) -> Option<Vec<u32>> {
    let r = r as usize;
    let coeffs = digits(low, p, r);
    // X^r = -(c_0 + c_1 X + ... + c_{r-1} X^{r-1}) mod f.
    let reduce: Vec<u32> = coeffs.iter().map(|&c| (p - c) % p).collect();
    let n = (q - 1) as usize;
    let mut exp = Vec::with_capacity(2 * n);
    let mut cur = vec![0u32; r];
    cur[0] = 1;
    for i in 0..n {
        let v = undigits(&cur, p);
        // Returning to 1 early means X's order is a proper divisor of q-1: not primitive.
        if i > 0 && v == 1 {
            return None;
        }
        exp.push(v);
        times_x(&mut cur, &reduce, p);
    }
    if undigits(&cur, p) != 1 {
        // Only possible when f is reducible and X is not a unit (f(0) = 0).
        return None;
    }
    exp.extend_from_within(0..n);
    Some(exp)
}

/// Multiplies the polynomial `cur` (degree < r) by X and reduces modulo f.
fn times_x(cur: &mut [u32], reduce: &[u32], p: u32) {
    let top = *cur.last().expect("degree >= 1");
    for i in (1..cur.len()).rev() {
        cur[i] = cur[i - 1];
    }
    cur[0] = 0;
    for (c, &red) in cur.iter_mut().zip(reduce) {
        *c = (*c + top * red) % p;
    }
}

fn digits(mut v: u32, p: u32, r: usize) -> Vec<u32> {
    (0..r)
        .map(|_| {
            let d = v % p;
            v /= p;
            d
        })
        .collect()
}

fn undigits(ds: &[u32], p: u32) -> u32 {
    ds.iter().rev().fold(0, |acc, &d| acc * p + d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SMALL: [usize; 10] = [2, 3, 4, 5, 7, 8, 9, 16, 25, 27];

    #[test]
    fn prime_powers_are_recognised() {
        assert_eq!(prime_power(29), Some((29, 1)));
        assert_eq!(prime_power(32), Some((2, 5)));
        assert_eq!(prime_power(27), Some((3, 3)));
        assert_eq!(prime_power(1024), Some((2, 10)));
        for bad in [0, 1, 6, 10, 12, 30, 100] {
            assert_eq!(prime_power(bad), None, "{bad}");
            assert_eq!(
                GaloisField::new(bad).unwrap_err(),
                GeometryError::NotPrimePower { disks: bad }
            );
        }
    }

    #[test]
    fn field_axioms_hold_exhaustively_on_small_fields() {
        for q in SMALL {
            let f = GaloisField::new(q).unwrap();
            let q = q as u32;
            for a in 0..q {
                assert_eq!(f.add(a, 0), a);
                assert_eq!(f.mul(a, 1), a);
                assert_eq!(f.mul(a, 0), 0);
                assert_eq!(f.add(a, f.neg(a)), 0);
                if a != 0 {
                    assert_eq!(f.mul(a, f.inv(a)), 1, "GF({q}) inverse of {a}");
                }
                for b in 0..q {
                    assert_eq!(f.add(a, b), f.add(b, a));
                    assert_eq!(f.mul(a, b), f.mul(b, a));
                    assert_eq!(f.sub(f.add(a, b), b), a);
                    // No zero divisors: the defining property a ring lacks when the
                    // modulus polynomial is reducible.
                    if a != 0 && b != 0 {
                        assert_ne!(f.mul(a, b), 0, "GF({q}): {a}*{b}");
                    }
                    for c in 0..q {
                        assert_eq!(f.add(f.add(a, b), c), f.add(a, f.add(b, c)));
                        assert_eq!(f.mul(f.mul(a, b), c), f.mul(a, f.mul(b, c)));
                    }
                }
            }
        }
    }

    #[test]
    fn prime_fields_are_integers_mod_p() {
        let f = GaloisField::new(29).unwrap();
        for a in 0..29 {
            for b in 0..29 {
                assert_eq!(f.mul(a, b), a * b % 29);
                assert_eq!(f.add(a, b), (a + b) % 29);
            }
        }
    }

    #[test]
    fn large_fields_build_quickly() {
        for q in [1024, 729, 1009, 2048, 3125] {
            let f = GaloisField::new(q).unwrap();
            for a in 1..q as u32 {
                assert_eq!(f.mul(a, f.inv(a)), 1);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn distributive(qi in 0usize..14, a in 0u32..1024, b in 0u32..1024, c in 0u32..1024) {
            let qs = [4usize, 8, 9, 16, 25, 27, 29, 31, 32, 49, 64, 121, 243, 1024];
            let q = qs[qi];
            let f = GaloisField::new(q).unwrap();
            let (a, b, c) = (a % q as u32, b % q as u32, c % q as u32);
            prop_assert_eq!(f.mul(a, f.add(b, c)), f.add(f.mul(a, b), f.mul(a, c)));
            prop_assert_eq!(f.mul(a, f.sub(b, c)), f.sub(f.mul(a, b), f.mul(a, c)));
        }
    }
}
