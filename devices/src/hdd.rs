//! A simple hard-disk model for hybrid pools (SeRW-style write offload to HDD logs).
//!
//! One actuator, FIFO service (no command reordering), a head position:
//! - seek time grows with the square root of the distance travelled (the arm accelerates
//!   then decelerates), from `track_to_track_ns` for the shortest move to `full_stroke_ns`
//!   across the whole surface; LBA is taken as proportional to radius;
//! - rotational latency is the time for the target sector to come under the head: the
//!   platter's angle is a function of absolute time, the sector's angle of its offset within
//!   its track, so the model stays deterministic without any random draw;
//! - transfer runs at the zone's media rate, falling linearly from the outer edge (LBA 0) to
//!   the inner edge (zoned recording);
//! - a request continuing exactly where the previous one ended needs no positioning (the
//!   drive's track buffer / read-ahead covers it): this is what makes HDD logs fast.
//!
//! All numbers in [`HddConfig::desktop_7200`] are typical 3.5-inch 7200 rpm datasheet values,
//! not calibrated against any measurement here.

use fusionraid_core::Nanos;

use crate::{DeviceModel, DeviceStats, OpKind, xfer_ns};

#[derive(Clone, Debug, PartialEq)]
pub struct HddConfig {
    pub name: String,
    pub capacity_bytes: u64,
    pub rpm: f64,
    pub track_to_track_ns: Nanos,
    pub full_stroke_ns: Nanos,
    /// Media rate at the outer and inner edge (decimal MB/s).
    pub outer_mb_s: f64,
    pub inner_mb_s: f64,
    /// Command processing per request.
    pub command_ns: Nanos,
    pub speed_factor: f64,
}

impl HddConfig {
    /// A 2 TB 7200 rpm desktop drive: 1 ms track-to-track, 15 ms full stroke (so about
    /// 8.5 ms for a seek between two random positions, the usual datasheet "average seek"),
    /// 220 -> 110 MB/s media rate, 50 us command overhead.
    pub fn desktop_7200() -> Self {
        HddConfig {
            name: "hdd7200".into(),
            capacity_bytes: 2_000_000_000_000,
            rpm: 7200.0,
            track_to_track_ns: 1_000_000,
            full_stroke_ns: 15_000_000,
            outer_mb_s: 220.0,
            inner_mb_s: 110.0,
            command_ns: 50_000,
            speed_factor: 1.0,
        }
    }

    pub fn rotation_ns(&self) -> f64 {
        60e9 / self.rpm
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.capacity_bytes == 0 || self.rpm <= 0.0 {
            return Err(format!(
                "hdd '{}': capacity and rpm must be positive",
                self.name
            ));
        }
        if self.track_to_track_ns > self.full_stroke_ns {
            return Err(format!(
                "hdd '{}': track-to-track above full stroke",
                self.name
            ));
        }
        if self.outer_mb_s <= 0.0 || self.inner_mb_s <= 0.0 || self.speed_factor <= 0.0 {
            return Err(format!("hdd '{}': rates must be positive", self.name));
        }
        Ok(())
    }
}

#[derive(Clone)]
pub struct HddModel {
    cfg: HddConfig,
    head: u64,
    busy_until: Nanos,
    stats: DeviceStats,
    last_now: Nanos,
}

impl HddModel {
    pub fn new(cfg: HddConfig) -> Self {
        cfg.validate().unwrap_or_else(|e| panic!("{e}"));
        HddModel {
            cfg,
            head: 0,
            busy_until: 0,
            stats: DeviceStats::default(),
            last_now: 0,
        }
    }

    pub fn config(&self) -> &HddConfig {
        &self.cfg
    }

    /// Media rate at `offset` (MB/s).
    pub fn zone_mb_s(&self, offset: u64) -> f64 {
        let r = (offset as f64 / self.cfg.capacity_bytes as f64).clamp(0.0, 1.0);
        self.cfg.outer_mb_s + (self.cfg.inner_mb_s - self.cfg.outer_mb_s) * r
    }

    /// Seek time between two byte offsets.
    pub fn seek_ns(&self, from: u64, to: u64) -> Nanos {
        if from == to {
            return 0;
        }
        let d = from.abs_diff(to) as f64 / self.cfg.capacity_bytes as f64;
        let t2t = self.cfg.track_to_track_ns as f64;
        let full = self.cfg.full_stroke_ns as f64;
        (t2t + (full - t2t) * d.clamp(0.0, 1.0).sqrt()).round() as Nanos
    }

