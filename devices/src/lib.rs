//! fusionraid-devices: SSD and HDD device models, shared by the simulator (`fusionraid-sim`)
//! and the emulated members of the real-time server (`fusionraid-io`, `emu:`).
//!
//! A model is a deterministic, seeded state machine: it is told when each request arrives
//! (`now`, non-decreasing across calls) and answers, at once, when that request completes. It
//! never reads a clock, sleeps or spawns a thread, so the discrete-event simulator and the
//! real-time emulation wrapper (which delays real completions) share the same code and the same
//! seed gives the same completion times.
//!
//! Completion is decided at submission ("reservation" model): every internal resource (controller
//! cores, flash dies, host link, DRAM write buffer) remembers until when it is booked. Stalls that
//! the device decides on later (buffer flushes, garbage-collection passes) are recorded as time
//! windows and delay every request that arrives, or would complete, inside them.
//!
//! Map of the files:
//! - [`dist`]: unloaded-latency distributions (quantile tables).
//! - [`queues`]: controller server pool and stall windows.
//! - [`write_buffer`]: DRAM write buffer, back-pressure, periodic flush spikes.
//! - [`flash_state`]: valid-data map, free-space accounting, victim valid fraction.
//! - [`footprint`]: the footprint recent writes keep rewriting (where GC finds victims).
//! - [`gc`]: garbage-collection policies (blocking passes, background + urgent).
//! - [`config`] / [`ssd`]: the SSD model. [`hdd`]: the HDD model.
//! - [`age`]: analytic preconditioning (the paper's "aged" state).
//! - [`fail_slow`] and [`spikes`]: wrappers making any model fail-slow (slower by a factor
//!   in episodes) or spike (unresponsive periods at a set rate and length).
//! - [`presets`]: named configurations and fleets. [`profile`] / [`profile_rows`] / [`fit`] /
//!   [`fitted`] / [`fitted_fleet`]: measured load-latency curves, which rows count, the
//!   routine that fits a configuration to them and its frozen results (two named presets,
//!   one per profiled serial). [`curves`]: a drive's curves for steering, read from the
//!   profiles or swept from a model. [`loadgen`]: small drivers used by the fit, the sweeps
//!   and the calibration tests.
//!
//! What needs the simulator stays there: `fusionraid_sim::spike_probe` (one model under the
//! engine's spike detector) and the member loads of the workload mixes.
//!
//! See `docs/DEVICE_MODELS.md` for the model, the source of every parameter and the
//! calibration results.

pub mod age;
pub mod config;
pub mod curves;
pub mod dist;
pub mod events;
pub mod fail_slow;
pub mod fit;
pub mod fitted;
pub mod fitted_fleet;
pub mod flash_state;
pub mod footprint;
pub mod gc;
pub mod hdd;
pub mod loadgen;
pub mod presets;
pub mod profile;
pub mod profile_rows;
pub mod queues;
pub mod spikes;
pub mod ssd;
#[cfg(test)]
mod ssd_tests;
pub mod sustained;
pub mod write_buffer;

use fusionraid_core::Nanos;

pub use age::AgeSpec;
pub use config::SsdConfig;
pub use dist::LatencyDist;
pub use gc::GcPolicy;
pub use hdd::{HddConfig, HddModel};
pub use presets::{
    build, fleet, hdd_preset, is_consumer_class, list_fleets, list_hdd_presets, list_presets,
    preset,
};
pub use ssd::SsdModel;

/// The kind of a block request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    Read,
    Write,
    /// Discard: the range no longer holds valid data (lowers the device's utilisation).
    Trim,
    /// Make previously acknowledged writes durable.
    Flush,
}

/// Counters a model keeps; all byte counts are host-visible unless named `flash_*`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeviceStats {
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub flushes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub bytes_trimmed: u64,
    /// Bytes programmed into flash: host data plus garbage-collection copies.
    pub flash_bytes_written: u64,
    /// Flash bytes copied by garbage collection (part of `flash_bytes_written`).
    pub gc_bytes_copied: u64,
    /// Die time spent on garbage collection (copies and erases), summed over dies.
    pub gc_die_ns: u64,
    /// Blocking stalls: buffer-flush spikes, blocking GC passes, urgent GC passes.
    pub flush_stalls: u64,
    pub gc_stalls: u64,
    /// FTL metadata writes that held every request, and discrete block erases
    /// ([`events`]; only models configured with them).
    pub map_write_stalls: u64,
    pub erases: u64,
    /// Sum of the stalls' durations (overlapping stalls each count in full).
    pub stall_ns: u64,
    /// The part of `stall_ns` spent in blocking or urgent GC passes.
    pub gc_stall_ns: u64,
    /// Sum of (completion - arrival) over all requests, for a cheap mean.
    pub busy_latency_ns: u128,
}

