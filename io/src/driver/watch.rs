//! Watches the engine for state changes between turns and logs each one as it happens
//! (one `tracing` line each): a member failing, spiking and coming back, a rebuild or
//! rebalance moving from phase to phase, a scrub finishing, integrity findings.
//!
//! The engine changes these states inside its inputs and tells nobody (it is sans-IO and
//! logs nothing). Looking at every member after every turn costs a few loads per member;
//! volumes' progress strings cost more to build, so they are looked at a few times a second.

use fusionraid_core::engine::scheme::RebuildPhase;
use fusionraid_core::{DiskId, Engine, Nanos};

/// How often volumes' rebuild and scrub states are compared.
const VOLUME_EVERY_NS: Nanos = 250_000_000;
/// A member that spiked is logged back only after this long without a spike. Consumer SSDs
/// under load spike dozens of times a second, each for milliseconds: one line per spike
/// would drown the log, so a log line covers an episode of spikes (the metrics count each).
const EPISODE_QUIET_NS: Nanos = 2_000_000_000;

#[derive(Clone, Default)]
struct MemberSeen {
    failed: bool,
    /// The detector's count of spikes, to notice one that began and ended within a turn.
    spikes: u64,
    /// The episode of spikes being logged.
    episode: Option<Episode>,
    /// The member's latest device error: the engine fails a member on one without saying
    /// which (it keeps none), and "member failed" alone left the operator guessing between
    /// a full filesystem, a dead disk and a lost connection.
    last_error: Option<String>,
}

#[derive(Clone, Copy)]
struct Episode {
    began: Nanos,
    spikes_before: u64,
    unresponsive_before: u64,
    last_end: Nanos,
}

#[derive(Clone, Default)]
struct VolumeSeen {
    rebuild: Option<String>,
    scrub: Option<String>,
    /// A rebuild, rebalance or scrub is under way (or committing): keep looking.
    active: bool,
}

#[derive(Default)]
pub(crate) struct Watch {
    members: Vec<MemberSeen>,
    volumes: Vec<VolumeSeen>,
    next_volume_check: Nanos,
    checksum_errors: u64,
    unrecoverable_pages: u64,
}

/// The phase of a rebuild or scrub description: its first word or two ("rebuilding",
/// "committing", "done", "rebalance done", "scrubbing blocks"...). Progress within a phase
/// is not a state change.
fn phase(s: &str) -> &str {
    s.split([':', ';'])
        .next()
        .unwrap_or(s)
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == '%' || c == ' ')
}

impl Watch {
    pub fn new(members: usize) -> Self {
        Watch {
            members: vec![MemberSeen::default(); members],
            ..Watch::default()
        }
    }

    /// When the watch must look again even if nothing else happens, so an idle pool still
    /// logs the end of a spike episode, a rebuild or a scrub when it happens (the loop
    /// thread sleeps until the earliest deadline).
    pub fn next_deadline(&self) -> Option<Nanos> {
        let episodes = self
            .members
            .iter()
            .filter_map(|m| m.episode.map(|e| e.last_end + EPISODE_QUIET_NS));
        let volumes = self
            .volumes
            .iter()
            .any(|v| v.active)
            .then_some(self.next_volume_check);
        episodes.chain(volumes).min()
    }

    /// A new device took slot `i`.
    pub fn reset(&mut self, i: usize) {
        if let Some(m) = self.members.get_mut(i) {
            *m = MemberSeen::default();
        }
    }

    /// Member `i` answered an I/O with `error`; the failure line, if it fails, names it.
    pub fn device_error(&mut self, i: usize, error: &str) {
        if let Some(m) = self.members.get_mut(i) {
            m.last_error = Some(error.to_string());
        }
    }

