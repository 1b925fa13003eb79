//! FusionRAID's durable metadata: journal commits, checkpoints and recovery (see
//! `crate::meta` for the format and the two safety rules).
//!
//! A *commit* seals the open generation of records and then:
//! 1. flushes every member that completed a write since the previous commit (the records
//!    point at that data; it must be on stable media before they are);
//! 2. writes the sealed journal blocks (or checkpoint chunks) with FUA, each on `copies`
//!    members;
//! 3. marks the generation durable: held stripes are released and the flushes and FUA writes
//!    waiting for it are answered.
//!
//! Commits run one at a time. A user FLUSH waits for the first commit sealed after it
//! arrived; so does a FUA write after its data is written. With no FLUSH, a commit still runs
//! every `commit_interval_ns` while records are pending, and at once when writes wait for
//! space that held stripes would give.
//!
//! A clean shutdown (`begin_shutdown`, once the driver has answered every user request)
//! starts no more background work and, when the jobs in flight are done, commits a last
//! checkpoint flagged clean; recovery then reports a clean shutdown instead of a crash.

pub use super::durable_state::meta_layout;
use super::durable_state::{Durable, Stopping, Waiter};
use super::jobs::{CommitJob, Job, JobId};
use super::restore::{restore_log_extents, restore_vol};
use super::{ConfigError, FusionConfig, FusionScheme};
use crate::engine::api::{Data, DevOp, IoResult, ReqError};
use crate::engine::ctx::Ctx;
use crate::engine::iotable::IoTag;
use crate::meta::Record;
use crate::meta::image::{
    encode_failed, encode_generations, encode_header, encode_offloaded, encode_stale, encode_vol,
    set_generation,
};
use crate::meta::{Journal, RecoveryError, RecoveryReport, recover_image};
use crate::types::{DiskId, Nanos};

/// Tag part bit that marks a commit's flush (the rest is the disk); writes use the unit index.
const FLUSH_PART: u32 = 1 << 31;
/// Commit at once when this many journal blocks are open (bounds a commit's size).
const MAX_OPEN_BLOCKS: usize = 64;
/// After this many failed commits in a row, waiting flushes are answered with an error.
const MAX_FAILURES: u32 = 3;
/// Why requests that need a commit fail once commits keep failing.
const JOURNAL_LOST: &str = "metadata commit failed: too few members left to hold the journal";
impl FusionScheme {
    /// Turn journaling on for a scheme just built: volumes log their changes and hold the
    /// stripes they free.
    pub(super) fn enable_journal(&mut self, journal: Journal) {
        let g = journal.open_generation();
        for v in &mut self.vols {
            v.log = Some(Vec::new());
            v.stripes.set_hold(Some(g));
            v.stripes.stale_columns_mut().set_journaled(true);
        }
        self.durable = Some(Durable::new(journal));
    }

    /// Note a member's failure or replacement in `failed_members` and journal it, after
    /// every record queued before it: a commit that has a write which skipped the failed
    /// member then also has the failure.
    pub(super) fn record_member(&mut self, r: Record) {
        match r {
            Record::MemberFailed { member } => self.failed_members.insert(member),
            Record::MemberReplaced { member, generation } => {
                set_generation(&mut self.slot_generations, member, generation);
                self.failed_members.remove(&member)
            }
            _ => unreachable!("a member record"),
        };
        if self.durable.is_some() {
            for v in 0..self.vols.len() {
                self.drain_log(v);
            }
            let d = self.durable.as_mut().expect("journaled");
            d.stats.records += 1;
            d.journal.append(&[r]);
        }
    }

    /// Hand a volume's queued records to the journal as one group.
    pub(super) fn drain_log(&mut self, vol: usize) {
        self.vols[vol].record_freed_stale();
        let Some(d) = self.durable.as_mut() else {
            return;
        };
        if let Some(log) = self.vols[vol].log.as_mut()
            && !log.is_empty()
        {
            let group = std::mem::take(log);
            d.stats.records += group.len() as u64;
            d.journal.append(&group);
        }
    }

