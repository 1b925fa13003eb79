//! Write offload to HDD logs (SeRW, "Adaptively Separating Read and Write upon SSDs of
//! Hybrid Storage Server in Clouds", Deng et al.; issue 21): a replica write aimed at a busy
//! SSD goes to the append-only log of an idle HDD instead.
//!
//! The rule (SeRW's): redirect when the SSD's IOPS exceed the running median IOPS of the
//! pool's SSDs, and either its queue is longer than `queue_threshold` (L = 3) or the write is
//! larger than the running median write size, and some HDD has an empty queue and room in
//! its log. One addition: the SSD must also have had `min_outstanding` I/Os outstanding on
//! average over its last window (default 0.5), so a nearly idle pool does not redirect.
//!
//! Only a copy that conversion would discard is offloaded: pair sets with offloaded copies
//! keep copy 0 (the first stripe) when they convert, and copy 0 is never offloaded, so
//! conversion reads and writes exactly what it did without offload, and an offloaded copy
//! dies, with its log extent, when its set converts or is freed (`slots::Offloaded`).
//! Reads, hedges, scrubs and conversion never use an offloaded copy's SSD place (a hole).
//! When copy 0's SSD is the busy one, the write is not offloaded (the copy that becomes
//! RAID data must be on an SSD).

mod log;
mod median;
pub mod slots;

pub use log::{HddLog, LogPos};
pub use median::RunningMedian;

pub use super::config::OffloadConfig;
use std::collections::VecDeque;

use super::config::PoolGeometry;
use crate::engine::members::Members;
use crate::steer::WINDOW_NS;
use crate::types::{DiskId, Nanos};

/// What offload did, for the statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffloadStats {
    /// Replica writes offered to the rule, and those sent to an HDD log.
    pub considered: u64,
    pub redirected: u64,
    pub redirected_bytes: u64,
    /// Redirects the rule wanted but no HDD was idle with room in its log.
    pub no_room: u64,
    /// Log extents dead (their set converted or freed).
    pub extents_died: u64,
}

/// The pool's HDD logs and the rule's running medians.
#[derive(Clone, Debug)]
pub struct Offload {
    cfg: OffloadConfig,
    /// Per pool member: its log when it is an HDD.
    logs: Vec<Option<HddLog>>,
    hdds: Vec<DiskId>,
    /// Median completions per steering window of an SSD, and median write size.
    iops: RunningMedian,
    size: RunningMedian,
    /// When each member's IOPS were last sampled.
    sampled_at: Vec<Nanos>,
    /// The HDD tried first next time (round robin among the idle ones).
    next: usize,
    /// Dead extents whose space waits for the journal generation that freed them to be
    /// durable: reused earlier, a crash could bring their set back with its copy
    /// overwritten (the journal's rule for freed stripes, applied to log space).
    held: VecDeque<(u64, DiskId, LogPos)>,
    /// False when the pool only reads logs a previous configuration wrote.
    redirects: bool,
    pub stats: OffloadStats,
}

impl Offload {
    pub fn new(cfg: OffloadConfig, pool: &PoolGeometry) -> Self {
        let hdds: Vec<DiskId> = pool.hdds.iter().map(|&d| DiskId(d)).collect();
        let room = pool.disk_bytes.saturating_sub(pool.data_offset);
        let len = cfg.log_bytes.map_or(room, |b| b.min(room));
        let len = len / crate::types::PAGE_SIZE * crate::types::PAGE_SIZE;
        let mut logs = vec![None; pool.disks];
        for d in &hdds {
            logs[d.index()] = (len > 0).then(|| HddLog::new(pool.data_offset, len));
        }
        Offload {
            cfg,
            logs,
            hdds,
            iops: RunningMedian::default(),
            size: RunningMedian::default(),
            sampled_at: vec![0; pool.disks],
            next: 0,
            held: VecDeque::new(),
            redirects: true,
            stats: OffloadStats::default(),
        }
    }

    /// The logs alone, for a pool whose configuration has offload off but whose journal
    /// still names copies in its HDD logs: they are read and freed, never written.
    pub fn reading_only(pool: &PoolGeometry) -> Self {
        let mut o = Offload::new(OffloadConfig::default(), pool);
        o.redirects = false;
        o
    }

    /// Where to send a copy of `len` bytes aimed at SSD `ssd`: an idle HDD's log (the HDD,
    /// the log position and the device offset, the room taken), or None to write the SSD.
    pub fn redirect(
        &mut self,
        m: &Members,
        now: Nanos,
        ssd: DiskId,
        len: u64,
    ) -> Option<(DiskId, LogPos, u64)> {
        if !self.redirects {
            return None;
        }
        self.stats.considered += 1;
        let iops = m.recent(ssd).map_or(0, |t| t.completed()) as f64;
        if now.saturating_sub(self.sampled_at[ssd.index()]) >= WINDOW_NS {
            self.sampled_at[ssd.index()] = now;
            self.iops.add(iops);
        }
        let median_size = self.size.median();
        self.size.add(len as f64);
        let big = median_size.is_some_and(|med| len as f64 > med);
        if !self.busy(m, ssd, iops) || !(m.queue_depth(ssd) > self.cfg.queue_threshold || big) {
            return None;
        }
        let n = self.hdds.len();
        for k in 0..n {
            let hdd = self.hdds[(self.next + k) % n];
            if m.failed(hdd) || m.queue_depth(hdd) > 0 {
                continue;
            }
            let Some(log) = self.logs[hdd.index()].as_mut() else {
                continue;
            };
            if let Some((pos, off)) = log.append(len) {
                self.next = (self.next + k + 1) % n;
                self.stats.redirected += 1;
                self.stats.redirected_bytes += len;
                return Some((hdd, pos, off));
            }
        }
        self.stats.no_room += 1;
        None
    }

