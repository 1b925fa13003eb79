//! Field splitting and number parsing shared by the line parsers. Errors are plain messages;
//! the line reader prefixes them with `file:line:`. Fields are numbered from 1, like `awk`.

use fusionraid_core::Nanos;

/// Split `line` on `sep` (or on runs of whitespace when `sep` is `None`) and return the first
/// `N` fields, trimmed. Fewer than `N` fields is an error naming what was expected; extra
/// trailing fields are ignored so newer trace variants with added columns still read.
pub(crate) fn split_fields<'a, const N: usize>(
    line: &'a str,
    sep: Option<char>,
    names: &[&str; N],
) -> Result<[&'a str; N], String> {
    let mut out = [""; N];
    let mut found = 0;
    let mut take = |f: &'a str| {
        if found < N {
            out[found] = f.trim();
        }
        found += 1;
    };
    match sep {
        Some(c) => line.split(c).for_each(&mut take),
        None => line.split_whitespace().for_each(&mut take),
    }
    if found < N {
        return Err(format!(
            "expected {N} fields ({}), found {found}",
            names.join(", ")
        ));
    }
    Ok(out)
}

/// Parse an unsigned integer field.
pub(crate) fn uint(value: &str, index: usize, name: &str) -> Result<u64, String> {
    value
        .parse::<u64>()
        .map_err(|_| format!("field {index} ({name}) is not a number: '{value}'"))
}

/// Parse an unsigned integer field that must fit a stream id.
pub(crate) fn stream_id(value: &str, index: usize, name: &str) -> Result<u32, String> {
    let v = uint(value, index, name)?;
    u32::try_from(v).map_err(|_| format!("field {index} ({name}) is too large: '{value}'"))
}

/// `count * unit` as a byte offset/length, or an error if it overflows.
pub(crate) fn scaled(count: u64, unit: u64, index: usize, name: &str) -> Result<u64, String> {
    count
        .checked_mul(unit)
        .ok_or_else(|| format!("field {index} ({name}) is too large: {count}"))
}

/// Parse a non-negative decimal such as `12`, `12.5` or `0.000123456` counted in `unit_ns`
/// nanoseconds, exactly (no float rounding); digits below 1 ns are truncated.
pub(crate) fn decimal_ns(
    value: &str,
    unit_ns: Nanos,
    index: usize,
    name: &str,
) -> Result<Nanos, String> {
    let bad = || format!("field {index} ({name}) is not a number: '{value}'");
    let (int, frac) = match value.split_once('.') {
        Some((i, f)) => (i, f),
        None => (value, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
        return Err(bad());
    }
    let too_big = || format!("field {index} ({name}) is too large: '{value}'");
    let int_v: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| too_big())?
    };
    let mut total = int_v.checked_mul(unit_ns as u128).ok_or_else(too_big)?;
    // Digits past the 18th are far below 1 ns for any unit up to seconds; dropping them keeps
    // `frac * unit` inside u128.
    let frac = &frac[..frac.len().min(18)];
    if !frac.is_empty() {
        let f: u128 = frac.parse().map_err(|_| bad())?;
        let part = f * unit_ns as u128 / 10u128.pow(frac.len() as u32);
        total = total.checked_add(part).ok_or_else(too_big)?;
    }
    Nanos::try_from(total).map_err(|_| too_big())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_takes_first_n_and_reports_shortfall() {
        let f = split_fields(" a, b ,c,d", Some(','), &["x", "y", "z"]).unwrap();
        assert_eq!(f, ["a", "b", "c"]);
        let f = split_fields("1   2\t3", None, &["x", "y", "z"]).unwrap();
        assert_eq!(f, ["1", "2", "3"]);
        let e = split_fields("1,2", Some(','), &["x", "y", "z"]).unwrap_err();
        assert_eq!(e, "expected 3 fields (x, y, z), found 2");
    }

    #[test]
    fn numbers_and_errors() {
        assert_eq!(uint("42", 1, "n"), Ok(42));
        assert_eq!(
            uint("x", 4, "size in sectors").unwrap_err(),
            "field 4 (size in sectors) is not a number: 'x'"
        );
        assert!(uint("-1", 1, "n").is_err());
        assert!(stream_id("4294967296", 2, "device").is_err());
        assert!(scaled(u64::MAX, 512, 3, "lba").is_err());
    }

    #[test]
    fn decimals_are_exact() {
        assert_eq!(decimal_ns("1.5", 1_000_000_000, 1, "t"), Ok(1_500_000_000));
        assert_eq!(decimal_ns("0.000000123", 1_000_000_000, 1, "t"), Ok(123));
        assert_eq!(
            decimal_ns("12.0000000019", 1_000_000_000, 1, "t"),
            Ok(12_000_000_001)
        );
        assert_eq!(decimal_ns("7", 1, 1, "t"), Ok(7));
        assert_eq!(decimal_ns("2.25", 1_000_000, 1, "t"), Ok(2_250_000));
        assert_eq!(decimal_ns(".5", 1_000, 1, "t"), Ok(500));
        assert!(decimal_ns("1.2.3", 1, 1, "t").is_err());
        assert!(decimal_ns("", 1, 1, "t").is_err());
        assert!(decimal_ns(".", 1, 1, "t").is_err());
        assert!(decimal_ns("1e3", 1, 1, "t").is_err());
        assert!(decimal_ns("99999999999999999999999", 1_000_000_000, 1, "t").is_err());
        let max = u128::MAX.to_string();
        assert!(decimal_ns(&format!("{max}.9"), 1, 1, "t").is_err());
    }
}
