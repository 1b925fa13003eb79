//! Fuzzing member specs and sizes, the strings of a pool file that name members: any input
//! is an error or a spec that prints back to itself, never a panic.
//!
//! `FUSIONRAID_FUZZ_CASES=N` sets the cases per property (default 256) for long soaks.

use fusionraid_io::{MemberSpec, format_size, parse_size};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("FUSIONRAID_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// Pieces of valid and almost-valid specs, glued at random.
fn spec_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("emu:".to_string()),
        Just("dc".to_string()),
        Just("consumer".to_string()),
        Just("hdd7200".to_string()),
        Just("bogus".to_string()),
        Just(",aged".to_string()),
        Just(",seed=".to_string()),
        Just(",speed=".to_string()),
        Just("mem:".to_string()),
        Just("file:".to_string()),
        Just("nbd://".to_string()),
        Just("nbd+unix:///".to_string()),
        Just("?socket=".to_string()),
        Just(":".to_string()),
        Just(",".to_string()),
        Just("=".to_string()),
        Just("%".to_string()),
        Just("K".to_string()),
        Just("iB".to_string()),
        Just("nan".to_string()),
        Just("-1".to_string()),
        Just("1e309".to_string()),
        Just("18446744073709551615".to_string()),
        "[0-9]{1,6}",
        "\\PC{1,4}",
    ];
    proptest::collection::vec(piece, 0..8).prop_map(|v| v.concat())
}

/// Facts every accepted spec holds, and the round trip through its printed form.
fn check(spec: &MemberSpec) {
    let again = MemberSpec::parse(&spec.to_string())
        .unwrap_or_else(|e| panic!("'{spec}' does not parse back: {e}"));
    assert_eq!(&again, spec);
    match spec {
        MemberSpec::Mem { size, .. } => assert!(*size > 0 && size % 4096 == 0, "{spec}"),
        MemberSpec::Emu { speed, inner, .. } => {
            assert!(speed.is_finite() && *speed > 0.0, "{spec}");
            assert!(!matches!(**inner, MemberSpec::Emu { .. }), "{spec}");
            check(inner);
        }
        MemberSpec::File { path } => assert!(!path.as_os_str().is_empty()),
        MemberSpec::Nbd { .. } => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn structured_specs_are_errors_or_round_trip(s in spec_text()) {
        match MemberSpec::parse(&s) {
            Ok(spec) => check(&spec),
            Err(e) => prop_assert!(e.to_string().contains("member spec")),
        }
    }

    #[test]
    fn arbitrary_specs_never_panic(s in "\\PC{0,64}") {
        if let Ok(spec) = MemberSpec::parse(&s) {
            check(&spec);
        }
    }

    #[test]
    fn sizes_are_errors_or_exact(
        num in prop_oneof!["[0-9]{0,25}", Just("18446744073709551615".to_string())],
        unit in prop_oneof![Just(""), Just("K"), Just("m"), Just("GiB"), Just("TB"), Just("P"),
                            Just(" k"), Just("KK"), Just("\u{212a}")],
        junk in prop_oneof![Just(""), Just(" "), Just("-"), Just(".5"), Just("\u{0}")],
    ) {
        let s = format!("{junk}{num}{unit}");
        if let Ok(n) = parse_size(&s) {
            // Whatever was accepted prints as a size that means the same number of bytes.
            prop_assert_eq!(parse_size(&format_size(n)), Ok(n));
            let digits: u128 = num.trim().parse().unwrap();
            let shift = match unit.trim().to_ascii_uppercase().chars().next() {
                None => 0,
                Some('K') => 10,
                Some('M') => 20,
                Some('G') => 30,
                Some('T') => 40,
                Some(u) => panic!("unit {u} accepted in '{s}'"),
            };
            prop_assert_eq!(u128::from(n), digits << shift);
        }
    }
}
