//! One answer per member to "steer new data clear of it?" during one placement step.
//!
//! With read/write segregation most replica slots and random spare stripes touch a
//! read-mode member, so one write may offer dozens of candidates to the placement policy,
//! each asking about the same few members again (used by a pair set's random draws and by
//! the slot walk of pools past 63 members) (issue 20's engine-cost
//! measurement: docs/BENCHMARKS.md, "Steering's engine cost"). Within one step the answers
//! cannot change (same time, same member states), so the first answer per member is kept.
//! Members past 64 are asked every time.

use crate::types::DiskId;

#[derive(Default)]
pub(super) struct AvoidMemo {
    known: u64,
    avoided: u64,
}

impl AvoidMemo {
    /// Whether `d` is avoided: `ask()` the first time, the remembered answer after.
    #[inline]
    pub fn get(&mut self, d: DiskId, ask: impl FnOnce() -> bool) -> bool {
        let i = d.index();
        if i >= 64 {
            return ask();
        }
        let bit = 1u64 << i;
        if self.known & bit == 0 {
            self.known |= bit;
            if ask() {
                self.avoided |= bit;
            }
        }
        self.avoided & bit != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asks_once_per_member_and_keeps_the_answer() {
        let mut m = AvoidMemo::default();
        let mut asked = 0;
        for _ in 0..3 {
            assert!(m.get(DiskId(5), || {
                asked += 1;
                true
            }));
            assert!(!m.get(DiskId(6), || {
                asked += 1;
                false
            }));
        }
        assert_eq!(asked, 2);
        // Past 64 members every call asks.
        let mut far = 0;
        for _ in 0..2 {
            m.get(DiskId(70), || {
                far += 1;
                false
            });
        }
        assert_eq!(far, 2);
    }
}
