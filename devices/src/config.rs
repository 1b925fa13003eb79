//! Parameters of the SSD model. Every preset in [`crate::presets`] documents where each of its
//! numbers comes from; this file only says what each parameter means.

use fusionraid_core::Nanos;

use crate::dist::LatencyDist;
use crate::events::InternalEvents;
use crate::gc::{GcCosts, GcPolicy};
use crate::write_buffer::FlushSpikes;
use crate::{PAGE, xfer_ns};

/// NAND program suspend/resume, as enterprise controllers use to keep reads from waiting a
/// whole program: a read arriving during a program waits `suspend_ns` for the program to
/// pause, runs, and the program resumes later; after `max_per_program` suspensions the
/// program runs to completion and later reads wait for it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProgramSuspend {
    pub suspend_ns: Nanos,
    pub max_per_program: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SsdConfig {
    pub name: String,
    /// User-visible capacity.
    pub capacity_bytes: u64,
    /// Flash beyond the user capacity that GC may use, as a fraction of the capacity
    /// (factory over-provisioning net of what the firmware keeps for itself). Space the user
    /// leaves unwritten or trims counts on top, through the valid-data map.
    pub factory_spare: f64,

    // Front end: command processing and the host link.
    /// Command processors serving reads, a shared FIFO pool.
    pub ctrl_servers: u32,
    /// Command processors acknowledging writes (and trims), a separate pool: the measured
    /// write-only curves queue like a single server long before the read path does.
    pub ctrl_write_servers: u32,
    /// Controller time per 4 KiB page read / written (occupancy; caps small-request IOPS).
    pub ctrl_read_ns: Nanos,
    pub ctrl_write_ns: Nanos,
    /// Host link bandwidth, device-to-host and host-to-device (decimal MB/s).
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    /// Unloaded latency of a 4 KiB read, and of a 4 KiB write acknowledged from the buffer.
    pub read_latency: LatencyDist,
    pub write_latency: LatencyDist,

    // Flash back end.
    pub channels: u32,
    pub dies_per_channel: u32,
    /// Unit of a flash read: 4 KiB pages inside one flash page are read together on one die.
    /// Consecutive flash pages go to consecutive dies, so large reads fan out.
    pub flash_page_bytes: u64,
    /// Die occupancy of one flash-page read.
    pub die_read_ns: Nanos,
    /// Buffered data is programmed in units of this size, one unit per die at a time.
    pub program_unit_bytes: u64,
    pub program_ns: Nanos,
    /// Program suspend: a read reaching a die in the middle of a program may pause it.
    pub program_suspend: Option<ProgramSuspend>,
    pub block_bytes: u64,
    pub erase_ns: Nanos,

    // Write buffer.
    pub buffer_bytes: u64,
    pub flush_spikes: Option<FlushSpikes>,
    /// With power-loss protection a `Flush` returns at once; without, it waits for the
    /// buffer to drain.
    pub power_loss_protected: bool,

    pub gc: GcPolicy,
    /// Discrete internal events (erases, FTL metadata writes) that follow GC activity.
    pub events: InternalEvents,
    /// Multiplies every service time and stall (1.0 = nominal; 2.0 = twice as slow). For
    /// heterogeneous fleets and slow-peer studies.
    pub speed_factor: f64,
    pub seed: u64,
}

impl SsdConfig {
    pub fn dies(&self) -> u32 {
        self.channels * self.dies_per_channel
    }

    pub fn physical_bytes(&self) -> u64 {
        (self.capacity_bytes as f64 * (1.0 + self.factory_spare)).round() as u64
    }

    /// Program throughput of all dies together (MB/s) on a clean drive: the sustained
    /// sequential-write ceiling.
    pub fn flash_write_mb_s(&self) -> f64 {
        self.dies() as f64 * self.program_unit_bytes as f64 * 1000.0 / self.program_ns as f64
    }

    /// Ceiling of 4 KiB random reads set by the controller pool (IOPS).
    pub fn ctrl_read_iops(&self) -> f64 {
        self.ctrl_servers as f64 * 1e9 / self.ctrl_read_ns.max(1) as f64
    }

    pub fn ctrl_write_iops(&self) -> f64 {
        self.ctrl_write_servers as f64 * 1e9 / self.ctrl_write_ns.max(1) as f64
    }

    /// GC primitive costs, summed over dies (see [`GcCosts`]). With discrete erases the
    /// erase time is booked on the dies as events ([`crate::events`]), not spread over GC
    /// work, so it is left out here.
    pub fn gc_costs(&self) -> GcCosts {
        GcCosts {
            copy_ns_per_byte: self.die_read_ns as f64 / self.flash_page_bytes as f64
                + self.program_ns as f64 / self.program_unit_bytes as f64,
            erase_ns_per_byte: if self.events.discrete_erases {
                0.0
            } else {
                self.erase_ns as f64 / self.block_bytes as f64
            },
        }
    }

    /// Link transfer time of one 4 KiB page, already inside the unloaded latencies.
    pub fn page_xfer_ns(&self, write: bool) -> Nanos {
        xfer_ns(
            PAGE,
            if write {
                self.write_mb_s
            } else {
                self.read_mb_s
            },
        )
    }

    pub fn with_speed_factor(mut self, f: f64) -> Self {
        self.speed_factor = f;
        self
    }

    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    pub fn with_capacity(mut self, bytes: u64) -> Self {
        self.capacity_bytes = bytes;
        self
    }

    pub fn validate(&self) -> Result<(), String> {
        let err = |m: &str| Err(format!("ssd config '{}': {m}", self.name));
        if self.capacity_bytes < PAGE {
            return err("capacity below one page");
        }
        if !(0.0..=10.0).contains(&self.factory_spare) {
            return err("factory_spare must be in [0, 10]");
        }
        if self.ctrl_servers == 0 || self.ctrl_write_servers == 0 || self.dies() == 0 {
            return err("need at least one controller server and one die");
        }
        if self.read_mb_s <= 0.0 || self.write_mb_s <= 0.0 {
            return err("link bandwidths must be positive");
        }
        if self.flash_page_bytes < PAGE || self.program_unit_bytes < PAGE || self.block_bytes == 0 {
            return err("flash page, program unit and block must be at least one page");
        }
        if self.program_ns == 0 {
            return err("program_ns must be positive");
        }
        if self.buffer_bytes < 4 * self.program_unit_bytes {
            return err("buffer must hold at least four program units");
        }
        if !(self.speed_factor > 0.0 && self.speed_factor.is_finite()) {
            return err("speed_factor must be positive");
        }
        self.events
            .validate()
            .map_err(|e| format!("ssd config '{}': {e}", self.name))?;
        if let Some(f) = self.flush_spikes
            && (f.every_bytes == 0 || f.min_ns > f.max_ns)
        {
            return err("flush spikes need every_bytes > 0 and min <= max");
        }
        match self.gc {
            GcPolicy::Blocking {
                low_bytes,
                high_bytes,
                ..
            } if low_bytes >= high_bytes => err("GC low watermark must be below high"),
            GcPolicy::Background {
                start_bytes,
                critical_bytes,
                resume_bytes,
                max_share,
                ..
            } if !(critical_bytes < resume_bytes && resume_bytes <= start_bytes)
                || max_share < 0.0 =>
            {
                err("GC watermarks must satisfy critical < resume <= start")
            }
            _ => Ok(()),
        }
    }
}
