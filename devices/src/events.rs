//! Discrete internal events of an SSD: block erases and flash-translation-layer (FTL)
//! metadata writes, which a request can find itself waiting behind.
//!
//! The GC cost model ([`crate::gc`]) spreads the die time of cleaning over GC work, which is
//! right for throughput but leaves out the moments a real drive is unavailable as a whole
//! unit of work: an erase occupies its die for milliseconds and cannot be split, and the FTL
//! persists its mapping table and block-state records in writes during which the command
//! path holds new requests. Both follow the cleaner: every victim block cleaned is erased,
//! and cleaning moves valid pages (each a mapping update) and retires blocks (each a block
//! state change), so the metadata to persist grows with the victim bytes cleaned. Their rate
//! is therefore tied to GC activity, not to a clock: a drive that does not clean (a fresh one,
//! or an idle one) has none, and an aged drive cleaning expensive victims (high valid
//! fraction: more victim bytes per byte written) has more, which is §2.3's "aged SSDs see
//! more severe and frequent spikes".
//!
//! [`EventClock`] turns the victim bytes cleaned into event counts: erases exactly once per
//! `block_bytes`, metadata writes every so many victim bytes (near-regular spacings of a mean
//! the preset states), so their rate is proportional to the cleaning rate at any load.

use fusionraid_core::Nanos;
use fusionraid_core::rng::Rng;

/// FTL metadata writes (mapping table, block states) that hold every request while they run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MapWrites {
    /// Mean victim bytes cleaned by GC between two metadata writes.
    pub per_cleaned_bytes: u64,
    /// Duration drawn uniformly from `[min_ns, max_ns]`.
    pub min_ns: Nanos,
    pub max_ns: Nanos,
}

/// The discrete internal events a drive has (none by default).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InternalEvents {
    /// Block erases occupy a die for `erase_ns` each, one per `block_bytes` of victim blocks
    /// cleaned, instead of being spread over GC work (GC's die cost then leaves them out).
    pub discrete_erases: bool,
    pub map_writes: Option<MapWrites>,
}

impl InternalEvents {
    pub fn is_none(&self) -> bool {
        !self.discrete_erases && self.map_writes.is_none()
    }

    pub fn validate(&self) -> Result<(), String> {
        if let Some(m) = self.map_writes
            && (m.per_cleaned_bytes == 0 || m.min_ns > m.max_ns)
        {
            return Err("map writes need per_cleaned_bytes > 0 and min <= max".into());
        }
        Ok(())
    }
}

/// Events due after some cleaning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Due {
    pub erases: u32,
    /// Total duration of the metadata writes due (they run back to back).
    pub map_write_ns: Nanos,
    pub map_writes: u32,
}

/// Counts victim bytes cleaned towards the next erase and the next metadata write.
#[derive(Clone, Debug)]
pub struct EventClock {
    cfg: InternalEvents,
    block_bytes: f64,
    /// Victim bytes cleaned since the last erase.
    erase_acc: f64,
    /// Victim bytes still to clean before the next metadata write.
    map_left: f64,
    /// Spacings and durations: a stream of its own, so a drive's latency samples do not
    /// depend on how much it cleaned.
    rng: Rng,
}

impl EventClock {
    pub fn new(cfg: InternalEvents, block_bytes: u64, seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0xe7e7_5eed_0bad_cafe);
        let map_left = cfg
            .map_writes
            .map_or(f64::INFINITY, |m| first_spacing(&mut rng, m));
        EventClock {
            cfg,
            block_bytes: block_bytes.max(1) as f64,
            erase_acc: 0.0,
            map_left,
            rng,
        }
    }

    pub fn is_active(&self) -> bool {
        !self.cfg.is_none()
    }

    /// GC cleaned `victim_bytes` of victim blocks: the events that became due.
    pub fn on_cleaned(&mut self, victim_bytes: f64) -> Due {
        let mut due = Due::default();
        if victim_bytes <= 0.0 {
            return due;
        }
        if self.cfg.discrete_erases {
            self.erase_acc += victim_bytes;
            let n = (self.erase_acc / self.block_bytes).floor();
            self.erase_acc -= n * self.block_bytes;
            due.erases = n as u32;
        }
        if let Some(m) = self.cfg.map_writes {
            self.map_left -= victim_bytes;
            while self.map_left <= 0.0 {
                due.map_writes += 1;
                let span = m.max_ns - m.min_ns;
                due.map_write_ns += m.min_ns
                    + if span > 0 {
                        self.rng.below(span + 1)
                    } else {
                        0
                    };
                self.map_left += spacing(&mut self.rng, m);
            }
        }
        due
    }
}

/// A spacing uniform in 0.5-1.5x `per_cleaned_bytes`: an FTL writes its metadata when what
/// it has to persist reaches a threshold, so the writes come near-regularly in cleaned bytes,
/// not as a memoryless process (an assumption; the mean is what the sources constrain).
fn spacing(rng: &mut Rng, m: MapWrites) -> f64 {
    (0.5 + rng.unit()) * m.per_cleaned_bytes as f64
}

/// Where a drive stands in its metadata cycle when the model starts: uniform over one mean
/// spacing, so drives of a fleet are not in step.
fn first_spacing(rng: &mut Rng, m: MapWrites) -> f64 {
    rng.unit() * m.per_cleaned_bytes as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn erases_follow_blocks_and_map_writes_follow_cleaning_on_average() {
        let cfg = InternalEvents {
            discrete_erases: true,
            map_writes: Some(MapWrites {
                per_cleaned_bytes: 100 * MIB,
                min_ns: 2_000_000,
                max_ns: 4_000_000,
            }),
        };
        let mut c = EventClock::new(cfg, 16 * MIB, 7);
        let (mut erases, mut maps, mut ns) = (0u64, 0u64, 0u64);
        // 100 GiB cleaned in 1 MiB steps.
        for _ in 0..100 * 1024 {
            let d = c.on_cleaned(MIB as f64);
            erases += u64::from(d.erases);
            maps += u64::from(d.map_writes);
            ns += d.map_write_ns;
        }
        assert_eq!(erases, 100 * 1024 / 16);
        // 1,024 expected (spacings of 50-150 MiB).
        assert!((1000..1050).contains(&maps), "{maps}");
        let mean = ns as f64 / maps as f64;
        assert!((2.9e6..3.1e6).contains(&mean), "{mean}");
        // No cleaning, no events.
        assert_eq!(c.on_cleaned(0.0), Due::default());
        let mut none = EventClock::new(InternalEvents::default(), 16 * MIB, 7);
        assert!(!none.is_active());
        assert_eq!(none.on_cleaned(1e12), Due::default());
    }
}
