//! `emu:PRESET:INNER`: imposes an SSD model's latency and stalls, in real time, on any
//! member, so the spikes FusionRAID steers around can be produced on any machine.
//!
//! Each operation is shown to the model (`fusionraid_devices`) at submission, with the
//! loop's monotonic clock as the model's time, and the model answers when the emulated
//! drive would finish it. The real operation runs on the inner member at the same time; its
//! completion is held back until `max(real completion, model completion)`. A model stall
//! (buffer flush, garbage collection) therefore holds every affected completion, exactly
//! as a drive in a spike does, while the data still lives in the inner member.

use std::collections::{BTreeMap, HashMap};

use fusionraid_core::{DevOp, IoResult, Nanos};
use fusionraid_devices::fail_slow::{FailSlow, FailSlowSpec};
use fusionraid_devices::{AgeSpec, DeviceModel, OpKind};

use super::{Completion, Member};

/// The model for `preset`, optionally aged to the paper's steady state (§5.1) and slowed
/// down by `speed` (2.0 = twice as slow).
pub fn build_model(
    preset: &str,
    aged: bool,
    seed: u64,
    speed: f64,
) -> Result<Box<dyn DeviceModel>, String> {
    let mut m = fusionraid_devices::build(preset, seed)?;
    if aged {
        m.age(&AgeSpec::paper());
    }
    if speed != 1.0 {
        m.set_speed_factor(speed);
    }
    Ok(m)
}

/// `model` made fail-slow: slower by the spec's factor in its episodes, on top of `speed`.
pub fn fail_slow(
    model: Box<dyn DeviceModel>,
    spec: FailSlowSpec,
    seed: u64,
    speed: f64,
) -> Box<dyn DeviceModel> {
    let mut m = FailSlow::new(model, spec, seed);
    if speed != 1.0 {
        m.set_speed_factor(speed);
    }
    Box::new(m)
}

pub struct EmuMember {
    name: String,
    inner: Box<dyn Member>,
    model: Box<dyn DeviceModel>,
    /// Model completion time of every operation still in the inner member.
    due: HashMap<u64, Nanos>,
    /// Finished on the inner member, waiting for the model's time: (release, tag).
    held: BTreeMap<(Nanos, u64), IoResult>,
    scratch: Vec<Completion>,
    /// The model needs non-decreasing time.
    model_now: Nanos,
}

impl EmuMember {
    pub fn new(name: &str, inner: Box<dyn Member>, model: Box<dyn DeviceModel>) -> EmuMember {
        EmuMember {
            name: name.to_string(),
            inner,
            model,
            due: HashMap::new(),
            held: BTreeMap::new(),
            scratch: Vec::new(),
            model_now: 0,
        }
    }

    /// The model's view of an operation: kind and a range inside its capacity (a member
    /// larger than the modelled drive wraps around).
    fn model_op(&self, op: &DevOp) -> (OpKind, u64, u64) {
        let cap = self.model.capacity_bytes();
        let (kind, off, len) = match op {
            DevOp::Read { offset, len } => (OpKind::Read, *offset, *len),
            DevOp::Write { offset, data, .. } => (OpKind::Write, *offset, data.len()),
            DevOp::Flush => (OpKind::Flush, 0, 0),
            DevOp::Trim { offset, len } => (OpKind::Trim, *offset, *len),
        };
        let len = len.min(cap);
        let off = off % cap;
        (kind, off.min(cap - len), len)
    }
}

impl Member for EmuMember {
    fn name(&self) -> &str {
        &self.name
    }
    fn size_bytes(&self) -> u64 {
        self.inner.size_bytes()
    }

    fn submit(&mut self, tag: u64, op: DevOp, now: Nanos) {
        self.model_now = self.model_now.max(now);
        let (kind, off, len) = self.model_op(&op);
        let done = self.model.submit(self.model_now, kind, off, len);
        let old = self.due.insert(tag, done);
        assert!(old.is_none(), "tag {tag} submitted twice");
        self.inner.submit(tag, op, now);
    }

    fn commit(&mut self) {
        self.inner.commit();
    }

    fn wear(&self) -> Option<f64> {
        self.model.wear()
    }

    fn uncommitted(&self) -> bool {
        self.inner.uncommitted()
    }

    fn reap(&mut self, now: Nanos, out: &mut Vec<Completion>) {
        self.inner.reap(now, &mut self.scratch);
        for c in self.scratch.drain(..) {
            let release = self.due.remove(&c.tag).unwrap_or(now);
            if release <= now {
                out.push(c);
            } else {
                self.held.insert((release, c.tag), c.result);
            }
        }
        while let Some(entry) = self.held.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((_, tag), result) = entry.remove_entry();
            out.push(Completion { tag, result });
        }
    }

    fn next_deadline(&self) -> Option<Nanos> {
        let held = self.held.keys().next().map(|k| k.0);
        match (held, self.inner.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn inflight(&self) -> usize {
        self.inner.inflight() + self.held.len()
    }

    fn notes(&self) -> Vec<String> {
        let s = self.model.stats();
        let mut n = self.inner.notes();
        n.push(format!(
            "emulated {}: {} stalls ({} flush, {} gc), {:.1} ms stalled, device WA {:.2}",
            self.model.name(),
            s.stalls(),
            s.flush_stalls,
            s.gc_stalls,
            s.stall_ns as f64 / 1e6,
            s.write_amplification()
        ));
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::member::mem::MemMember;
    use fusionraid_core::Data;

    #[test]
    fn completions_wait_for_the_model() {
        let inner = Box::new(MemMember::new("mem:1M", 1 << 20, false).unwrap());
        let model = build_model("dc", false, 1, 1.0).unwrap();
        let mut m = EmuMember::new("emu:dc:mem:1M", inner, model);
        let now = 1_000_000;
        m.submit(
            7,
            DevOp::Write {
                offset: 0,
                data: Data::Bytes(vec![1; 4096]),
                fua: false,
            },
            now,
        );
        let mut out = Vec::new();
        m.reap(now, &mut out);
        assert!(out.is_empty(), "the memory finished, the drive has not");
        let d = m.next_deadline().expect("a held completion");
        assert!(d > now && d < now + 10_000_000, "{d}");
        m.reap(d - 1, &mut out);
        assert!(out.is_empty());
        m.reap(d, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].tag, 7);
        assert!(out[0].result.is_ok());
        assert_eq!(m.inflight(), 0);
        assert!(m.next_deadline().is_none());
    }

    #[test]
    fn slower_device_holds_longer() {
        let mk = |speed| {
            let inner = Box::new(MemMember::new("mem:1M", 1 << 20, false).unwrap());
            let mut m = EmuMember::new("e", inner, build_model("dc", false, 1, speed).unwrap());
            m.submit(
                1,
                DevOp::Read {
                    offset: 0,
                    len: 4096,
                },
                0,
            );
            m.reap(0, &mut Vec::new());
            m.next_deadline().unwrap()
        };
        assert!(mk(4.0) > mk(1.0));
        assert!(build_model("nope", false, 1, 1.0).is_err());
    }
}
