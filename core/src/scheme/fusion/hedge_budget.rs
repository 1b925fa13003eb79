//! How many hedged RAID reads (`raid_hedge`) the scheme may send now: a token bucket the
//! scheme holds, apart from the hedging so the scheme's state does not depend on it.

/// Share of user RAID reads that may be hedged, over time: each hedge costs a read on
/// every other column of the stripe, so a pool where many reads are slow because it is
/// overloaded (not because a member stalls) would otherwise multiply its own load. At
/// 2%, hedges add at most 2% x (width - 1) to the reads (12% for RAID5 6+1); a
/// stall's victims are far fewer (docs/EVALUATION.md, "Hedged reads").
const HEDGE_SHARE: f64 = 0.02;
/// Hedges the budget may hold for a burst of slow reads (a stall catches many at once).
const HEDGE_BURST: f64 = 64.0;

/// A token bucket of hedges: every user read of a RAID block earns `HEDGE_SHARE` of one,
/// up to `HEDGE_BURST`; it starts full.
#[derive(Debug)]
pub(super) struct HedgeBudget {
    tokens: f64,
}

impl Default for HedgeBudget {
    fn default() -> Self {
        HedgeBudget {
            tokens: HEDGE_BURST,
        }
    }
}

impl HedgeBudget {
    pub(super) fn earn(&mut self) {
        self.tokens = (self.tokens + HEDGE_SHARE).min(HEDGE_BURST);
    }
    pub(super) fn spend(&mut self) -> bool {
        let ok = self.tokens >= 1.0;
        if ok {
            self.tokens -= 1.0;
        }
        ok
    }
}
