//! Fitting a trace's addresses onto a (usually much smaller) test volume.
//!
//! Traces address devices of hundreds of GiB; simulated volumes are smaller. Each request is
//! folded with `offset % volume`, widened to whole 4 KiB pages (the engine's unit, so a 512 B
//! request becomes one page) and clamped at the volume's end. Folding keeps locality within
//! a region and spreads distinct regions, which is all a latency simulation needs.

use fusionraid_core::PAGE_SIZE;

use super::IoRecord;
use super::replay::ReplayError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VolumeRemap {
    /// Target size in bytes, a whole number of pages.
    volume: u64,
}

impl VolumeRemap {
    /// `volume_bytes` is rounded down to whole pages and must hold at least one.
    pub fn new(volume_bytes: u64) -> Result<Self, ReplayError> {
        let volume = volume_bytes / PAGE_SIZE * PAGE_SIZE;
        if volume == 0 {
            return Err(ReplayError::VolumeTooSmall(volume_bytes));
        }
        Ok(VolumeRemap { volume })
    }

    pub fn volume_bytes(&self) -> u64 {
        self.volume
    }

    /// The record moved inside the volume: page-aligned offset, length a whole number of pages
    /// (at least one) that does not run past the end.
    pub fn apply(&self, mut r: IoRecord) -> IoRecord {
        let start = r.offset % self.volume;
        let offset = start / PAGE_SIZE * PAGE_SIZE;
        let end = start.saturating_add(r.len.max(1));
        let end = end.div_ceil(PAGE_SIZE).saturating_mul(PAGE_SIZE);
        r.offset = offset;
        r.len = end.min(self.volume) - offset;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::IoKind;

    fn rec(offset: u64, len: u64) -> IoRecord {
        IoRecord {
            time_ns: 0,
            kind: IoKind::Write,
            offset,
            len,
            stream: 0,
        }
    }

    #[test]
    fn folds_aligns_and_clamps() {
        let m = VolumeRemap::new(1 << 20).unwrap();
        let r = m.apply(rec((1 << 20) * 5 + 8192, 4096));
        assert_eq!((r.offset, r.len), (8192, 4096));
        // Unaligned 512 B request becomes the page that holds it.
        let r = m.apply(rec(4096 + 1024, 512));
        assert_eq!((r.offset, r.len), (4096, 4096));
        // Crossing a page boundary covers both pages.
        let r = m.apply(rec(4096 - 512, 1024));
        assert_eq!((r.offset, r.len), (0, 8192));
        // Clamped at the end of the volume.
        let r = m.apply(rec((1 << 20) - 4096, 1 << 20));
        assert_eq!((r.offset, r.len), ((1 << 20) - 4096, 4096));
        // Zero length still names one page.
        assert_eq!(m.apply(rec(0, 0)).len, 4096);
        // Extreme values do not overflow.
        let r = m.apply(rec(u64::MAX, u64::MAX));
        assert!(r.offset + r.len <= 1 << 20);
    }

    #[test]
    fn volume_is_rounded_to_pages() {
        assert_eq!(VolumeRemap::new(10_000).unwrap().volume_bytes(), 8192);
        assert_eq!(VolumeRemap::new(100), Err(ReplayError::VolumeTooSmall(100)));
    }
}
