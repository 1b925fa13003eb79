//! Geometry shared by the parity baselines: independent RAID5/RAID6 groups of consecutive
//! disks (md left-symmetric rotation, [`GroupLayout`]), and how a volume's byte range maps
//! onto their stripes.
//!
//! Global stripe `s` lives in group `s % groups`, row `s / groups`; a RAID0 over the groups
//! therefore uses a chunk of one full RAID5 stripe of data. A volume is a run of *volume
//! stripes* `k = 0..`; [`VolMap`] turns `k` into a global stripe, either all in one group
//! (4-RAID5: one array per volume) or consecutive global stripes (RAID50).

use crate::layout::{GroupLayout, Layout};
use crate::types::{DiskId, PAGE_SIZE};

#[derive(Debug, Clone)]
pub struct ArrayGeom {
    layout: GroupLayout,
    pub groups: usize,
    pub width: usize,
    pub nparity: usize,
    pub block_size: u64,
    /// Pages per chunk (block).
    pub ppb: usize,
    /// Rows per group.
    pub rows: u64,
    /// Bytes reserved at the start of every member.
    pub data_offset: u64,
}

impl ArrayGeom {
    pub fn new(
        groups: usize,
        width: usize,
        nparity: usize,
        block_size: u64,
        rows: u64,
        data_offset: u64,
    ) -> Result<Self, String> {
        let layout = GroupLayout::new(groups * width, width, nparity).map_err(|e| e.to_string())?;
        if width > 32 {
            return Err(format!("group width {width} above 32 is not supported"));
        }
        if !(1..=2).contains(&nparity) {
            return Err(format!(
                "{nparity} parity columns: only 1 (RAID5) or 2 (RAID6)"
            ));
        }
        Ok(ArrayGeom {
            layout,
            groups,
            width,
            nparity,
            block_size,
            ppb: (block_size / PAGE_SIZE) as usize,
            rows,
            data_offset,
        })
    }
    pub fn dcols(&self) -> usize {
        self.width - self.nparity
    }
    pub fn stripes(&self) -> u64 {
        self.rows * self.groups as u64
    }
    pub fn group_of(&self, stripe: u64) -> usize {
        (stripe % self.groups as u64) as usize
    }
    pub fn disk(&self, stripe: u64, col: usize) -> DiskId {
        self.layout.locate(stripe, col).disk
    }
    /// Device and byte offset of page `page` of column `col` of `stripe`.
    pub fn offset(&self, stripe: u64, col: usize, page: usize) -> (DiskId, u64) {
        let p = self.layout.locate(stripe, col);
        (
            p.disk,
            self.data_offset + p.block * self.block_size + page as u64 * PAGE_SIZE,
        )
    }
    pub fn group_disks(&self, g: usize) -> impl Iterator<Item = DiskId> {
        let w = self.width as u32;
        (g as u32 * w..(g as u32 + 1) * w).map(DiskId)
    }
    pub fn used_disks(&self) -> impl Iterator<Item = DiskId> {
        (0..(self.groups * self.width) as u32).map(DiskId)
    }
    /// Pages of data in one stripe.
    pub fn stripe_pages(&self) -> usize {
        self.dcols() * self.ppb
    }
    pub fn stripe_data_bytes(&self) -> u64 {
        self.dcols() as u64 * self.block_size
    }
}

/// Where a volume's stripes live: volume stripe k is global stripe `(base + k) * stride + add`.
#[derive(Debug, Clone)]
pub struct VolMap {
    pub name: String,
    pub size: u64,
    pub base: u64,
    pub stride: u64,
    pub add: u64,
}

impl VolMap {
    pub fn stripe(&self, k: u64) -> u64 {
        (self.base + k) * self.stride + self.add
    }
    /// Volume stripes the volume spans.
    pub fn stripes(&self, geo: &ArrayGeom) -> u64 {
        self.size.div_ceil(geo.stripe_data_bytes())
    }
}

/// One run of pages of a request inside one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Volume stripe.
    pub vstripe: u64,
    /// Data column.
    pub col: usize,
    pub first: usize,
    pub count: usize,
    /// Byte offset of the run inside the request.
    pub buf_off: u64,
}

/// Cut `[offset, offset + len)` of a volume into per-chunk runs, in address order.
pub fn pieces(geo: &ArrayGeom, offset: u64, len: u64) -> Vec<Piece> {
    let bs = geo.block_size;
    let dcols = geo.dcols() as u64;
    let end = offset + len;
    let mut out = Vec::new();
    let mut pos = offset;
    while pos < end {
        let chunk = pos / bs;
        let hi = end.min((chunk + 1) * bs);
        out.push(Piece {
            vstripe: chunk / dcols,
            col: (chunk % dcols) as usize,
            first: ((pos % bs) / PAGE_SIZE) as usize,
            count: ((hi - pos) / PAGE_SIZE) as usize,
            buf_off: pos - offset,
        });
        pos = hi;
    }
    out
}

/// Lay volumes out on the groups. `per_group`: each volume on group `i % groups`, volumes
/// sharing a group concatenated (4-RAID5); otherwise concatenated across all groups in whole
/// rows of stripes (RAID50). Returns the maps and the rows per group they need.
pub fn place_volumes(geo: &ArrayGeom, sizes: &[u64], per_group: bool) -> (Vec<VolMap>, u64) {
    let g = geo.groups as u64;
    let mut maps = Vec::new();
    let mut rows_used = vec![0u64; geo.groups];
    let mut next = 0u64; // RAID50: next free global stripe (multiple of g)
    for (i, &size) in sizes.iter().enumerate() {
        let stripes = size.div_ceil(geo.stripe_data_bytes());
        let name = format!("v{i}");
        if per_group {
            let grp = i % geo.groups;
            maps.push(VolMap {
                name,
                size,
                base: rows_used[grp],
                stride: g,
                add: grp as u64,
            });
            rows_used[grp] += stripes;
        } else {
            maps.push(VolMap {
                name,
                size,
                base: next,
                stride: 1,
                add: 0,
            });
            next += stripes.div_ceil(g) * g;
        }
    }
    let rows = if per_group {
        rows_used.into_iter().max().unwrap_or(0)
    } else {
        next / g
    };
    (maps, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn pieces_cover_the_range() {
        let geo = ArrayGeom::new(2, 4, 1, 16384, 10, 0).unwrap();
        let p = pieces(&geo, 8192, 16384 * 3);
        assert_eq!(
            p[0],
            Piece {
                vstripe: 0,
                col: 0,
                first: 2,
                count: 2,
                buf_off: 0
            }
        );
        assert_eq!(p[3].vstripe, 1);
        assert_eq!(p[3].col, 0);
        let total: usize = p.iter().map(|x| x.count).sum();
        assert_eq!(total as u64 * PAGE_SIZE, 16384 * 3);
    }
    #[test]
    fn volumes_per_group_and_striped() {
        let geo = ArrayGeom::new(4, 7, 1, 65536, 100, 0).unwrap();
        let (m, rows) = place_volumes(&geo, &[6 * 65536 * 3, 65536], true);
        assert_eq!(m[0].stripe(2), 2 * 4);
        assert_eq!(m[1].stripe(0), 1);
        assert_eq!(rows, 3);
        let (m, rows) = place_volumes(&geo, &[6 * 65536 * 5, 65536], false);
        assert_eq!(m[1].stripe(0), 8);
        assert_eq!(rows, 3);
    }
}
