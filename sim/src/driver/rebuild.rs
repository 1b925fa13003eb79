//! A member failure and the rebuild that follows, in virtual time: how long the pool needs to
//! restore redundancy (docs/BENCHMARKS.md, rebuild time vs pool size).

use fusionraid_core::{DiskId, Nanos};

use super::{Sim, SimError};

impl Sim {
    /// Fails member `disk` now and runs, with no user load, until every volume reports its
    /// rebuild done (at most `limit_ns` of virtual time). Returns how long the rebuild took
    /// and each volume's rebuild report.
    pub fn rebuild_after_failure(
        &mut self,
        disk: usize,
        limit_ns: Nanos,
    ) -> Result<(Nanos, Vec<String>), SimError> {
        let t0 = self.now;
        self.engine.fail_disk(DiskId(disk as u32), self.now);
        self.pump();
        loop {
            let reports: Vec<String> = (0..self.engine.volume_count() as u32)
                .filter_map(|v| self.engine.volume_status(v)?.rebuild)
                .collect();
            if !reports.is_empty() && reports.iter().all(|r| r.starts_with("done")) {
                return Ok((self.now - t0, reports));
            }
            if self.now - t0 > limit_ns {
                return Err(self.stuck(&format!("rebuild unfinished: {reports:?}")));
            }
            let Some((t, ev)) = self.events.pop() else {
                return Err(self.stuck("rebuild: no event pending"));
            };
            self.handle_event(t, ev)?;
        }
    }
}
