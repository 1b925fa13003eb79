//! Per-disk latency-spike detector (FusionRAID §4.3, Fig. 8).
//!
//! An SSD in a GC or buffer-flush spike stops completing requests for milliseconds, so the
//! requests it holds age past any normal latency. The detector counts such *stragglers*
//! (requests pending longer than a threshold t) without timing each request: time is cut into
//! timeslots of `slot_ns`, and a window of the last y slots keeps, per slot, the number of
//! requests issued in that slot that are still pending. When a slot leaves the window its
//! count moves to the straggler counter, because those requests have now been pending for
//! about t = y * slot_ns (between (y-1) and y slots, the price of coarse timestamps). A
//! completion decrements its issue slot's counter if that slot is still in the window, and
//! the straggler counter otherwise. Every operation is O(1), and sliding over an idle gap of
//! any length costs at most y steps, since after y steps the whole window has been flushed.
//!
//! The disk is *unresponsive* once stragglers >= `x_high` and becomes normal again once
//! stragglers <= `x_low` (hysteresis). The engine steers writes and reads away from
//! unresponsive disks.
//!
//! Like the rest of core this is sans-IO: the caller passes `now` and asks
//! [`SpikeDetector::next_deadline`] when to call [`SpikeDetector::advance`] (the shape of
//! TigerBeetle's fault detector and quinn-proto's timers).

use crate::types::Nanos;

/// The largest window we accept; the ring costs 4 bytes per slot per disk.
pub const MAX_WINDOW_SLOTS: u32 = 1 << 16;

/// Detector parameters. In the paper's notation: y = `window_slots`, t = y * `slot_ns`,
/// x̂ = `x_high`, x̌ ~ `x_low`.
///
/// The paper is loose about the exit test: it says a disk returns when stragglers "fall
/// below x̌", sets x̂ = x̌ for consumer SSDs, yet uses x̌ = 0 by default. We use one explicit
/// rule, normal again once `stragglers <= x_low`, with `x_low < x_high` required. Then the
/// consumer setting x̂ = x̌ (no gap) is `x_low = x_high - 1`, the datacenter setting is any
/// wider gap, and the default x̌ = 0 is `x_low = 0`: back only when every straggler returned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DetectorConfig {
    /// Timeslot length: the granularity of issue timestamps.
    pub slot_ns: Nanos,
    /// Slots in the sliding window (y); a request older than the window is a straggler.
    pub window_slots: u32,
    /// Stragglers at which the disk becomes unresponsive (x̂).
    pub x_high: u32,
    /// Stragglers at or below which an unresponsive disk is normal again; `x_low < x_high`.
    pub x_low: u32,
}

impl DetectorConfig {
    /// Checks the parameters; the engine calls this on user configuration before building
    /// detectors, since [`SpikeDetector::new`] asserts validity.
    pub fn validate(&self) -> Result<(), String> {
        if self.slot_ns == 0 {
            return Err("detector slot_ns must be positive".into());
        }
        if self.window_slots == 0 || self.window_slots > MAX_WINDOW_SLOTS {
            return Err(format!(
                "detector window_slots must be in 1..={MAX_WINDOW_SLOTS}, got {}",
                self.window_slots
            ));
        }
        if self
            .slot_ns
            .checked_mul(u64::from(self.window_slots))
            .is_none()
        {
            return Err("detector window length overflows".into());
        }
        if self.x_low >= self.x_high {
            return Err(format!(
                "detector needs x_low < x_high, got x_low {} and x_high {}",
                self.x_low, self.x_high
            ));
        }
        Ok(())
    }

    /// Datacenter SSDs (the paper's Intel D3-S4510 pool). Their GC spikes last tens to
    /// hundreds of milliseconds and overlap, so a threshold of t = 10 x 0.5 ms = 5 ms still
    /// reacts early in a spike while staying above honest queueing delay (a 64 KiB write
    /// takes about 0.34 ms at the measured 195 MB/s, so ten queued writes wait about 3.4 ms).
    /// y = 10 and x_low = 0 are the paper's defaults; the gap up to x_high = 2 is the paper's
    /// remedy for overlapping spikes: a disk is only trusted again once every straggler has
    /// returned, and one slow request alone does not mark it.
    pub fn paper_dc() -> Self {
        DetectorConfig {
            slot_ns: 500_000,
            window_slots: 10,
            x_high: 2,
            x_low: 0,
        }
    }

