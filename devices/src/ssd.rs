//! The SSD model: a pipeline of reservation queues.
//!
//! read:  stall gate -> controller pool -> die(s) holding the flash pages, host link
//! write: stall gate -> controller pool -> host link -> DRAM buffer admission -> ack;
//!        full program units then go to the dies round-robin, followed by any GC work.
//!
//! Latency of a request = its unloaded latency (sampled from the measured/datasheet
//! distribution) + every queueing delay on its way + any stall it runs into. Service
//! *occupancy* (how long it keeps a controller core, a die or the link busy) is a separate
//! parameter from latency, which is what lets a drive have 76 us reads yet 400K IOPS.
//!
//! Read/write interference arises on its own: a program keeps its die busy for
//! `program_ns`, and a read of a page on that die waits (the profiles' mixed curves).

use fusionraid_core::Nanos;
use fusionraid_core::rng::Rng;

use crate::age::{self, AgeSpec};
use crate::config::SsdConfig;
use crate::events::EventClock;
use crate::flash_state::FlashState;
use crate::gc::{self, GcCosts, GcPolicy};
use crate::queues::{ServerPool, StallScope, StallWindows};
use crate::write_buffer::WriteBuffer;
use crate::{DeviceModel, DeviceStats, OpKind, PAGE, round_u64, xfer_ns};

/// A program on one die: `[start, end)`, suspensions left, and until when the reads that
/// suspended it occupy the die (reads arriving while it is already suspended join the same
/// suspension).
#[derive(Clone, Copy, Debug, Default)]
struct ProgramWindow {
    start: Nanos,
    end: Nanos,
    suspends_left: u32,
    reads_free: Nanos,
}

/// Stream tags for [`phase_draw`].
const FLUSH_PHASE: u64 = 0xf105_4a5e;
const GC_PHASE: u64 = 0x6c0a_4a5e;

/// A drive's position in one of its internal cycles (write-buffer flushes, GC watermarks), in
/// `[0, 1)`: uniform, from the drive's own seed, so the members of a fleet are not in
/// lockstep. Drawn from a stream of its own (not `SsdModel::rng`), so it does not shift the
/// latency samples, and a model without such a cycle is unchanged.
fn phase_draw(seed: u64, tag: u64) -> f64 {
    Rng::new(seed ^ tag.wrapping_mul(0x9e37_79b9_7f4a_7c15)).unit()
}

/// What background GC in a die's idle time left behind.
#[derive(Clone, Copy, Debug, Default)]
struct IdleGc {
    /// GC was still at work when the idle period ended.
    running: bool,
    /// The die is busy with the internal events the cleaning ended with until then.
    busy_until: Nanos,
}

#[derive(Clone)]
pub struct SsdModel {
    cfg: SsdConfig,
    rng: Rng,
    ctrl: ServerPool,
    ctrl_w: ServerPool,
    die_free: Vec<Nanos>,
    /// The last program booked on each die, for program suspend.
    programs: Vec<ProgramWindow>,
    next_die: usize,
    link_read_free: Nanos,
    link_write_free: Nanos,
    buffer: WriteBuffer,
    flash: FlashState,
    stalls: StallWindows,
    costs: GcCosts,
    events: EventClock,
    stats: DeviceStats,
    last_now: Nanos,
    /// Link time of one page, reads and writes (the link rates never change).
    page_xfer: [Nanos; 2],
    /// The last request length and its link time, reads and writes: most requests of a
    /// member have one size (a FusionRAID block), so `xfer_ns` (a float division and a
    /// rounding) runs once per size change instead of on every request.
    last_xfer: [(u64, Nanos); 2],
}

