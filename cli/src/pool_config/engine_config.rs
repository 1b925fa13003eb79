//! What a pool file means for the engine and the members: member specs, the layout, the
//! detector and conversion policies, the FusionRAID configuration (with the reserved area
//! and `auto` spare shares resolved), and the geometry key superblocks are compared by.

use anyhow::bail;
use fusionraid_core::detector::DetectorConfig;
use fusionraid_core::meta::JournalConfig;
use fusionraid_core::scheme::fusion::{
    ConversionPolicy, FusionConfig, LayoutKind, PoolGeometry, VolumeConfig, sizing,
};
use fusionraid_io::{MemberSpec, format_size};

use super::{AUTO_LAYOUT, PoolFile, Spare};

impl PoolFile {
    pub fn specs(&self) -> anyhow::Result<Vec<MemberSpec>> {
        self.members
            .iter()
            .enumerate()
            .map(|(i, m)| MemberSpec::parse(m).map_err(|e| anyhow::anyhow!("`members[{i}]`: {e}")))
            .collect()
    }

    pub fn is_ephemeral(&self) -> bool {
        self.specs()
            .map(|s| s.iter().all(MemberSpec::is_ephemeral))
            .unwrap_or(false)
    }

    /// The layout `auto` stands for on this pool: MOLS where it lays out every volume (a
    /// prime-power number of SSD members, every stripe narrower than the pool), the
    /// permutation layout otherwise (any member count, stripes as wide as the pool), so
    /// three drives take a RAID5 2+1 volume and six drives any width without a setting.
    pub fn resolved_layout(&self) -> String {
        if self.layout != AUTO_LAYOUT {
            return self.layout.clone();
        }
        let ssds = self.members.len().saturating_sub(self.hdd_members.len());
        let mols = self
            .volumes
            .iter()
            .all(|v| fusionraid_core::layout::MolsLayout::new(ssds, v.stripe_width()).is_ok());
        if mols { "mols" } else { "permutation" }.into()
    }

    pub fn layout_kind(&self) -> anyhow::Result<LayoutKind> {
        let mut k: LayoutKind = self
            .resolved_layout()
            .parse()
            .map_err(|e: String| anyhow::anyhow!("`layout`: {e}"))?;
        if let LayoutKind::Permutation { seed } = &mut k {
            *seed ^= self.seed;
        }
        Ok(k)
    }

    pub fn detector_config(&self) -> anyhow::Result<DetectorConfig> {
        let d = &self.detector;
        let mut c = match d.preset.as_str() {
            "dc" | "datacenter" => DetectorConfig::paper_dc(),
            "consumer" => DetectorConfig::paper_consumer(),
            other => bail!("`detector.preset`: unknown preset '{other}' (dc, consumer)"),
        };
        if let Some(s) = d.slot_us {
            c.slot_ns = s.saturating_mul(1000);
        }
        if let Some(w) = d.window_slots {
            c.window_slots = w;
        }
        if let Some(x) = d.x_high {
            c.x_high = x;
        }
        if let Some(x) = d.x_low {
            c.x_low = x;
        }
        c.validate()
            .map_err(|e| anyhow::anyhow!("`detector`: {e}"))?;
        Ok(c)
    }

    fn conversion_policy(&self) -> ConversionPolicy {
        let c = &self.conversion;
        let mut p = ConversionPolicy {
            enabled: c.enabled,
            ..ConversionPolicy::default()
        };
        if let Some(v) = c.spare_low_water {
            p.spare_low_water = v;
        }
        if let Some(v) = c.replicated_high_water {
            p.replicated_high_water = v;
        }
        if let Some(ms) = c.idle_ms {
            p.idle_ns = (ms > 0).then(|| ms * 1_000_000);
        }
        if let Some(v) = c.pause_mb_per_s {
            p.pause_fg_bytes_per_sec = v * 1e6;
        }
        if let Some(v) = c.max_concurrent {
            p.max_concurrent = v;
        }
        p
    }

    /// The FusionRAID configuration for members of `disk_bytes` each.
    /// Bytes reserved at the start of every member: the configured value, or the
    /// superblock plus what the journal and the largest checkpoint need, in whole MiB.
    pub fn resolved_data_offset(&self) -> anyhow::Result<u64> {
        if let Some(o) = self.data_offset {
            return Ok(o.0);
        }
        let mut cfg = self.fusion_config_at(0, 0, true, 0)?;
        cfg.journal.get_or_insert_with(Default::default);
        let end = fusionraid_core::scheme::fusion::durable::meta_layout(&cfg)
            .map_or(1 << 20, |l| l.end());
        if end > u64::MAX / 2 {
            bail!("the volumes are too large for any member: their metadata alone would not fit");
        }
        Ok(end.div_ceil(1 << 20).max(1) << 20)
    }