    /// Consumer SSDs (Intel 545s class). Buffer-flush spikes are short (3-12 ms), so the
    /// threshold must be shorter: t = 10 x 0.2 ms = 2 ms, still about 15x the service time
    /// of a 64 KiB write at 500 MB/s. The paper sets x̂ = x̌ for these drives because stuck
    /// requests return in one batch when the spike ends, so no gap is needed against
    /// oscillation; with our `<=` test that is x_low = x_high - 1.
    pub fn paper_consumer() -> Self {
        DetectorConfig {
            slot_ns: 200_000,
            window_slots: 10,
            x_high: 2,
            x_low: 1,
        }
    }
}

/// What [`SpikeDetector::on_issue`] hands back for the matching completion: the absolute
/// slot (`now / slot_ns`) the request was issued in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket(u64);

impl Ticket {
    /// The absolute slot the request was issued in.
    pub fn slot(self) -> u64 {
        self.0
    }
}

/// The straggler detector of one disk.
#[derive(Clone, Debug)]
pub struct SpikeDetector {
    cfg: DetectorConfig,
    /// `ring[s % y]` counts the still-pending requests issued in slot s, for the y slots
    /// `current - y + 1 ..= current`.
    ring: Vec<u32>,
    /// Absolute slot number of the newest slot in the window.
    current: u64,
    /// Start of slot `current + 1`: before it, `advance` has nothing to do (saves a
    /// division on every issue and completion).
    next_slot_at: Nanos,
    /// Sum of `ring`, kept so `pending` and `next_deadline` are O(1).
    in_window: u64,
    stragglers: u32,
    unresponsive: bool,
    transitions: u64,
    /// When the current unresponsive period began, and the length of those that ended
    /// (for the driver's metrics; time comes from the inputs' `now`, like everything here).
    unresponsive_since: Nanos,
    unresponsive_ns: u64,
}

impl SpikeDetector {
    /// A detector whose window ends in the slot of `now`. Panics on an invalid `cfg`:
    /// configuration is checked once with [`DetectorConfig::validate`] where it is read.
    pub fn new(cfg: DetectorConfig, now: Nanos) -> Self {
        if let Err(e) = cfg.validate() {
            panic!("invalid detector configuration: {e}");
        }
        SpikeDetector {
            cfg,
            ring: vec![0; cfg.window_slots as usize],
            current: now / cfg.slot_ns,
            next_slot_at: (now / cfg.slot_ns)
                .saturating_add(1)
                .saturating_mul(cfg.slot_ns),
            in_window: 0,
            stragglers: 0,
            unresponsive: false,
            transitions: 0,
            unresponsive_since: 0,
            unresponsive_ns: 0,
        }
    }

    pub fn config(&self) -> &DetectorConfig {
        &self.cfg
    }

    /// Records a request issued at `now`; keep the ticket for [`Self::on_complete`].
    pub fn on_issue(&mut self, now: Nanos) -> Ticket {
        self.advance(now);
        let idx = self.ring_index(self.current);
        assert!(self.ring[idx] < u32::MAX, "detector slot counter overflow");
        self.ring[idx] += 1;
        self.in_window += 1;
        Ticket(self.current)
    }

    /// Records the completion of the request that got `ticket`, at `now`.
    pub fn on_complete(&mut self, ticket: Ticket, now: Nanos) {
        self.advance(now);
        // Time never runs backwards here (advance ignores an earlier `now`), so a ticket of
        // this detector is never newer than the window.
        assert!(
            ticket.0 <= self.current,
            "ticket {ticket:?} is from the future"
        );
        if self.in_window(ticket.0) {
            let idx = self.ring_index(ticket.0);
            assert!(
                self.ring[idx] > 0,
                "completion of {ticket:?} without an issue"
            );
            self.ring[idx] -= 1;
            self.in_window -= 1;
        } else {
            assert!(
                self.stragglers > 0,
                "straggler completion of {ticket:?} without an issue"
            );
            self.stragglers -= 1;
        }
        self.update_state(now);
    }

