//! The log-structured baselines: LogRAID's cleaning, RAIDM's mirrored round-robin writes.

use super::*;

#[test]
fn lograid_cleaning_reclaims_space() {
    let bs = 8192u64;
    let size = 3 * bs * 24;
    let mut cfg = small(8, 4, bs, vec![size]);
    cfg.lograid.spare_fraction = 0.2;
    cfg.lograid.flush_delay_ns = 10_000;
    let mut m = Mini::new("lograid", cfg);
    let mut oracle = vec![0u8; size as usize];
    let mut rng = crate::rng::Rng::new(11);
    let mut written = 0u64;
    // Write the volume over six times in random 8 KiB pieces.
    while written < 6 * size {
        for _ in 0..4 {
            let p = rng.below(size / 8192) * 8192;
            let d = pattern(8192, written + p);
            oracle[p as usize..p as usize + 8192].copy_from_slice(&d);
            m.submit(
                0,
                Op::Write {
                    offset: p,
                    data: Data::Bytes(d),
                    fua: false,
                },
            );
            written += 8192;
        }
        m.run(None);
    }
    assert!(m.replies.iter().all(|r| r.0.result.is_ok()));
    let st = m.e.volume_status(0).unwrap();
    assert!(st.free_bytes > 0);
    assert!(m.e.stats().device_bytes_written_bg > 0 || m.e.stats().device_bytes_read_bg > 0);
    assert!(
        m.e.stats().device_bytes_read_bg > 0,
        "the cleaner read live pages"
    );
    let wa = m.e.stats().write_amplification();
    assert!(
        wa < 8.0,
        "cleaning makes progress instead of churning: {wa}"
    );
    assert_eq!(
        m.read(0, 0, size.min(1 << 20)),
        oracle[..size.min(1 << 20) as usize]
    );
    m.e.scheme().check_invariants();
    // The log region is far smaller than what was written: only cleaning made that possible.
    let rows = rows_needed("lograid", &small(8, 4, bs, vec![size])).unwrap();
    assert!(rows * 2 * 3 * bs < 6 * size);
}

#[test]
fn raidm_mirrors_writes_round_robin() {
    let bs = 16384u64;
    let mut m = Mini::new("4-raidm", small(14, 7, bs, vec![64 * bs, 64 * bs]));
    for i in 0..14u64 {
        m.write(0, i * 4096 * 3, pattern(4096, i));
    }
    let writes: Vec<u64> = m.e.disks().iter().map(|s| s.counters.writes).collect();
    assert_eq!(writes.iter().sum::<u64>(), 28, "two copies per write");
    assert!(
        writes[..7].iter().all(|&w| w >= 2),
        "every disk of group 0 took writes: {writes:?}"
    );
    assert!(
        writes[7..].iter().all(|&w| w == 0),
        "volume 0 lives on group 0"
    );
    // Survives losing a disk of the group.
    m.e.fail_disk(DiskId(2), m.now);
    for i in 0..14u64 {
        assert_eq!(m.read(0, i * 4096 * 3, 4096), pattern(4096, i));
    }
}
