//! Images through records, checkpoints and older formats.

use super::*;
use crate::volume::Loc;

#[test]
fn checksums_follow_written_records_and_survive_a_checkpoint() {
    let shapes = [(4u64, 16u16)];
    let mut img = Image::empty(&shapes);
    assert!(!img.vols[0].sums.active());
    let w = |ub, first, sums: Vec<u32>| Record::Written {
        vol: 0,
        ub,
        loc: Loc::Rep(8),
        first,
        at: first,
        sums,
    };
    img.apply(&w(1, 0, (1..=16).collect())).unwrap();
    img.apply(&w(2, 5, vec![77, 78])).unwrap();
    assert_eq!(img.vols[0].bmt.get(1).base, Loc::Rep(8));
    assert!(img.vols[0].bmt.get(2).patched);
    let back = Image::decode(&img.encode(), &shapes).unwrap();
    assert_eq!(back.vols[0].sums.get(1, 14, 2), vec![15, 16]);
    assert_eq!(back.vols[0].sums.get(2, 4, 3), vec![0, 77, 78]);
    // Unmapping a block forgets its checksums; moving data keeps them.
    img.apply(&Record::Whole {
        vol: 0,
        ub: 1,
        loc: Loc::Unmapped,
    })
    .unwrap();
    img.apply(&Record::Whole {
        vol: 0,
        ub: 2,
        loc: Loc::Raid(3),
    })
    .unwrap();
    assert_eq!(img.vols[0].sums.get(1, 0, 2), vec![0, 0]);
    assert_eq!(img.vols[0].sums.get(2, 5, 1), vec![77]);
    assert!(img.apply(&w(3, 15, vec![1, 2])).is_err(), "past the block");
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario touching every record kind, checked at the end as a whole"
)]
fn image_round_trips_through_records() {
    let shapes = [(10u64, 16u16), (4, 1)];
    let mut img = Image::empty(&shapes);
    let recs = [
        Record::Whole {
            vol: 0,
            ub: 3,
            loc: Loc::Raid(40),
        },
        Record::SetCreate {
            vol: 0,
            stripes: vec![7, 9],
            cols: vec![[0, 1, 0], [1, 0, 0]],
        },
        Record::Patch {
            vol: 0,
            ub: 3,
            loc: Loc::Rep(56),
            first: 2,
            count: 3,
            at: 9,
        },
        Record::Whole {
            vol: 1,
            ub: 2,
            loc: Loc::Rep(8),
        },
        Record::Retarget {
            vol: 0,
            ub: 3,
            from: Loc::Rep(56),
            to: Loc::Raid(63),
        },
        // A new set on stripe 9 replaces the old one.
        Record::SetCreate {
            vol: 0,
            stripes: vec![9, 11],
            cols: vec![[2, 2, 0]],
        },
    ];
    for r in &recs {
        img.apply(r).unwrap();
    }
    let e = img.vols[0].bmt.get(3);
    assert_eq!((e.base, e.patched), (Loc::Raid(40), true));
    assert_eq!(img.vols[0].patches.get(3)[0].loc(), Loc::Raid(63));
    assert_eq!(
        img.vols[0].patches.get(3)[0].at(),
        9,
        "conversion keeps the place"
    );
    assert_eq!(img.vols[0].sets().count(), 1);
    let bytes = img.encode();
    let back = Image::decode(&bytes, &shapes).unwrap();
    assert_eq!(back.encode(), bytes);
    // An image of the builds before replacements in place (no stale columns, the last 4
    // bytes per volume), before offload was journaled (no log extents either, 4 more) and
    // before pages could move reads the same.
    // Each also ends before the slot generations (2 bytes: none replaced).
    for (magic, cut) in [(MAGIC_V7, 0), (MAGIC_V6, 4), (MAGIC_V5, 8), (MAGIC_V4, 8)] {
        let mut old = bytes[..bytes.len() - 2 - cut * shapes.len()].to_vec();
        old[..8].copy_from_slice(&magic);
        assert_eq!(Image::decode(&old, &shapes).unwrap().encode(), bytes);
    }
    // Stale columns round-trip; `Restored` clears bits, leaving a stripe once none is left,
    // and bits that are not set are no error.
    let mut st = Image::decode(&bytes, &shapes).unwrap();
    st.vols[1].stale.insert(5, 0b101);
    st.vols[1].stale.insert(6, 0b10);
    let mut with = Image::decode(&st.encode(), &shapes).unwrap();
    assert_eq!(with.encode(), st.encode());
    let restored = |stripe, cols| Record::Restored {
        vol: 1,
        stripe,
        cols,
    };
    with.apply(&restored(5, 0b001)).unwrap();
    with.apply(&restored(6, 0b110)).unwrap();
    with.apply(&restored(7, 0b1)).unwrap();
    assert_eq!(
        with.vols[1].stale.iter().collect::<Vec<_>>(),
        [(&5, &0b100)]
    );
    let mut dup = st.encode();
    let n = dup.len();
    // Stripe 6's mask (before the 2 bytes of slot generations): empty.
    dup[n - 6..n - 2].copy_from_slice(&0u32.to_le_bytes());
    assert!(Image::decode(&dup, &shapes).is_err(), "an empty stale mask");
    // A copy in an HDD log belongs to its set, checkpointed with it, gone with it.
    let off = |stripe, slot| Record::Offloaded {
        vol: 0,
        stripe,
        extent: LogExtent {
            slot,
            copy: 1,
            at: 2,
            count: 3,
            hdd: 4,
            pos: 8192,
            offset: 1 << 20,
        },
    };
    assert!(
        img.apply(&off(11, 0)).is_err(),
        "11 is not a set's first stripe"
    );
    assert!(img.apply(&off(9, 1)).is_err(), "the set has one slot");
    img.apply(&off(9, 0)).unwrap();
    let back = Image::decode(&img.encode(), &shapes).unwrap();
    assert_eq!(back.vols[0].offloaded[&9][0].offset, 1 << 20);
    assert_eq!(back.encode(), img.encode());
    img.apply(&Record::SetCreate {
        vol: 0,
        stripes: vec![9, 12],
        cols: vec![[0, 1, 0]],
    })
    .unwrap();
    assert!(img.vols[0].offloaded.is_empty(), "its set was replaced");
    assert_eq!(back.vols[1].bmt.get(2).base, Loc::Rep(8));
    assert!(
        Image::decode(&bytes, &[(10, 16)]).is_err(),
        "shape mismatch"
    );
    assert!(
        Image::decode(&bytes[..bytes.len() - 1], &shapes).is_err(),
        "truncated"
    );
    assert!(
        img.apply(&Record::Whole {
            vol: 0,
            ub: 10,
            loc: Loc::Raid(1)
        })
        .is_err()
    );
    assert!(
        img.apply(&Record::Patch {
            vol: 0,
            ub: 1,
            loc: Loc::Raid(1),
            first: 15,
            count: 2,
            at: 15
        })
        .is_err()
    );
    assert!(
        img.apply(&Record::Whole {
            vol: 2,
            ub: 0,
            loc: Loc::Raid(1)
        })
        .is_err()
    );
}