    /// The FusionRAID configuration of this pool on members of `disk_bytes`; `pool_id`
    /// marks its journal (from the superblock's uuid).
    pub fn fusion_config(
        &self,
        disk_bytes: u64,
        redirect: bool,
        pool_id: u64,
    ) -> anyhow::Result<FusionConfig> {
        self.fusion_config_at(disk_bytes, self.resolved_data_offset()?, redirect, pool_id)
    }

    fn fusion_config_at(
        &self,
        disk_bytes: u64,
        data_offset: u64,
        redirect: bool,
        pool_id: u64,
    ) -> anyhow::Result<FusionConfig> {
        let pool = PoolGeometry {
            disks: self.members.len(),
            disk_bytes,
            block_size: self.block_size.0,
            data_offset,
            layout: self.layout_kind()?,
            hdds: self.hdd_members.iter().map(|&i| i as u32).collect(),
        };
        let volumes = self
            .volumes
            .iter()
            .map(|v| {
                let mut c = VolumeConfig::new(
                    &v.name,
                    v.parsed_level().map_err(|e: String| anyhow::anyhow!(e))?,
                    v.stripe_width(),
                    v.size.0,
                );
                c.replicated_fraction = v.replicated_fraction;
                c.spare_fraction = v.spare_fraction.share().unwrap_or(sizing::AUTO_SPARE_MAX);
                Ok(c)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut f = FusionConfig::new(pool, volumes);
        let auto: Vec<bool> = self
            .volumes
            .iter()
            .map(|v| v.spare_fraction == Spare::Auto)
            .collect();
        // Without members (sizing the metadata area) the cap stands in: the metadata area
        // is the same for every share up to it (`ImageBound::Zone`).
        if disk_bytes > 0 && auto.contains(&true) {
            sizing::fill_auto_spare(&mut f, &auto)?;
        }
        f.redirect = redirect;
        f.conversion = self.conversion_policy();
        f.hedge_ns = self.hedge_us.map(|u| u * 1000);
        // Hedging a write, or rebuilding a read around a member that looks stalled, is a
        // redirection: Fusion-ND (redirection off) never does it.
        f.raid_hedge_ns = self.raid_hedge_us.filter(|_| redirect).map(|u| u * 1000);
        f.write_hedge_ns = self.write_hedge_us.filter(|_| redirect).map(|u| u * 1000);
        f.wear_gap = self.wear_gap;
        f.gather_ns = (self.gather_us > 0).then_some(self.gather_us * 1000);
        f.row_ns = (self.row_us > 0).then_some(self.row_us * 1000);
        f.raid_threshold = self.raid_threshold;
        if self.trim {
            f.trim = fusionraid_core::scheme::fusion::TrimPolicy::on();
        }
        f.journal = self.metadata.journal.then(|| JournalConfig {
            pool_id,
            journal_bytes: self.metadata.journal_size.0,
            commit_interval_ns: self.metadata.commit_interval_ms * 1_000_000,
            image_bound: self.image_bound,
        });
        if self.offload.enabled {
            f.offload = Some(fusionraid_core::scheme::fusion::OffloadConfig {
                queue_threshold: self.offload.queue_threshold,
                min_outstanding: self.offload.min_outstanding,
                log_bytes: self.offload.log_size.map(|s| s.0),
            });
        }
        if redirect && let Some(steer) = self.steer_config("fusionraid")? {
            f.steer = Some(steer);
            f.curves = self.member_curves()?;
        }
        Ok(f)
    }

    /// The same pool file with every `auto` spare share resolved for members of
    /// `disk_bytes` (what `create` stores).
    pub fn with_spare_resolved(&self, disk_bytes: u64) -> anyhow::Result<PoolFile> {
        let f = self.fusion_config(disk_bytes, true, 0)?;
        let mut out = self.clone();
        for (v, c) in out.volumes.iter_mut().zip(&f.volumes) {
            v.spare_fraction = Spare::Share(c.spare_fraction);
        }
        Ok(out)
    }

    /// The part `create` fixes: a pool file differing from the stored one here describes
    /// another pool.
    pub fn geometry_key(&self) -> String {
        let vols: Vec<String> = self
            .volumes
            .iter()
            // The fractions size each volume's zone, and zones lie one after another on
            // the members: changing either moves every later volume's data.
            .map(|v| {
                format!(
                    "{}:{}:{}:{}:rep={}:spare={}{}",
                    v.name,
                    v.level,
                    v.stripe_width(),
                    v.size.0,
                    v.replicated_fraction,
                    v.spare_fraction,
                    v.copies.map_or(String::new(), |c| format!(":copies={c}"))
                )
            })
            .collect();
        // HDD members hold no stripes: moving one changes every volume's layout.
        let hdds = if self.hdd_members.is_empty() {
            String::new()
        } else {
            format!(" hdds={:?}", self.hdd_members)
        };
        format!(
            "members={}{hdds} block={} journal={} layout={} volumes=[{}]",
            self.members.len(),
            self.block_size.0,
            if self.metadata.journal {
                format_size(self.metadata.journal_size.0)
            } else {
                "off".into()
            },
            self.layout,
            vols.join(",")
        )
    }
}
