//! Unit tests of the baselines, on a small in-memory driver (here): md's RMW/RCW choice, parity
//! consistency, batching and degraded writes (`raid_core.rs`), read redirection by ToleRAID and
//! sit-out (`read_policy.rs`), NV-RAID latency and back-pressure (`nv_buffer.rs`), LogRAID
//! cleaning and RAIDM mirroring (`logs.rs`), size-only speed at the paper's scale (`scale.rs`).

mod logs;
mod nv_buffer;
mod raid_core;
mod read_policy;
mod scale;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use super::geom::ArrayGeom;
use super::*;
use crate::engine::api::{Data, DevOp, IoId, IoResult, Op, Reply, Request};
use crate::engine::{Engine, EngineConfig};
use crate::parity;
use crate::types::{DiskId, Nanos, PAGE_SIZE};

const PS: usize = PAGE_SIZE as usize;

struct Mini {
    e: Engine,
    mem: Vec<Vec<u8>>,
    lat: Vec<Nanos>,
    now: Nanos,
    q: BinaryHeap<Reverse<(Nanos, u64)>>,
    ev: BTreeMap<u64, (IoId, IoResult)>,
    seq: u64,
    next_id: u64,
    /// Replies with the time they left.
    replies: Vec<(Reply, Nanos)>,
}

impl Mini {
    fn new(name: &str, mut cfg: BaselineConfig) -> Self {
        let rows = rows_needed(name, &cfg).unwrap();
        cfg.disk_bytes = cfg.data_offset + rows * cfg.block_size;
        let scheme = build(name, &cfg).unwrap();
        let mut ec = EngineConfig::new(cfg.disks);
        ec.detector = crate::detector::DetectorConfig {
            slot_ns: 100_000,
            window_slots: 10,
            x_high: 2,
            x_low: 0,
        };
        Mini {
            e: Engine::new(ec, scheme, 0),
            mem: vec![vec![0u8; cfg.disk_bytes as usize]; cfg.disks],
            lat: vec![50_000; cfg.disks],
            now: 0,
            q: BinaryHeap::new(),
            ev: BTreeMap::new(),
            seq: 0,
            next_id: 1,
            replies: Vec::new(),
        }
    }

    fn pump(&mut self) {
        while let Some(io) = self.e.poll_device_io() {
            let m = &mut self.mem[io.disk.index()];
            let r: IoResult = match io.op {
                DevOp::Read { offset, len } => Ok(Some(Data::Bytes(
                    m[offset as usize..(offset + len) as usize].to_vec(),
                ))),
                DevOp::Write { offset, data, .. } => {
                    if let Some(b) = data.bytes() {
                        m[offset as usize..offset as usize + b.len()].copy_from_slice(b);
                    }
                    Ok(None)
                }
                _ => Ok(None),
            };
            self.seq += 1;
            let t = self.now + self.lat[io.disk.index()];
            self.q.push(Reverse((t, self.seq)));
            self.ev.insert(self.seq, (io.id, r));
        }
        while let Some(r) = self.e.poll_reply() {
            self.replies.push((r, self.now));
        }
    }

    fn submit(&mut self, vol: u32, op: Op) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.e
            .submit(
                Request {
                    id,
                    volume: vol,
                    op,
                },
                self.now,
            )
            .unwrap();
        self.pump();
        id
    }

    /// Process events up to `until`, or until nothing is in flight.
    fn run(&mut self, until: Option<Nanos>) {
        for step in 0..5_000_000u64 {
            assert!(
                step < 4_999_999,
                "no progress: {}",
                self.e.scheme().debug_state()
            );
            let ev = self.q.peek().map(|r| r.0.0);
            let to = self.e.poll_timeout();
            let next = match (ev, to) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(x) => x,
                    None => break,
                },
            };
            if until.is_some_and(|u| next > u) {
                break;
            }
            if until.is_none() && self.e.inflight_requests() == 0 && self.e.inflight_ios() == 0 {
                break;
            }
            self.now = self.now.max(next);
            if ev == Some(next) {
                let Reverse((_, s)) = self.q.pop().unwrap();
                let (id, r) = self.ev.remove(&s).unwrap();
                self.e.handle_completion(id, r, self.now).unwrap();
            } else {
                self.e.handle_timeout(self.now);
            }
            self.pump();
        }
        if let Some(u) = until {
            self.now = self.now.max(u);
        }
    }

    fn reply(&mut self, id: u64) -> (Reply, Nanos) {
        let i = self
            .replies
            .iter()
            .position(|r| r.0.id == id)
            .expect("reply present");
        self.replies.remove(i)
    }

    fn read(&mut self, vol: u32, offset: u64, len: u64) -> Vec<u8> {
        let id = self.submit(vol, Op::Read { offset, len });
        self.run(None);
        self.reply(id)
            .0
            .result
            .unwrap()
            .unwrap()
            .into_bytes()
            .unwrap()
    }

    fn write(&mut self, vol: u32, offset: u64, data: Vec<u8>) {
        let id = self.submit(
            vol,
            Op::Write {
                offset,
                data: Data::Bytes(data),
                fua: false,
            },
        );
        self.run(None);
        self.reply(id).0.result.unwrap();
    }

    fn device_reads(&self) -> u64 {
        self.e.disks().iter().map(|s| s.counters.reads).sum()
    }
    fn disk_reads(&self, d: usize) -> u64 {
        self.e.disks().get(DiskId(d as u32)).counters.reads
    }
}

fn pattern(len: u64, tag: u64) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ tag.wrapping_mul(0x9E37)) as u8)
        .collect()
}

fn small(disks: usize, width: usize, bs: u64, vols: Vec<u64>) -> BaselineConfig {
    let mut c = BaselineConfig::new(disks, 0, bs, width, vols);
    c.max_request_bytes = 1 << 20;
    c
}

#[test]
fn factory_knows_every_name() {
    let cfg = BaselineConfig::paper(vec![1 << 30; 4]);
    for n in NAMES
        .iter()
        .chain(&["raid5", "raidm", "RAID50", "nv-raid", "sit-out"])
    {
        let s = build(n, &cfg).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert_eq!(s.volume_count(), 4);
        assert_eq!(s.volume_size(3), Some(1 << 30));
        assert!(s.volume_status(0).is_some());
    }
    assert!(build("raid7", &cfg).is_err());
    // 4 x 6+1 arrays over disks 0..28; disk 28 is the unused hot spare.
    let geo = cfg.geometry().unwrap();
    assert_eq!((geo.groups, geo.width, geo.dcols()), (4, 7, 6));
    assert_eq!(geo.used_disks().last(), Some(DiskId(27)));
    let mut bad = cfg.clone();
    bad.block_size = 3000;
    assert!(build("raid50", &bad).is_err());
}
