//! Restoring a volume after recovery: the recovered image (mapping, patch lists, pair-set
//! structure, column remaps) is installed and everything else is derived from it: which
//! replica slots are live or packed, every stripe's state and valid bits, the free space.
//! Anything inconsistent is refused with the reason, never guessed.

use std::collections::BTreeMap;

use super::offload::slots::Extent;
use super::pairs::{PairSet, Slot, SlotState};
use super::vol::Vol;
use crate::meta::VolImage;
use crate::space::{StripeState, StripeTable};
use crate::types::Nanos;
use crate::volume::Loc;

/// Install a recovered volume image and derive everything else from it.
pub(super) fn restore_vol(v: &mut Vol, img: VolImage, now: Nanos) -> Result<(), String> {
    restore_sets(v, &img, now)?;
    v.bmt = img.bmt;
    v.patches = img.patches;
    v.sums = img.sums;
    v.recount_mapped();
    let valid = map_locations(v)?;
    check_bases_unshared(v)?;
    let mut states = stripe_states(v, &valid)?;
    install_remaps(v, &img.remaps, &mut states)?;
    v.raid_valid_blocks = valid.iter().map(|m| m.count_ones() as u64).sum();
    v.stripes = StripeTable::restore(states, valid);
    restore_stale(v, &img.stale)
}

/// The stale columns of stripes that still hold something (a free stripe's columns are
/// rewritten whole before they are used again).
fn restore_stale(v: &mut Vol, stale: &BTreeMap<u32, u32>) -> Result<(), String> {
    let (nstripes, width) = (v.zone.stripes(), v.zone.width());
    for (&s, &mask) in stale {
        if s as u64 >= nstripes || u64::from(mask) >> width != 0 {
            return Err(format!(
                "stale columns {mask:#x} of stripe {s} outside the zone"
            ));
        }
        if !matches!(v.stripes.state(s), StripeState::Free | StripeState::Donor) {
            v.stripes.stale_columns_mut().mark(s, mask);
        }
    }
    Ok(())
}

/// Copies in HDD logs, installed after `restore_vol` for the pair sets it kept (by their
/// first stripe); those of sets it dropped (converted or emptied before the crash, their
/// removal durable) are dead. Returns the installed extents, for the logs to be rebuilt
/// from.
pub(super) fn restore_log_extents(v: &mut Vol, extents: BTreeMap<u32, Vec<Extent>>) -> Vec<Extent> {
    let mut live = Vec::new();
    for (stripe, es) in extents {
        let Some(id) = v
            .pairs
            .set_of_stripe(stripe)
            .filter(|&id| v.pairs.set(id).stripes[0] == stripe)
        else {
            continue;
        };
        for e in es {
            live.push(e);
            v.offloaded.add(id, e);
        }
    }
    live
}

/// The recovered pair sets, every slot dead until a mapping names it.
fn restore_sets(v: &mut Vol, img: &VolImage, now: Nanos) -> Result<(), String> {
    let nstripes = v.zone.stripes();
    // A mirror set's copies are its one stripe's columns, parity columns included.
    let mirror = v.cfg.level.is_mirror();
    let cols_in = if mirror {
        v.zone.width()
    } else {
        v.zone.dcols()
    };
    let copies = v.copies();
    for s in img.sets() {
        if s.stripes.len() != copies {
            return Err(format!(
                "pair set of {} stripes in a {copies}-copy volume",
                s.stripes.len()
            ));
        }
        if s.stripes.iter().any(|&x| x as u64 >= nstripes)
            || s.cols
                .iter()
                .any(|c| c[..copies].iter().any(|&x| x as usize >= cols_in))
        {
            return Err("pair set outside the zone".into());
        }
        if mirror && (s.stripes.iter().any(|&x| x != s.stripes[0]) || s.cols.len() != 1) {
            return Err("a mirror's pair set is one stripe with one slot".into());
        }
        let mut stripes = [0u32; 3];
        stripes[..copies].copy_from_slice(&s.stripes);
        v.pairs.insert_recovered(PairSet {
            stripes,
            copies: copies as u8,
            slots: s
                .cols
                .iter()
                .map(|&cols| Slot {
                    cols,
                    state: SlotState::Dead,
                })
                .collect(),
            last_access: now,
            converting: false,
            convert_after: 0,
            in_lru: false,
        });
    }
    Ok(())
}

