//! [`Ctx`]: everything a scheme may touch while it handles one input. It is the only way a
//! scheme issues device I/O or answers a user, so the engine sees every output.

use std::collections::VecDeque;

use super::api::{Data, DevOp, DeviceIo, Reply, ReqError};
use super::disks::{Disks, IoClass};
use super::iotable::{InflightIo, IoTable, IoTag};
use super::members::Members;
use super::stats::EngineStats;
use crate::rng::Rng;
use crate::types::{DiskId, Nanos};

pub struct Ctx<'a> {
    pub now: Nanos,
    pub rng: &'a mut Rng,
    pub size_only: bool,
    pub(crate) disks: &'a mut Disks,
    pub(crate) ios: &'a mut IoTable,
    pub(crate) out_io: &'a mut VecDeque<DeviceIo>,
    pub(crate) out_reply: &'a mut VecDeque<Reply>,
    pub(crate) user_inflight: &'a mut usize,
    pub stats: &'a mut EngineStats,
}

impl Ctx<'_> {
    /// Issue a device I/O. The completion comes back to the scheme with `tag`.
    pub fn issue(&mut self, disk: DiskId, op: DevOp, tag: IoTag, background: bool) {
        assert!(disk.index() < self.disks.len(), "I/O to unknown {disk}");
        let len = op.len();
        let class = IoClass::of(&op);
        let ticket = self.disks.on_issue(disk, self.now, len, class, background);
        let id = self.ios.insert(InflightIo {
            disk,
            ticket,
            tag,
            issued_at: self.now,
            len,
            class,
            background,
        });
        self.out_io.push_back(DeviceIo {
            id,
            disk,
            op,
            background,
        });
    }

    /// A user read was routed: with a choice of copy (two or more readable copies) or
    /// without (a RAID column, a lone copy). Steering weighs segregation by it.
    pub fn note_read_choice(&mut self, with_choice: bool) {
        self.disks.note_read(with_choice);
    }

    /// Answer a user request. Exactly one reply per accepted request.
    pub fn reply(&mut self, id: u64, submitted_at: Nanos, result: Result<Option<Data>, ReqError>) {
        assert!(*self.user_inflight > 0, "reply without a request in flight");
        *self.user_inflight -= 1;
        self.stats.replies += 1;
        if result.is_err() {
            self.stats.failed_requests += 1;
        }
        self.out_reply.push_back(Reply {
            id,
            result,
            submitted_at,
        });
    }

    pub fn disk_count(&self) -> usize {
        self.disks.len()
    }
    pub fn is_failed(&self, d: DiskId) -> bool {
        self.disks.get(d).failed
    }
    pub fn is_unresponsive(&self, d: DiskId) -> bool {
        self.disks.get(d).detector.is_unresponsive()
    }
    /// A disk new work should steer around when it can: failed or in a latency spike.
    pub fn avoid(&self, d: DiskId) -> bool {
        let s = self.disks.get(d);
        s.failed || s.detector.is_unresponsive()
    }
    pub fn stragglers(&self, d: DiskId) -> u32 {
        self.disks.get(d).detector.stragglers()
    }
    pub fn inflight(&self, d: DiskId) -> u32 {
        self.disks.get(d).inflight
    }
    /// The per-member signals, as policies see them.
    pub fn members(&self) -> Members<'_> {
        Members::new(self.disks, self.now)
    }
    /// The per-member signals and the random generator at once (a policy draw by weight).
    pub fn members_and_rng(&mut self) -> (Members<'_>, &mut Rng) {
        (Members::new(self.disks, self.now), self.rng)
    }
    /// Mark a member failed: nothing is issued to it any more by well-behaved schemes.
    pub fn fail_disk(&mut self, d: DiskId) {
        let s = self.disks.get_mut(d);
        if !s.failed {
            s.failed = true;
            self.stats.disk_failures += 1;
        }
    }
    /// Members (not failed) that completed writes since the last call: what a commit must
    /// flush before it may claim those writes durable.
    pub fn take_dirty(&mut self) -> Vec<DiskId> {
        let mut out = Vec::new();
        for d in 0..self.disks.len() {
            let d = DiskId(d as u32);
            if self.disks.take_dirty(d) && !self.disks.get(d).failed {
                out.push(d);
            }
        }
        out
    }

    pub fn failed_disks(&self) -> usize {
        self.disks.iter().filter(|s| s.failed).count()
    }
}
