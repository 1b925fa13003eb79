//! RAID50-style layout: fixed groups of consecutive disks, each an independent RAID5/6 array.
//!
//! This is the baseline FusionRAID compares against (RAID50 and 4 x RAID5 in the paper's
//! evaluation): no declustering, so a stripe only ever touches the `width` disks of its group
//! and a slow disk stalls every stripe of its group. Stripes are dealt round-robin over the
//! groups (stripe s goes to group s mod g, row s / g), which is how a RAID0 of RAID5s
//! interleaves its members. Within a group the column-to-disk rotation is Linux md's
//! *left-symmetric* algorithm (drivers/md/raid5.c, `raid5_compute_sector`): parity moves one
//! disk to the left per row and data starts just after it, so the same device images an md
//! array would write are produced here.

use super::{GeometryError, Layout};
use crate::types::{DiskId, Placement};

#[derive(Debug, Clone)]
pub struct GroupLayout {
    disks: usize,
    width: u64,
    parity_cols: u64,
    groups: u64,
}

impl GroupLayout {
    /// `disks / width` groups of `width` consecutive disks; the last `disks % width` disks are
    /// left unused (spares). `parity_cols` (0, 1 or 2 in practice) says how many trailing
    /// columns are parity, which fixes the rotation; at least one data column must remain.
    pub fn new(disks: usize, width: usize, parity_cols: usize) -> Result<Self, GeometryError> {
        if width < 2 {
            return Err(GeometryError::TooNarrow { width, min: 2 });
        }
        if width > disks {
            return Err(GeometryError::TooWide {
                width,
                disks,
                max: disks,
            });
        }
        if parity_cols >= width {
            return Err(GeometryError::Other(format!(
                "{parity_cols} parity columns leave no data in a stripe of width {width}"
            )));
        }
        Ok(GroupLayout {
            disks,
            width: width as u64,
            parity_cols: parity_cols as u64,
            groups: (disks / width) as u64,
        })
    }

    /// Number of disk groups, g.
    pub fn group_count(&self) -> usize {
        self.groups as usize
    }

    /// The group that holds `stripe`.
    pub fn group_of(&self, stripe: u64) -> usize {
        (stripe % self.groups) as usize
    }

    /// Disks used by the groups; disks from here on are spares the layout never touches.
    pub fn used_disks(&self) -> usize {
        (self.groups * self.width) as usize
    }

    /// The group disk index (0..width) where md's left-symmetric layout puts the first parity
    /// column in row `row`: the last disk on row 0, then one disk further left each row.
    fn parity_disk(&self, row: u64) -> u64 {
        (self.width - 1) - (row % self.width)
    }
}

impl Layout for GroupLayout {
    fn disk_count(&self) -> usize {
        self.disks
    }

    fn width(&self) -> usize {
        self.width as usize
    }

    /// `width` rows in every group: the rotation has then put parity on each disk once, so
    /// every used disk holds the same number of blocks.
    fn template_stripes(&self) -> u64 {
        self.groups * self.width
    }

    fn template_blocks_per_disk(&self) -> u64 {
        self.width
    }

    fn locate(&self, stripe: u64, col: usize) -> Placement {
        let col = col as u64;
        assert!(
            col < self.width,
            "column {col} out of a stripe of width {}",
            self.width
        );
        let group = stripe % self.groups;
        let row = stripe / self.groups;
        // Data column 0 sits just after the parity columns (P, then Q for RAID6), wrapping.
        let idx = (self.parity_disk(row) + self.parity_cols + col) % self.width;
        Placement {
            disk: DiskId((group * self.width + idx) as u32),
            block: row,
        }
    }

    fn owner(&self, disk: DiskId, block: u64) -> Option<(u64, usize)> {
        let d = u64::from(disk.0);
        if d >= self.groups * self.width {
            return None;
        }
        let group = d / self.width;
        let idx = d % self.width;
        let row = block;
        let shift = (self.parity_disk(row) + self.parity_cols) % self.width;
        let col = (idx + self.width - shift) % self.width;
        let stripe = row.checked_mul(self.groups)?.checked_add(group)?;
        Some((stripe, col as usize))
    }

    fn name(&self) -> &'static str {
        "groups"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::check_layout;
    use proptest::prelude::*;

    #[test]
    fn impossible_geometries_are_rejected() {
        assert_eq!(
            GroupLayout::new(5, 7, 1).unwrap_err(),
            GeometryError::TooWide {
                width: 7,
                disks: 5,
                max: 5
            }
        );
        assert_eq!(
            GroupLayout::new(5, 1, 0).unwrap_err(),
            GeometryError::TooNarrow { width: 1, min: 2 }
        );
        assert!(matches!(
            GroupLayout::new(8, 4, 4),
            Err(GeometryError::Other(_))
        ));
    }

    #[test]
    fn paper_pool_leaves_one_spare() {
        let l = GroupLayout::new(29, 7, 1).unwrap();
        assert_eq!(l.group_count(), 4);
        assert_eq!(l.used_disks(), 28);
        assert_eq!(l.owner(DiskId(28), 0), None);
        assert_eq!(l.group_of(5), 1);
        check_layout(&l, 2);
    }

    /// md RAID5 left-symmetric on 4 disks, as drawn in md(4)'s documentation:
    /// row 0: D0 D1 D2 P; row 1: D1 D2 P D0; row 2: D2 P D0 D1; row 3: P D0 D1 D2.
    #[test]
    fn raid5_rotation_matches_md_left_symmetric() {
        let l = GroupLayout::new(4, 4, 1).unwrap();
        let expect: [[usize; 4]; 4] = [[0, 1, 2, 3], [3, 0, 1, 2], [2, 3, 0, 1], [1, 2, 3, 0]];
        for (row, cols) in expect.iter().enumerate() {
            for (c, &disk) in cols.iter().enumerate() {
                assert_eq!(
                    l.locate(row as u64, c).disk,
                    DiskId(disk as u32),
                    "row {row} col {c}"
                );
            }
        }
    }

    /// md RAID6 left-symmetric: Q directly follows P and data follows Q.
    #[test]
    fn raid6_rotation_matches_md_left_symmetric() {
        let l = GroupLayout::new(5, 5, 2).unwrap();
        // Row 0: P on disk 4, Q on disk 0, data on 1, 2, 3.
        let row0: Vec<u32> = (0..5).map(|c| l.locate(0, c).disk.0).collect();
        assert_eq!(row0, vec![1, 2, 3, 4, 0]);
        // Row 1: P on disk 3, Q on disk 4, data on 0, 1, 2.
        let row1: Vec<u32> = (0..5).map(|c| l.locate(1, c).disk.0).collect();
        assert_eq!(row1, vec![0, 1, 2, 3, 4]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn group_layouts_are_valid(disks in 2usize..40, kf in 0.0f64..1.0, m in 0usize..3) {
            let width = (2 + ((disks - 2) as f64 * kf) as usize).min(disks);
            let m = m.min(width - 1);
            let l = GroupLayout::new(disks, width, m).unwrap();
            check_layout(&l, 3);
        }
    }
}
