//! The sans-IO engine, in the style of quinn-proto: inputs are user requests, device
//! completions and the passage of time; outputs are device I/O commands, user replies and the
//! next deadline. A driver loops:
//!
//! ```text
//! loop {
//!     engine.submit(req, now) / engine.handle_completion(io, result, now) / engine.handle_timeout(now)
//!     while let Some(io) = engine.poll_device_io() { perform it }
//!     while let Some(r)  = engine.poll_reply()     { answer the user }
//!     sleep until engine.poll_timeout() or the next input
//! }
//! ```
//! The engine never performs I/O, reads a clock, sleeps or spawns.

pub mod api;
pub mod ctx;
pub mod disks;
pub mod iotable;
pub mod members;
pub mod scheme;
pub mod stats;

use std::collections::VecDeque;

use crate::detector::DetectorConfig;
use crate::rng::Rng;
use crate::types::{DiskId, Nanos, PAGE_SIZE};
use api::{DeviceIo, IoId, IoResult, Op, Reply, ReqError, Request};
use ctx::Ctx;
use disks::{Disks, IoClass};
use iotable::IoTable;
use scheme::{Scheme, VolumeStatus};
use stats::EngineStats;

/// Settings shared by every scheme.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub disks: usize,
    pub detector: DetectorConfig,
    /// Bound on user requests in flight; `submit` answers `Busy` beyond it (backpressure).
    pub max_requests: usize,
    /// Requests carry only sizes; no data is kept or computed.
    pub size_only: bool,
    pub seed: u64,
}

impl EngineConfig {
    pub fn new(disks: usize) -> Self {
        EngineConfig {
            disks,
            detector: DetectorConfig::paper_dc(),
            max_requests: 4096,
            size_only: false,
            seed: 1,
        }
    }
}

pub struct Engine {
    cfg: EngineConfig,
    scheme: Box<dyn Scheme + Send>,
    disks: Disks,
    ios: IoTable,
    rng: Rng,
    out_io: VecDeque<DeviceIo>,
    out_reply: VecDeque<Reply>,
    user_inflight: usize,
    stats: EngineStats,
    now: Nanos,
}

/// A completion the engine could not match to an I/O it issued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("completion for unknown or already completed I/O {0:?}")]
pub struct UnknownIo(pub IoId);

impl Engine {
    pub fn new(cfg: EngineConfig, mut scheme: Box<dyn Scheme + Send>, now: Nanos) -> Self {
        assert!(cfg.disks > 0);
        assert!(cfg.max_requests > 0);
        let mut disks = Disks::new(cfg.disks, cfg.detector, now);
        if let Some(s) = scheme.take_steering() {
            disks.adopt_steering(s);
        }
        Engine {
            disks,
            rng: Rng::new(cfg.seed),
            cfg,
            scheme,
            ios: IoTable::default(),
            out_io: VecDeque::new(),
            out_reply: VecDeque::new(),
            user_inflight: 0,
            stats: EngineStats::default(),
            now,
        }
    }

    fn ctx_parts(&mut self, now: Nanos) -> (Ctx<'_>, &mut (dyn Scheme + Send)) {
        // Time never goes backwards for the engine, whatever the driver's clock does.
        self.now = self.now.max(now);
        (
            Ctx {
                now: self.now,
                rng: &mut self.rng,
                size_only: self.cfg.size_only,
                disks: &mut self.disks,
                ios: &mut self.ios,
                out_io: &mut self.out_io,
                out_reply: &mut self.out_reply,
                user_inflight: &mut self.user_inflight,
                stats: &mut self.stats,
            },
            self.scheme.as_mut(),
        )
    }

