/// A geometry the layouts cannot build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GeometryError {
    #[error("stripe width {width} is too wide for a pool of {disks} disks (at most {max})")]
    TooWide {
        width: usize,
        disks: usize,
        max: usize,
    },
    #[error("stripe width {width} is too narrow (at least {min})")]
    TooNarrow { width: usize, min: usize },
    #[error(
        "MOLS layout needs a prime-power pool size; {disks} is not ({}; or use the permutation layout)",
        nearest_prime_powers(*.disks)
    )]
    NotPrimePower { disks: usize },
    #[error("{0}")]
    Other(String),
}

/// The prime powers next to `n`, for the error message. A fixed list ("8, 9, 16, 25, 27,
/// 29, 31, 32") would offer 8 for 6 or 10 but neither 7 nor 11.
fn nearest_prime_powers(n: usize) -> String {
    // Pools are far smaller; the bound keeps the search (trial division) instant.
    const LIMIT: usize = 1 << 20;
    if n > LIMIT {
        return format!("a prime power such as {LIMIT}");
    }
    let is_pp = |q: usize| super::gf::prime_power(q).is_some();
    let below = (2..n).rev().find(|&q| is_pp(q));
    let above = (n + 1..)
        .find(|&q| is_pp(q))
        .expect("2^21 is a prime power");
    match below {
        Some(b) => format!("nearest: {b} or {above}"),
        None => format!("nearest: {above}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_prime_power_names_the_nearest_sizes() {
        let msg = |n| GeometryError::NotPrimePower { disks: n }.to_string();
        assert!(msg(6).contains("nearest: 5 or 7"), "{}", msg(6));
        assert!(msg(10).contains("nearest: 9 or 11"), "{}", msg(10));
        assert!(msg(30).contains("nearest: 29 or 31"), "{}", msg(30));
        assert!(msg(1).contains("nearest: 2"), "{}", msg(1));
        assert!(msg(0).contains("nearest: 2"), "{}", msg(0));
        assert!(msg(usize::MAX).contains("prime power such as"));
    }
}
