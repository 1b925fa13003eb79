//! What a pool file's `[steer]` section means: the mechanisms steering runs and each member's
//! load-latency curves (from a profile directory by serial, or swept from an emulated
//! member's device model).

use std::path::Path;

use anyhow::{Context, bail};
use fusionraid_core::steer::{DeviceCurves, SteerConfig};
use fusionraid_io::MemberSpec;

use super::PoolFile;

/// Mechanisms when the pool file names none.
fn default_mechanisms(scheme: &str) -> &'static [&'static str] {
    if scheme == "sandook" {
        &["weights", "segregation", "congestion"]
    } else {
        &["weights", "congestion"]
    }
}

impl PoolFile {
    /// Steering for `scheme`, or None when it does not steer.
    pub fn steer_config(&self, scheme: &str) -> anyhow::Result<Option<SteerConfig>> {
        let st = &self.steer;
        if scheme != "sandook" && !(scheme == "fusionraid" && st.enabled) {
            return Ok(None);
        }
        let names: Vec<&str> = match &st.mechanisms {
            Some(m) => m.iter().map(String::as_str).collect(),
            None => default_mechanisms(scheme).to_vec(),
        };
        let c = SteerConfig::with_mechanisms(names)
            .map_err(|e| anyhow::anyhow!("`steer.mechanisms`: {e}"))?;
        Ok(Some(c))
    }

    /// Each member's curves, in member order (None: unknown).
    pub fn member_curves(&self) -> anyhow::Result<Vec<Option<DeviceCurves>>> {
        let st = &self.steer;
        if st.serials.len() > self.members.len() {
            bail!(
                "`steer.serials` lists {} serials for {} members",
                st.serials.len(),
                self.members.len()
            );
        }
        if st.serials.iter().any(|s| !s.is_empty()) && st.profiles.is_none() {
            bail!("`steer.serials` needs `steer.profiles`, the directory they are profiled in");
        }
        let specs = self.specs()?;
        (0..self.members.len())
            .map(|i| match st.serials.get(i).filter(|s| !s.is_empty()) {
                Some(serial) => {
                    let dir = Path::new(st.profiles.as_deref().unwrap_or_default());
                    fusionraid_devices::curves::load_serial(dir, serial)
                        .map(Some)
                        .map_err(anyhow::Error::msg)
                        .with_context(|| format!("`steer.serials[{i}]`"))
                }
                None => Ok(swept(&specs[i])),
            })
            .collect()
    }
}

/// An emulated member's curves, swept from its model as Sandook profiles a drive.
fn swept(spec: &MemberSpec) -> Option<DeviceCurves> {
    let MemberSpec::Emu { preset, .. } = spec else {
        return None;
    };
    let o = fusionraid_devices::curves::SweepOptions::default();
    fusionraid_devices::curves::sweep_preset(preset, &o).ok()
}