    /// Wait at time `t` until the sector at `offset` passes under the head.
    pub fn rotational_ns(&self, t: Nanos, offset: u64) -> Nanos {
        let rev = self.cfg.rotation_ns();
        let track_bytes = self.zone_mb_s(offset) * 1e6 * rev / 1e9;
        let sector_angle = (offset as f64 % track_bytes) / track_bytes;
        let head_angle = (t as f64 % rev) / rev;
        let gap = (sector_angle - head_angle).rem_euclid(1.0);
        (gap * rev).round() as Nanos
    }

    fn scale(&self, ns: Nanos) -> Nanos {
        (ns as f64 * self.cfg.speed_factor).round() as Nanos
    }
}

impl DeviceModel for HddModel {
    fn clone_box(&self) -> Option<Box<dyn DeviceModel>> {
        Some(Box::new(self.clone()))
    }

    fn submit(&mut self, now: Nanos, kind: OpKind, offset: u64, len: u64) -> Nanos {
        debug_assert!(now >= self.last_now, "time went backwards");
        let now = now.max(self.last_now);
        self.last_now = now;
        let start = now.max(self.busy_until) + self.scale(self.cfg.command_ns);
        let done = match kind {
            OpKind::Trim | OpKind::Flush => start,
            OpKind::Read | OpKind::Write => {
                let offset = offset.min(self.cfg.capacity_bytes.saturating_sub(len));
                let positioned = if offset == self.head {
                    start
                } else {
                    let after_seek = start + self.scale(self.seek_ns(self.head, offset));
                    after_seek + self.scale(self.rotational_ns(after_seek, offset))
                };
                self.head = offset + len;
                positioned + self.scale(xfer_ns(len, self.zone_mb_s(offset)))
            }
        };
        self.busy_until = done;
        match kind {
            OpKind::Read => {
                self.stats.reads += 1;
                self.stats.bytes_read += len;
            }
            OpKind::Write => {
                self.stats.writes += 1;
                self.stats.bytes_written += len;
                self.stats.flash_bytes_written += len;
            }
            OpKind::Trim => self.stats.trims += 1,
            OpKind::Flush => self.stats.flushes += 1,
        }
        self.stats.busy_latency_ns += (done - now) as u128;
        done
    }

    fn capacity_bytes(&self) -> u64 {
        self.cfg.capacity_bytes
    }

    fn stats(&self) -> DeviceStats {
        self.stats
    }

    fn name(&self) -> &str {
        &self.cfg.name
    }

    fn set_speed_factor(&mut self, factor: f64) {
        assert!(
            factor > 0.0 && factor.is_finite(),
            "speed factor must be positive"
        );
        self.cfg.speed_factor = factor;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seek_grows_with_distance() {
        let m = HddModel::new(HddConfig::desktop_7200());
        let cap = m.config().capacity_bytes;
        assert_eq!(m.seek_ns(5, 5), 0);
        let short = m.seek_ns(0, cap / 10_000);
        let third = m.seek_ns(0, cap / 3);
        let full = m.seek_ns(0, cap);
        assert!(short < 1_200_000, "{short}");
        assert!(short < third && third < full);
        assert_eq!(full, 15_000_000);
        // Square-root profile: a third of the stroke costs well over a third of the time.
        assert!(third > 8_000_000 && third < 10_500_000, "{third}");
    }

    #[test]
    fn rotational_wait_is_below_one_revolution_and_deterministic() {
        let m = HddModel::new(HddConfig::desktop_7200());
        let rev = m.config().rotation_ns();
        for i in 0..1000u64 {
            let w = m.rotational_ns(i * 123_457, i * 7_777_777);
            assert!((w as f64) < rev + 1.0);
            assert_eq!(w, m.rotational_ns(i * 123_457, i * 7_777_777));
        }
    }

    #[test]
    fn random_io_costs_milliseconds_sequential_runs_at_media_rate() {
        let mut m = HddModel::new(HddConfig::desktop_7200());
        let cap = m.capacity_bytes();
        let mut rng = fusionraid_core::rng::Rng::new(9);
        let mut t = 0;
        let n = 2000;
        for _ in 0..n {
            let off = rng.below(cap / 4096) * 4096;
            t = m.submit(t, OpKind::Read, off, 4096);
        }
        let mean_ms = t as f64 / n as f64 / 1e6;
        // Average seek (E[sqrt|x - y|] = 8/15 of the stroke range: 8.5 ms) plus half a
        // revolution (4.2 ms): about 13 ms per random read.
        assert!(mean_ms > 10.0 && mean_ms < 20.0, "{mean_ms}");

        let mut m = HddModel::new(HddConfig::desktop_7200());
        let mut t = 0;
        let len = 1 << 20;
        for i in 0..200 {
            t = m.submit(t, OpKind::Write, i * len, len);
        }
        let mb_s = 200.0 * len as f64 / (t as f64 / 1e3);
        assert!(mb_s > 180.0 && mb_s < 221.0, "{mb_s}");
    }
}
