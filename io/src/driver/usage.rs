//! What the users did to each volume, as they saw it: commands by kind, their latency from
//! admission to reply (NBD commands split into several engine requests count once), bytes,
//! and commands that failed.

use serde::{Deserialize, Serialize};

use super::commands::{Class, Finished};
use super::latency::LatencyHistogram;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VolumeIo {
    pub read: LatencyHistogram,
    pub write: LatencyHistogram,
    pub flush: LatencyHistogram,
    /// Trims.
    pub other: LatencyHistogram,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub errors: u64,
}

impl VolumeIo {
    pub fn record(&mut self, f: &Finished) {
        let h = match f.class {
            Class::Read => {
                self.bytes_read += f.bytes;
                &mut self.read
            }
            Class::Write => {
                self.bytes_written += f.bytes;
                &mut self.write
            }
            Class::Flush => &mut self.flush,
            Class::Other => &mut self.other,
        };
        h.record(f.latency);
        if f.failed {
            self.errors += 1;
        }
    }

    /// Commands of every kind.
    pub fn requests(&self) -> u64 {
        self.read.count + self.write.count + self.flush.count + self.other.count
    }
}