    /// Slides the window to the slot of `now`, moving the counts of every slot that leaves it
    /// to the straggler counter. An earlier `now` than seen before is ignored.
    pub fn advance(&mut self, now: Nanos) {
        if now < self.next_slot_at {
            return;
        }
        let target = now / self.cfg.slot_ns;
        if target <= self.current {
            return;
        }
        if self.in_window == 0 {
            // Every ring entry is zero (`in_window` is their sum): sliding moves nothing to
            // the stragglers and the state stays as it is. Timeouts advance every detector
            // of the pool, most of them idle.
            self.current = target;
            self.next_slot_at = target.saturating_add(1).saturating_mul(self.cfg.slot_ns);
            return;
        }
        // After y steps every slot has left the window once; further steps would only move
        // zeros, so an idle gap of any length costs at most y steps.
        let steps = (target - self.current).min(u64::from(self.cfg.window_slots));
        for s in 1..=steps {
            // Slot current+s reuses the ring entry of slot current+s-y, the one leaving.
            let idx = self.ring_index(self.current + s);
            let leaving = self.ring[idx];
            self.ring[idx] = 0;
            self.in_window -= u64::from(leaving);
            self.stragglers = self
                .stragglers
                .checked_add(leaving)
                .expect("straggler counter overflow");
        }
        self.current = target;
        self.next_slot_at = target.saturating_add(1).saturating_mul(self.cfg.slot_ns);
        self.update_state(now);
    }

    /// No request issued in the window is still pending: sliding the window would only move
    /// its slot number (see `advance`), which the next call to `advance` does as well.
    pub fn window_empty(&self) -> bool {
        self.in_window == 0
    }

    /// Whether the disk is currently considered in a latency spike.
    pub fn is_unresponsive(&self) -> bool {
        self.unresponsive
    }

    /// Requests pending longer than the window (t).
    pub fn stragglers(&self) -> u32 {
        self.stragglers
    }

    /// All pending requests: those in the window plus the stragglers.
    pub fn pending(&self) -> u64 {
        self.in_window + u64::from(self.stragglers)
    }

    /// The next slot boundary, while the window holds requests that could become stragglers.
    /// `None` otherwise: with only stragglers pending, sliding the window changes nothing
    /// (only their completions can), so an idle or stuck disk needs no timer.
    pub fn next_deadline(&self) -> Option<Nanos> {
        (self.in_window > 0).then(|| {
            self.current
                .saturating_add(1)
                .saturating_mul(self.cfg.slot_ns)
        })
    }

    /// How many times the disk has entered the unresponsive state.
    pub fn transitions(&self) -> u64 {
        self.transitions
    }

    /// Time spent unresponsive, the current period counted up to `now`.
    pub fn unresponsive_ns(&self, now: Nanos) -> u64 {
        let current = if self.unresponsive {
            now.saturating_sub(self.unresponsive_since)
        } else {
            0
        };
        self.unresponsive_ns + current
    }

    fn in_window(&self, slot: u64) -> bool {
        slot.saturating_add(u64::from(self.cfg.window_slots)) > self.current
    }

    fn ring_index(&self, slot: u64) -> usize {
        (slot % u64::from(self.cfg.window_slots)) as usize
    }

