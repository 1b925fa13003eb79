//! Why each empty slot of an assembled pool is empty, in the words `serve` prints.
//!
//! A member that can not be opened or read has no superblock to say which slot it fills:
//! all that is known is its position in the pool file. Pairing position with slot is right
//! only while the file lists members in slot order; with members listed in another order
//! (allowed: each takes the slot its superblock names) it named a member that was present
//! and serving as the missing one, and an operator would go and pull the wrong device.

/// `empty`: the slots no member fills (ascending). `in_order`: every member found sits at
/// its own position in the file. `unusable`: the file's positions that could not be read,
/// and why. Each empty slot gets the reason of the one unusable member that must be it,
/// or, when that can not be known, every unusable member's.
pub fn reasons(
    empty: &[usize],
    in_order: bool,
    unusable: &[(usize, String)],
) -> Vec<(usize, String)> {
    let named = |(j, why): &(usize, String)| format!("`members[{j}]`: {why}");
    if empty.len() == 1 && unusable.len() == 1 {
        return vec![(empty[0], unusable[0].1.clone())];
    }
    empty
        .iter()
        .map(|&i| {
            let own = unusable.iter().find(|(j, _)| *j == i);
            let why = match own {
                Some((_, why)) if in_order => why.clone(),
                _ if unusable.is_empty() => "not found".to_string(),
                _ => format!(
                    "one of the members that could not be read (the file lists members out of \
                     slot order): {}",
                    unusable.iter().map(named).collect::<Vec<_>>().join("; ")
                ),
            };
            (i, why)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(j: usize, why: &str) -> (usize, String) {
        (j, why.to_string())
    }

    #[test]
    fn in_slot_order_each_position_is_its_slot() {
        let r = reasons(&[1, 3], true, &[u(1, "d1 gone"), u(3, "d3 gone")]);
        assert_eq!(r, vec![u(1, "d1 gone"), u(3, "d3 gone")]);
    }

    /// Members listed as [d3, d1, d4, d0, d2] with d4 (slot 4, position 2) gone: slot 4 is
    /// d4's, never d2's (position 4, present and serving as slot 2).
    #[test]
    fn one_missing_member_out_of_order_is_the_one_unreadable() {
        let r = reasons(&[4], false, &[u(2, "file:d4.img: not found")]);
        assert_eq!(r, vec![u(4, "file:d4.img: not found")]);
    }

    #[test]
    fn several_missing_out_of_order_name_every_candidate() {
        let r = reasons(&[2, 4], false, &[u(2, "d4 gone"), u(4, "d2 gone")]);
        assert_eq!(r.len(), 2);
        for (_, why) in &r {
            assert!(why.contains("`members[2]`: d4 gone"), "{why}");
            assert!(why.contains("`members[4]`: d2 gone"), "{why}");
        }
    }
}
