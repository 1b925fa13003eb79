//! The event loop.

use fusionraid_core::{Data, DevOp, DeviceIo, DiskId, Nanos, Op, PAGE_SIZE, Reply, Request};
use fusionraid_devices::OpKind;

use super::events::Event;
use super::oracle::word_for;
use super::requests::ReqMeta;
use super::store::fill_word;
use super::{DRAIN_LIMIT_NS, Detailed, Progress, SAME_INSTANT_TIMEOUTS, Sim, SimError};
use crate::scenario::Load;
use crate::stats::Report;
use crate::trace::{IoKind, IoRecord};
use std::sync::atomic::Ordering;

/// Progress is reported every this many events.
const PROGRESS_EVERY: u64 = 1 << 14;

impl Sim {
    /// Runs to the end and reports.
    pub fn run(self) -> Result<Report, SimError> {
        self.run_with(&mut |_| {})
    }

    /// Runs to the end, calling `progress` now and then (for progress bars).
    pub fn run_with(mut self, progress: &mut dyn FnMut(&Progress)) -> Result<Report, SimError> {
        // Not through `run_detailed`: its copies of the histograms would be dropped unread.
        self.run_loop(progress)?;
        Ok(self.finish())
    }

    /// Like [`Sim::run_with`], and also hands back the latency histograms behind the report
    /// (for CDFs and tail means that the report does not carry).
    pub fn run_detailed(
        mut self,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Detailed, SimError> {
        self.run_loop(progress)?;
        let workloads = self.hists.clone();
        let all = self.all.clone();
        let answered_in_window = self.answered_in_window;
        Ok(Detailed {
            report: self.finish(),
            workloads,
            all,
            answered_in_window,
        })
    }

    fn run_loop(&mut self, progress: &mut dyn FnMut(&Progress)) -> Result<(), SimError> {
        for s in 0..self.sources.len() {
            self.pull(s);
        }
        self.pump();
        while !self.finished() {
            if self.source_error.is_some() {
                break;
            }
            let Some((t, ev)) = self.events.pop() else {
                return Err(self.stuck("requests in flight but no event pending"));
            };
            if !self.handle_event(t, ev)? {
                continue;
            }
            self.processed += 1;
            if self.processed.is_multiple_of(PROGRESS_EVERY) {
                progress(&self.progress());
                if self.now > self.last_arrival_at.saturating_add(DRAIN_LIMIT_NS)
                    && self.sources.iter().all(|s| s.done)
                {
                    return Err(
                        self.stuck("requests still unanswered 600 s after the last arrival")
                    );
                }
            }
        }
        // A source that stopped on an error may have been the last thing running.
        if let Some(e) = self.source_error.take() {
            return Err(SimError::Source(e));
        }
        if let Some(e) = self.unmeasured_trace() {
            return Err(SimError::Source(e));
        }
        self.settle()?;
        progress(&self.progress());
        Ok(())
    }

    /// A trace replay that measured nothing, and why: no line of the file was a request
    /// (the wrong `--format`, an empty or binary file), or every request arrived within the
    /// warm-up. Such runs reported zero latencies and zero IOPS, and succeeded. (Generated
    /// loads may offer nothing in a short run, and experiments rely on such runs (`eval
    /// --tiny`'s settled TensorFlow runs): `sim` refuses those itself.)
    fn unmeasured_trace(&self) -> Option<String> {
        if !matches!(self.scenario.load, Load::Trace { .. }) {
            return None;
        }
        if self.counts.arrived == 0 {
            let bad = self.trace_errors.count.load(Ordering::Relaxed);
            let first = self.trace_errors.first.lock().expect("trace error lock");
            return Some(match first.as_deref() {
                Some(f) => format!(
                    "no request could be read from the trace: {bad} unreadable lines (first: \
                     {f}); is --format right?"
                ),
                None => "the trace holds no request (is --format right?)".into(),
            });
        }
        if self.all.read.count() + self.all.write.count() == 0 {
            return Some(format!(
                "every request of the trace arrived within the warm-up ({} s; the last at \
                 {:.3} s of the replay): none was measured; shorten --warmup",
                self.scenario.warmup_ns as f64 / 1e9,
                self.last_arrival_at.saturating_sub(self.start) as f64 / 1e9
            ));
        }
        None
    }

    /// After the last reply: let background work (conversion) run on the engine's timers
    /// until none is left or the scenario's settle time is over.
    fn settle(&mut self) -> Result<(), SimError> {
        let limit = self.scenario.settle_ns;
        if limit == 0 {
            return Ok(());
        }
        let start = self.now;
        while !(self.engine.is_idle() && self.backlog() == 0) {
            let Some(t) = self.events.peek_time() else {
                break; // nothing scheduled: the engine waits for nothing
            };
            if t > start + limit {
                break;
            }
            let (t, ev) = self.events.pop().expect("peeked");
            if self.handle_event(t, ev)? {
                self.processed += 1;
            }
        }
        self.settled_ns = self.now - start;
        Ok(())
    }

    /// Replica sets waiting for conversion, over all volumes.
    fn backlog(&self) -> u64 {
        (0..self.volume_sizes.len() as u32)
            .filter_map(|v| self.engine.volume_status(v))
            .map(|s| s.conversion_backlog)
            .sum()
    }

    /// Feeds one event to the engine; `false` for a timer event made stale by an earlier
    /// deadline (not counted).
    pub(super) fn handle_event(&mut self, t: Nanos, ev: Event) -> Result<bool, SimError> {
        {
            self.now = self.now.max(t);
            match ev {
                Event::Arrival { source } => {
                    let s = source as usize;
                    let record = self.sources[s].scheduled.take().expect("scheduled record");
                    self.issue(s, record);
                    self.pull(s);
                }
                Event::Completion { id, disk } => {
                    let result = match &mut self.data {
                        None => Ok(None),
                        Some(d) => d.results.remove(&id.0).unwrap_or(Ok(None)),
                    };
                    if let Err(e) = self.engine.handle_completion(id, result, self.now) {
                        return Err(self.stuck(&e.to_string()));
                    }
                    self.observe(disk as usize);
                    self.report_wear_of(disk as usize);
                }
                Event::Timeout => {
                    if self.timer != Some(t) {
                        return Ok(false); // superseded by an earlier deadline that already fired
                    }
                    self.timer = None;
                    if t == self.last_timeout_at {
                        self.same_instant += 1;
                    } else {
                        self.last_timeout_at = t;
                        self.same_instant = 0;
                    }
                    self.engine.handle_timeout(self.now);
                    for d in 0..self.devices.len() {
                        self.observe(d);
                    }
                }
            }
            self.pump();
        }
        Ok(true)
    }

    fn progress(&self) -> Progress {
        Progress {
            now: self.now - self.start,
            until: self.scenario.duration_ns,
            completed: self.counts.completed,
            events: self.processed,
        }
    }

    pub(super) fn stuck(&self, what: &str) -> SimError {
        SimError::Stuck {
            now: self.now,
            what: format!(
                "{what} ({} requests in flight, {} held, {} device I/Os)\n{}",
                self.reqs.len(),
                self.hold.len(),
                self.engine.inflight_ios(),
                self.engine.scheme().debug_state()
            ),
        }
    }

    /// Every source is dry and every request was answered. Background work still running
    /// in the engine is not waited for.
    fn finished(&self) -> bool {
        self.reqs.is_empty() && self.hold.is_empty() && self.sources.iter().all(|s| s.done)
    }

    /// Schedules source `s`'s next arrival (timestamp pacing) or issues requests until its
    /// queue is full (closed loop).
    fn pull(&mut self, s: usize) {
        while let Some((at, rec)) = self.sources[s].next(self.now) {
            if self.sources[s].closed_loop {
                self.issue(s, rec);
            } else {
                self.sources[s].scheduled = Some(rec);
                self.events
                    .push(at.max(self.now), Event::Arrival { source: s as u32 });
                return;
            }
        }
        if let Some(e) = self.sources[s].error.take() {
            self.source_error.get_or_insert(e);
        } else if self.sources[s].done
            && let Some(e) = self.trace_errors.take_fatal()
        {
            // The trace reader ends its stream at a read error, so the source is done.
            self.source_error.get_or_insert(e);
        }
    }

    /// A request arrives from source `s`: hand it to the engine, or hold it if the engine is
    /// full.
    fn issue(&mut self, s: usize, rec: IoRecord) {
        self.counts.arrived += 1;
        self.last_arrival_at = self.now;
        let mut len = rec.len;
        if len > self.max_request_bytes {
            len = self.max_request_bytes / PAGE_SIZE * PAGE_SIZE;
            self.counts.truncated += 1;
        }
        let src = &mut self.sources[s];
        let id = self.reqs.insert(ReqMeta {
            arrival: self.now,
            source: s as u32,
            volume: src.volume,
            kind: rec.kind,
            offset: rec.offset,
            len,
            tag: 0,
        });
        src.in_flight += 1;
        let full = self.engine.inflight_requests() >= self.scenario.max_requests;
        if full || !self.hold.is_empty() {
            if !self.hold.push(id) {
                self.reqs.remove(id);
                self.sources[s].in_flight -= 1;
            }
        } else {
            self.submit(id);
        }
    }

    /// Hands request `id` to the engine.
    fn submit(&mut self, id: u64) {
        let m = *self.reqs.get_mut(id);
        let op = match m.kind {
            IoKind::Read => {
                if let Some(d) = &mut self.data {
                    self.reqs.get_mut(id).tag = d.oracle.tick();
                }
                Op::Read {
                    offset: m.offset,
                    len: m.len,
                }
            }
            IoKind::Trim => {
                if let Some(d) = &mut self.data {
                    d.oracle.write_submitted(
                        m.volume,
                        m.offset / PAGE_SIZE,
                        m.len / PAGE_SIZE,
                        None,
                    );
                }
                Op::Trim {
                    offset: m.offset,
                    len: m.len,
                }
            }
            IoKind::Write => {
                let data = match &mut self.data {
                    None => Data::Size(m.len),
                    Some(d) => {
                        d.writes += 1;
                        let first = m.offset / PAGE_SIZE;
                        let pages = m.len / PAGE_SIZE;
                        let words: Vec<u64> = (0..pages)
                            .map(|i| word_for(self.scenario.seed, m.volume, first + i, d.writes))
                            .collect();
                        let mut buf = vec![0u8; m.len as usize];
                        for (c, w) in buf.chunks_exact_mut(PAGE_SIZE as usize).zip(&words) {
                            fill_word(c, *w);
                        }
                        d.oracle
                            .write_submitted(m.volume, first, pages, Some(&words));
                        Data::Bytes(buf)
                    }
                };
                Op::Write {
                    offset: m.offset,
                    data,
                    fua: false,
                }
            }
        };
        let req = Request {
            id,
            volume: m.volume,
            op,
        };
        if let Err(e) = self.engine.submit(req, self.now) {
            // We only submit below the engine's limit, so this is a contract breach.
            panic!("engine refused request {id} below its in-flight limit: {e}");
        }
    }

    /// Performs the engine's device I/Os, collects replies, lets held and closed-loop
    /// requests in as replies free room, and re-arms the engine's timer.
    pub(super) fn pump(&mut self) {
        loop {
            while let Some(io) = self.engine.poll_device_io() {
                self.perform(io);
            }
            let mut replied = false;
            while let Some(r) = self.engine.poll_reply() {
                self.on_reply(r);
                replied = true;
            }
            if !replied {
                break;
            }
            while self.engine.inflight_requests() < self.scenario.max_requests {
                match self.hold.pop() {
                    Some(id) => self.submit(id),
                    None => break,
                }
            }
            for s in 0..self.sources.len() {
                if self.sources[s].waiting {
                    self.pull(s);
                }
            }
        }
        self.arm_timer();
    }

    fn perform(&mut self, io: DeviceIo) {
        let d = io.disk.index();
        let (kind, offset, len) = match &io.op {
            DevOp::Read { offset, len } => (OpKind::Read, *offset, *len),
            DevOp::Write { offset, data, .. } => (OpKind::Write, *offset, data.len()),
            DevOp::Trim { offset, len } => (OpKind::Trim, *offset, *len),
            DevOp::Flush => (OpKind::Flush, 0, 0),
        };
        let done = self.devices[d].submit(self.now, kind, offset, len);
        if let Some(dm) = &mut self.data {
            dm.apply(d, io.id, &io.op);
        }
        self.events.push(
            done.max(self.now),
            Event::Completion {
                id: io.id,
                disk: d as u32,
            },
        );
        self.observe(d);
    }

    fn on_reply(&mut self, r: Reply) {
        let m = self.reqs.remove(r.id);
        let src = &mut self.sources[m.source as usize];
        src.in_flight -= 1;
        let c = &mut self.counts;
        c.completed += 1;
        let ok = r.result.is_ok();
        if !ok {
            c.failed += 1;
        }
        let write = !matches!(m.kind, IoKind::Read);
        match m.kind {
            IoKind::Read => {
                c.reads += 1;
                c.read_bytes += m.len;
            }
            IoKind::Write => {
                c.writes += 1;
                c.write_bytes += m.len;
            }
            IoKind::Trim => c.trims += 1,
        }
        if m.arrival >= self.start + self.scenario.warmup_ns {
            let lat = self.now - m.arrival;
            self.hists[m.source as usize].record(write, lat);
            self.all.record(write, lat);
            let arrivals_end = self.scenario.duration_ns.map(|d| self.start + d);
            if arrivals_end.is_none_or(|e| self.now < e) {
                self.answered_in_window += 1;
            }
            let b = &mut self.source_bytes[m.source as usize];
            match m.kind {
                IoKind::Read => b.0 += m.len,
                IoKind::Write => b.1 += m.len,
                IoKind::Trim => {}
            }
        }
        if let Some(d) = &mut self.data {
            let first = m.offset / PAGE_SIZE;
            if write {
                d.oracle.write_done(m.volume, first, m.len / PAGE_SIZE, ok);
            } else if let Ok(Some(data)) = &r.result {
                let bytes = data.bytes().expect("data mode reads carry bytes");
                d.oracle.check_read(m.volume, first, bytes, m.tag);
            }
        }
    }

    /// Schedules the engine's deadline if it is earlier than the one already scheduled. A
    /// later deadline waits for the scheduled one: an early `handle_timeout` is harmless and
    /// the deadline is asked again after it, so the queue holds few stale timer events.
    fn arm_timer(&mut self) {
        let Some(mut t) = self.engine.poll_timeout() else {
            return;
        };
        if t <= self.now && self.same_instant >= SAME_INSTANT_TIMEOUTS {
            // The engine keeps asking for the instant it was just given: move on by 1 us
            // rather than spin (counted in the report; an engine bug if it ever happens).
            t = self.now + 1_000;
            self.timer_bumps += 1;
            self.same_instant = 0;
        }
        let t = t.max(self.now);
        if self.timer.is_none_or(|armed| t < armed) {
            self.timer = Some(t);
            self.events.push(t, Event::Timeout);
        }
    }

    /// Records the spike state of member `d` after an engine call touched it.
    #[inline]
    fn observe(&mut self, d: usize) {
        let det = &self.engine.disks().get(DiskId(d as u32)).detector;
        self.spikes
            .observe(d, det.is_unresponsive(), det.transitions(), self.now);
    }

    /// Virtual time over which rates are reported: the arrival window (or the whole run
    /// for a trace without a duration), after the warm-up.
    pub(super) fn measured_window(&self) -> Nanos {
        // The load's window: settling after the last reply is not part of it.
        let ran = self.now - self.start - self.settled_ns;
        let end = self.scenario.duration_ns.unwrap_or(ran).min(ran.max(1));
        end.saturating_sub(self.scenario.warmup_ns).max(1)
    }
}