    fn update_state(&mut self, now: Nanos) {
        if !self.unresponsive && self.stragglers >= self.cfg.x_high {
            self.unresponsive = true;
            self.transitions += 1;
            self.unresponsive_since = now;
        } else if self.unresponsive && self.stragglers <= self.cfg.x_low {
            self.unresponsive = false;
            self.unresponsive_ns += now.saturating_sub(self.unresponsive_since);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SLOT: Nanos = 1_000;

    fn cfg(window_slots: u32, x_high: u32, x_low: u32) -> DetectorConfig {
        DetectorConfig {
            slot_ns: SLOT,
            window_slots,
            x_high,
            x_low,
        }
    }

    #[test]
    fn unresponsive_time_adds_up_from_the_inputs_now() {
        let mut d = SpikeDetector::new(cfg(2, 1, 0), 0);
        let t = d.on_issue(0);
        assert_eq!(d.unresponsive_ns(5 * SLOT), 0);
        // The request leaves the 2-slot window at the start of slot 2: a straggler.
        d.advance(2 * SLOT);
        assert!(d.is_unresponsive());
        assert_eq!(d.unresponsive_ns(3 * SLOT), SLOT);
        d.on_complete(t, 5 * SLOT);
        assert!(!d.is_unresponsive());
        assert_eq!(d.unresponsive_ns(9 * SLOT), 3 * SLOT);
    }

    /// The middle of absolute slot `s`.
    fn at(s: u64) -> Nanos {
        s * SLOT + SLOT / 2
    }

    #[test]
    fn paper_figure_8() {
        // Window of 5 slots, x̂ = 6. Three requests issued in slot 80 are stragglers by the
        // time slot 90 is current; slot 86 holds 7 pending requests.
        let mut d = SpikeDetector::new(cfg(5, 6, 0), at(80));
        let old: Vec<Ticket> = (0..3).map(|_| d.on_issue(at(80))).collect();
        let s86: Vec<Ticket> = (0..7).map(|_| d.on_issue(at(86))).collect();
        for (slot, n) in [(87, 2), (88, 5), (89, 1), (90, 3)] {
            for _ in 0..n {
                d.on_issue(at(slot));
            }
        }
        d.advance(at(90));
        assert_eq!(d.stragglers(), 3);
        assert!(!d.is_unresponsive());
        // Slot 91 starts: slot 86 leaves the window, and two requests return, one old
        // straggler and one from slot 86. 3 + 7 - 2 = 8 >= 6.
        d.advance(at(91));
        d.on_complete(old[0], at(91));
        d.on_complete(s86[0], at(91));
        assert_eq!(d.stragglers(), 8);
        assert!(d.is_unresponsive());
        assert_eq!(d.transitions(), 1);
        assert_eq!(d.pending(), 8 + 2 + 5 + 1 + 3);
    }

    #[test]
    fn hysteresis_enters_at_high_and_leaves_at_low() {
        let mut d = SpikeDetector::new(cfg(2, 3, 1), at(0));
        let ts: Vec<Ticket> = (0..4).map(|_| d.on_issue(at(0))).collect();
        d.advance(at(1));
        assert_eq!(d.stragglers(), 0);
        d.advance(at(2));
        assert_eq!(d.stragglers(), 4);
        assert!(d.is_unresponsive());
        d.on_complete(ts[0], at(2));
        d.on_complete(ts[1], at(2));
        // 2 stragglers: below x_high but above x_low, so still unresponsive.
        assert!(d.is_unresponsive());
        d.on_complete(ts[2], at(3));
        assert_eq!(d.stragglers(), 1);
        assert!(!d.is_unresponsive());
        // Back up to x_high counts as a second episode.
        let more: Vec<Ticket> = (0..2).map(|_| d.on_issue(at(3))).collect();
        d.advance(at(5));
        assert_eq!(d.stragglers(), 3);
        assert!(d.is_unresponsive());
        assert_eq!(d.transitions(), 2);
        for t in more {
            d.on_complete(t, at(6));
        }
        d.on_complete(ts[3], at(6));
        assert_eq!((d.stragglers(), d.pending()), (0, 0));
        assert!(!d.is_unresponsive());
    }

    #[test]
    fn consumer_returns_as_soon_as_one_straggler_is_back_dc_waits_for_all() {
        for (c, back_after) in [
            (DetectorConfig::paper_consumer(), 1),
            (DetectorConfig::paper_dc(), 2),
        ] {
            c.validate().unwrap();
            let slot = c.slot_ns;
            let y = u64::from(c.window_slots);
            let mut d = SpikeDetector::new(c, 0);
            let ts: Vec<Ticket> = (0..c.x_high).map(|_| d.on_issue(0)).collect();
            d.advance(y * slot);
            assert!(d.is_unresponsive());
            for (i, t) in ts.iter().enumerate() {
                assert!(d.is_unresponsive(), "{c:?} after {i} completions");
                d.on_complete(*t, y * slot);
                if i + 1 == back_after {
                    assert!(!d.is_unresponsive(), "{c:?} after {} completions", i + 1);
                    break;
                }
            }
        }
        let consumer = DetectorConfig::paper_consumer();
        assert_eq!(consumer.x_low, consumer.x_high - 1);
        let dc = DetectorConfig::paper_dc();
        assert!(dc.x_low + 1 < dc.x_high);
        assert_eq!((dc.window_slots, dc.x_low), (10, 0));
    }

    #[test]
    fn invalid_configs_are_reported() {
        assert!(cfg(10, 2, 2).validate().is_err());
        assert!(cfg(0, 2, 0).validate().is_err());
        assert!(cfg(MAX_WINDOW_SLOTS + 1, 2, 0).validate().is_err());
        assert!(
            DetectorConfig {
                slot_ns: 0,
                ..cfg(10, 2, 0)
            }
            .validate()
            .is_err()
        );
        assert!(
            DetectorConfig {
                slot_ns: u64::MAX,
                ..cfg(10, 2, 0)
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn idle_gap_longer_than_the_window() {
        let mut d = SpikeDetector::new(cfg(10, 3, 0), at(0));
        let a = d.on_issue(at(0));
        let b = d.on_issue(at(4));
        assert_eq!(d.next_deadline(), Some(5 * SLOT));
        // A gap of a billion slots: everything pending becomes a straggler.
        let far = 1_000_000_000;
        d.advance(at(far));
        assert_eq!((d.stragglers(), d.pending()), (2, 2));
        assert_eq!(d.next_deadline(), None);
        let c = d.on_issue(at(far));
        d.on_complete(c, at(far + 9));
        assert_eq!(d.stragglers(), 2);
        d.on_complete(a, at(far + 9));
        d.on_complete(b, at(far + 9));
        assert_eq!(d.pending(), 0);
    }

    #[test]
    fn completion_after_its_slot_left_decrements_stragglers() {
        let mut d = SpikeDetector::new(cfg(3, 5, 0), at(10));
        let t = d.on_issue(at(10));
        let u = d.on_issue(at(11));
        d.on_complete(u, at(13));
        // Slot 10 left the window when slot 13 began; slot 11 was still in it.
        assert_eq!((d.stragglers(), d.pending()), (1, 1));
        d.on_complete(t, at(13));
        assert_eq!((d.stragglers(), d.pending()), (0, 0));
    }

    #[test]
    fn time_running_backwards_is_ignored() {
        let mut d = SpikeDetector::new(cfg(3, 5, 0), at(10));
        let t = d.on_issue(at(12));
        let u = d.on_issue(at(11));
        assert_eq!(t, u);
        d.on_complete(t, at(5));
        d.on_complete(u, at(5));
        assert_eq!(d.pending(), 0);
    }

    /// Naive model: remembers every pending request's issue slot.
    struct Reference {
        cfg: DetectorConfig,
        current: u64,
        pending: Vec<(usize, u64)>,
        unresponsive: bool,
        transitions: u64,
    }

    impl Reference {
        fn advance(&mut self, now: Nanos) {
            self.current = self.current.max(now / self.cfg.slot_ns);
        }
        fn stragglers(&self) -> u32 {
            let y = u64::from(self.cfg.window_slots);
            self.pending
                .iter()
                .filter(|(_, s)| s + y <= self.current)
                .count() as u32
        }
        fn update(&mut self) {
            let s = self.stragglers();
            if !self.unresponsive && s >= self.cfg.x_high {
                self.unresponsive = true;
                self.transitions += 1;
            } else if self.unresponsive && s <= self.cfg.x_low {
                self.unresponsive = false;
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Issue,
        Complete(prop::sample::Index),
        Advance,
    }

    fn op() -> impl Strategy<Value = (Nanos, Op)> {
        let kind = prop_oneof![
            3 => Just(Op::Issue),
            2 => any::<prop::sample::Index>().prop_map(Op::Complete),
            1 => Just(Op::Advance),
        ];
        (prop_oneof![4 => 0..SLOT, 1 => 0..12 * SLOT], kind)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn matches_naive_reference(
            y in 1u32..8, x_low in 0u32..4, gap in 1u32..4,
            ops in prop::collection::vec(op(), 1..300),
        ) {
            let c = cfg(y, x_low + gap, x_low);
            let mut now = 12_345;
            let mut d = SpikeDetector::new(c, now);
            let mut r = Reference {
                cfg: c,
                current: now / SLOT,
                pending: Vec::new(),
                unresponsive: false,
                transitions: 0,
            };
            let mut tickets: Vec<(usize, Ticket)> = Vec::new();
            for (id, (dt, op)) in ops.into_iter().enumerate() {
                now += dt;
                // Like the detector, first let the time pass (a slot boundary may mark the
                // disk), then apply the operation.
                r.advance(now);
                r.update();
                match op {
                    Op::Issue => {
                        tickets.push((id, d.on_issue(now)));
                        r.pending.push((id, r.current));
                    }
                    Op::Complete(i) if !tickets.is_empty() => {
                        let (rid, t) = tickets.swap_remove(i.index(tickets.len()));
                        d.on_complete(t, now);
                        r.pending.retain(|(p, _)| *p != rid);
                    }
                    Op::Complete(_) | Op::Advance => d.advance(now),
                }
                r.update();
                prop_assert_eq!(d.pending(), r.pending.len() as u64);
                prop_assert_eq!(d.stragglers(), r.stragglers());
                prop_assert_eq!(d.is_unresponsive(), r.unresponsive);
                prop_assert_eq!(d.transitions(), r.transitions);
                let window_busy = r.pending.len() as u32 > r.stragglers();
                prop_assert_eq!(d.next_deadline().is_some(), window_busy);
                if let Some(dl) = d.next_deadline() {
                    prop_assert!(dl > now && dl - now <= SLOT);
                }
            }
        }
    }
}