    /// End of every input: queue the records it produced and start a commit if one is due.
    /// Runs after every scheme entry point: inlined to its test, since without a journal
    /// (the simulator's usual case) there is nothing to do.
    #[inline]
    pub(super) fn after_event(&mut self, ctx: &mut Ctx) {
        self.reap_log_extents();
        if self.durable.is_some() {
            self.journal_after_event(ctx);
        }
    }

    fn journal_after_event(&mut self, ctx: &mut Ctx) {
        for v in 0..self.vols.len() {
            self.drain_log(v);
        }
        self.maybe_commit(ctx);
    }

    /// Answer request `id` (a FLUSH, or a FUA write whose data is written) once a commit
    /// sealed after now is durable. Returns false when the metadata is not journaled: then
    /// member flushes (or the FUA device writes) suffice and the caller answers.
    pub(super) fn wait_durable(&mut self, id: u64, at: Nanos) -> bool {
        let Some(d) = self.durable.as_mut() else {
            return false;
        };
        d.waiters.push_back(Waiter {
            generation: d.journal.open_generation(),
            id,
            at,
        });
        true
    }

    /// The journal generation holding the newest records so far: the open one if it has
    /// any (queued in a volume's log or in the journal), else the last sealed one. 0 when
    /// the metadata is not journaled.
    pub(super) fn records_generation(&self) -> u64 {
        let logged = self
            .vols
            .iter()
            .any(|v| v.log.as_ref().is_some_and(|l| !l.is_empty()));
        self.durable.as_ref().map_or(0, |d| {
            let open = d.journal.open_generation();
            if logged || d.journal.pending_records() > 0 {
                open
            } else {
                open - 1
            }
        })
    }

    fn held_stripes(&self) -> u64 {
        self.vols.iter().map(|v| v.stripes.held()).sum()
    }

    pub(super) fn durable_deadline(&self) -> Option<Nanos> {
        let d = self.durable.as_ref()?;
        if d.commit.is_some() {
            return None;
        }
        let work = d.journal.pending_records() > 0
            || self.held_stripes() > 0
            || d.journal.wants_checkpoint()
            || !d.waiters.is_empty()
            || d.stopping == Stopping::Wanted;
        work.then_some(d.last_commit_at + d.journal.cfg.commit_interval_ns)
    }

    fn maybe_commit(&mut self, ctx: &mut Ctx) {
        let held = self.held_stripes();
        let space_wait = self.vols.iter().any(|v| !v.space_waiters.is_empty());
        let idle = self.jobs.is_empty();
        let Some(d) = self.durable.as_mut() else {
            return;
        };
        if d.commit.is_some() {
            return;
        }
        if d.stopping == Stopping::Done && d.journal.pending_records() > 0 {
            // Recorded after the clean checkpoint (a member failed): take another.
            d.stopping = Stopping::Wanted;
        }
        let due = ctx.now >= d.last_commit_at + d.journal.cfg.commit_interval_ns;
        if d.stopping == Stopping::Wanted && idle {
            // No job left to add records: the last commit, a checkpoint of everything,
            // flagged clean (a failed one is retried at the commit interval). When records
            // came after a clean checkpoint (a member failed while it was written), they are
            // journaled first: a torn second checkpoint, in the other slot, must leave the
            // first one followed by a block, so that it recovers as a crash.
            let clean = !(d.clean_durable && d.journal.pending_records() > 0);
            if d.failures == 0 || due {
                self.start_commit(ctx, clean);
            }
            return;
        }
        let pending = d.journal.pending_records() > 0 || held > 0;
        let urgent = d.failures == 0
            && (!d.waiters.is_empty()
                || (space_wait && held > 0)
                || d.journal.open_blocks() >= MAX_OPEN_BLOCKS);
        if urgent || (due && (pending || d.journal.wants_checkpoint() || !d.waiters.is_empty())) {
            self.start_commit(ctx, false);
        }
    }

