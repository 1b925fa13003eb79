//! Garbage-collection policies.
//!
//! Cost model: to gain one byte of erased space the cleaner must clean `1 / (1 - u)` bytes of
//! victim blocks (u = their valid fraction, from [`FlashState`]), copy the `u / (1 - u)` valid
//! bytes in them (a flash read plus a program each) and erase them. That die time is spent by
//! one of two policies, matching the two behaviours the paper's spike study (§2.3) reports:
//!
//! - [`GcPolicy::Blocking`] (consumer): nothing is cleaned until erased space falls below a
//!   low watermark; then one pass cleans up to the high watermark (or for at most
//!   `max_pass_ns`) while the whole drive is blocked, reads included ("requests are blocked
//!   during GC inside SSDs and completed immediately in a batch once GC is over"). The gap
//!   between watermarks sets the quiet interval between GC spikes.
//! - [`GcPolicy::Background`] (datacenter): below `start_bytes` the drive cleans in die time
//!   nothing else uses (`idle_share` of every idle gap; a request that finds its die in the
//!   middle of that work waits for the GC step in progress), and, as erased space falls
//!   further, after host programs too: up to `max_share` of the program's time, in
//!   proportion to how far erased space is below `start_bytes` (full share at
//!   `critical_bytes`), so writes are throttled progressively. When that is not enough
//!   (heavy random writes on an aged drive), erased space reaches `critical_bytes`, and
//!   writes are held until an urgent pass has cleaned back to `resume_bytes`, while reads
//!   are still served between GC steps. Repeated urgent passes are the DC drive's long,
//!   overlapping >100 ms spikes (§2.3, Fig. 4b).

use fusionraid_core::Nanos;

use crate::flash_state::FlashState;
use crate::queues::StallScope;

/// Die time per byte of the two GC primitives, summed over the drive (not per die).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GcCosts {
    /// Read one valid byte from a victim and program it elsewhere.
    pub copy_ns_per_byte: f64,
    /// Erase cost per byte of victim block.
    pub erase_ns_per_byte: f64,
}