    /// After a turn: compare every member with what was seen before. Returns the members
    /// failed since the last look.
    pub fn members(&mut self, engine: &Engine, names: &[String], now: Nanos) -> Vec<usize> {
        let mut newly_failed = Vec::new();
        let disks = engine.disks();
        for (i, seen) in self.members.iter_mut().enumerate() {
            let d = disks.get(DiskId(i as u32));
            let name = names.get(i).map_or("?", String::as_str);
            if d.failed != seen.failed {
                seen.failed = d.failed;
                if d.failed {
                    newly_failed.push(i);
                    match &seen.last_error {
                        Some(error) => tracing::error!(member = i, name, error, "member failed"),
                        None => tracing::error!(member = i, name, "member failed"),
                    }
                }
            }
            let spiking = d.detector.is_unresponsive() && !d.failed;
            let spikes = d.detector.transitions();
            // A spike that began and ended within one turn shows only in the count.
            let spiked = spiking || spikes > seen.spikes;
            seen.spikes = spikes;
            match &mut seen.episode {
                None if spiked => {
                    seen.episode = Some(Episode {
                        began: now,
                        spikes_before: spikes.saturating_sub(1),
                        unresponsive_before: d.detector.unresponsive_ns(now),
                        last_end: now,
                    });
                    tracing::info!(member = i, name, "member spiking: steering I/O around it");
                }
                Some(e) if spiked => e.last_end = now,
                Some(e) if now.saturating_sub(e.last_end) >= EPISODE_QUIET_NS || d.failed => {
                    let e = *e;
                    seen.episode = None;
                    if !d.failed {
                        tracing::info!(
                            member = i,
                            name,
                            spikes = spikes - e.spikes_before,
                            over_ms = e.last_end.saturating_sub(e.began) / 1_000_000,
                            unresponsive_ms = d
                                .detector
                                .unresponsive_ns(now)
                                .saturating_sub(e.unresponsive_before)
                                / 1_000_000,
                            "member back: no spike for 2 s"
                        );
                    }
                }
                _ => {}
            }
        }
        newly_failed
    }

    /// Now and then: rebuild, rebalance and scrub phases, integrity counters.
    pub fn volumes(&mut self, engine: &Engine, now: Nanos) {
        if now < self.next_volume_check {
            return;
        }
        self.next_volume_check = now + VOLUME_EVERY_NS;
        let n = engine.volume_count();
        self.volumes.resize(n, VolumeSeen::default());
        for (v, seen) in self.volumes.iter_mut().enumerate() {
            let Some(s) = engine.volume_status(v as u32) else {
                continue;
            };
            let committing = s.rebuild_phase == Some(RebuildPhase::Committing);
            seen.active = s.rebuild_progress.is_some_and(|p| p < 1.0)
                || s.scrub_progress.is_some_and(|p| p < 1.0)
                || committing;
            if s.rebuild.as_deref().map(phase) != seen.rebuild.as_deref().map(phase) {
                if let Some(r) = &s.rebuild {
                    tracing::warn!(volume = %s.name, "rebuild: {r}");
                }
                seen.rebuild = s.rebuild.clone();
            }
            if s.scrub.as_deref().map(phase) != seen.scrub.as_deref().map(phase) {
                if let Some(r) = &s.scrub {
                    tracing::info!(volume = %s.name, "scrub: {r}");
                }
                seen.scrub = s.scrub.clone();
            }
        }
        let st = engine.stats();
        if st.checksum_errors > self.checksum_errors {
            tracing::warn!(
                new = st.checksum_errors - self.checksum_errors,
                total = st.checksum_errors,
                "checksum errors found (bad copies are repaired from good ones)"
            );
            self.checksum_errors = st.checksum_errors;
        }
        if st.unrecoverable_pages > self.unrecoverable_pages {
            tracing::error!(
                new = st.unrecoverable_pages - self.unrecoverable_pages,
                total = st.unrecoverable_pages,
                "pages lost: no good copy left"
            );
            self.unrecoverable_pages = st.unrecoverable_pages;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::phase;

    #[test]
    fn phases_ignore_progress() {
        assert_eq!(
            phase("rebuilding: 5 blocks moved, clean sweep 3%"),
            "rebuilding"
        );
        assert_eq!(
            phase("scrubbing blocks 12%: 3 pages checked"),
            "scrubbing blocks"
        );
        assert_eq!(phase("scrubbing parity 99%: x"), "scrubbing parity");
        assert_eq!(phase("done in 1.2 s: x"), "done in 1.2 s");
        assert_eq!(phase("rebalance done: 3 columns"), "rebalance done");
        assert_eq!(phase("rebuilding: a; rebalancing: b"), "rebuilding");
    }
}
