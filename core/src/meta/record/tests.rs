//! Records encode, decode and report malformed bytes where they begin.

use super::*;
use proptest::prelude::*;

fn loc() -> impl Strategy<Value = Loc> {
    prop_oneof![
        Just(Loc::Unmapped),
        (0..crate::volume::loc::FLBN_MAX).prop_map(Loc::Raid),
        (0..crate::volume::loc::FLBN_MAX).prop_map(Loc::Rep),
    ]
}

fn offloaded() -> impl Strategy<Value = Record> {
    (
        (any::<u8>(), any::<u32>(), any::<u16>(), 1u8..=2),
        (0u16..128, 1u16..=128, any::<u16>(), any::<[u64; 2]>()),
    )
        .prop_map(
            |((vol, stripe, slot, copy), (at, count, hdd, [pos, offset]))| {
                let extent = LogExtent {
                    slot,
                    copy,
                    at,
                    count,
                    hdd,
                    pos,
                    offset,
                };
                Record::Offloaded {
                    vol,
                    stripe,
                    extent,
                }
            },
        )
}

#[allow(clippy::too_many_lines, reason = "one strategy per record kind")]
fn record() -> impl Strategy<Value = Record> {
    prop_oneof![
        (any::<u8>(), any::<u64>(), loc()).prop_map(|(vol, ub, loc)| Record::Whole {
            vol,
            ub,
            loc
        }),
        (
            any::<u8>(),
            any::<u64>(),
            loc(),
            0u16..255,
            1u16..=1,
            any::<bool>(),
            0u16..255
        )
            .prop_map(|(vol, ub, loc, first, count, moved, at)| Record::Patch {
                vol,
                ub,
                loc,
                first,
                count,
                at: if moved { at } else { first },
            }),
        (any::<u8>(), any::<u64>(), loc(), loc())
            .prop_map(|(vol, ub, from, to)| Record::Retarget { vol, ub, from, to }),
        (
            any::<u8>(),
            2usize..=3,
            proptest::collection::vec(any::<[u8; 3]>(), 0..20),
            any::<[u32; 3]>()
        )
            .prop_map(|(vol, copies, mut cols, s)| {
                for c in cols.iter_mut() {
                    for x in c[copies..].iter_mut() {
                        *x = 0;
                    }
                }
                Record::SetCreate {
                    vol,
                    stripes: s[..copies].to_vec(),
                    cols,
                }
            }),
        (
            any::<u8>(),
            any::<u64>(),
            loc(),
            0u16..200,
            proptest::collection::vec(any::<u32>(), 1..56),
            proptest::option::of(0u16..200)
        )
            .prop_map(|(vol, ub, loc, first, sums, at)| Record::Written {
                vol,
                ub,
                loc,
                first,
                at: at.unwrap_or(first),
                sums
            }),
        (
            any::<u8>(),
            any::<u32>(),
            any::<u8>(),
            any::<u32>(),
            any::<u8>()
        )
            .prop_map(|(vol, stripe, col, donor, dcol)| Record::Remap {
                vol,
                stripe,
                col,
                donor,
                dcol
            }),
        (any::<u8>(), any::<u32>(), any::<u8>()).prop_map(|(vol, stripe, col)| Record::Unremap {
            vol,
            stripe,
            col
        }),
        (any::<u8>(), any::<u32>(), any::<u32>())
            .prop_map(|(vol, stripe, cols)| Record::Restored { vol, stripe, cols }),
        any::<u16>().prop_map(|member| Record::MemberFailed { member }),
        (any::<u16>(), prop_oneof![Just(0u32), any::<u32>()])
            .prop_map(|(member, generation)| Record::MemberReplaced { member, generation }),
        offloaded(),
    ]
}

/// A record that runs out of bytes is reported at the byte it began at, like every other
/// malformed record.
#[test]
fn a_truncated_record_names_where_it_began() {
    let mut b = Vec::new();
    Record::MemberFailed { member: 1 }.encode(&mut b);
    Record::MemberReplaced {
        member: 1,
        generation: 0,
    }
    .encode(&mut b);
    let whole = b.len();
    assert_eq!(Record::decode_all(&b).map(|r| r.len()), Ok(2));
    assert_eq!(
        Record::decode_all(&b[..whole - 1]),
        Err(RecordError {
            at: 4,
            what: "truncated record"
        })
    );
}

proptest! {
    #[test]
    fn records_round_trip(rs in proptest::collection::vec(record(), 0..30)) {
        let mut b = Vec::new();
        for r in &rs {
            let before = b.len();
            r.encode(&mut b);
            prop_assert_eq!(b.len() - before, r.encoded_len());
        }
        prop_assert_eq!(Record::decode_all(&b).unwrap(), rs);
    }

    #[test]
    fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Record::decode_all(&b);
    }
}

/// A replacement of generation 0 is the record builds before generations wrote (tag 9, so
/// they read it); any other generation needs tag 14, which never carries 0.
#[test]
fn replacements_keep_tag_9_for_generation_0() {
    let mut b = Vec::new();
    Record::MemberReplaced {
        member: 2,
        generation: 0,
    }
    .encode(&mut b);
    assert_eq!(b, [9, 0, 2, 0]);
    b.clear();
    Record::MemberReplaced {
        member: 2,
        generation: 7,
    }
    .encode(&mut b);
    assert_eq!(b, [14, 0, 2, 0, 7, 0, 0, 0]);
    b[4] = 0;
    assert!(Record::decode_all(&b).is_err(), "generation 0 under tag 14");
}