impl DeviceStats {
    /// Flash bytes written per host byte written (1.0 before any write).
    pub fn write_amplification(&self) -> f64 {
        if self.bytes_written == 0 {
            1.0
        } else {
            self.flash_bytes_written as f64 / self.bytes_written as f64
        }
    }

    pub fn stalls(&self) -> u64 {
        self.flush_stalls + self.gc_stalls + self.map_write_stalls
    }
}

/// A device model. See the module documentation for the contract.
pub trait DeviceModel: Send {
    /// A request arrives at `now` (non-decreasing across calls). Returns its completion time
    /// (`>= now`).
    fn submit(&mut self, now: Nanos, kind: OpKind, offset: u64, len: u64) -> Nanos;
    /// User-visible capacity.
    fn capacity_bytes(&self) -> u64;
    fn stats(&self) -> DeviceStats;
    fn name(&self) -> &str;
    /// Brings the device to a preconditioned state analytically, without simulating the
    /// writes (SSDs: see [`AgeSpec`]). Devices without a write history (HDDs) ignore it.
    fn age(&mut self, _spec: &AgeSpec) {}
    /// Per-device speed factor from now on: multiplies service times and stalls (1.0 =
    /// nominal, 2.0 = twice as slow). For heterogeneous fleets and slow-peer studies.
    fn set_speed_factor(&mut self, _factor: f64) {}
    /// Share of its rated endurance the device has used (0 new, 1 worn out), as an NVMe
    /// drive reports "percentage used"; `None` for devices that do not wear (HDDs).
    fn wear(&self) -> Option<f64> {
        None
    }
    /// A copy in the same state (same future behaviour), for reusing a preconditioned
    /// fleet across runs; `None` where a model cannot be copied.
    fn clone_box(&self) -> Option<Box<dyn DeviceModel>> {
        None
    }
}

/// Program/erase cycles a flash cell is rated for: the typical rating of the TLC NAND in
/// consumer and data-centre drives (3,000; MLC is rated higher, QLC about 1,000). The models'
/// wear is their flash bytes programmed over their raw flash times this.
pub const RATED_PE_CYCLES: f64 = 3000.0;

/// 4 KiB: the logical page, the unit of the measured profiles and of per-page costs.
pub const PAGE: u64 = 4096;

/// Nanoseconds to move `bytes` at `mb_per_s` (decimal MB/s, as datasheets quote).
pub(crate) fn xfer_ns(bytes: u64, mb_per_s: f64) -> Nanos {
    if mb_per_s <= 0.0 {
        return 0;
    }
    round_u64(bytes as f64 * 1000.0 / mb_per_s)
}

/// `x.round() as u64`, without the library call `f64::round` becomes on baseline x86-64 (no
/// SSE4.1 `roundsd`), which cost about 3% of simulation time in the models' hot paths.
/// Same result for every input: `x - trunc(x)` is exact in f64, so halves round up as
/// `round` does; negatives and NaN give 0 and huge values saturate, as `as u64` does.
///
/// Below 2^63 (every duration and size the models compute) the conversions go through
/// `i64`: one instruction each way on x86-64, where `f64 as u64` and `u64 as f64` are
/// branchy sequences (they were 3% of simulation time themselves). Exact there too:
/// truncation and the integer's value are the same whichever signed width holds them.
#[inline]
pub(crate) fn round_u64(x: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x > 0.0 && x < TWO_63 {
        let i = x as i64;
        return if x - i as f64 >= 0.5 {
            i as u64 + 1
        } else {
            i as u64
        };
    }
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    if x >= u64::MAX as f64 {
        return u64::MAX;
    }
    let i = x as u64;
    if x - i as f64 >= 0.5 { i + 1 } else { i }
}

#[cfg(test)]
mod tests {
    use super::round_u64;

    #[test]
    fn fast_round_matches_std_round() {
        let mut rng = fusionraid_core::rng::Rng::new(5);
        let special = [
            0.0,
            0.5,
            1.5,
            2.5,
            0.49999999999999994,
            4503599627370495.5,
            9_223_372_036_854_774_784.0,
            9_223_372_036_854_775_808.0,
            1e19,
            2e19,
            -0.5,
            -3.0,
            f64::NAN,
            f64::INFINITY,
        ];
        for &x in &special {
            assert_eq!(round_u64(x), x.round() as u64, "{x}");
        }
        for _ in 0..100_000 {
            let x = rng.unit() * 10f64.powi(rng.below(16) as i32);
            assert_eq!(round_u64(x), x.round() as u64, "{x}");
            let h = (rng.below(1 << 40) as f64) + 0.5;
            assert_eq!(round_u64(h), h.round() as u64, "{h}");
            let big = rng.unit() * 2e19;
            assert_eq!(round_u64(big), big.round() as u64, "{big}");
        }
    }
}