/// Marks every location a block's base or patches name: RAID columns become valid bits
/// (returned per stripe; a column several blocks' patches share is a converted pack),
/// replica slots become live (one block) or packed (several).
fn map_locations(v: &mut Vol) -> Result<Vec<u32>, String> {
    let nstripes = v.zone.stripes();
    let dcols = v.zone.dcols();
    let mut valid = vec![0u32; nstripes as usize];
    for ub in 0..v.blocks {
        let e = v.bmt.get(ub);
        if e.patched == v.patches.get(ub).is_empty() {
            return Err(format!("block {ub}: patch bit disagrees with its list"));
        }
        let mut locs = vec![e.base];
        locs.extend(v.patches.get(ub).iter().map(|n| n.loc()));
        locs.sort_by_key(|l| l.pack());
        locs.dedup();
        for loc in locs {
            match loc {
                Loc::Unmapped => {}
                Loc::Raid(f) => {
                    let (s, c) = v.zone.split(f);
                    if s as u64 >= nstripes || c >= dcols {
                        return Err(format!("block {ub} mapped outside the RAID data columns"));
                    }
                    if valid[s as usize] & (1 << c) != 0 {
                        // A converted pack: several blocks' patches share it.
                        *v.raid_extra.entry(f).or_insert(0) += 1;
                    }
                    valid[s as usize] |= 1 << c;
                }
                Loc::Rep(key) => mark_replica(v, ub, key)?,
            }
        }
    }
    Ok(valid)
}

/// Replica `key` holds pages of block `ub`.
fn mark_replica(v: &mut Vol, ub: u64, key: u64) -> Result<(), String> {
    let r = v
        .pairs
        .lookup(&v.zone, key)
        .ok_or_else(|| format!("block {ub} names replica {key} of no pair set"))?;
    let slot = &mut v.pairs.set_mut(r.set).slots[r.slot as usize];
    match slot.state {
        SlotState::Live(o) if o != ub => {
            // A pack: the patches of several blocks.
            slot.state = SlotState::Packed;
            v.packs.add_owner(r, o);
            v.packs.add_owner(r, ub);
        }
        SlotState::Packed => v.packs.add_owner(r, ub),
        _ => slot.state = SlotState::Live(ub),
    }
    Ok(())
}

/// Only patches share a block (packs); a block's base is its own.
fn check_bases_unshared(v: &Vol) -> Result<(), String> {
    for ub in 0..v.blocks {
        let shared = match v.bmt.get(ub).base {
            Loc::Raid(f) => v.raid_extra.contains_key(&f),
            Loc::Rep(key) => v.pairs.lookup(&v.zone, key).is_some_and(|r| {
                v.pairs.set(r.set).slots[r.slot as usize].state == SlotState::Packed
            }),
            Loc::Unmapped => false,
        };
        if shared {
            return Err(format!(
                "the base of block {ub} is shared with other blocks"
            ));
        }
    }
    Ok(())
}

/// Every stripe's state: RAID where a column is valid, replica for the stripes of a pair
/// set with live slots (sets with none are dropped), free otherwise.
fn stripe_states(v: &mut Vol, valid: &[u32]) -> Result<Vec<StripeState>, String> {
    let mut states: Vec<StripeState> = valid
        .iter()
        .map(|&m| {
            if m != 0 {
                StripeState::Raid
            } else {
                StripeState::Free
            }
        })
        .collect();
    for id in v.pairs.ids() {
        if v.pairs.set(id).live() == 0 {
            v.pairs.remove(id);
            continue;
        }
        for &s in v.pairs.set(id).distinct_stripes() {
            if states[s as usize] == StripeState::Raid {
                return Err(format!("stripe {s} is both RAID data and a live pair set"));
            }
            states[s as usize] = StripeState::Replica;
        }
        v.pairs.refresh(id);
    }
    Ok(states)
}

/// Put the recovered column remaps back into the zone; their donor stripes lend and are
/// no stripes of their own.
fn install_remaps(
    v: &mut Vol,
    remaps: &crate::meta::image::RemapImage,
    states: &mut [StripeState],
) -> Result<(), String> {
    let (nstripes, width) = (v.zone.stripes(), v.zone.width());
    for (&(s, col), &(donor, dcol)) in remaps {
        if s as u64 >= nstripes
            || donor as u64 >= nstripes
            || col as usize >= width
            || dcol as usize >= width
        {
            return Err(format!(
                "remap of stripe {s} column {col} to {donor}/{dcol} outside the zone"
            ));
        }
        if states[donor as usize] != StripeState::Free
            && states[donor as usize] != StripeState::Donor
        {
            return Err(format!("donor stripe {donor} also holds data"));
        }
        if remaps.range((donor, 0)..=(donor, u8::MAX)).next().is_some() {
            return Err(format!("donor stripe {donor} is remapped itself"));
        }
        if v.zone.remaps().lent(s) != 0 {
            return Err(format!("remapped stripe {s} also lends columns"));
        }
        if v.zone.remaps().lent(donor) & (1 << dcol) != 0 {
            return Err(format!("column {dcol} of donor stripe {donor} lent twice"));
        }
        let r = v.zone.remaps_mut();
        r.lend(donor, dcol as usize);
        r.install(s, crate::space::Moved { col, donor, dcol });
        states[donor as usize] = StripeState::Donor;
    }
    Ok(())
}
