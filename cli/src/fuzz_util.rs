//! Shared pieces of the parser fuzz tests (tests only): the case count and structure-aware
//! mutations of a valid text input.
//!
//! Every property runs `FUSIONRAID_FUZZ_CASES` cases (default: the count the property asks
//! for, a few hundred, so CI stays fast). A long soak: `FUSIONRAID_FUZZ_CASES=100000 cargo
//! test -p fusionraid fuzz`.

use proptest::prelude::*;

/// The number of cases a property runs: `default`, or `FUSIONRAID_FUZZ_CASES` when set.
pub fn cases(default: u32) -> u32 {
    std::env::var("FUSIONRAID_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Values that break parsers written for well-behaved input: out-of-range and special
/// numbers, wrong types, odd strings and unicode.
pub const HOSTILE_VALUES: &[&str] = &[
    "0",
    "-0",
    "-1",
    "-4096",
    "1",
    "4095",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "1e308",
    "-1e308",
    "1.5",
    "0.0000001",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "4294967296",
    "true",
    "[]",
    "{}",
    "\"\"",
    "\" \"",
    "\"0\"",
    "\"-4K\"",
    "\"64\"",
    "\"1.5G\"",
    "\"16777215T\"",
    "\"16777216T\"",
    "\"99999999999999999999\"",
    "\"18446744073709551615\"",
    "\"4K4K\"",
    "\"K\"",
    "\"mem:\"",
    "\"mem:0\"",
    "\"mem:18446744073709551615\"",
    "\"emu:dc:emu:dc:mem:1G\"",
    "\"nbd://\"",
    "\"nbd+unix:///x\"",
    "\"file:\"",
    "\"\u{202e}gnp.exe\"",
    "\"ｒａｉｄ５\"",
    "\"raid5\u{0}\"",
    "\"\\u0000\"",
    "\"\u{1F4A9}\"",
    "\"a/b\"",
    "\"permutation\"",
    "\"consumer\"",
    "[\"mem:64M\"]",
    "[\"mem:64M\", \"mem:64M\", \"mem:64M\", \"file:/tmp/x\"]",
];

/// One structure-aware change to a valid text input.
#[derive(Clone, Debug)]
pub enum Mutation {
    /// Keep only the first `at` (mod length) bytes.
    Truncate(usize),
    /// XOR one byte with a non-zero mask.
    Flip(usize, u8),
    /// Replace the value of the `n`-th `key = value` line with a hostile one.
    Value(usize, &'static str),
    /// Repeat line `n` right after itself (a duplicate key, or a duplicate table).
    Duplicate(usize),
    /// Remove line `n`.
    Delete(usize),
    /// Insert text (unicode, control characters, TOML punctuation) at a byte position.
    Insert(usize, String),
    /// Swap two lines (keys move between tables).
    Swap(usize, usize),
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    let inserted = prop_oneof![
        Just("\u{0}".to_string()),
        Just("\u{feff}".to_string()),
        Just("\u{202e}".to_string()),
        Just("é".to_string()),
        Just("\n[[volume]]\n".to_string()),
        Just("\n[serve]\n".to_string()),
        Just("\"".to_string()),
        Just("'''".to_string()),
        Just("=".to_string()),
        Just("\\".to_string()),
        "\\PC{1,8}",
    ];
    prop_oneof![
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => (any::<usize>(), 1u8..=255).prop_map(|(p, m)| Mutation::Flip(p, m)),
        3 => (any::<usize>(), proptest::sample::select(HOSTILE_VALUES))
            .prop_map(|(n, v)| Mutation::Value(n, v)),
        1 => any::<usize>().prop_map(Mutation::Duplicate),
        1 => any::<usize>().prop_map(Mutation::Delete),
        1 => (any::<usize>(), inserted).prop_map(|(p, s)| Mutation::Insert(p, s)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
    ]
}

/// Applies `m` to `text`. Byte-level changes may leave invalid UTF-8, which is replaced the
/// way a lossy reader would (the parsers take `&str`).
pub fn apply(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let pick = |n: usize, len: usize| if len == 0 { 0 } else { n % len };
    match m {
        Mutation::Truncate(at) => {
            let b = text.as_bytes();
            let at = pick(*at, b.len() + 1);
            String::from_utf8_lossy(&b[..at]).into_owned()
        }
        Mutation::Flip(at, mask) => {
            let mut b = text.as_bytes().to_vec();
            if !b.is_empty() {
                let i = pick(*at, b.len());
                b[i] ^= mask;
            }
            String::from_utf8_lossy(&b).into_owned()
        }
        Mutation::Value(n, v) => {
            let keyed: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i].contains(" = "))
                .collect();
            if let Some(&i) = keyed.get(pick(*n, keyed.len())) {
                let key = lines[i].split(" = ").next().unwrap_or_default().to_string();
                lines[i] = format!("{key} = {v}");
            }
            lines.join("\n")
        }
        Mutation::Duplicate(n) => {
            if !lines.is_empty() {
                let i = pick(*n, lines.len());
                lines.insert(i, lines[i].clone());
            }
            lines.join("\n")
        }
        Mutation::Delete(n) => {
            if !lines.is_empty() {
                lines.remove(pick(*n, lines.len()));
            }
            lines.join("\n")
        }
        Mutation::Insert(at, s) => {
            let mut b = text.as_bytes().to_vec();
            let i = pick(*at, b.len() + 1);
            b.splice(i..i, s.bytes());
            String::from_utf8_lossy(&b).into_owned()
        }
        Mutation::Swap(a, b) => {
            if !lines.is_empty() {
                let (a, b) = (pick(*a, lines.len()), pick(*b, lines.len()));
                lines.swap(a, b);
            }
            lines.join("\n")
        }
    }
}
