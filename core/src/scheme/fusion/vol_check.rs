//! The volume's consistency check: every mapping, reference count, stripe state and
//! counter of a `Vol` recomputed from the others (tests and debug builds).

use super::pairs::SlotState;
use super::vol::Vol;
use crate::space::StripeState;
use crate::volume::Loc;

type Map<K, V> = std::collections::HashMap<K, V>;

/// Who uses one location: the blocks, the pages their patches use in it, and whether it is
/// some block's base.
struct Users {
    blocks: Vec<u64>,
    pages: Vec<bool>,
    base: bool,
}

/// Check one volume's metadata against itself (tests and debugging). Panics on violation.
pub(super) fn check_volume(v: &Vol) {
    assert_eq!(
        v.mapped_bytes(),
        v.count_mapped_bytes(),
        "the mapped-bytes counter drifted from the mapping"
    );
    assert!(
        v.patches.counts_hold(),
        "the patch table's node count drifted"
    );
    let owners = location_users(v);
    let mut raid_refs = Map::<(u32, usize), u64>::new();
    let mut rep_refs = Map::<u64, Vec<u64>>::new();
    for (loc, users) in &owners {
        let ubs = &users.blocks;
        match *loc {
            Loc::Raid(f) => {
                let (s, c) = v.zone.split(f);
                assert!(
                    c < v.zone.dcols(),
                    "blocks {ubs:?} mapped to a parity column"
                );
                raid_refs.insert((s, c), ubs.len() as u64);
                let extra = v.raid_extra.get(&f).copied().unwrap_or(0) as usize;
                assert_eq!(extra + 1, ubs.len(), "owner count of RAID block {f}");
            }
            Loc::Rep(k) => {
                rep_refs.insert(k, ubs.clone());
            }
            Loc::Unmapped => {}
        }
    }
    for &f in v.raid_extra.keys() {
        let (s, c) = v.zone.split(f);
        assert!(
            raid_refs.contains_key(&(s, c)),
            "shared RAID block {f} has no owner"
        );
    }
    check_stripes(v, &raid_refs);
    check_replicas(v, &rep_refs);
}

/// Every location a block's base or patches name, with its users. A block may be shared
/// only by patches at disjoint pages (packs), never by a base.
fn location_users(v: &Vol) -> Map<Loc, Users> {
    let mut owners = Map::<Loc, Users>::new();
    let ppb = v.pages_per_block as usize;
    let mut note = |ub: u64, loc: Loc, first: usize, count: usize, base: bool| {
        if loc == Loc::Unmapped {
            return;
        }
        let o = owners.entry(loc).or_insert_with(|| Users {
            blocks: Vec::new(),
            pages: vec![false; ppb],
            base: false,
        });
        if !o.blocks.contains(&ub) {
            o.blocks.push(ub);
        }
        o.base |= base;
        // A base's pages under its own patches are dead, not overlapping.
        if !base {
            for p in first..first + count {
                assert!(!o.pages[p], "page {p} of {loc:?} used by two patches");
                o.pages[p] = true;
            }
        }
        assert!(
            !o.base || o.blocks.len() == 1,
            "{loc:?} is the base of a block and shared: {:?}",
            o.blocks
        );
    };
    for ub in 0..v.blocks {
        let e = v.bmt.get(ub);
        note(ub, e.base, 0, ppb, true);
        assert_eq!(
            e.patched,
            !v.patches.get(ub).is_empty(),
            "P bit of block {ub} disagrees with its patch list"
        );
        for n in v.patches.get(ub) {
            note(ub, n.loc(), n.at() as usize, n.count() as usize, false);
        }
        assert!(
            e.base == Loc::Unmapped || !v.patches.covers_block(ub),
            "block {ub} keeps a base its patches cover"
        );
    }
    owners
}

/// Every stripe's state agrees with what references it, and the live-block counter with
/// the valid bits.
fn check_stripes(v: &Vol, raid_refs: &Map<(u32, usize), u64>) {
    let dcols = v.zone.dcols();
    let mut valid_total = 0u64;
    for s in 0..v.stripes.len() as u32 {
        match v.stripes.state(s) {
            StripeState::Raid => {
                let mask = v.stripes.valid(s);
                valid_total += mask.count_ones() as u64;
                for c in 0..dcols {
                    let live = mask & (1 << c) != 0;
                    assert_eq!(
                        live,
                        raid_refs.contains_key(&(s, c)),
                        "stripe {s} column {c}: valid bit {live} but referenced {}",
                        !live
                    );
                }
                assert!(
                    mask != 0,
                    "RAID stripe {s} with no live block should be free"
                );
            }
            StripeState::Free => assert!(
                raid_refs.keys().all(|&(x, _)| x != s),
                "free stripe {s} still referenced"
            ),
            StripeState::Replica => assert!(
                v.pairs.set_of_stripe(s).is_some(),
                "replica stripe {s} in no pair set"
            ),
            StripeState::Busy => {}
            StripeState::Donor => assert!(
                v.zone.remaps().lent(s) != 0 && raid_refs.keys().all(|&(x, _)| x != s),
                "donor stripe {s} lends nothing or holds data"
            ),
        }
        assert!(
            v.zone.remaps().lent(s) == 0 || v.stripes.state(s) == StripeState::Donor,
            "stripe {s} lends columns but is {:?}",
            v.stripes.state(s)
        );
        assert!(
            v.stripes.stale(s) == 0
                || !matches!(v.stripes.state(s), StripeState::Free | StripeState::Donor),
            "stripe {s} has stale columns but is {:?}",
            v.stripes.state(s)
        );
    }
    assert_eq!(
        valid_total, v.raid_valid_blocks,
        "RAID live-block counter drifted"
    );
}

/// Every mapped replica's slot is live for its one block, or a pack with exactly its
/// owners.
fn check_replicas(v: &Vol, rep_refs: &Map<u64, Vec<u64>>) {
    for (&k, ubs) in rep_refs {
        let r = v
            .pairs
            .lookup(&v.zone, k)
            .expect("mapped replica key without a set");
        match v.pairs.set(r.set).slots[r.slot as usize].state {
            SlotState::Packing | SlotState::Packed => {
                let mut a = v.packs.owners(r).to_vec();
                let mut b = ubs.clone();
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b, "owners of packed replica {k}");
            }
            st => assert_eq!(
                (st, ubs.len()),
                (SlotState::Live(ubs[0]), 1),
                "replica {k} mapped by {ubs:?} but slot not live for it"
            ),
        }
    }
}
