//! The loop: the engine and the members, and the turns that move them.
//!
//! Each turn: reap member completions into the engine, fire its timer if due, admit NBD
//! commands while the engine has room, hand its device I/O to the members, answer finished
//! commands, push batched submissions to the kernel, serve control messages.
//!
//! Turns run under one lock ([`Shared`]), on one of two kinds of thread:
//! - the loop thread, which sleeps in [`Waker::wait`] when a turn made no progress, until a
//!   completion, a command or the earliest deadline (engine timer, emulated completion,
//!   shutdown);
//! - an NBD connection thread that has just queued commands and is about to wait for its
//!   client ([`Shared::run_inline`]). Handing each burst of commands to the loop thread
//!   costs a wake-up and two context switches, which on a small or virtualised machine cost
//!   more than the engine's own work for a 4 KiB write (docs/BENCHMARKS-HISTORY.md,
//!   "connection threads run the turns"). The connection thread runs the turns itself when
//!   nobody else is, then tells the loop thread only what it must know: work left over, or
//!   a deadline earlier than the one it sleeps towards.
//!
//! Backpressure: commands are only taken off their bounded channel while the engine has
//! room, so when the engine is full the channel fills and NBD connection threads block in
//! `send`, which stops them reading their sockets.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fusionraid_core::{Data, DevError, Engine, IoId, Nanos, ReqError, Request};
use fusionraid_nbd::ErrorCode;

use super::commands::{Class, Finished, Tracker};
use super::ctl_flush::CtlFlushes;
use super::devtime::DeviceTimer;
use super::status::{Latencies, Observed, snapshot};
use super::usage::VolumeIo;
use super::watch::Watch;
use super::wear_feed::WearFeed;
use super::{CmdMsg, Ctl};
use crate::Clock;
use crate::member::{Completion, Member};
use crate::waker::Waker;

/// Commands taken per turn, so completions are never starved by a flood of requests.
const ADMIT_BATCH: usize = 256;
/// The shortest sleep when a deadline has passed but did not move (never spin).
const MIN_SLEEP: Duration = Duration::from_micros(100);
/// Turns a connection thread runs in a row before it leaves the rest to the loop thread
/// and goes back to its socket: enough for a burst of writes to memory members to be
/// admitted, written and answered (a few turns), not so many that background work keeps
/// it from reading its client's next requests.
const INLINE_TURNS: usize = 8;
/// `Shared::planned` while the loop thread is awake (it looks at every deadline before it
/// sleeps again).
const AWAKE: u64 = 0;
/// `Shared::planned` while the loop thread sleeps without a deadline.
const NO_DEADLINE: u64 = u64::MAX;

