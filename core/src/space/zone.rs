//! A *zone*: the stripes of one volume. It is a range of block offsets, the same on every
//! disk, laid out by one [`Layout`]; FLBNs number its blocks stripe by stripe.
//!
//! ```text
//!  disk:      d0      d1      d2   ...  d(n-1)
//!  offset  +-------+-------+-------+   +-------+   data_offset: superblock and metadata
//!  first   | zone of volume 0: layout templates repeated        |
//!  ...     | zone of volume 1 ...                               |
//! ```

use crate::layout::Layout;
use crate::types::{DiskId, Placement};

#[derive(Debug)]
pub struct Zone {
    layout: Box<dyn Layout>,
    width: usize,
    nparity: usize,
    stripes: u64,
    /// First block of the zone on every disk, counted in blocks after `data_offset`.
    first_block: u64,
    block_size: u64,
    /// Bytes reserved at the start of every member (superblock, metadata regions).
    data_offset: u64,
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
        Zone {
            layout,
            width,
            nparity,
            stripes,
            first_block,
            block_size,
            data_offset,
        }
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
        self.stripes / self.layout.template_stripes() * self.layout.template_blocks_per_disk()
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

    pub fn disk(&self, stripe: u32, col: usize) -> DiskId {
        self.layout.locate(stripe as u64, col).disk
    }
    /// Disk and byte offset of page `page` of column `col` of `stripe`.
    pub fn device_offset(&self, stripe: u32, col: usize, page_byte: u64) -> (DiskId, u64) {
        let Placement { disk, block } = self.layout.locate(stripe as u64, col);
        let off = self.data_offset + (self.first_block + block) * self.block_size + page_byte;
        (disk, off)
    }
    pub fn stripe_disks(&self, stripe: u32) -> Vec<DiskId> {
        (0..self.width).map(|c| self.disk(stripe, c)).collect()
    }
    pub fn touches(&self, stripe: u32, disk: DiskId) -> bool {
        (0..self.width).any(|c| self.disk(stripe, c) == disk)
    }
}