    /// Whether SSD `ssd` is busy by the rule for a write of `len` bytes (no sample taken, no
    /// HDD looked for): asked of the copy that stays on its SSD, to count how often the
    /// busy SSD is the one offload can not relieve.
    pub fn ssd_busy(&self, m: &Members, ssd: DiskId, len: u64) -> bool {
        let iops = m.recent(ssd).map_or(0, |t| t.completed()) as f64;
        let big = self.size.median().is_some_and(|med| len as f64 > med);
        self.busy(m, ssd, iops) && (m.queue_depth(ssd) > self.cfg.queue_threshold || big)
    }

    /// The rule's first half: `ssd` completed more than the median of the SSDs' windows
    /// (`iops`: its last window's completions), and had at least `min_outstanding` I/Os
    /// outstanding on average over that window.
    fn busy(&self, m: &Members, ssd: DiskId, iops: f64) -> bool {
        let outstanding = m.recent(ssd).map_or(0.0, |t| t.mean_outstanding());
        self.iops.median().is_some_and(|med| iops > med) && outstanding >= self.cfg.min_outstanding
    }

    /// The extent at `pos` of `hdd`'s log holds nothing any more.
    pub fn kill(&mut self, hdd: DiskId, pos: LogPos) {
        self.logs[hdd.index()]
            .as_mut()
            .expect("an extent of an HDD log")
            .kill(pos);
        self.stats.extents_died += 1;
    }

    /// The extent at `pos` of `hdd`'s log is dead once journal generation `generation` is
    /// durable (`release`).
    pub fn kill_after(&mut self, generation: u64, hdd: DiskId, pos: LogPos) {
        self.held.push_back((generation, hdd, pos));
    }

    /// Frees the held extents whose generation is durable.
    pub fn release(&mut self, durable: u64) {
        while let Some(&(g, hdd, pos)) = self.held.front()
            && g <= durable
        {
            self.held.pop_front();
            self.kill(hdd, pos);
        }
    }

    /// Rebuild every log after a restart from the extents recovery installed.
    /// Each extent's recorded device offset must be where this log puts its position: a
    /// log whose length changed since (the pool file's `log_bytes`) is refused, not misread.
    pub fn recover(&mut self, live: &[slots::Extent]) -> Result<(), String> {
        let mut per: Vec<Vec<(LogPos, u64)>> = vec![Vec::new(); self.logs.len()];
        for e in live {
            let (hdd, pos, offset) = (e.disk(), e.pos, e.offset);
            let log = self
                .logs
                .get(hdd.index())
                .and_then(Option::as_ref)
                .ok_or_else(|| format!("a log extent on member {}, which keeps no log", hdd.0))?;
            if log.offset(pos) != offset {
                return Err(format!(
                    "the log on member {} has changed length since its extents were written \
                     (position {pos} was at byte {offset}, is now at {}): set the offload \
                     log size back",
                    hdd.0,
                    log.offset(pos)
                ));
            }
            per[hdd.index()].push((pos, e.bytes()));
        }
        for (log, extents) in self.logs.iter_mut().zip(per) {
            if let Some(l) = log.as_mut() {
                *l = HddLog::recovered(l.start(), l.len(), extents)?;
            }
        }
        Ok(())
    }

    /// Bytes held by live extents over every log.
    pub fn live_bytes(&self) -> u64 {
        self.logs.iter().flatten().map(HddLog::live_bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheme::fusion::config::LayoutKind;

    #[test]
    fn freed_log_space_waits_for_its_generation_to_be_durable() {
        let pool = PoolGeometry {
            disks: 3,
            disk_bytes: 4096 + 2 * 4096,
            block_size: 4096,
            data_offset: 4096,
            layout: LayoutKind::Mols,
            hdds: vec![2],
        };
        let mut o = Offload::new(OffloadConfig::default(), &pool);
        let hdd = DiskId(2);
        fn log(o: &mut Offload) -> &mut HddLog {
            o.logs[2].as_mut().expect("an HDD log")
        }
        let (a, _) = log(&mut o).append(4096).unwrap();
        log(&mut o).append(4096).unwrap();
        assert_eq!(log(&mut o).append(4096), None, "full");
        o.kill_after(7, hdd, a);
        o.release(6);
        assert_eq!(
            log(&mut o).append(4096),
            None,
            "generation 7 is not durable"
        );
        o.release(7);
        assert!(
            log(&mut o).append(4096).is_some(),
            "freed once 7 is durable"
        );
        assert_eq!(o.stats.extents_died, 1);
    }
}