thread_local! {
    /// Set while this thread runs a turn: commands submitted now come from completions
    /// (the read-modify-write layer's follow-ups) and must not block (see `Inbox`).
    static IN_TURN: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is inside a turn.
pub(crate) fn in_turn() -> bool {
    IN_TURN.with(Cell::get)
}

/// A turn panicked (an engine invariant failed) on some thread: no further turn on state
/// the panic may have left half-changed. Queued and later commands fail, whichever thread
/// the panic ended. A restart recovers from the journal.
fn stop_after_panic(mut lp: std::sync::MutexGuard<'_, EventLoop>) {
    if !lp.finished {
        tracing::error!("a turn panicked; the engine stops");
        lp.finish();
    }
}

/// The loop state, and what the threads running its turns share.
pub(crate) struct Shared {
    lp: Mutex<EventLoop>,
    waker: Arc<Waker>,
    /// When the loop thread means to wake (clock nanoseconds), `NO_DEADLINE`, or `AWAKE`.
    /// Written under the lock before it sleeps, so a connection thread that ran turns
    /// since can tell whether a deadline it created comes earlier.
    planned: AtomicU64,
    /// Requests the NBD server refused before they reached the engine (out of range,
    /// misaligned...): failed requests the engine never counted (`Backend::rejected`).
    pub rejected: AtomicU64,
}

impl Shared {
    pub fn new(lp: EventLoop) -> Arc<Shared> {
        Arc::new(Shared {
            waker: lp.waker.clone(),
            lp: Mutex::new(lp),
            planned: AtomicU64::new(AWAKE),
            rejected: AtomicU64::new(0),
        })
    }

    /// Wakes the loop thread whether or not it sleeps.
    pub fn wake(&self) {
        self.waker.wake()
    }

    /// The loop thread's body.
    pub fn run(&self) {
        loop {
            let mut lp = match self.lp.lock() {
                Ok(g) => g,
                Err(p) => return stop_after_panic(p.into_inner()),
            };
            let progress = lp.turn(true);
            if lp.done() {
                lp.finish();
                break;
            }
            if progress {
                continue;
            }
            let now = lp.clock.now();
            let Some(timeout) = lp.plan_sleep(now, &self.planned) else {
                continue;
            };
            drop(lp);
            self.waker.wait(timeout);
            self.planned.store(AWAKE, Ordering::SeqCst);
        }
    }

    /// Runs turns on this (connection) thread if no other thread is running one; see the
    /// module doc. Never waits for the lock.
    pub fn run_inline(&self) {
        let mut lp = match self.lp.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => return stop_after_panic(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => {
                // Whoever holds it may have looked at the queue before our commands
                // arrived: make sure the loop thread looks again.
                return self.waker.notify();
            }
        };
        if lp.finished {
            return;
        }
        let mut more = true;
        for _ in 0..INLINE_TURNS {
            more = lp.turn(false);
            if !more {
                break;
            }
        }
        let next = lp.next_deadline().unwrap_or(NO_DEADLINE);
        let queued =
            more || lp.peek_command() || lp.members.iter().flatten().any(|m| m.uncommitted());
        drop(lp);
        if queued || next < self.planned.load(Ordering::SeqCst) {
            self.waker.notify();
        }
    }
}

pub(crate) struct EventLoop {
    pub engine: Engine,
    pub members: Vec<Option<Box<dyn Member>>>,
    pub names: Vec<String>,
    pub clock: Clock,
    pub waker: Arc<Waker>,
    pub cmd_rx: Receiver<CmdMsg>,
    /// Follow-up commands submitted from completions inside a turn (see `Inbox`).
    pub reentrant: Arc<Mutex<VecDeque<CmdMsg>>>,
    pub ctl_rx: Receiver<Ctl>,
    pub max_request_bytes: u64,
    pub started: Instant,
    cmd_stash: Option<CmdMsg>,
    held: VecDeque<Request>,
    tracker: Tracker,
    /// The loop's own flushes, each answering an operator command once it is durable.
    ctl_flushes: CtlFlushes,
    comps: Vec<Completion>,
    orphans: Vec<Completion>,
    lat: Latencies,
    /// Device-level latency per member, user-level counters per volume, and the state
    /// changes logged between turns (for `status`, `top` and the metrics endpoint).
    devices: DeviceTimer,
    volumes: Vec<VolumeIo>,
    watch: Watch,
    wear: WearFeed,
    /// Set by a shutdown request: stop admitting, drain, leave by this time.
    leave_by: Option<Instant>,
    /// Draining, every command answered: the engine was told to stop cleanly
    /// (`Engine::begin_shutdown`) and gets its completions and timers until it is done.
    engine_stopping: bool,
    /// The loop thread has left: no more turns.
    finished: bool,
}

impl EventLoop {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        engine: Engine,
        members: Vec<Option<Box<dyn Member>>>,
        names: Vec<String>,
        clock: Clock,
        waker: Arc<Waker>,
        cmd_rx: Receiver<CmdMsg>,
        reentrant: Arc<Mutex<VecDeque<CmdMsg>>>,
        ctl_rx: Receiver<Ctl>,
        max_request_bytes: u64,
    ) -> Self {
        let (disks, vols) = (engine.config().disks, engine.volume_count());
        EventLoop {
            devices: DeviceTimer::new(disks),
            volumes: vec![VolumeIo::default(); vols],
            watch: Watch::new(disks),
            wear: WearFeed::default(),
            engine,
            members,
            names,
            clock,
            waker,
            cmd_rx,
            reentrant,
            ctl_rx,
            max_request_bytes,
            started: Instant::now(),
            cmd_stash: None,
            held: VecDeque::new(),
            tracker: Tracker::default(),
            ctl_flushes: CtlFlushes::default(),
            comps: Vec::new(),
            orphans: Vec::new(),
            lat: Latencies::default(),
            leave_by: None,
            engine_stopping: false,
            finished: false,
        }
    }

    /// One pass over every source of work; true if anything moved. Members' `commit` runs
    /// only `on_loop` (see `Member::commit`).
    fn turn(&mut self, on_loop: bool) -> bool {
        struct Leave;
        impl Drop for Leave {
            fn drop(&mut self) {
                IN_TURN.with(|t| t.set(false));
            }
        }
        IN_TURN.with(|t| t.set(true));
        let _leave = Leave;
        let now = self.clock.now();
        let mut progress = self.reap(now);
        if self.timers_on()
            && let Some(t) = self.engine.poll_timeout()
            && t <= now
        {
            self.engine.handle_timeout(now);
        }
        progress |= self.admit(now);
        progress |= self.dispatch(now);
        // Replies this turn finishes leave together, one send per NBD connection.
        progress |= fusionraid_nbd::batch_replies(|| self.replies(now));
        if on_loop {
            for m in self.members.iter_mut().flatten() {
                m.commit();
            }
        }
        while let Ok(c) = self.ctl_rx.try_recv() {
            // What it asked for (device I/O, a request held for room) goes out next turn.
            self.control(c);
            progress = true;
        }
        for i in self.watch.members(&self.engine, &self.names, now) {
            if let Some(Some(m)) = self.members.get_mut(i) {
                m.failed();
            }
        }
        self.watch.volumes(&self.engine, now);
        self.wear.tick(now, &mut self.engine, &self.members);
        progress
    }

    /// The loop thread leaves: members drop here, on that thread, after their last
    /// operation completed (file members also wait for the kernel in their Drop). Commands
    /// still queued or sent later fail; those still in flight (a shutdown's grace period
    /// ran out) are answered with an error as their completers drop. Until this state
    /// itself drops (with the NBD server's last reference), nothing else may wait on it.
    fn finish(&mut self) {
        self.finished = true;
        self.members.clear();
        let (_, closed) = std::sync::mpsc::sync_channel(0);
        drop(std::mem::replace(&mut self.cmd_rx, closed));
        if let Some(m) = self.cmd_stash.take() {
            m.done.fail(ErrorCode::Shutdown);
        }
        let follow_ups =
            std::mem::take(&mut *self.reentrant.lock().unwrap_or_else(|p| p.into_inner()));
        for m in follow_ups {
            m.done.fail(ErrorCode::Shutdown);
        }
        self.held.clear();
        self.tracker = Tracker::default();
        // Their waiters learn that the loop is gone as the senders drop.
        self.ctl_flushes = CtlFlushes::default();
    }

    /// Is a command waiting (keeping it for the next turn)?
    fn peek_command(&mut self) -> bool {
        if self.cmd_stash.is_none() {
            self.cmd_stash = self.next_command();
        }
        self.cmd_stash.is_some()
    }

    /// The earliest time something must happen without a new event: the engine's timer, an
    /// emulated member's next completion, or the watch's next look (see `Watch`).
    fn next_deadline(&self) -> Option<Nanos> {
        let mut deadline: Option<Nanos> = if self.timers_on() {
            self.engine.poll_timeout()
        } else {
            None
        };
        for m in self.members.iter().flatten() {
            if let Some(d) = m.next_deadline() {
                deadline = Some(deadline.map_or(d, |x| x.min(d)));
            }
        }
        if let Some(d) = self.watch.next_deadline() {
            deadline = Some(deadline.map_or(d, |x| x.min(d)));
        }
        deadline
    }

    fn draining(&self) -> bool {
        self.leave_by.is_some()
    }

    /// Engine timers fire except while a shutdown waits for its commands (no new background
    /// work meanwhile); once the engine stops cleanly its commits need them again.
    fn timers_on(&self) -> bool {
        !self.draining() || self.engine_stopping
    }

    fn has_room(&self) -> bool {
        self.engine.inflight_requests() < self.engine.config().max_requests
    }

    /// Draining and finished (or out of time). Once every command is answered the engine is
    /// told to stop cleanly, and the loop runs on until it has (its last checkpoint durable).
    fn done(&mut self) -> bool {
        let Some(by) = self.leave_by else {
            return false;
        };
        let answered = self.tracker.is_empty()
            && self.ctl_flushes.is_empty()
            && self.held.is_empty()
            && self
                .reentrant
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty();
        if answered && !self.engine_stopping {
            self.engine_stopping = true;
            self.engine.begin_shutdown(self.clock.now());
            // Its I/O goes out with the next turn.
            return false;
        }
        let quiet = answered
            && self.engine.inflight_ios() == 0
            && self.orphans.is_empty()
            && self.engine.shutdown_done();
        if !quiet && Instant::now() >= by {
            tracing::warn!(
                commands = self.tracker.len(),
                ios = self.engine.inflight_ios(),
                clean = self.engine.shutdown_done(),
                "shutdown grace period over with work in flight"
            );
        }
        quiet || Instant::now() >= by
    }

    fn reap(&mut self, now: Nanos) -> bool {
        let mut comps = std::mem::take(&mut self.comps);
        comps.append(&mut self.orphans);
        for (i, m) in self.members.iter_mut().enumerate() {
            let Some(m) = m else { continue };
            let before = comps.len();
            m.reap(now, &mut comps);
            for c in &comps[before..] {
                if let Err(e) = &c.result {
                    self.watch.device_error(i, &e.0);
                }
            }
        }
        let any = !comps.is_empty();
        for c in comps.drain(..) {
            self.devices.on_complete(c.tag, now);
            if let Err(e) = self.engine.handle_completion(IoId(c.tag), c.result, now) {
                tracing::error!("{e}");
            }
        }
        self.comps = comps;
        any
    }

    fn admit(&mut self, now: Nanos) -> bool {
        let mut progress = false;
        if self.draining() {
            // Refuse what is still queued; what was admitted (including its parts still
            // held below) finishes.
            while let Some(m) = self.next_command() {
                m.done.fail(ErrorCode::Shutdown);
                progress = true;
            }
        }
        for _ in 0..ADMIT_BATCH {
            if !self.has_room() {
                break;
            }
            if let Some(req) = self.held.pop_front() {
                let id = req.id;
                if let Err(e) = self.engine.submit(req, now) {
                    // has_room() makes Busy impossible; anything else is answered in-band.
                    tracing::error!("engine refused a request despite room: {e}");
                    self.answer(id, Err(e), now);
                }
                progress = true;
                continue;
            }
            if self.draining() {
                break;
            }
            let Some(msg) = self.next_command() else {
                break;
            };
            progress = true;
            let parts =
                self.tracker
                    .admit(msg.volume, msg.kind, msg.done, self.max_request_bytes, now);
            self.held.extend(parts);
        }
        progress
    }

    /// The next command: one put back before sleeping, then follow-ups of commands in
    /// flight (they may hold read-modify-write locks others wait for), then new ones.
    fn next_command(&mut self) -> Option<CmdMsg> {
        if let Some(m) = self.cmd_stash.take() {
            return Some(m);
        }
        if let Some(m) = self
            .reentrant
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
        {
            return Some(m);
        }
        self.cmd_rx.try_recv().ok()
    }

    fn dispatch(&mut self, now: Nanos) -> bool {
        let mut any = false;
        while let Some(io) = self.engine.poll_device_io() {
            any = true;
            match self
                .members
                .get_mut(io.disk.index())
                .and_then(Option::as_mut)
            {
                Some(m) => {
                    self.devices
                        .on_submit(io.id.0, io.disk.index(), &io.op, now);
                    m.submit(io.id.0, io.op, now)
                }
                None => self.orphans.push(Completion {
                    tag: io.id.0,
                    result: Err(DevError(format!("member {} is missing", io.disk))),
                }),
            }
        }
        any || !self.orphans.is_empty()
    }

    fn replies(&mut self, now: Nanos) -> bool {
        let mut any = false;
        while let Some(r) = self.engine.poll_reply() {
            any = true;
            self.answer(r.id, r.result, now);
        }
        any
    }

    /// An engine reply to request `id`: the loop's own flush, or part of an NBD command.
    fn answer(&mut self, id: u64, result: Result<Option<Data>, ReqError>, now: Nanos) {
        if self.ctl_flushes.on_reply(id, &result) {
            return;
        }
        if let Some(f) = self.tracker.on_reply(id, result, now) {
            self.record(&f);
        }
    }

    /// A command answered: pool-wide percentiles, and the volume's own counters.
    fn record(&mut self, f: &Finished) {
        if let Some(v) = self.volumes.get_mut(f.volume as usize) {
            v.record(f);
        }
        let h = match f.class {
            Class::Read => &mut self.lat.read,
            Class::Write => &mut self.lat.write,
            Class::Flush => &mut self.lat.flush,
            Class::Other => return,
        };
        h.saturating_record((f.latency / 1000).max(1));
    }

    fn control(&mut self, c: Ctl) {
        match c {
            Ctl::Status(reply) => {
                let s = snapshot(
                    &self.engine,
                    &self.members,
                    &self.names,
                    &self.lat,
                    self.started.elapsed().as_secs_f64(),
                    &Observed {
                        devices: &self.devices,
                        volumes: &self.volumes,
                        now: self.clock.now(),
                    },
                );
                let _ = reply.try_send(s);
            }
            Ctl::FailMember(i, reply) => {
                if i >= self.names.len() {
                    let _ = reply.try_send(Err(format!("there is no member {i}")));
                    return;
                }
                tracing::warn!(member = %self.names[i], "failed by the operator");
                let now = self.clock.now();
                self.engine
                    .fail_disk(fusionraid_core::DiskId(i as u32), now);
                self.answer_when_durable(format!("member {i} failed"), reply);
            }
            Ctl::Scrub(reply) => {
                let now = self.clock.now();
                let r = self.engine.start_scrub(now);
                if r.is_ok() {
                    tracing::info!("scrub started");
                }
                let _ = reply.try_send(r);
            }
            Ctl::ReplaceMember {
                index,
                member,
                generation,
                reply,
            } => {
                let now = self.clock.now();
                let r = if index < self.names.len() {
                    self.engine.replace_disk_as(
                        fusionraid_core::DiskId(index as u32),
                        now,
                        generation,
                    )
                } else {
                    Err(format!("there is no member {index}"))
                };
                if let Err(e) = r {
                    let _ = reply.try_send(Err(e));
                    return;
                }
                tracing::warn!(old = %self.names[index], new = member.name(), "member replaced");
                self.names[index] = member.name().to_string();
                self.members[index] = Some(member);
                self.devices.reset(index);
                self.watch.reset(index);
                self.answer_when_durable(format!("member {index} replaced"), reply);
            }
            Ctl::Shutdown(grace) => {
                self.leave_by.get_or_insert(Instant::now() + grace);
            }
        }
    }

    /// Answers an operator command (`what` it changed) once a commit holding the change is
    /// durable (see `ctl_flush`): a FLUSH of the loop's own, ahead of the commands waiting
    /// for room, submitted at the next turn that has room, even while draining.
    fn answer_when_durable(&mut self, what: String, reply: SyncSender<Result<(), String>>) {
        if self.engine.volume_count() == 0 {
            // No volume to flush through, and no mapping to keep.
            let _ = reply.try_send(Ok(()));
            return;
        }
        let req = self.ctl_flushes.request(0, what, reply);
        self.held.push_front(req);
    }

    /// Prepares the loop thread's sleep: `None` if work turned up after all, else how long
    /// to sleep (`None` inside: until woken). Records the wake-up time in `planned`.
    fn plan_sleep(&mut self, now: Nanos, planned: &AtomicU64) -> Option<Option<Duration>> {
        self.waker.prepare_sleep();
        // Work that arrived after we last looked, or the sleep announcement raced a sender.
        if self.has_room() && !self.draining() && self.peek_command() {
            self.waker.cancel_sleep();
            return None;
        }
        if let Ok(c) = self.ctl_rx.try_recv() {
            self.waker.cancel_sleep();
            self.control(c);
            return None;
        }
        let deadline = self.next_deadline();
        let mut timeout = deadline.map(|d| {
            if d <= now {
                MIN_SLEEP
            } else {
                self.clock.until(d)
            }
        });
        // Draining, it wakes for the grace period's end whatever connection threads do.
        let wake_at = match self.leave_by {
            Some(by) => {
                let left = by.saturating_duration_since(Instant::now()).max(MIN_SLEEP);
                timeout = Some(timeout.map_or(left, |t| t.min(left)));
                AWAKE
            }
            None => deadline.unwrap_or(NO_DEADLINE),
        };
        planned.store(wake_at, Ordering::SeqCst);
        Some(timeout)
    }
}