    fn encode_image(&self) -> Vec<u8> {
        let mut out = Vec::new();
        encode_header(&mut out, self.vols.len());
        for v in &self.vols {
            let remaps: Vec<_> = v
                .zone
                .remaps()
                .sorted()
                .into_iter()
                .map(|(s, m)| (s, m.col, m.donor, m.dcol))
                .collect();
            encode_vol(
                &mut out,
                &v.bmt,
                &v.patches,
                v.pairs.structures(),
                &v.sums,
                &remaps,
            );
        }
        encode_failed(&mut out, &self.failed_members);
        let extents: Vec<_> = self.vols.iter().map(|v| v.log_extents_image()).collect();
        encode_offloaded(&mut out, &extents);
        let stale: Vec<_> = self
            .vols
            .iter()
            .map(|v| v.stripes.stale_columns().sorted())
            .collect();
        encode_stale(&mut out, &stale);
        encode_generations(&mut out, &self.slot_generations);
        out
    }

    /// Seal the open generation and write it: journal blocks, or a checkpoint when one is
    /// due or the commit is a clean shutdown's last (`clean`, flagged so).
    fn start_commit(&mut self, ctx: &mut Ctx, clean: bool) {
        let image = (clean
            || self
                .durable
                .as_ref()
                .expect("journaled")
                .journal
                .wants_checkpoint())
        .then(|| self.encode_image());
        let d = self.durable.as_mut().expect("journaled");
        d.last_commit_at = ctx.now;
        d.commit_started = ctx.now;
        let sealed = match image {
            None => d.journal.seal_blocks(),
            Some(_) => None,
        };
        let sealed = match sealed {
            Some(s) => s,
            None => {
                let image = image.unwrap_or_else(|| self.encode_image());
                let d = self.durable.as_mut().expect("journaled");
                let sealed = if clean {
                    d.journal.seal_clean_checkpoint(&image)
                } else {
                    d.journal.seal_checkpoint(&image)
                };
                match sealed {
                    Ok(s) => {
                        d.stats.last_checkpoint_bytes = image.len() as u64;
                        s
                    }
                    Err(e) => {
                        // The mapping outgrew the metadata area `create` reserved: nothing
                        // can be made durable any more. Answer the waiters and keep serving.
                        d.failures = MAX_FAILURES;
                        d.stats.failed_commits += 1;
                        d.fail_waiters(ctx, &e);
                        return;
                    }
                }
            }
        };
        let next = self
            .durable
            .as_ref()
            .expect("journaled")
            .journal
            .open_generation();
        for v in &mut self.vols {
            v.stripes.set_hold(Some(next));
        }
        let units = sealed.units.len();
        let h = self.jobs.insert(Job::Commit(CommitJob {
            sealed,
            flushing: 0,
            writing: 0,
            unit_ok: vec![false; units],
        }));
        self.durable.as_mut().expect("journaled").commit = Some(h);
        let dirty = ctx.take_dirty();
        for &disk in &dirty {
            ctx.issue(disk, DevOp::Flush, h.tag(FLUSH_PART | disk.0), true);
        }
        if dirty.is_empty() {
            self.commit_write_units(ctx, h);
        } else if let Some(Job::Commit(c)) = self.jobs.get_mut(h) {
            c.flushing = dirty.len();
        }
    }

    fn commit_write_units(&mut self, ctx: &mut Ctx, h: JobId) {
        let Some(Job::Commit(c)) = self.jobs.get_mut(h) else {
            unreachable!("commit job")
        };
        let mut n = 0;
        for (i, u) in c.sealed.units.iter().enumerate() {
            for &(disk, offset) in &u.places {
                if ctx.is_failed(disk) {
                    continue;
                }
                let data = if ctx.size_only {
                    Data::Size(u.bytes.len() as u64)
                } else {
                    Data::Bytes(u.bytes.clone())
                };
                ctx.issue(
                    disk,
                    DevOp::Write {
                        offset,
                        data,
                        fua: true,
                    },
                    h.tag(i as u32),
                    true,
                );
                n += 1;
            }
        }
        c.writing = n;
        if n == 0 {
            self.finish_commit(ctx, h);
        }
    }

    pub(super) fn commit_io_done(&mut self, ctx: &mut Ctx, tag: IoTag, result: IoResult) {
        let Some(Job::Commit(c)) = self.jobs.get_mut(JobId::of(tag)) else {
            unreachable!("commit job")
        };
        if tag.part & FLUSH_PART != 0 {
            // A member failing its flush is failed by the engine; what it held is covered by
            // redundancy like any other failure.
            c.flushing -= 1;
            if c.flushing == 0 {
                self.commit_write_units(ctx, JobId::of(tag));
            }
            return;
        }
        if result.is_ok() {
            c.unit_ok[tag.part as usize] = true;
        }
        c.writing -= 1;
        if c.writing == 0 {
            self.finish_commit(ctx, JobId::of(tag));
        }
    }

