//! What a scenario must satisfy before it runs: the checks the scheme and device builders
//! do not make.

use super::*;

/// Most requests a generated load may offer over a run: each is simulated (events, state,
/// statistics), so a mistyped rate (`iops=1e12`) would otherwise run for hours.
const MAX_OFFERED_REQUESTS: f64 = 1e9;

impl Scenario {
    /// Requests the generators offer over the duration (None for a trace replayed alone,
    /// whose length is its own; a looped trace's own requests are not counted).
    fn offered_requests(&self) -> Option<f64> {
        let secs = self.duration_ns? as f64 / 1e9;
        let per_sec = match &self.load {
            Load::Workloads { list, scale } | Load::TraceMix { list, scale, .. } => {
                list.iter().map(|w| w.spec().iops).sum::<f64>() * scale
            }
            Load::Synthetic { tenants } => tenants.iter().map(|t| t.iops).sum(),
            Load::Trace { .. } => return None,
        };
        Some(per_sec * secs)
    }

    /// Each fail-slow member once, inside the pool.
    fn validate_fail_slow(&self) -> Result<(), String> {
        for (i, &(d, _)) in self.pool.fail_slow.iter().enumerate() {
            if self.pool.fail_slow[..i].iter().any(|p| p.0 == d) {
                return Err(format!("disk {d} is given two fail-slow behaviours"));
            }
            if d >= self.pool.disks {
                return Err(format!(
                    "fail-slow disk {d}, but the pool has {} disks",
                    self.pool.disks
                ));
            }
        }
        Ok(())
    }

    /// Volume levels name volumes the load has, and only FusionRAID schemes mix levels.
    fn check_volume_levels(&self) -> Result<(), String> {
        if self.volume_levels.is_empty() {
            return Ok(());
        }
        if !schemes::is_fusion(&self.scheme) {
            return Err(format!(
                "per-volume levels are for FusionRAID schemes, not {}",
                self.scheme
            ));
        }
        let names: Vec<String> = self.volume_configs().into_iter().map(|v| v.name).collect();
        match self.volume_levels.iter().find(|(n, _)| !names.contains(n)) {
            Some((n, _)) => Err(format!(
                "no volume '{n}' to give a level (volumes: {})",
                names.join(", ")
            )),
            None => Ok(()),
        }
    }

    /// Checks what the scheme and device builders do not.
    pub fn validate(&self) -> Result<(), String> {
        if self.pool.disks < 2 {
            return Err(format!("need at least 2 disks, got {}", self.pool.disks));
        }
        self.pool.member_devices()?;
        if !(0.0..=1.0).contains(&self.pool.spare) {
            return Err(format!("spare {} must be in [0, 1]", self.pool.spare));
        }
        if let Some(s) = self.volume_spare
            && !(0.0..=fusionraid_core::scheme::fusion::sizing::AUTO_SPARE_MAX).contains(&s)
        {
            return Err(format!(
                "volume spare share {s} must be in [0, {}]",
                fusionraid_core::scheme::fusion::sizing::AUTO_SPARE_MAX
            ));
        }
        if self.max_requests == 0 {
            return Err("max_requests must be at least 1".into());
        }
        for (i, &(d, f)) in self.pool.speed_factors.iter().enumerate() {
            // The fleet applies them in order, so a second factor for a disk silently
            // replaced the first (while the report listed both).
            if let Some(&(_, g)) = self.pool.speed_factors[..i].iter().find(|p| p.0 == d) {
                return Err(format!("disk {d} is given two speed factors ({g} and {f})"));
            }
            if d >= self.pool.disks {
                return Err(format!(
                    "speed factor for disk {d}, but the pool has {} disks",
                    self.pool.disks
                ));
            }
            if !(f.is_finite() && f > 0.0) {
                return Err(format!("speed factor {f} for disk {d} must be positive"));
            }
            if f > MAX_SPEED_FACTOR {
                // `{}` would print 1e300 with all its 301 digits.
                let shown = if f < 1e6 {
                    f.to_string()
                } else {
                    format!("{f:e}")
                };
                return Err(format!(
                    "speed factor {shown} for disk {d} must be at most {MAX_SPEED_FACTOR} (a \
                     member a thousand times slower than its preset)"
                ));
            }
        }
        self.validate_fail_slow()?;
        if let Some(sp) = self.pool.spikes {
            sp.validate().map_err(|e| format!("spikes {sp}: {e}"))?;
        }
        match &self.load {
            Load::Workloads { list, scale } => {
                if list.is_empty() {
                    return Err("no workloads given".into());
                }
                if !(scale.is_finite() && *scale > 0.0) {
                    return Err(format!("load scale {scale} must be positive"));
                }
                if self.duration_ns.is_none() {
                    return Err("workload generators need a duration".into());
                }
            }
            Load::Synthetic { tenants } => validate_tenants(tenants, self.duration_ns)?,
            Load::Trace { .. } => {}
            Load::TraceMix {
                list, scale, speed, ..
            } => {
                if !(scale.is_finite() && *scale > 0.0) {
                    return Err(format!("load scale {scale} must be positive"));
                }
                if !(speed.is_finite() && *speed > 0.0) {
                    return Err(format!("trace speed {speed} must be positive"));
                }
                if self.duration_ns.is_none() {
                    return Err("a looped trace needs a duration".into());
                }
                let mut seen = list.clone();
                seen.sort();
                seen.dedup();
                if seen.len() != list.len() {
                    return Err("each workload may appear once next to the trace".into());
                }
            }
        }
        if let Some(d) = self.duration_ns
            && d == 0
        {
            return Err("duration must be positive".into());
        }
        // Requests arriving before the warm-up ends are left out of the statistics: a warm-up
        // as long as the run would give a report of zero latencies and zero IOPS.
        if let Some(d) = self.duration_ns
            && self.warmup_ns >= d
        {
            return Err(format!(
                "warm-up ({} s) must be shorter than the duration ({} s): no request would \
                 be measured",
                self.warmup_ns as f64 / 1e9,
                d as f64 / 1e9
            ));
        }
        if self.duration_ns.unwrap_or(0).max(self.warmup_ns) > MAX_VIRTUAL_NS {
            return Err("duration and warm-up must be at most a year of virtual time".into());
        }
        if let Some(n) = self.offered_requests()
            && n > MAX_OFFERED_REQUESTS
        {
            return Err(format!(
                "the load offers about {n:.3e} requests in {} s, more than the {:.0e} a run \
                 may take: lower the load, the rates or the duration",
                self.duration_ns.unwrap_or(0) as f64 / 1e9,
                MAX_OFFERED_REQUESTS
            ));
        }
        if self.volume_bytes.is_some_and(|b| b > MAX_VOLUME_BYTES) {
            return Err(format!(
                "volume size must be at most {} EiB",
                MAX_VOLUME_BYTES >> 60
            ));
        }
        self.check_volume_levels()?;
        let logical: u64 = self.volume_configs().iter().map(|v| v.size_bytes).sum();
        if !self.size_only && self.prefill && logical > DATA_PREFILL_LIMIT {
            return Err(format!(
                "data mode keeps member contents in memory (about 50 bytes per 4 KiB page), \
                 and prefilling {} GiB of volumes would take several GB; use smaller volumes \
                 (at most 8 GiB in all, e.g. 2 GiB each), no prefill, or size-only mode",
                logical >> 30
            ));
        }
        self.detector_config().validate()
    }
}
