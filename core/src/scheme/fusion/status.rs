//! What the scheme reports about itself: each volume's `status` (space, rebuild, scrub) and
//! the debugging dump of its jobs and tables.

use super::FusionScheme;
use super::Level;
use super::jobs::Job;
use crate::engine::api::VolumeId;
use crate::engine::scheme::RebuildPhase;
use crate::scheme::VolumeStatus;
use crate::space::StripeState;

impl FusionScheme {
    /// What `status` shows of volume `v` (`Scheme::volume_status`).
    pub(super) fn status_of(&self, v: VolumeId) -> Option<VolumeStatus> {
        let vol = self.vols.get(v as usize)?;
        let phase = vol
            .rebuild
            .as_ref()
            .map(|r| r.phase(self.durable_generation()));
        let bs = vol.zone.block_size();
        let w = vol.zone.width() as u64;
        Some(VolumeStatus {
            name: vol.cfg.name.clone(),
            size_bytes: vol.cfg.size_bytes,
            level: match vol.cfg.level {
                Level::Mirror { copies } => format!("mirror x{copies}"),
                l => format!("{} {}+{}", l.name(), vol.zone.dcols(), vol.zone.nparity()),
            },
            raid_bytes: vol.stripes.count(StripeState::Raid) * w * bs,
            replicated_bytes: vol.stripes.count(StripeState::Replica) * w * bs,
            free_bytes: vol.stripes.count(StripeState::Free) * w * bs,
            conversion_backlog: vol.pairs.set_count() as u64,
            mapped_bytes: vol.mapped_bytes(),
            rebuild: match (&vol.rebuild, &vol.rebalance) {
                (Some(r), Some(b)) => Some(format!(
                    "{}; {}",
                    r.describe(vol.blocks, self.durable_generation()),
                    b.describe(vol.zone.remaps().len())
                )),
                (Some(r), None) => Some(r.describe(vol.blocks, self.durable_generation())),
                (None, Some(b)) => Some(b.describe(vol.zone.remaps().len())),
                (None, None) => None,
            }
            .map(|r| {
                // Once finished, the stale columns left belong to stripes that hold no data.
                let running = matches!(
                    phase,
                    Some(RebuildPhase::Rebuilding | RebuildPhase::Stalled)
                );
                match vol.stripes.stale_columns().columns() {
                    n if n > 0 && running => format!("{r}; {n} stale columns left"),
                    _ => r,
                }
            }),
            rebuild_phase: phase,
            stale_columns: vol.stripes.stale_columns().columns(),
            scrub: vol.scrub.as_ref().map(|s| s.describe(vol.zone.stripes())),
            // A rebalance follows the rebuild it undoes: while one runs, it is the progress.
            rebuild_progress: match (&vol.rebuild, &vol.rebalance) {
                (_, Some(b)) if b.done_at.is_none() => Some(b.progress(vol.zone.remaps().len())),
                (Some(r), _) => Some(r.progress(vol.blocks)),
                (None, b) => b.as_ref().map(|b| b.progress(vol.zone.remaps().len())),
            },
            scrub_progress: vol.scrub.as_ref().map(|s| s.progress()),
            metadata_bytes: vol.metadata_bytes(),
        })
    }

    /// Jobs and every volume's space and maintenance state (`Scheme::debug_state`).
    pub(super) fn debug_text(&self) -> String {
        let kinds: Vec<String> = self
            .jobs
            .handles()
            .into_iter()
            .filter_map(|h| self.jobs.get(h))
            .map(|j| match j {
                Job::Read(r) => format!(
                    "read(pending {}, parts {:?})",
                    r.pending,
                    r.parts
                        .iter()
                        .map(|p| (&p.mode, p.inflight))
                        .collect::<Vec<_>>()
                ),
                Job::Write(w) => format!("write(pending {}, tries {})", w.pending, w.tries),
                Job::Flush(f) => format!("flush({})", f.pending),
                Job::Convert(c) => format!("convert(pending {}, writing {})", c.pending, c.writing),
                Job::Reloc(r) => format!(
                    "reloc(reads_left {}, pending {}, writing {})",
                    r.reads_left, r.pending, r.writing
                ),
                Job::Commit(_) => "commit".to_string(),
                Job::Scrub(_) => "scrub".to_string(),
                Job::Column(_) => "column".to_string(),
                Job::Trim(t) => format!("trim(pending {})", t.pending),
                Job::Row(r) => format!("row(pending {}, parts {})", r.pending, r.parts.len()),
            })
            .collect();
        format!("jobs: {kinds:?}\n") + &self
            .vols
            .iter()
            .map(|v| {
                format!(
                    "{}: jobs {} locks held {} waiting {} space_waiters {} bg {} spare stripes {} free {} raid {} replica {} busy {} sets {} lru {} spare slots {} holes {} donors {} remaps {} stale {} reserve {} rebuild {:?}\n",
                    v.cfg.name,
                    self.jobs.len(),
                    v.locks.held(),
                    v.locks.waiting(),
                    v.space_waiters.len(),
                    v.bg_running,
                    v.stripes.spare_len(),
                    v.stripes.count(StripeState::Free),
                    v.stripes.count(StripeState::Raid),
                    v.stripes.count(StripeState::Replica),
                    v.stripes.count(StripeState::Busy),
                    v.pairs.set_count(),
                    v.pairs.lru_len(),
                    v.pairs.spare_slots(),
                    v.holes(),
                    v.stripes.count(StripeState::Donor),
                    v.zone.remaps().len(),
                    v.stripes.stale_columns().columns(),
                    v.reserve_stripes(),
                    v.rebuild
                        .as_ref()
                        .map(|r| r.describe(v.blocks, self.durable_generation()))
                )
            })
            .collect::<String>()
    }
}
