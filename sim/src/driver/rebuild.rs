//! A member failure and the rebuild that follows, in virtual time: how long the pool needs to
//! restore redundancy (docs/BENCHMARKS.md, rebuild time vs pool size).

use fusionraid_core::engine::scheme::RebuildPhase;
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
        let t0 = self.fail_now(disk);
        self.run_until_rebuilt(t0, limit_ns)
    }

    /// As `rebuild_after_failure`, but a blank device takes the failed member's slot at once,
    /// so what was on it is rebuilt in place onto that one device instead of onto spare space
    /// spread over the survivors.
    pub fn rebuild_in_place_after_failure(
        &mut self,
        disk: usize,
        limit_ns: Nanos,
    ) -> Result<(Nanos, Vec<String>), SimError> {
        let t0 = self.fail_now(disk);
        // The old device's I/O in flight must end first (it fails at once in the models).
        while let Err(e) = self.engine.replace_disk(DiskId(disk as u32), self.now) {
            let Some((t, ev)) = self.events.pop() else {
                return Err(self.stuck(&format!("replace refused: {e}")));
            };
            self.handle_event(t, ev)?;
        }
        self.pump();
        self.run_until_rebuilt(t0, limit_ns)
    }

    /// Fails member `disk` now; returns when.
    fn fail_now(&mut self, disk: usize) -> Nanos {
        self.engine.fail_disk(DiskId(disk as u32), self.now);
        self.pump();
        self.now
    }

    fn run_until_rebuilt(
        &mut self,
        t0: Nanos,
        limit_ns: Nanos,
    ) -> Result<(Nanos, Vec<String>), SimError> {
        loop {
            let status: Vec<_> = (0..self.engine.volume_count() as u32)
                .filter_map(|v| self.engine.volume_status(v))
                .filter(|s| s.rebuild_phase.is_some())
                .collect();
            let reports: Vec<String> = status.iter().filter_map(|s| s.rebuild.clone()).collect();
            if !status.is_empty()
                && status
                    .iter()
                    .all(|s| s.rebuild_phase == Some(RebuildPhase::Done))
            {
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
