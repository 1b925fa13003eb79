//! A *zone*: the stripes of one volume. It is a range of block offsets, the same on every
//! disk, laid out by one [`Layout`]; FLBNs number its blocks stripe by stripe.
//!
//! ```text
//!  disk:      d0      d1      d2   ...  d(n-1)
//!  offset  +-------+-------+-------+   +-------+   data_offset: superblock and metadata
//!  first   | zone of volume 0: layout templates repeated        |
//!  ...     | zone of volume 1 ...                               |
//! ```

use std::borrow::Cow;

use super::remap::Remaps;
use crate::layout::Layout;
use crate::types::{DiskId, Placement};

/// Largest table a zone keeps (entries of one layout period); beyond, `locate` is called.
const MAX_TABLE: u64 = 1 << 20;

/// One period of the layout, tabulated: `locate` does field arithmetic (MOLS over GF(p^r))
/// and is called for every block of every I/O and every spare stripe a placement looks at.
#[derive(Debug)]
struct Table {
    /// Stripes in one period.
    stripes: u32,
    /// Blocks one period takes on each disk.
    blocks: u64,
    /// Per (stripe of the period, column): disk, and block within the period.
    disk: Vec<DiskId>,
    block: Vec<u32>,
}

#[derive(Debug)]
pub struct Zone {
    layout: Box<dyn Layout>,
    table: Option<Table>,
    width: usize,
    nparity: usize,
    stripes: u64,
    /// First block of the zone on every disk, counted in blocks after `data_offset`.
    first_block: u64,
    block_size: u64,
    /// Bytes reserved at the start of every member (superblock, metadata regions).
    data_offset: u64,
    /// Columns rebuilt into donor blocks after a member failure (remap.rs).
    remaps: Remaps,
}

/// Blocks a zone of `stripes` stripes (whole templates of `layout`) takes on each disk.
pub fn blocks_per_disk(layout: &dyn Layout, stripes: u64) -> u64 {
    stripes / layout.template_stripes() * layout.template_blocks_per_disk()
}

impl Zone {
    pub fn new(
        layout: Box<dyn Layout>,
        nparity: usize,
        stripes: u64,
        first_block: u64,
        block_size: u64,
        data_offset: u64,
    ) -> Self {
        let width = layout.width();
        assert!(
            nparity >= 1 && nparity < width,
            "bad parity count {nparity} for width {width}"
        );
        assert!(
            width <= 32,
            "stripe width {width} above 32 is not supported"
        );
        assert!(
            stripes.is_multiple_of(layout.template_stripes()),
            "zone must hold whole templates"
        );
        assert!(
            stripes <= u32::MAX as u64,
            "zone too large for 32-bit stripe ids"
        );
        let table = Table::build(layout.as_ref(), stripes);
        Zone {
            layout,
            table,
            width,
            nparity,
            stripes,
            first_block,
            block_size,
            data_offset,
            remaps: Remaps::default(),
        }
    }

    pub fn remaps(&self) -> &Remaps {
        &self.remaps
    }
    pub fn remaps_mut(&mut self) -> &mut Remaps {
        &mut self.remaps
    }

    pub fn width(&self) -> usize {
        self.width
    }
    pub fn nparity(&self) -> usize {
        self.nparity
    }
    /// Data columns per stripe.
    pub fn dcols(&self) -> usize {
        self.width - self.nparity
    }
    pub fn stripes(&self) -> u64 {
        self.stripes
    }
    pub fn block_size(&self) -> u64 {
        self.block_size
    }
    pub fn layout(&self) -> &dyn Layout {
        self.layout.as_ref()
    }
    /// Blocks the zone takes on each disk.
    pub fn blocks_per_disk(&self) -> u64 {
        blocks_per_disk(self.layout.as_ref(), self.stripes)
    }

    pub fn flbn(&self, stripe: u32, col: usize) -> u64 {
        assert!(col < self.width && (stripe as u64) < self.stripes);
        stripe as u64 * self.width as u64 + col as u64
    }
    pub fn split(&self, flbn: u64) -> (u32, usize) {
        let s = flbn / self.width as u64;
        assert!(s < self.stripes, "FLBN {flbn} outside the zone");
        (s as u32, (flbn % self.width as u64) as usize)
    }

    /// Where column `col` of `stripe` lives (block counted from the zone's start): its
    /// home block, or the donor block it was rebuilt into.
    #[inline(always)]
    fn locate(&self, stripe: u32, col: usize) -> Placement {
        if !self.remaps.is_empty()
            && let Some(m) = self.remaps.get(stripe, col)
        {
            return self.home(m.donor, m.dcol as usize);
        }
        self.home(stripe, col)
    }

    /// Where column `col` of `stripe` lives by the layout alone (ignoring remaps).
    #[inline(always)]
    pub fn home(&self, stripe: u32, col: usize) -> Placement {
        let Some(t) = &self.table else {
            return self.locate_untabulated(stripe, col);
        };
        assert!(
            col < self.width,
            "column {col} out of a stripe of width {}",
            self.width
        );
        let (period, i) = (stripe / t.stripes, stripe % t.stripes);
        let at = i as usize * self.width + col;
        Placement {
            disk: t.disk[at],
            block: period as u64 * t.blocks + t.block[at] as u64,
        }
    }

