//! A layout over a subset of the pool's members: the SSD tier of a hybrid pool.
//!
//! HDD members hold no volume stripes (issue 21): a volume's layout is built for the SSD
//! members alone, numbered `0..ssds`, and this wrapper names each of them by its index in
//! the pool, so every disk number a zone hands out stays in the pool's index space (the
//! engine's members, the journal, `fail N`). The HDD members own no block of any zone.

use super::Layout;
use crate::types::{DiskId, Placement};

#[derive(Debug)]
pub struct TieredLayout {
    inner: Box<dyn Layout>,
    /// Pool index of the inner layout's disk `i`.
    members: Vec<DiskId>,
    /// Inner disk of each pool member, `None` for members outside the tier.
    inner_of: Vec<Option<u32>>,
}

impl TieredLayout {
    /// `inner` laid out over `members` (pool indices, one per inner disk, ascending) of a
    /// pool of `pool_disks` members.
    pub fn new(inner: Box<dyn Layout>, members: Vec<DiskId>, pool_disks: usize) -> Self {
        assert_eq!(
            inner.disk_count(),
            members.len(),
            "one member per inner disk"
        );
        let mut inner_of = vec![None; pool_disks];
        for (i, d) in members.iter().enumerate() {
            assert!(d.index() < pool_disks && inner_of[d.index()].is_none());
            inner_of[d.index()] = Some(i as u32);
        }
        TieredLayout {
            inner,
            members,
            inner_of,
        }
    }
}

impl Layout for TieredLayout {
    fn disk_count(&self) -> usize {
        self.inner_of.len()
    }
    fn width(&self) -> usize {
        self.inner.width()
    }
    fn template_stripes(&self) -> u64 {
        self.inner.template_stripes()
    }
    fn template_blocks_per_disk(&self) -> u64 {
        self.inner.template_blocks_per_disk()
    }
    fn period_templates(&self) -> u64 {
        self.inner.period_templates()
    }
    fn locate(&self, stripe: u64, col: usize) -> Placement {
        let p = self.inner.locate(stripe, col);
        Placement {
            disk: self.members[p.disk.index()],
            block: p.block,
        }
    }
    fn owner(&self, disk: DiskId, block: u64) -> Option<(u64, usize)> {
        let inner = (*self.inner_of.get(disk.index())?)?;
        self.inner.owner(DiskId(inner), block)
    }
    fn name(&self) -> &'static str {
        self.inner.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::MolsLayout;

    #[test]
    fn stripes_land_only_on_the_tier_and_owners_invert() {
        // 7 SSDs at pool indices 0-2 and 4-7, HDDs at 3 and 8.
        let members: Vec<DiskId> = [0, 1, 2, 4, 5, 6, 7].map(DiskId).to_vec();
        let l = TieredLayout::new(Box::new(MolsLayout::new(7, 4).unwrap()), members, 9);
        assert_eq!(l.disk_count(), 9);
        for s in 0..l.template_stripes() * 2 {
            for c in 0..l.width() {
                let p = l.locate(s, c);
                assert!(p.disk != DiskId(3) && p.disk != DiskId(8), "{p:?}");
                assert_eq!(l.owner(p.disk, p.block), Some((s, c)));
            }
        }
        assert_eq!(l.owner(DiskId(3), 0), None);
        assert_eq!(l.owner(DiskId(8), 5), None);
        assert_eq!(l.owner(DiskId(40), 5), None);
    }
}
