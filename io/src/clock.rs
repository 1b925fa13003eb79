//! The monotonic clock the engine and the emulated devices share. The engine never reads a
//! clock; the driver passes it `Clock::now()` with every input.

use std::time::{Duration, Instant};

use fusionraid_core::Nanos;

/// Nanoseconds since the clock was created. Copies share the same origin, so the loop, the
/// emulated members and the superblock I/O before the loop starts all agree on time.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock {
    pub fn new() -> Self {
        Clock {
            start: Instant::now(),
        }
    }

    pub fn now(&self) -> Nanos {
        // u64 nanoseconds last 584 years; saturate rather than wrap beyond that.
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Time left until `deadline`, zero if it has passed.
    pub fn until(&self, deadline: Nanos) -> Duration {
        Duration::from_nanos(deadline.saturating_sub(self.now()))
    }
}
