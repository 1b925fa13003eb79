//! Checks every layout must pass, shared by the per-layout property tests.

use super::Layout;
use crate::types::{DiskId, Placement};
use std::collections::HashMap;

/// Verifies, over the first `templates` templates of `l`:
/// - no stripe uses a disk twice;
/// - `locate` is injective and `owner` is its exact inverse;
/// - template t lives in blocks `[t*B, (t+1)*B)` and fills them completely on every disk it
///   uses (B = `template_blocks_per_disk`), so `owner` is `None` only on unused disks.
pub(crate) fn check_layout(l: &dyn Layout, templates: u64) {
    let n = l.disk_count();
    let k = l.width();
    let b = l.template_blocks_per_disk();
    let mut seen: HashMap<Placement, (u64, usize)> = HashMap::new();
    let mut disks = Vec::new();
    for t in 0..templates {
        let mut per_disk = vec![0u64; n];
        for s in t * l.template_stripes()..(t + 1) * l.template_stripes() {
            l.stripe_disks(s, &mut disks);
            assert_eq!(disks.len(), k);
            let mut used = vec![false; n];
            for (c, d) in disks.iter().enumerate() {
                assert!(d.index() < n, "{} stripe {s} col {c} on {d}", l.name());
                assert!(!used[d.index()], "{} stripe {s} uses {d} twice", l.name());
                used[d.index()] = true;
                per_disk[d.index()] += 1;
                let p = l.locate(s, c);
                assert!(
                    (t * b..(t + 1) * b).contains(&p.block),
                    "{} stripe {s} col {c} at block {} outside template {t}",
                    l.name(),
                    p.block
                );
                assert_eq!(
                    seen.insert(p, (s, c)),
                    None,
                    "{} {p:?} placed twice",
                    l.name()
                );
                assert_eq!(l.owner(p.disk, p.block), Some((s, c)), "{} {p:?}", l.name());
            }
        }
        for (d, &count) in per_disk.iter().enumerate() {
            assert!(
                count == 0 || count == b,
                "{} disk {d} holds {count} blocks, want {b}",
                l.name()
            );
            for block in t * b..(t + 1) * b {
                let owner = l.owner(DiskId(d as u32), block);
                assert_eq!(
                    owner.is_some(),
                    count > 0,
                    "{} d{d} block {block}",
                    l.name()
                );
            }
        }
    }
    assert_eq!(l.owner(DiskId(n as u32), 0), None);
    // The declared period: zones tabulate one period and extrapolate, so it must be exact.
    let period = l.period_templates() * l.template_stripes();
    let shift = l.period_templates() * b;
    for s in (0..period).step_by((period as usize / 97).max(1)) {
        for c in 0..k {
            let p = l.locate(s, c);
            for m in [1u64, 3] {
                let q = l.locate(s + m * period, c);
                assert_eq!(
                    (q.disk, q.block),
                    (p.disk, p.block + m * shift),
                    "{} stripe {s} col {c} is not periodic with {period} stripes",
                    l.name()
                );
            }
        }
    }
}
