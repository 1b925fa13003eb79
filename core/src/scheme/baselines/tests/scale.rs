//! Size-only speed of every baseline at the paper's scale (ignored: run by hand).

use super::*;

/// Size-only speed at the paper's scale (29 x 240 GB, 4 volumes): run with
/// `cargo test -p fusionraid-core --release --lib size_only_paper_scale -- --ignored --nocapture`.
#[test]
#[ignore]
fn size_only_paper_scale() {
    let vols = vec![50u64 << 30; 4];
    for name in NAMES {
        let cfg = BaselineConfig::paper(vols.clone());
        let scheme = build(name, &cfg).unwrap();
        let mut ec = EngineConfig::new(cfg.disks);
        ec.size_only = true;
        let mut e = Engine::new(ec, scheme, 0);
        let mut rng = crate::rng::Rng::new(1);
        let mut q: BinaryHeap<Reverse<(Nanos, u64)>> = BinaryHeap::new();
        let mut ev: BTreeMap<u64, IoId> = BTreeMap::new();
        let (mut now, mut seq, mut inflight) = (0u64, 0u64, 0usize);
        let start = std::time::Instant::now();
        let n = 200_000u64;
        let mut done = 0u64;
        let mut id = 0u64;
        while done < n {
            while inflight < 64 && id < n {
                id += 1;
                let vol = rng.below(4) as u32;
                let off = rng.below((50u64 << 30) / 16384) * 16384;
                let op = if rng.below(10) < 6 {
                    Op::Write {
                        offset: off,
                        data: Data::Size(16384),
                        fua: false,
                    }
                } else {
                    Op::Read {
                        offset: off,
                        len: 16384,
                    }
                };
                e.submit(
                    Request {
                        id,
                        volume: vol,
                        op,
                    },
                    now,
                )
                .unwrap();
                inflight += 1;
            }
            while let Some(io) = e.poll_device_io() {
                seq += 1;
                q.push(Reverse((now + 50_000 + rng.below(50_000), seq)));
                ev.insert(seq, io.id);
            }
            while e.poll_reply().is_some() {
                inflight -= 1;
                done += 1;
            }
            let t = q.peek().map(|r| r.0.0);
            let to = e.poll_timeout();
            match (t, to) {
                (Some(a), b) if b.is_none_or(|b| a <= b) => {
                    let Reverse((a, s)) = q.pop().unwrap();
                    now = now.max(a);
                    let io = ev.remove(&s).unwrap();
                    e.handle_completion(io, Ok(None), now).unwrap();
                }
                (_, Some(b)) => {
                    now = now.max(b);
                    e.handle_timeout(now);
                }
                _ => {}
            }
        }
        eprintln!(
            "{name}: {n} requests in {:?} ({} device I/Os issued)",
            start.elapsed(),
            e.disks()
                .iter()
                .map(|d| d.counters.reads + d.counters.writes)
                .sum::<u64>()
        );
    }
}
