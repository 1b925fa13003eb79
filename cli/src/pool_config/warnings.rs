//! What `create` and `serve` warn about in a pool's settings: spare shares the planner
//! predicts will sustain small random overwrites poorly.

use fusionraid_core::scheme::fusion::write_cost::{self, Regime};

use super::PoolFile;

impl PoolFile {
    /// One warning per volume whose (resolved) spare share is too small for sustained
    /// random overwrites (`Spare::warning`), on members of `disk_bytes`.
    pub fn spare_warnings(&self, disk_bytes: u64) -> Vec<String> {
        // Without redirection: steering (which would load or sweep curves) plays no part in sizing.
        let Ok(cfg) = self.fusion_config(disk_bytes, false, 0) else {
            return Vec::new();
        };
        self.volumes
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let cost = write_cost::random_write_cost(&cfg, i, Regime::Saturated).ok()?;
                v.spare_fraction.warning(&v.name, &cost)
            })
            .collect()
    }
}
