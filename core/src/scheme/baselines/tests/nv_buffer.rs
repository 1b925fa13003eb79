//! NV-RAID: the copy cost as latency, and writes waiting for room once the buffer fills.

use super::*;

#[test]
fn nvraid_latency_is_the_copy_cost_until_the_buffer_fills() {
    let bs = 16384u64;
    let mut cfg = small(8, 4, bs, vec![3 * bs * 64]);
    cfg.max_request_bytes = 64 << 10;
    cfg.nvraid.buffer_bytes = 128 << 10;
    cfg.nvraid.max_age_ns = None;
    cfg.nvraid.high_water = 0.9;
    let mut m = Mini::new("nvraid", cfg);
    for l in m.lat.iter_mut() {
        *l = 2_000_000;
    }
    // Room: a 4 KiB write costs 64 lines x 100 ns.
    let id = m.submit(
        0,
        Op::Write {
            offset: 0,
            data: Data::Bytes(pattern(4096, 1)),
            fua: false,
        },
    );
    m.run(Some(m.now + 1_000_000));
    let (r, at) = m.reply(id);
    assert!(r.result.is_ok());
    assert_eq!(at - r.submitted_at, 6400);
    // And a read of it hits the buffer at the read cost, without device I/O.
    let before = m.device_reads();
    let id = m.submit(
        0,
        Op::Read {
            offset: 0,
            len: 4096,
        },
    );
    m.run(Some(m.now + 1_000_000));
    let (r, at) = m.reply(id);
    assert_eq!(
        r.result.unwrap().unwrap().into_bytes().unwrap(),
        pattern(4096, 1)
    );
    assert_eq!(at - r.submitted_at, 6400);
    assert_eq!(m.device_reads(), before);
    // Flood it: 64 KiB writes of distinct stripes against 2 ms members. The first ones take
    // the copy cost (1024 lines); later ones wait for flushes to free room.
    let start = m.now;
    let mut ids = Vec::new();
    for i in 0..12u64 {
        ids.push(m.submit(
            0,
            Op::Write {
                offset: (4 + i * 4) * 3 * bs,
                data: Data::Bytes(pattern(64 << 10, i)),
                fua: false,
            },
        ));
    }
    m.run(None);
    let lats: Vec<Nanos> = ids
        .iter()
        .map(|&id| {
            let (r, at) = m.reply(id);
            assert!(r.result.is_ok());
            at - start
        })
        .collect();
    assert_eq!(lats[0], 102_400);
    assert!(lats.iter().any(|&l| l > 1_000_000), "{lats:?}");
    for i in 0..12u64 {
        assert_eq!(
            m.read(0, (4 + i * 4) * 3 * bs, 64 << 10),
            pattern(64 << 10, i)
        );
    }
}
