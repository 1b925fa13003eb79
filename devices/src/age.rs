//! Analytic preconditioning.
//!
//! The paper's drives are "aged" by a secure erase, a full-device sequential write, then six
//! hours of random 16 KiB writes "to guarantee each write generates invalid page(s)" (§5.1).
//! Simulating hours of writes per device is pointless: the end state is known. After enough
//! random overwrites the valid data is whatever was filled, no sequential stream is left,
//! and the erased pool is what the GC policy keeps once the ageing run stops and the drive
//! rests before the experiment ([`GcPolicy::rested_free_bytes`]). Victims then carry the
//! valid fraction of uniform random overwrites for writes spread over the drive; writes
//! confined to a small footprint find cheaper victims (`crate::footprint`). [`apply`] sets
//! exactly that state.
//!
//! The Pitfalls study's "spare capacity" is the part of the drive the user never writes: use
//! [`AgeSpec::with_spare`] to fill and overwrite only the first `1 - spare` of the capacity.

use crate::PAGE;
use crate::flash_state::FlashState;
use crate::gc::GcPolicy;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AgeSpec {
    /// Fraction of the capacity written sequentially from offset 0.
    pub fill_fraction: f64,
    /// Random overwrites of the filled span afterwards, in multiples of that span.
    pub overwrite_multiple: f64,
}

impl AgeSpec {
    /// The paper's aged state: full sequential fill, then random overwrites well past the
    /// capacity (six hours at the drive's sustained random-write rate is several capacities;
    /// two is already the steady state).
    pub fn paper() -> Self {
        AgeSpec {
            fill_fraction: 1.0,
            overwrite_multiple: 2.0,
        }
    }

    /// Filled once sequentially, never overwritten ("used but not aged").
    pub fn filled() -> Self {
        AgeSpec {
            fill_fraction: 1.0,
            overwrite_multiple: 0.0,
        }
    }

    /// Aged with a fraction `spare` of the capacity left unused by the user.
    pub fn with_spare(spare: f64) -> Self {
        AgeSpec {
            fill_fraction: (1.0 - spare).clamp(0.0, 1.0),
            overwrite_multiple: 2.0,
        }
    }
}

/// Puts `flash` in the state `spec` describes (from a secure-erased drive). `phase` in
/// `[0, 1)` is where in its GC cycle this drive stopped ([`GcPolicy::rested_free_at`]):
/// drawn per drive, so the members of a fleet do not all start at the same erased level.
pub fn apply(flash: &mut FlashState, gc: &GcPolicy, spec: &AgeSpec, phase: f64) {
    let capacity = flash.map().capacity();
    let span = (capacity as f64 * spec.fill_fraction.clamp(0.0, 1.0)) as u64 / PAGE * PAGE;
    flash.map_mut().fill_prefix(span);
    let overwritten = span as f64 * spec.overwrite_multiple.max(0.0);
    let written = span as f64 + overwritten;
    let physical = flash.physical_bytes() as f64;
    // Until the erased pool reaches the GC level nothing is cleaned; afterwards the policy
    // holds it in its resting range, at this drive's phase.
    let free = (physical - written).max(gc.rested_free_at(phase));
    flash.set_free_bytes(free);
    flash.set_seq_fraction(if span > 0 { 1.0 } else { 0.0 });
    flash.note_random_bytes(overwritten);
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn policy() -> GcPolicy {
        GcPolicy::Background {
            start_bytes: GIB,
            critical_bytes: GIB / 8,
            resume_bytes: GIB / 4,
            max_share: 1.0,
            idle_share: 0.0,
            step_ns: 1,
        }
    }

    #[test]
    fn paper_ageing_reaches_the_rested_state() {
        let mut f = FlashState::new(100 * GIB, 110 * GIB);
        apply(&mut f, &policy(), &AgeSpec::paper(), 0.5);
        assert_eq!(f.valid_bytes(), 100 * GIB);
        assert_eq!(f.free_bytes(), policy().rested_free_bytes() as f64);
        assert!(f.seq_fraction() < 1e-6);
        // Utilisation 100/110: victims are about 0.83 valid.
        let u = f.victim_valid_fraction();
        assert!(u > 0.8 && u < 0.86, "{u}");
    }

    #[test]
    fn fill_only_leaves_erased_space_and_sequential_history() {
        let mut f = FlashState::new(100 * GIB, 110 * GIB);
        apply(&mut f, &policy(), &AgeSpec::filled(), 0.5);
        assert_eq!(f.free_bytes(), (10 * GIB) as f64);
        assert_eq!(f.seq_fraction(), 1.0);
        assert!(f.victim_valid_fraction() < 1e-9);
    }

    #[test]
    fn spare_capacity_lowers_victim_valid_fraction() {
        let mut full = FlashState::new(100 * GIB, 104 * GIB);
        let mut half = FlashState::new(100 * GIB, 104 * GIB);
        apply(&mut full, &policy(), &AgeSpec::with_spare(0.0), 0.5);
        apply(&mut half, &policy(), &AgeSpec::with_spare(0.5), 0.5);
        assert_eq!(half.valid_bytes(), 50 * GIB);
        let (uf, uh) = (full.victim_valid_fraction(), half.victim_valid_fraction());
        assert!(uf > 0.9 && uh < 0.25, "{uf} {uh}");
    }

    #[test]
    fn consumer_rested_level_spans_the_watermarks() {
        let gc = GcPolicy::Blocking {
            low_bytes: GIB,
            high_bytes: 3 * GIB,
            max_pass_ns: 1,
        };
        let level = |phase| {
            let mut f = FlashState::new(100 * GIB, 110 * GIB);
            apply(&mut f, &gc, &AgeSpec::paper(), phase);
            f.free_bytes()
        };
        assert_eq!(level(0.0), GIB as f64);
        assert_eq!(level(0.5), gc.rested_free_bytes() as f64);
        assert_eq!(level(0.75), 2.5 * GIB as f64);
        // A fill that leaves more erased space than the GC level is not cleaned at all.
        let mut f = FlashState::new(100 * GIB, 110 * GIB);
        apply(&mut f, &gc, &AgeSpec::filled(), 0.9);
        assert_eq!(f.free_bytes(), (10 * GIB) as f64);
    }
}