impl GcCosts {
    /// Die time to gain one byte of erased space when victims are `u` valid.
    pub fn per_freed_byte(&self, u: f64) -> f64 {
        (u * self.copy_ns_per_byte + self.erase_ns_per_byte) / (1.0 - u)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GcPolicy {
    Blocking {
        low_bytes: u64,
        high_bytes: u64,
        max_pass_ns: Nanos,
    },
    Background {
        start_bytes: u64,
        critical_bytes: u64,
        resume_bytes: u64,
        /// Background GC die time per host program, as a fraction of the program time.
        max_share: f64,
        /// Share of a die's idle time background GC uses while erased space is below
        /// `start_bytes` (0: GC only follows programs).
        idle_share: f64,
        /// Granularity of GC work: a read arriving during an urgent pass waits for the step in
        /// progress at most.
        step_ns: Nanos,
    },
}

impl GcPolicy {
    /// Erased space a drive holds when an ageing run has ended and the drive has rested
    /// (what the paper's drives were tested in): a consumer drive sits between its
    /// watermarks; a datacenter drive's background GC has used the idle time to restore its
    /// start level (§2.3: under random writes an aged DC drive's latency explodes "once GC
    /// is triggered", not at once).
    ///
    /// This is the mean over a fleet: each drive's own level is drawn from
    /// [`GcPolicy::rested_free_range`] (see [`GcPolicy::rested_free_at`]).
    pub fn rested_free_bytes(&self) -> u64 {
        let (lo, hi) = self.rested_free_range();
        (lo + hi) / 2
    }

    /// The erased levels a rested aged drive can be found at. A consumer drive's erased space
    /// saws between its watermarks (written down to `low`, cleaned back up to `high`), and
    /// when its ageing run stopped it could have been anywhere in that cycle. A datacenter
    /// drive's idle GC restores exactly its start level, whatever the phase it stopped in.
    pub fn rested_free_range(&self) -> (u64, u64) {
        match *self {
            GcPolicy::Blocking {
                low_bytes,
                high_bytes,
                ..
            } => (low_bytes, high_bytes),
            GcPolicy::Background { start_bytes, .. } => (start_bytes, start_bytes),
        }
    }

    /// Erased space (bytes) below which the policy does any work: with at least this much,
    /// [`in_idle_time`] and [`after_program`] return nothing, and a drive that is not short
    /// of erased space (every fresh one) can skip asking them.
    pub fn works_below(&self) -> f64 {
        match *self {
            GcPolicy::Blocking { low_bytes, .. } => low_bytes as f64,
            GcPolicy::Background {
                start_bytes,
                critical_bytes,
                ..
            } => start_bytes.max(critical_bytes) as f64,
        }
    }

    /// The rested level at `phase` in `[0, 1)` of [`GcPolicy::rested_free_range`] (0.5 is
    /// the middle); a uniform `phase` keeps the mean at the middle of the range.
    pub fn rested_free_at(&self, phase: f64) -> f64 {
        let (lo, hi) = self.rested_free_range();
        lo as f64 + phase.clamp(0.0, 1.0) * (hi - lo) as f64
    }
}

/// What a program triggered.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GcOutcome {
    /// GC work to append to the programming die.
    pub bg_die_ns: Nanos,
    /// A stall: scope, duration (wall time), and the die time it represents.
    pub pass: Option<(StallScope, Nanos, Nanos)>,
    /// Valid bytes copied by this GC work.
    pub copied_bytes: f64,
    /// Victim bytes cleaned (reclaimed plus copied) by the background work and by the
    /// pass, for the events that follow cleaning ([`crate::events`]).
    pub bg_cleaned_bytes: f64,
    pub pass_cleaned_bytes: f64,
    /// Idle-time GC was still at work when the idle period ended (more was needed).
    pub running: bool,
}

/// Background GC in `idle_ns` of die time that nothing was booked in (a die between two
/// operations), while erased space is below the start level: returns the die time used.
pub fn in_idle_time(
    policy: &GcPolicy,
    costs: &GcCosts,
    flash: &mut FlashState,
    idle_ns: Nanos,
    speed: f64,
) -> GcOutcome {
    let mut out = GcOutcome::default();
    if let GcPolicy::Background {
        start_bytes,
        idle_share,
        ..
    } = *policy
        && idle_share > 0.0
        && idle_ns > 0
        && flash.free_bytes() < start_bytes as f64
    {
        let u = flash.victim_valid_fraction();
        let c = costs.per_freed_byte(u) * speed;
        let usable = idle_ns as f64 * idle_share;
        let want = start_bytes as f64 - flash.free_bytes();
        let gain = (usable / c).min(want);
        flash.reclaim(gain);
        out.bg_die_ns = (gain * c) as Nanos;
        out.copied_bytes = gain * u / (1.0 - u);
        out.bg_cleaned_bytes = gain + out.copied_bytes;
        out.running = want * c > usable;
    }
    out
}

/// Books the GC work needed after a host program of `unit` bytes that took `program_ns`.
/// `speed` stretches die time (per-device speed factor); `dies` work in parallel in a pass.
pub fn after_program(
    policy: &GcPolicy,
    costs: &GcCosts,
    flash: &mut FlashState,
    unit: u64,
    program_ns: Nanos,
    dies: u32,
    speed: f64,
) -> GcOutcome {
    let mut out = GcOutcome::default();
    // Cost of a freed byte and copies per freed byte, at today's victim valid fraction. Only
    // computed when GC runs: a fresh drive never needs it.
    let price = |flash: &mut FlashState| {
        let u = flash.victim_valid_fraction();
        (costs.per_freed_byte(u) * speed, u / (1.0 - u))
    };
    let dies = dies.max(1) as f64;
    match *policy {
        GcPolicy::Blocking {
            low_bytes,
            high_bytes,
            max_pass_ns,
        } => {
            if flash.free_bytes() < low_bytes as f64 {
                let (c, copy_ratio) = price(flash);
                let want = high_bytes as f64 - flash.free_bytes();
                let wall = (want * c / dies).min(max_pass_ns as f64);
                let gain = wall * dies / c;
                flash.reclaim(gain);
                out.copied_bytes = gain * copy_ratio;
                out.pass_cleaned_bytes = gain * (1.0 + copy_ratio);
                out.pass = Some((StallScope::All, wall as Nanos, (wall * dies) as Nanos));
            }
        }
        GcPolicy::Background {
            start_bytes,
            critical_bytes,
            resume_bytes,
            max_share,
            ..
        } => {
            if flash.free_bytes() < start_bytes as f64 {
                let (c, copy_ratio) = price(flash);
                // The share grows with the deficit below the start level: with erased space
                // near it, idle time does the cleaning and programs run unhindered.
                let deficit = (start_bytes as f64 - flash.free_bytes())
                    / (start_bytes - critical_bytes) as f64;
                let share = max_share * deficit.clamp(0.0, 1.0);
                let work = (unit as f64 * c).min(share * program_ns as f64);
                let gain = work / c;
                flash.reclaim(gain);
                out.bg_die_ns = work as Nanos;
                out.copied_bytes = gain * copy_ratio;
                out.bg_cleaned_bytes = gain * (1.0 + copy_ratio);
            }
            if flash.free_bytes() < critical_bytes as f64 {
                let (c, copy_ratio) = price(flash);
                let gain = resume_bytes as f64 - flash.free_bytes();
                let work = gain * c;
                flash.reclaim(gain);
                out.copied_bytes += gain * copy_ratio;
                out.pass_cleaned_bytes = gain * (1.0 + copy_ratio);
                out.pass = Some((StallScope::Writes, (work / dies) as Nanos, work as Nanos));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn costs() -> GcCosts {
        GcCosts {
            copy_ns_per_byte: 20.0,
            erase_ns_per_byte: 1.0,
        }
    }

    #[test]
    fn cost_grows_with_victim_valid_fraction() {
        let c = costs();
        assert_eq!(c.per_freed_byte(0.0), 1.0);
        assert!((c.per_freed_byte(0.5) - 22.0).abs() < 1e-9);
        assert!(c.per_freed_byte(0.9) > 10.0 * c.per_freed_byte(0.2));
    }

    #[test]
    fn blocking_pass_refills_to_high_watermark() {
        let policy = GcPolicy::Blocking {
            low_bytes: 10 * MIB,
            high_bytes: 20 * MIB,
            max_pass_ns: u64::MAX,
        };
        let mut f = FlashState::new(100 * MIB, 100 * MIB);
        f.set_free_bytes((12 * MIB) as f64);
        let out = after_program(&policy, &costs(), &mut f, MIB, 1000, 4, 1.0);
        assert_eq!(out, GcOutcome::default());
        f.consume(3 * MIB);
        let out = after_program(&policy, &costs(), &mut f, MIB, 1000, 4, 1.0);
        let (scope, wall, die) = out.pass.expect("pass");
        assert_eq!(scope, StallScope::All);
        // Empty drive: victims hold nothing valid, so the pass only erases 11 MiB over 4 dies.
        assert_eq!(wall, 11 * MIB / 4);
        assert_eq!(die, 11 * MIB);
        assert_eq!(f.free_bytes(), (20 * MIB) as f64);
    }

    #[test]
    fn background_gc_is_capped_then_goes_urgent() {
        let policy = GcPolicy::Background {
            start_bytes: 40 * MIB,
            critical_bytes: 10 * MIB,
            resume_bytes: 12 * MIB,
            max_share: 1.0,
            idle_share: 0.0,
            step_ns: 1000,
        };
        let mut f = FlashState::new(90 * MIB, 100 * MIB);
        f.map_mut().fill_prefix(90 * MIB); // utilisation 0.9: expensive victims
        f.set_free_bytes((30 * MIB) as f64);
        let mut urgent = 0;
        let mut bg = 0;
        for _ in 0..200 {
            f.consume(MIB);
            let out = after_program(&policy, &costs(), &mut f, MIB, 50_000, 4, 1.0);
            assert!(out.bg_die_ns <= 50_000);
            bg += (out.bg_die_ns > 0) as u32;
            if let Some((scope, _, _)) = out.pass {
                assert_eq!(scope, StallScope::Writes);
                urgent += 1;
            }
            assert!(f.free_bytes() >= (10 * MIB) as f64);
        }
        assert_eq!(bg, 200);
        assert!(urgent > 10, "{urgent}");
    }
}