/// A slot's generation is its last `MemberReplaced`'s, goes into the checkpoint (slots at 0
/// left out), and an image from before generations reads as none.
#[test]
fn slot_generations_count_replacements_and_round_trip() {
    let shapes = [(8u64, 4u16)];
    let mut img = Image::empty(&shapes);
    for r in [
        Record::MemberFailed { member: 3 },
        Record::MemberReplaced {
            member: 3,
            generation: 0xdead,
        },
        Record::MemberFailed { member: 3 },
        Record::MemberReplaced {
            member: 3,
            generation: 0xbeef,
        },
        Record::MemberFailed { member: 1 },
        Record::MemberFailed { member: 2 },
        Record::MemberReplaced {
            member: 2,
            generation: 9,
        },
        // A device of an older build (no generation) in slot 2 again.
        Record::MemberFailed { member: 2 },
        Record::MemberReplaced {
            member: 2,
            generation: 0,
        },
    ] {
        img.apply(&r).unwrap();
    }
    assert_eq!(img.generations.iter().collect::<Vec<_>>(), [(&3, &0xbeef)]);
    assert_eq!(img.failed.iter().collect::<Vec<_>>(), [&1]);
    let bytes = img.encode();
    let back = Image::decode(&bytes, &shapes).unwrap();
    assert_eq!(back.generations, img.generations);
    assert_eq!(back.encode(), bytes);
    // A generation of 0 is never written: one read back is damage.
    let mut zero = bytes.clone();
    let n = zero.len();
    zero[n - 4..].copy_from_slice(&0u32.to_le_bytes());
    assert!(Image::decode(&zero, &shapes).is_err());
    // Before generations: the same image without the section, under the old magic.
    let mut old = Image::empty(&shapes).encode();
    old.truncate(old.len() - 2);
    old[..8].copy_from_slice(&MAGIC_V7);
    assert!(Image::decode(&old, &shapes).unwrap().generations.is_empty());
}