    #[cold]
    #[inline(never)]
    fn locate_untabulated(&self, stripe: u32, col: usize) -> Placement {
        self.layout.locate(stripe as u64, col)
    }

    #[inline]
    pub fn disk(&self, stripe: u32, col: usize) -> DiskId {
        self.locate(stripe, col).disk
    }
    /// Columns of `stripe` (through their remaps) on members `failed` says have failed.
    pub fn failed_columns(&self, stripe: u32, failed: impl Fn(DiskId) -> bool) -> usize {
        (0..self.width())
            .filter(|&c| failed(self.disk(stripe, c)))
            .count()
    }
    /// Can `stripe` take new data with these members failed: do its parity columns cover
    /// the columns on them (a degraded write, as md does)?
    pub fn parity_covers(&self, stripe: u32, failed: impl Fn(DiskId) -> bool) -> bool {
        self.failed_columns(stripe, failed) <= self.nparity()
    }
    /// Disk and byte offset of page `page` of column `col` of `stripe`.
    pub fn device_offset(&self, stripe: u32, col: usize, page_byte: u64) -> (DiskId, u64) {
        self.offset_of(self.locate(stripe, col), page_byte)
    }
    /// Disk and byte offset of column `col` of `stripe`'s home block (ignoring remaps).
    pub fn home_offset(&self, stripe: u32, col: usize) -> (DiskId, u64) {
        self.offset_of(self.home(stripe, col), 0)
    }
    fn offset_of(&self, p: Placement, page_byte: u64) -> (DiskId, u64) {
        let off = self.data_offset + (self.first_block + p.block) * self.block_size + page_byte;
        (p.disk, off)
    }
    pub fn stripe_disks(&self, stripe: u32) -> Vec<DiskId> {
        self.stripe_disk_list(stripe).into_owned()
    }
    /// The disks of `stripe` in column order, borrowed from the placement table when there
    /// is one (no allocation: background scans look at many stripes per call).
    pub fn stripe_disk_list(&self, stripe: u32) -> Cow<'_, [DiskId]> {
        match &self.table {
            Some(t) if self.remaps.is_empty() || !self.remaps.has(stripe) => {
                let at = (stripe % t.stripes) as usize * self.width;
                Cow::Borrowed(&t.disk[at..at + self.width])
            }
            _ => Cow::Owned((0..self.width).map(|c| self.disk(stripe, c)).collect()),
        }
    }
    pub fn touches(&self, stripe: u32, disk: DiskId) -> bool {
        (0..self.width).any(|c| self.disk(stripe, c) == disk)
    }
}

impl Table {
    /// Tabulates one period of `layout` if the zone spans at least one and it is small.
    fn build(layout: &dyn Layout, zone_stripes: u64) -> Option<Table> {
        let stripes = layout.period_templates() * layout.template_stripes();
        let blocks = layout.period_templates() * layout.template_blocks_per_disk();
        let width = layout.width() as u64;
        if stripes * width > MAX_TABLE || stripes > zone_stripes || blocks > u32::MAX as u64 {
            return None;
        }
        let mut disk = Vec::with_capacity((stripes * width) as usize);
        let mut block = Vec::with_capacity((stripes * width) as usize);
        for s in 0..stripes {
            for c in 0..width as usize {
                let p = layout.locate(s, c);
                disk.push(p.disk);
                block.push(p.block as u32);
            }
        }
        Some(Table {
            stripes: stripes as u32,
            blocks,
            disk,
            block,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{GroupLayout, MolsLayout, PermutationLayout};

    /// The table must answer exactly what the layout does, across several periods.
    #[test]
    fn tabulated_placements_match_the_layout() {
        let layouts: Vec<Box<dyn Layout>> = vec![
            Box::new(MolsLayout::new(29, 7).unwrap()),
            Box::new(MolsLayout::new(8, 5).unwrap()),
            Box::new(PermutationLayout::new(10, 4, 3).unwrap()),
            Box::new(GroupLayout::new(12, 6, 2).unwrap()),
        ];
        for l in layouts {
            let check: Box<dyn Layout> = match l.name() {
                "mols" => Box::new(MolsLayout::new(l.disk_count(), l.width()).unwrap()),
                "groups" => Box::new(GroupLayout::new(l.disk_count(), l.width(), 2).unwrap()),
                _ => Box::new(PermutationLayout::new(l.disk_count(), l.width(), 3).unwrap()),
            };
            let period = l.period_templates() * l.template_stripes();
            let stripes = 3 * period;
            let z = Zone::new(l, 1, stripes, 5, 65536, 4096);
            assert!(z.table.is_some());
            for s in 0..stripes as u32 {
                for c in 0..z.width() {
                    let p = check.locate(s as u64, c);
                    assert_eq!(z.disk(s, c), p.disk);
                    let off = 4096 + (5 + p.block) * 65536 + 8192;
                    assert_eq!(z.device_offset(s, c, 8192), (p.disk, off));
                    assert_eq!(z.stripe_disk_list(s)[c], p.disk);
                }
            }
        }
    }
}