    fn finish_commit(&mut self, ctx: &mut Ctx, h: JobId) {
        let Some(Job::Commit(c)) = self.jobs.remove(h) else {
            unreachable!("commit job")
        };
        let d = self.durable.as_mut().expect("journaled");
        d.commit = None;
        if c.unit_ok.iter().all(|&ok| ok) {
            d.journal.committed(&c.sealed);
            d.failures = 0;
            d.clean_durable = c.sealed.clean;
            if c.sealed.clean && d.stopping == Stopping::Wanted && d.journal.pending_records() == 0
            {
                d.stopping = Stopping::Done;
            }
            d.stats.commits += 1;
            d.stats.commit_ns += ctx.now.saturating_sub(d.commit_started);
            if c.sealed.checkpoint.is_some() {
                d.stats.checkpoints += 1;
            } else {
                d.stats.journal_blocks_written += c.sealed.units.len() as u64;
            }
            let g = d.journal.durable_generation();
            while d.waiters.front().is_some_and(|w| w.generation <= g) {
                let w = d.waiters.pop_front().expect("front");
                ctx.reply(w.id, w.at, Ok(None));
            }
            for v in &mut self.vols {
                v.stripes.release_held(g);
            }
            for v in 0..self.vols.len() {
                if !self.vols[v].space_waiters.is_empty() {
                    self.retry_space_waiters(ctx, v);
                }
            }
        } else {
            d.journal.commit_failed(&c.sealed);
            d.failures += 1;
            d.stats.failed_commits += 1;
            if d.failures >= MAX_FAILURES {
                d.fail_waiters(ctx, JOURNAL_LOST);
            }
        }
        self.after_event(ctx);
    }

    /// What `create` writes so that the first `serve` finds a valid (empty) checkpoint:
    /// (member, offset, bytes).
    pub fn initial_metadata(
        cfg: &FusionConfig,
    ) -> Result<Vec<(DiskId, u64, Vec<u8>)>, ConfigError> {
        let scheme = FusionScheme::new(cfg.clone())?;
        let Some(d) = scheme.durable.as_ref() else {
            return Ok(Vec::new());
        };
        let mut j = Journal::new(
            d.journal.cfg.clone(),
            d.journal.layout.clone(),
            0,
            0,
            0,
            true,
        );
        // Flagged clean: it is all there is (the first start reports a new pool).
        let s = j
            .seal_clean_checkpoint(&scheme.encode_image())
            .map_err(|e| ConfigError::Volume("metadata".into(), e))?;
        Ok(s.units
            .into_iter()
            .flat_map(|u| {
                let bytes = u.bytes;
                u.places
                    .into_iter()
                    .map(move |(d, off)| (d, off, bytes.clone()))
            })
            .collect())
    }

    /// Rebuild a journaled pool from its members' metadata regions (`meta::recover::region`
    /// bytes each; None for a member that is missing or unreadable).
    pub fn recover(
        cfg: FusionConfig,
        regions: &[Option<&[u8]>],
        now: Nanos,
    ) -> Result<(FusionScheme, RecoveryReport), RecoverError> {
        let mut scheme = FusionScheme::new(cfg).map_err(RecoverError::Config)?;
        let d = scheme.durable.take().ok_or(RecoverError::NotJournaled)?;
        let (jcfg, layout) = (d.journal.cfg.clone(), d.journal.layout.clone());
        let shapes: Vec<(u64, u16)> = scheme
            .vols
            .iter()
            .map(|v| (v.blocks, v.pages_per_block))
            .collect();
        let (image, report) = recover_image(jcfg.pool_id, &layout, regions, &shapes)?;
        scheme.failed_members = image.failed;
        scheme.slot_generations = image.generations;
        let mut in_logs = Vec::new();
        for (v, mut img) in scheme.vols.iter_mut().zip(image.vols) {
            let extents = std::mem::take(&mut img.offloaded);
            restore_vol(v, img, now).map_err(|e| {
                RecoverError::Recovery(RecoveryError::Corrupt(format!(
                    "volume '{}': {e}",
                    v.cfg.name
                )))
            })?;
            in_logs.extend(restore_log_extents(v, extents));
        }
        scheme.restore_logs(in_logs)?;
        let journal = Journal::new(
            jcfg,
            layout,
            report.checkpoint_seq,
            report.checkpoint_generation,
            report.max_seq_seen,
            true,
        );
        scheme.enable_journal(journal);
        // The recovered tables are new: their spare stripes are queued afresh.
        scheme.enable_trim();
        let d = scheme.durable.as_mut().expect("journaled");
        d.recovery = Some(report.clone());
        d.last_commit_at = now;
        scheme.resume_rebalance(now);
        scheme.resume_rebuild_in_place(now);
        Ok((scheme, report))
    }

