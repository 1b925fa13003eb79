//! Read/write segregation: a few members take every write (write mode) while the rest serve
//! reads undisturbed by flash programs (read mode), and the roles rotate so every member takes
//! its turn at writes and wear and free space even out.
//!
//! Sandook sizes the write set as the fewest members whose mixed-load peaks cover the current
//! write rate, plus one spare, and never fewer than one per replica; it rotates the set (the
//! next members after a moving index) on a fixed period, and at once when the set must grow.
//! A set that may shrink waits for the next rotation, so a bursty write rate does not flap it.

use crate::types::Nanos;

/// The write set and when it last rotated.
#[derive(Clone, Debug)]
pub struct Segregation {
    /// Rotation period (Sandook: 300 ms).
    pub rotate_ns: Nanos,
    /// Members every write needs (one per replica).
    pub min_writers: usize,
    /// Share of the healthy members the set holds at least (0: none): a scheme aiming at
    /// the tail sets it to the writes' share of the pool's device I/O, so no writer is
    /// busier than a member would be without segregation ([`Segregation::set_floor_share`]).
    floor_share: f64,
    start: usize,
    writers: Vec<bool>,
    size: usize,
    /// None until the first update sizes the set.
    rotated_at: Option<Nanos>,
}

impl Segregation {
    /// Every member starts in write mode until the first update sizes the set.
    pub fn new(members: usize, min_writers: usize, rotate_ns: Nanos) -> Self {
        Segregation {
            rotate_ns,
            min_writers,
            floor_share: 0.0,
            start: 0,
            writers: vec![true; members],
            size: members,
            rotated_at: None,
        }
    }

    pub fn is_writer(&self, i: usize) -> bool {
        self.writers[i]
    }

    pub fn writers(&self) -> usize {
        self.writers.iter().filter(|&&w| w).count()
    }

    /// Re-size and maybe rotate the write set. `peaks[i]` is member `i`'s peak IOPS under the
    /// write set's mix (None: failed, never a writer); `write_iops` the device writes to
    /// place. Returns whether the set changed.
    pub fn update(&mut self, now: Nanos, write_iops: f64, peaks: &[Option<f64>]) -> bool {
        let n = peaks.len();
        let healthy: Vec<usize> = (0..n)
            .map(|k| (self.start + k) % n)
            .filter(|&i| peaks[i].is_some())
            .collect();
        let mut covered = 0.0;
        let mut need = healthy.len();
        for (k, &i) in healthy.iter().enumerate() {
            covered += peaks[i].unwrap_or(0.0);
            if covered >= write_iops {
                need = k + 1;
                break;
            }
        }
        let floor = (self.floor_share * healthy.len() as f64).ceil() as usize;
        let want = (need + 1)
            .max(self.min_writers)
            .max(floor)
            .min(healthy.len());
        let due = self.rotated_at.is_none_or(|at| now >= at + self.rotate_ns);
        let lost = (0..n).any(|i| self.writers[i] && peaks[i].is_none());
        if !(due || want > self.size || lost) {
            return false;
        }
        if due {
            if self.rotated_at.is_some() {
                self.start = (self.start + self.size.max(1)) % n.max(1);
            }
            self.rotated_at = Some(now);
        }
        self.size = want;
        let before = std::mem::replace(&mut self.writers, vec![false; n]);
        let mut placed = 0;
        for k in 0..n {
            let i = (self.start + k) % n;
            if placed < want && peaks[i].is_some() {
                self.writers[i] = true;
                placed += 1;
            }
        }
        before != self.writers
    }

    /// The least share of the healthy members the next updates keep in write mode (clamped
    /// to 0..=1; 0 leaves Sandook's sizing alone).
    pub fn set_floor_share(&mut self, share: f64) {
        self.floor_share = if share.is_finite() {
            share.clamp(0.0, 1.0)
        } else {
            0.0
        };
    }

    /// Every healthy member in write mode (segregation off).
    pub fn all_write(&mut self, healthy: &[bool]) {
        self.writers.clone_from_slice(healthy);
        self.size = healthy.iter().filter(|&&h| h).count();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn the_set_covers_the_write_rate_plus_a_spare_and_rotates() {
        let mut s = Segregation::new(6, 2, 300 * MS);
        let peaks = vec![Some(100.0); 6];
        assert!(s.update(0, 150.0, &peaks));
        assert_eq!(s.writers(), 3);
        let first: Vec<bool> = (0..6).map(|i| s.is_writer(i)).collect();
        // Not due, same need: unchanged.
        assert!(!s.update(100 * MS, 150.0, &peaks));
        // Due: the next three members.
        assert!(s.update(300 * MS, 150.0, &peaks));
        for (i, was) in first.iter().enumerate() {
            assert_ne!(s.is_writer(i), *was, "member {i} kept its mode");
        }
    }

    #[test]
    fn it_grows_at_once_shrinks_at_rotation_and_skips_failed_members() {
        let mut s = Segregation::new(6, 2, 300 * MS);
        let mut peaks = vec![Some(100.0); 6];
        s.update(0, 10.0, &peaks);
        assert_eq!(s.writers(), 2);
        assert!(s.update(MS, 350.0, &peaks));
        assert_eq!(s.writers(), 5);
        assert!(!s.update(2 * MS, 10.0, &peaks));
        assert_eq!(s.writers(), 5);
        peaks[3] = None;
        s.update(300 * MS, 10.0, &peaks);
        assert_eq!(s.writers(), 2);
        assert!(!s.is_writer(3) || s.writers() == 2);
        for t in 1..20 {
            s.update(300 * MS * (t + 1), 10.0, &peaks);
            assert!(!s.is_writer(3));
            assert_eq!(s.writers(), 2);
        }
    }

    /// With a floor share the set keeps at least that share of the healthy members, even
    /// when the peaks say fewer would carry the writes; without one Sandook's sizing stands.
    #[test]
    fn a_floor_share_keeps_the_set_at_the_writes_share_of_the_members() {
        let mut s = Segregation::new(10, 2, 300 * MS);
        let peaks = vec![Some(1000.0); 10];
        s.update(0, 100.0, &peaks);
        assert_eq!(s.writers(), 2);
        s.set_floor_share(0.65);
        assert!(s.update(MS, 100.0, &peaks));
        assert_eq!(s.writers(), 7);
        s.set_floor_share(0.0);
        s.update(300 * MS, 100.0, &peaks);
        assert_eq!(s.writers(), 2);
    }
}