impl SsdModel {
    /// Builds a model; panics on an invalid configuration (use [`SsdModel::try_new`] to get
    /// the error instead).
    pub fn new(cfg: SsdConfig) -> Self {
        Self::try_new(cfg).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn try_new(cfg: SsdConfig) -> Result<Self, String> {
        cfg.validate()?;
        let mut buffer = WriteBuffer::new(cfg.buffer_bytes, cfg.flush_spikes);
        buffer.set_flush_phase(phase_draw(cfg.seed, FLUSH_PHASE));
        Ok(SsdModel {
            rng: Rng::new(cfg.seed),
            ctrl: ServerPool::new(cfg.ctrl_servers),
            ctrl_w: ServerPool::new(cfg.ctrl_write_servers),
            die_free: vec![0; cfg.dies() as usize],
            programs: vec![ProgramWindow::default(); cfg.dies() as usize],
            next_die: 0,
            link_read_free: 0,
            link_write_free: 0,
            buffer,
            flash: FlashState::new(cfg.capacity_bytes, cfg.physical_bytes()),
            stalls: StallWindows::default(),
            costs: cfg.gc_costs(),
            events: EventClock::new(cfg.events, cfg.block_bytes, cfg.seed),
            stats: DeviceStats::default(),
            last_now: 0,
            page_xfer: [cfg.page_xfer_ns(false), cfg.page_xfer_ns(true)],
            last_xfer: [
                (0, xfer_ns(0, cfg.read_mb_s)),
                (0, xfer_ns(0, cfg.write_mb_s)),
            ],
            cfg,
        })
    }

    /// `xfer_ns(len, rate)` of the read or write link (memoised for the last length).
    fn link_ns(&mut self, write: bool, len: u64) -> Nanos {
        let rate = if write {
            self.cfg.write_mb_s
        } else {
            self.cfg.read_mb_s
        };
        let m = &mut self.last_xfer[write as usize];
        if m.0 != len {
            *m = (len, xfer_ns(len, rate));
        }
        m.1
    }

    pub fn config(&self) -> &SsdConfig {
        &self.cfg
    }

    pub fn flash(&self) -> &FlashState {
        &self.flash
    }

    fn scale(&self, ns: f64) -> Nanos {
        round_u64(ns * self.cfg.speed_factor)
    }

    /// `scale(ns as f64)` for a whole number of nanoseconds. At speed factor 1 (every
    /// member not slowed on purpose) that is `ns` itself below 2^53, where `u64 -> f64` is
    /// exact; the float round trip ran several times per device I/O.
    fn scale_ns(&self, ns: u64) -> Nanos {
        if self.cfg.speed_factor == 1.0 && ns < 1 << 53 {
            ns
        } else {
            self.scale(ns as f64)
        }
    }

    fn read(&mut self, now: Nanos, off: u64, len: u64) -> Nanos {
        let t0 = self.stalls.defer(now, false);
        let pages = len.div_ceil(PAGE).clamp(1, u32::MAX as u64) as u32;
        let parts = pages.min(self.ctrl.servers() as u32);
        let part_ns = self.scale_ns(self.cfg.ctrl_read_ns * pages.div_ceil(parts) as u64);
        let arrive = t0 + self.ctrl.reserve(t0, parts, part_ns);

        let fp = self.cfg.flash_page_bytes;
        let occ = self.scale_ns(self.cfg.die_read_ns);
        let n = self.die_free.len() as u64;
        let mut wait = 0;
        for p in off / fp..=(off + len - 1) / fp {
            let d = (p % n) as usize;
            let start = self.read_slot(d, arrive, occ);
            wait = wait.max(start - arrive);
        }
        if let GcPolicy::Background { step_ns, .. } = self.cfg.gc
            && step_ns > 0
            && self.stalls.in_write_window(arrive)
        {
            // Urgent GC on a DC drive: the read slips in after the GC step in progress.
            wait += self.rng.below(self.scale_ns(step_ns).max(1));
        }
        // The link is booked in submission order (a pure bandwidth limit): booking it when
        // the data leaves the die would let one read stuck behind a program hold up every
        // later read on the link.
        let xfer = self.link_ns(false, len);
        let xfer = self.scale_ns(xfer);
        let x4k = self.scale_ns(self.page_xfer[0]);
        let link_start = arrive.max(self.link_read_free);
        self.link_read_free = link_start + xfer;
        wait = wait.max(link_start - arrive);
        let raw = self.cfg.read_latency.sample(&mut self.rng);
        let base = self.scale_ns(raw);
        let done = arrive + wait + base + xfer.saturating_sub(x4k);
        self.stats.reads += 1;
        self.stats.bytes_read += len;
        self.stalls.defer(done, false)
    }

    /// Books a flash-page read on die `d` for a read that reaches it at `t`; returns when
    /// the die starts it.
    fn read_slot(&mut self, d: usize, t: Nanos, occ: Nanos) -> Nanos {
        let w = self.programs[d];
        if let Some(s) = self.cfg.program_suspend
            && w.start <= t
            && t < w.end
            && w.suspends_left > 0
        {
            // Pause the program (unless a read already holds it paused): the read runs after
            // the suspend latency, and the program, with everything queued behind it on the
            // die, finishes that much later.
            let susp = self.scale_ns(s.suspend_ns);
            let fresh = w.reads_free <= t;
            let ready = if fresh { t + susp } else { w.reads_free };
            let start = self.stalls.defer(ready, false);
            let shift = occ + if fresh { susp } else { 0 };
            self.programs[d] = ProgramWindow {
                end: w.end + shift,
                suspends_left: w.suspends_left - fresh as u32,
                reads_free: start + occ,
                ..w
            };
            self.die_free[d] += shift;
            return start;
        }
        let mut start = self.stalls.defer(t.max(self.die_free[d]), false);
        let gc = self.idle_gc(d, start);
        if gc.running
            && let GcPolicy::Background { step_ns, .. } = self.cfg.gc
        {
            // The die was cleaning when the read came: it waits for the GC step in progress.
            start += self.rng.below(self.scale_ns(step_ns).max(1));
        }
        // An erase or a metadata write the cleaning ended with may still be running.
        start = start.max(gc.busy_until);
        self.die_free[d] = start + occ;
        start
    }

    /// Die `d` stood idle from its last booking until `start`: background GC used that time.
    /// Returns whether GC was still at work at `start`, and until when the internal events
    /// its cleaning ended with (an erase on this die, a metadata write) keep the die.
    fn idle_gc(&mut self, d: usize, start: Nanos) -> IdleGc {
        if !self.gc_may_work() {
            return IdleGc::default();
        }
        let idle_from = self.die_free[d];
        let idle = start.saturating_sub(idle_from);
        let out = gc::in_idle_time(
            &self.cfg.gc,
            &self.costs,
            &mut self.flash,
            idle,
            self.cfg.speed_factor,
        );
        self.stats.gc_die_ns += out.bg_die_ns;
        let copied = round_u64(out.copied_bytes);
        self.stats.gc_bytes_copied += copied;
        self.stats.flash_bytes_written += copied;
        let busy_until =
            self.events_after_cleaning(d, idle_from + out.bg_die_ns, out.bg_cleaned_bytes);
        IdleGc {
            running: out.running,
            busy_until,
        }
    }

    /// GC on die `d` cleaned `victim_bytes`, its work ending at `at`: books the erases on the
    /// die and the metadata writes on the whole drive ([`crate::events`]). Returns until when
    /// die `d` is busy with them (`at` if none).
    fn events_after_cleaning(&mut self, d: usize, at: Nanos, victim_bytes: f64) -> Nanos {
        if !self.events.is_active() {
            return at;
        }
        let due = self.events.on_cleaned(victim_bytes);
        let mut busy = at;
        if due.erases > 0 {
            let erase = self.scale_ns(self.cfg.erase_ns * u64::from(due.erases));
            busy = at.max(self.die_free[d]) + erase;
            self.die_free[d] = busy;
            self.stats.erases += u64::from(due.erases);
            self.stats.gc_die_ns += erase;
        }
        if due.map_writes > 0 {
            let dur = self.scale_ns(due.map_write_ns);
            self.block_all(at, at + dur);
            self.stats.map_write_stalls += u64::from(due.map_writes);
            self.stats.stall_ns += dur;
            busy = busy.max(at + dur);
        }
        busy
    }

    /// Whether erased space is low enough for the GC policy to do anything; if not, its
    /// outcome is nothing, and asking for it (after every program and idle period) is
    /// skipped.
    fn gc_may_work(&self) -> bool {
        self.flash.free_bytes() < self.cfg.gc.works_below()
    }

    fn write(&mut self, now: Nanos, off: u64, len: u64) -> Nanos {
        let t0 = self.stalls.defer(now, true);
        let pages = len.div_ceil(PAGE).clamp(1, u32::MAX as u64) as u32;
        let parts = pages.min(self.ctrl_w.servers() as u32);
        let part_ns = self.scale_ns(self.cfg.ctrl_write_ns * pages.div_ceil(parts) as u64);
        let arrive = t0 + self.ctrl_w.reserve(t0, parts, part_ns);

        let xfer = self.link_ns(true, len);
        let xfer = self.scale_ns(xfer);
        let x4k = self.scale_ns(self.page_xfer[1]);
        let link_start = arrive.max(self.link_write_free);
        self.link_write_free = link_start + xfer;
        let in_device = link_start + xfer.saturating_sub(x4k);
        self.flash.on_write(off, len);
        // A write larger than a quarter of the buffer streams in: each piece waits for room,
        // and the write is acknowledged once its last piece is in.
        let piece = (self.buffer.capacity() / 4).max(PAGE);
        let unit = self.cfg.program_unit_bytes;
        let mut admitted = 0;
        let mut sent = 0;
        while sent < len {
            let n = (len - sent).min(piece);
            sent += n;
            // This piece is in the device once the link has carried it (pipelined with the
            // admission of the pieces before it).
            let arrived = if sent == len {
                in_device
            } else {
                link_start + self.scale_ns(xfer_ns(sent, self.cfg.write_mb_s))
            };
            admitted = self
                .stalls
                .defer(self.buffer.admit(arrived.max(admitted), n), true);
            while self.buffer.take_unit(unit) {
                self.program(admitted, unit);
            }
        }
        let raw = self.cfg.write_latency.sample(&mut self.rng);
        let base = self.scale_ns(raw);
        let done = self.stalls.defer(admitted + base, true);
        if self.buffer.note_written(len) {
            self.flush_spike(admitted);
        }
        self.stats.writes += 1;
        self.stats.bytes_written += len;
        done
    }

    /// A consumer drive's periodic blocking buffer flush, starting at `at`.
    fn flush_spike(&mut self, at: Nanos) {
        let f = self.buffer.flush_spikes().expect("flush spikes configured");
        let span = f.max_ns - f.min_ns;
        let raw = f.min_ns
            + if span > 0 {
                self.rng.below(span + 1)
            } else {
                0
            };
        let dur = self.scale_ns(raw);
        self.block_all(at, at + dur);
        self.stats.flush_stalls += 1;
        self.stats.stall_ns += dur;
    }

    fn block_all(&mut self, start: Nanos, end: Nanos) {
        self.stalls.add(StallScope::All, start, end);
        for d in &mut self.die_free {
            *d = (*d).max(end);
        }
    }

    /// Programs `bytes` of buffered data on the next die, then books the GC work it causes.
    fn program(&mut self, t: Nanos, bytes: u64) {
        let d = self.next_die;
        self.next_die = if d + 1 == self.die_free.len() {
            0
        } else {
            d + 1
        };
        let mut start = self.stalls.defer(t.max(self.die_free[d]), true);
        let gc = self.idle_gc(d, start);
        if gc.running
            && let GcPolicy::Background { step_ns, .. } = self.cfg.gc
        {
            start += self.rng.below(self.scale_ns(step_ns).max(1));
        }
        start = start.max(gc.busy_until);
        let dur = if bytes == self.cfg.program_unit_bytes {
            // A full unit (every program but an explicit flush's): ratio 1, in integers.
            self.scale_ns(self.cfg.program_ns)
        } else {
            let ratio = bytes as f64 / self.cfg.program_unit_bytes as f64;
            self.scale(self.cfg.program_ns as f64 * ratio.max(0.25))
        };
        let end = start + dur;
        self.die_free[d] = end;
        self.programs[d] = ProgramWindow {
            start,
            end,
            suspends_left: self.cfg.program_suspend.map_or(0, |s| s.max_per_program),
            reads_free: start,
        };
        self.buffer.schedule_release(end, bytes);
        self.flash.consume(bytes);
        self.stats.flash_bytes_written += bytes;
        if !self.gc_may_work() {
            return;
        }

        let out = gc::after_program(
            &self.cfg.gc,
            &self.costs,
            &mut self.flash,
            bytes,
            dur,
            self.die_free.len() as u32,
            self.cfg.speed_factor,
        );
        self.die_free[d] += out.bg_die_ns;
        self.stats.gc_die_ns += out.bg_die_ns;
        let copied = round_u64(out.copied_bytes);
        self.stats.gc_bytes_copied += copied;
        self.stats.flash_bytes_written += copied;
        let bg_end = self.die_free[d];
        self.events_after_cleaning(d, bg_end, out.bg_cleaned_bytes);
        if let Some((scope, wall, die_ns)) = out.pass {
            // The pass's erases run on every die in parallel, within the pass.
            let wall = wall + self.pass_erases(out.pass_cleaned_bytes);
            match scope {
                StallScope::All => self.block_all(end, end + wall),
                StallScope::Writes => self.stalls.add(scope, end, end + wall),
            }
            self.stats.gc_stalls += 1;
            self.stats.gc_die_ns += die_ns;
            self.stats.stall_ns += wall;
            self.stats.gc_stall_ns += wall;
        }
    }

    /// Wall time the erases of a GC pass that cleaned `victim_bytes` add to it (spread over
    /// the dies), and the metadata writes due then, which lengthen it.
    fn pass_erases(&mut self, victim_bytes: f64) -> Nanos {
        if !self.events.is_active() {
            return 0;
        }
        let due = self.events.on_cleaned(victim_bytes);
        self.stats.erases += u64::from(due.erases);
        self.stats.map_write_stalls += u64::from(due.map_writes);
        let erase = self.scale_ns(self.cfg.erase_ns * u64::from(due.erases));
        self.stats.gc_die_ns += erase;
        erase.div_ceil(self.die_free.len() as u64) + self.scale_ns(due.map_write_ns)
    }

    fn trim(&mut self, now: Nanos, off: u64, len: u64) -> Nanos {
        let t0 = self.stalls.defer(now, true);
        let ctrl_ns = self.scale_ns(self.cfg.ctrl_write_ns);
        let arrive = t0 + self.ctrl_w.reserve(t0, 1, ctrl_ns);
        self.flash.on_trim(off, len);
        self.stats.trims += 1;
        self.stats.bytes_trimmed += len;
        let base = self.scale(self.cfg.write_latency.min());
        self.stalls.defer(arrive + base, true)
    }

    fn flush(&mut self, now: Nanos) -> Nanos {
        let t0 = self.stalls.defer(now, true);
        let base = self.scale(self.cfg.write_latency.min());
        self.stats.flushes += 1;
        if self.cfg.power_loss_protected {
            return t0 + base;
        }
        let partial = self.buffer.take_partial();
        if partial > 0 {
            self.program(t0, partial);
        }
        self.stalls
            .defer(t0.max(self.buffer.drained_at()) + base, true)
    }
}

impl DeviceModel for SsdModel {
    fn submit(&mut self, now: Nanos, kind: OpKind, offset: u64, len: u64) -> Nanos {
        debug_assert!(now >= self.last_now, "time went backwards");
        let now = now.max(self.last_now);
        self.last_now = now;
        self.stalls.prune(now);
        let len = len.max(1);
        let done = match kind {
            OpKind::Read => self.read(now, offset, len),
            OpKind::Write => self.write(now, offset, len),
            OpKind::Trim => self.trim(now, offset, len),
            OpKind::Flush => self.flush(now),
        };
        self.stats.busy_latency_ns += (done - now) as u128;
        done
    }

    fn capacity_bytes(&self) -> u64 {
        self.cfg.capacity_bytes
    }

    fn stats(&self) -> DeviceStats {
        self.stats
    }

    fn name(&self) -> &str {
        &self.cfg.name
    }

    fn wear(&self) -> Option<f64> {
        let raw = self.cfg.physical_bytes().max(1) as f64;
        Some(self.stats.flash_bytes_written as f64 / (raw * crate::RATED_PE_CYCLES))
    }

    fn age(&mut self, spec: &AgeSpec) {
        let phase = phase_draw(self.cfg.seed, GC_PHASE);
        age::apply(&mut self.flash, &self.cfg.gc, spec, phase);
    }

    fn set_speed_factor(&mut self, factor: f64) {
        assert!(
            factor > 0.0 && factor.is_finite(),
            "speed factor must be positive"
        );
        self.cfg.speed_factor = factor;
    }

    fn clone_box(&self) -> Option<Box<dyn DeviceModel>> {
        Some(Box::new(self.clone()))
    }
}
