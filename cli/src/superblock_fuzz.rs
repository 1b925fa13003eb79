//! Fuzzing the superblock decoder: whatever a member's first 64 KiB hold (random bytes, a
//! damaged superblock, or a well-checksummed one with nonsense fields, as a buggy or hostile
//! writer would leave), `decode` returns an `SbError` or a superblock that is consistent,
//! and never panics.

use proptest::prelude::*;

use crate::fuzz_util::cases;
use crate::superblock::{MAX_CONFIG_BYTES, SUPERBLOCK_BYTES, SbError, Superblock};

const SB: usize = SUPERBLOCK_BYTES as usize;

fn valid() -> impl Strategy<Value = Superblock> {
    (
        any::<[u8; 16]>(),
        1u32..1000,
        any::<u32>(),
        any::<u64>(),
        any::<u64>(),
        "\\PC{0,200}",
        (1u32..=2, any::<u32>()),
    )
        .prop_map(
            |(uuid, count, index, disk_bytes, created_unix, config, (version, generation))| {
                Superblock {
                    version,
                    uuid,
                    index: index % count,
                    count,
                    disk_bytes,
                    created_unix,
                    config,
                    tier: crate::superblock::Tier::Ssd,
                    generation,
                }
            },
        )
}

/// Recomputes the checksum, so the decoder has to judge the fields themselves.
fn reseal(b: &mut [u8]) {
    b[12..16].fill(0);
    let crc = crc32c::crc32c(&b[..SB]);
    b[12..16].copy_from_slice(&crc.to_le_bytes());
}

/// A decoded superblock must be usable as it is: an index inside the pool, a config that
/// fits, and an encoding that decodes back to itself.
fn check_ok(sb: &Superblock) {
    assert!(
        sb.count > 0 && sb.index < sb.count,
        "{} of {}",
        sb.index,
        sb.count
    );
    assert!(sb.config.len() <= MAX_CONFIG_BYTES);
    let again = Superblock::decode(&sb.encode().expect("a decoded superblock encodes"));
    assert_eq!(again.as_ref(), Ok(sb));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    /// Random contents, any length (short reads included), with or without the magic.
    #[test]
    fn random_bytes_are_an_error_or_consistent(
        head in proptest::collection::vec(any::<u8>(), 0..512),
        fill in any::<u8>(),
        len in prop_oneof![Just(SB), 0..SB, SB..SB + 100],
        magic in any::<bool>(),
        seal in any::<bool>(),
    ) {
        let mut b = vec![fill; len];
        let n = head.len().min(len);
        b[..n].copy_from_slice(&head[..n]);
        if magic && len >= 12 {
            b[0..8].copy_from_slice(b"FRAIDSB\0");
            b[8..12].copy_from_slice(&1u32.to_le_bytes());
        }
        if seal && len >= SB {
            reseal(&mut b);
        }
        if let Ok(sb) = Superblock::decode(&b) {
            check_ok(&sb);
        }
    }

    /// Any single flipped bit of a valid superblock is caught.
    #[test]
    fn damage_is_always_detected(sb in valid(), bit in 0..SB * 8) {
        let mut b = sb.encode().unwrap();
        b[bit / 8] ^= 1 << (bit % 8);
        prop_assert!(Superblock::decode(&b).is_err());
    }

    /// A valid superblock cut short is corrupt, not a panic.
    #[test]
    fn truncation_is_an_error(sb in valid(), len in 0..SB) {
        let b = sb.encode().unwrap();
        prop_assert!(matches!(Superblock::decode(&b[..len]), Err(SbError::Corrupt(_))));
    }

    /// Nonsense header fields under a correct checksum: config length past the end, index
    /// beyond the count, zero members, invalid UTF-8 in the config.
    #[test]
    fn resealed_nonsense_fields_are_errors_or_consistent(
        sb in valid(),
        edits in proptest::collection::vec((16usize..SB, any::<u8>()), 1..8),
        len in prop_oneof![Just(None), any::<u32>().prop_map(Some)],
        index_count in proptest::option::of((any::<u32>(), any::<u32>())),
    ) {
        let mut b = sb.encode().unwrap();
        // Byte edits past the version field (the magic and version have their own errors).
        for (at, v) in edits {
            b[at] = v;
        }
        if let Some(l) = len {
            b[56..60].copy_from_slice(&l.to_le_bytes());
        }
        if let Some((i, c)) = index_count {
            b[32..36].copy_from_slice(&i.to_le_bytes());
            b[36..40].copy_from_slice(&c.to_le_bytes());
        }
        reseal(&mut b);
        if let Ok(sb) = Superblock::decode(&b) {
            check_ok(&sb);
        }
    }
}