    /// Validate a request before the scheme sees it, so schemes can trust their input.
    fn validate(&self, req: &Request) -> Result<(), ReqError> {
        let size = self
            .scheme
            .volume_size(req.volume)
            .ok_or(ReqError::NoVolume(req.volume))?;
        let (offset, len) = match &req.op {
            Op::Read { offset, len }
            | Op::Trim { offset, len }
            | Op::WriteZeroes { offset, len, .. } => (*offset, *len),
            Op::Write { offset, data, .. } => {
                if self.cfg.size_only != matches!(data, api::Data::Size(_)) {
                    return Err(ReqError::BadPayload {
                        got: data.len(),
                        want: data.len(),
                    });
                }
                (*offset, data.len())
            }
            Op::Flush => return Ok(()),
        };
        if offset % PAGE_SIZE != 0 || len % PAGE_SIZE != 0 || len == 0 {
            return Err(ReqError::Misaligned {
                offset,
                len,
                align: PAGE_SIZE,
            });
        }
        let max = self.scheme.max_request_bytes();
        if len > max {
            return Err(ReqError::TooLarge { len, max });
        }
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(ReqError::OutOfRange { offset, len, size });
        }
        Ok(())
    }

    /// A new user request. Errors are answered immediately through `poll_reply`, except
    /// `Busy`, which is returned so the driver can hold the request back (backpressure).
    pub fn submit(&mut self, req: Request, now: Nanos) -> Result<(), ReqError> {
        if self.user_inflight >= self.cfg.max_requests {
            self.stats.rejected_busy += 1;
            return Err(ReqError::Busy(self.user_inflight));
        }
        self.stats.requests += 1;
        self.user_inflight += 1;
        let now_eff = self.now.max(now);
        if let Err(e) = self.validate(&req) {
            let (mut ctx, _) = self.ctx_parts(now);
            ctx.reply(req.id, now_eff, Err(e));
            return Ok(());
        }
        if let Op::Write { data, .. } = &req.op {
            self.stats.user_bytes_written += data.len();
        }
        let (mut ctx, scheme) = self.ctx_parts(now);
        scheme.submit(&mut ctx, req);
        Ok(())
    }

    /// A device I/O finished. Any error fails the member (see [`api::DevError`]).
    pub fn handle_completion(
        &mut self,
        id: IoId,
        result: IoResult,
        now: Nanos,
    ) -> Result<(), UnknownIo> {
        let io = self.ios.remove(id).ok_or(UnknownIo(id))?;
        self.now = self.now.max(now);
        let failed = result.is_err();
        let done = disks::Completed {
            ticket: io.ticket,
            issued_at: io.issued_at,
            class: io.class,
            error: failed,
            bytes: io.len,
        };
        self.disks.on_complete(io.disk, done, self.now);
        let (mut ctx, scheme) = self.ctx_parts(now);
        match (io.class, io.background) {
            (IoClass::Write, bg) => {
                if !failed {
                    ctx.disks.mark_dirty(io.disk);
                }
                if bg {
                    ctx.stats.device_bytes_written_bg += io.len;
                } else {
                    ctx.stats.device_bytes_written_fg += io.len;
                }
            }
            (IoClass::Read, true) => ctx.stats.device_bytes_read_bg += io.len,
            (IoClass::Read, false) => {}
            (IoClass::Trim, _) if failed => ctx.stats.trim_errors += 1,
            (IoClass::Trim, _) => ctx.stats.device_bytes_trimmed += io.len,
        }
        // A discard is advisory: a member that refuses one (no support, a hole it can not
        // punch) still holds every byte it held, so it is not failed for it.
        let newly_failed = failed && io.class != IoClass::Trim && !ctx.is_failed(io.disk);
        if newly_failed {
            ctx.fail_disk(io.disk);
        }
        scheme.on_io_complete(&mut ctx, io.tag, result);
        if newly_failed {
            scheme.on_disk_failed(&mut ctx, io.disk);
        }
        Ok(())
    }

    /// Time passed: slide detector windows and run scheme timers.
    pub fn handle_timeout(&mut self, now: Nanos) {
        self.now = self.now.max(now);
        self.disks.advance(self.now);
        self.disks.update_steering(self.now);
        let (mut ctx, scheme) = self.ctx_parts(now);
        scheme.on_tick(&mut ctx);
    }

    /// The operator (or a driver that lost a device) declares a member failed.
    pub fn fail_disk(&mut self, disk: DiskId, now: Nanos) {
        let (mut ctx, scheme) = self.ctx_parts(now);
        if !ctx.is_failed(disk) {
            ctx.fail_disk(disk);
            scheme.on_disk_failed(&mut ctx, disk);
        }
    }

    /// The driver reports how much of its rated endurance member `disk` has used (a share,
    /// 0 new, 1 worn out; `None`: unknown). Wear-aware placement reads it.
    pub fn set_wear(&mut self, disk: DiskId, wear: Option<f64>) {
        self.disks.get_mut(disk).wear = wear.filter(|w| w.is_finite() && *w >= 0.0);
    }

    /// The operator asks for a scrub: everything stored is read and checked in the
    /// background (see the scheme's documentation).
    pub fn start_scrub(&mut self, now: Nanos) -> Result<(), String> {
        self.now = self.now.max(now);
        let (mut ctx, scheme) = self.ctx_parts(now);
        scheme.start_scrub(&mut ctx)
    }

    /// The operator put a new, empty device in the slot of failed member `disk`. Allowed
    /// once no I/O to the old device is in flight, and either the scheme holds nothing
    /// there any more (its rebuild moved everything off) or it rebuilds what it held onto
    /// the new device (`Scheme::replaces_in_place`).
    pub fn replace_disk(&mut self, disk: DiskId, now: Nanos) -> Result<(), String> {
        self.replace_disk_as(disk, now, 0)
    }

    /// `replace_disk` for a device whose superblock carries slot `generation` (a journaled
    /// scheme records it, so a restart tells the device from the ones the slot held
    /// before: `meta::image`).
    pub fn replace_disk_as(
        &mut self,
        disk: DiskId,
        now: Nanos,
        generation: u32,
    ) -> Result<(), String> {
        if disk.index() >= self.disks.len() {
            return Err(format!("there is no member {}", disk.index()));
        }
        let s = self.disks.get(disk);
        if !s.failed {
            return Err(format!(
                "member {} has not failed; fail it first (its data must be rebuilt elsewhere)",
                disk.index()
            ));
        }
        if s.inflight > 0 {
            return Err(format!(
                "member {} still has I/O in flight; try again",
                disk.index()
            ));
        }
        // A scheme that rebuilds in place need not be asked (a walk of its whole mapping).
        if !self.scheme.replaces_in_place(disk) && self.scheme.disk_in_use(disk) {
            // A stalled rebuild says why it can not go on (no room, or a geometry with no
            // stripe clear of the failed member): waiting will not help then.
            let stalled: Vec<String> = (0..self.scheme.volume_count())
                .filter_map(|v| self.scheme.volume_status(v as api::VolumeId))
                .filter(|s| s.rebuild_phase == Some(scheme::RebuildPhase::Stalled))
                .map(|s| format!("volume {}: {}", s.name, s.rebuild.unwrap_or_default()))
                .collect();
            return Err(if stalled.is_empty() {
                format!(
                    "scheme {} still has data on member {} (its rebuild has not finished, or \
                     its records are not durable yet); try again later",
                    self.scheme.name(),
                    disk.index()
                )
            } else {
                format!(
                    "scheme {} still has data on member {} and its rebuild cannot move it \
                     off now ({}); try again once that changes",
                    self.scheme.name(),
                    disk.index(),
                    stalled.join("; ")
                )
            });
        }
        self.now = self.now.max(now);
        self.disks.replace(disk, self.cfg.detector, self.now);
        let (mut ctx, scheme) = self.ctx_parts(now);
        scheme.on_disk_replaced(&mut ctx, disk, generation);
        Ok(())
    }

    /// The driver stops cleanly and every user request was answered: the scheme starts no
    /// new background work and makes its state durable (see `Scheme::begin_shutdown`).
    /// Keep delivering completions and timeouts until `shutdown_done`.
    pub fn begin_shutdown(&mut self, now: Nanos) {
        let (mut ctx, scheme) = self.ctx_parts(now);
        scheme.begin_shutdown(&mut ctx);
    }

    /// Is the clean shutdown `begin_shutdown` started complete (nothing in flight)?
    pub fn shutdown_done(&self) -> bool {
        self.ios.is_empty() && self.scheme.shutdown_done()
    }

    /// The next device I/O to issue. A driver that drops one loses its completion, and
    /// the request waiting for it never finishes.
    #[must_use = "a device I/O polled must be issued"]
    pub fn poll_device_io(&mut self) -> Option<DeviceIo> {
        self.out_io.pop_front()
    }
    /// The next reply to send to a user.
    #[must_use = "a reply polled must be delivered"]
    pub fn poll_reply(&mut self) -> Option<Reply> {
        self.out_reply.pop_front()
    }
    /// When `handle_timeout` should be called next, if ever.
    #[must_use = "the engine needs `handle_timeout` at this time"]
    pub fn poll_timeout(&self) -> Option<Nanos> {
        [
            self.disks.next_deadline(),
            self.disks.steering_deadline(),
            self.scheme.next_deadline(self.now),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    pub fn scheme(&self) -> &dyn Scheme {
        self.scheme.as_ref()
    }
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }
    pub fn disks(&self) -> &Disks {
        &self.disks
    }
    pub fn scheme_name(&self) -> &str {
        self.scheme.name()
    }
    pub fn volume_count(&self) -> usize {
        self.scheme.volume_count()
    }
    pub fn volume_size(&self, v: api::VolumeId) -> Option<u64> {
        self.scheme.volume_size(v)
    }
    pub fn volume_status(&self, v: api::VolumeId) -> Option<VolumeStatus> {
        self.scheme.volume_status(v)
    }
    pub fn inflight_requests(&self) -> usize {
        self.user_inflight
    }
    pub fn inflight_ios(&self) -> usize {
        self.ios.len()
    }
    /// Nothing in flight and no background work pending or running.
    pub fn is_idle(&self) -> bool {
        self.user_inflight == 0 && self.ios.is_empty() && self.scheme.is_idle()
    }
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }
    pub fn now(&self) -> Nanos {
        self.now
    }
}