    /// Rebuild the HDD logs from the copies recovery found in them. A pool configured
    /// without offload now still reads (and frees) what an earlier run put in its logs.
    fn restore_logs(
        &mut self,
        live: Vec<super::offload::slots::Extent>,
    ) -> Result<(), RecoverError> {
        if live.is_empty() {
            return Ok(());
        }
        let pool = &self.cfg.pool;
        let o = self
            .offload
            .get_or_insert_with(|| super::offload::Offload::reading_only(pool));
        o.recover(&live).map_err(|e| {
            RecoverError::Recovery(RecoveryError::Corrupt(format!("write offload: {e}")))
        })
    }

    /// The driver stops cleanly and every user request is answered: start no more
    /// background work, and once the jobs in flight are done commit a checkpoint flagged
    /// clean (see the module doc). Without a journal there is nothing to make durable.
    pub(super) fn request_clean_stop(&mut self, ctx: &mut Ctx) {
        if let Some(d) = self.durable.as_mut()
            && d.stopping == Stopping::No
        {
            d.stopping = Stopping::Wanted;
            self.after_event(ctx);
        }
    }

    /// Is a clean stop asked for (background work then starts nothing new)?
    pub(super) fn stopping(&self) -> bool {
        self.durable
            .as_ref()
            .is_some_and(|d| d.stopping != Stopping::No)
    }

    /// Is the clean checkpoint durable, with nothing recorded or committing since? True
    /// when the metadata is not journaled.
    pub(super) fn clean_stop_done(&self) -> bool {
        self.durable.as_ref().is_none_or(|d| {
            d.stopping == Stopping::Done && d.commit.is_none() && d.journal.pending_records() == 0
        })
    }

    /// Make the next commit a checkpoint (a member was replaced: restore every copy).
    pub(super) fn force_checkpoint(&mut self) {
        if let Some(d) = self.durable.as_mut() {
            d.journal.force_checkpoint();
            // Answer nobody early, but do not wait the whole interval either.
            d.last_commit_at = 0;
        }
    }

    /// Will space come back in `vol` without new background work (`Vol::room_on_the_way`)?
    /// Held stripes are released only by a successful commit: once `MAX_FAILURES` commits
    /// in a row have failed (too few members left to hold the journal) they are not counted,
    /// or writes waiting for them would wait forever instead of failing.
    pub(super) fn room_on_the_way(&self, vol: usize) -> bool {
        self.vols[vol].room_on_the_way(!self.journal_failing())
    }

    /// Have the last `MAX_FAILURES` commits all failed?
    pub(super) fn journal_failing(&self) -> bool {
        self.durable
            .as_ref()
            .is_some_and(|d| d.failures >= MAX_FAILURES)
    }

    /// The error of a write that found no room and can expect none: the pool is full, or,
    /// when the journal can not be written, too many members failed.
    pub(super) fn no_room_error(&self) -> ReqError {
        if self.journal_failing() {
            ReqError::Io(JOURNAL_LOST.to_string())
        } else {
            ReqError::NoSpace
        }
    }

    pub fn durable(&self) -> Option<&Durable> {
        self.durable.as_ref()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    #[error("{0}")]
    Config(ConfigError),
    #[error("the pool configuration does not journal its metadata")]
    NotJournaled,
    #[error("{0}")]
    Recovery(#[from] RecoveryError),
}
