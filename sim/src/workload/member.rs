//! The device I/O one member of a declustered FusionRAID pool receives from a workload mix,
//! derived from the write-path rules alone: no engine, no device model, no feedback.
//!
//! Device models are calibrated on device data only. The FusionRAID paper's spike count
//! (§5.3: spikes per SSD-minute and their length on aged drives) is a device measurement,
//! but taken while the drives served the pool's share of a workload mix. To compare a model
//! with it, the model must see that share; this module computes it open loop, so nothing
//! the engine or a model does can leak into the load.
//!
//! Rules (paper §4.1-4.2, and what the engine does by default):
//! - user blocks of `block` bytes are grouped in logical stripes of `width - parity` blocks;
//! - a write covering more than `width / copies` whole blocks of one logical stripe is a
//!   full-stripe write: `width` block writes (zero padding included) on `width` distinct
//!   members;
//! - other pieces are replicated: `copies` writes of the piece's pages on distinct members;
//! - every `width - parity` replicated slots form a pair set that conversion later turns into
//!   one stripe: a background read of each data column and a write of each parity column;
//! - a read of a piece is one read of its pages on one member.
//!
//! Declustering (MOLS, random spare stripes) spreads stripes evenly over the pool, so each
//! block write picks its members uniformly at random; member 0 is the one observed. Offsets
//! are uniform over `region` (the member's share of the volumes' zones), block aligned.

use fusionraid_core::Nanos;
use fusionraid_core::rng::Rng;
use fusionraid_devices::{OpKind, PAGE};

use crate::trace::{IoKind, IoRecord};

/// The pool and write-path geometry seen by one member.
#[derive(Clone, Copy, Debug)]
pub struct MemberGeometry {
    pub disks: usize,
    /// Stripe width, data and parity.
    pub width: usize,
    pub parity: usize,
    /// Copies of a replicated block (2 for RAID5).
    pub copies: usize,
    /// Stripe unit (FusionRAID block).
    pub block: u64,
    /// Bytes of the member the volumes' zones cover.
    pub region: u64,
    /// Include conversion traffic.
    pub conversion: bool,
    pub seed: u64,
}

impl MemberGeometry {
    /// The paper's pool: 29 members, RAID5 6+1, 64 KiB blocks, conversion on.
    pub fn paper(region: u64, seed: u64) -> Self {
        MemberGeometry {
            disks: 29,
            width: 7,
            parity: 1,
            copies: 2,
            block: 64 << 10,
            region,
            conversion: true,
            seed,
        }
    }
}

/// One device I/O of the observed member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberIo {
    pub at: Nanos,
    pub kind: OpKind,
    pub offset: u64,
    pub len: u64,
    /// Conversion traffic rather than a user request's own I/O.
    pub background: bool,
}

/// Splits `records` (time ordered) into device I/O and returns the part member 0 receives,
/// in time order.
pub fn member_load(records: impl Iterator<Item = IoRecord>, g: &MemberGeometry) -> Vec<MemberIo> {
    assert!(g.width <= g.disks && g.copies <= g.disks && g.parity < g.width);
    let mut rng = Rng::new(g.seed);
    let dcols = (g.width - g.parity) as u64;
    let ppb = g.block / PAGE;
    let slots = (g.region / g.block).max(1);
    let threshold = g.width / g.copies;
    let mut out = Vec::new();
    let mut replicated = 0u64;
    let mut picked = Vec::with_capacity(g.width);
    for r in records {
        let t = r.time_ns;
        let end = r.offset + r.len;
        let mut b = r.offset / g.block;
        while b * g.block < end {
            // One logical stripe's worth of the request: (pages, first page) per block.
            let chunk_end = ((b / dcols + 1) * dcols).min(end.div_ceil(g.block));
            let pieces: Vec<(u64, u64)> = (b..chunk_end)
                .map(|x| {
                    let lo = r.offset.max(x * g.block);
                    let hi = end.min((x + 1) * g.block);
                    ((hi - lo) / PAGE, (lo - x * g.block) / PAGE)
                })
                .collect();
            b = chunk_end;
            match r.kind {
                IoKind::Trim => {}
                IoKind::Read => {
                    for &(pages, first) in &pieces {
                        if rng.below(g.disks as u64) == 0 {
                            let off = rng.below(slots) * g.block + first * PAGE;
                            out.push(io(t, OpKind::Read, off, pages * PAGE, false));
                        }
                    }
                }
                IoKind::Write => {
                    let full = pieces.iter().filter(|p| p.0 == ppb).count();
                    if full > threshold {
                        if pick(&mut rng, g.disks, g.width, &mut picked).is_some() {
                            let off = rng.below(slots) * g.block;
                            out.push(io(t, OpKind::Write, off, g.block, false));
                        }
                        continue;
                    }
                    for &(pages, first) in &pieces {
                        if pick(&mut rng, g.disks, g.copies, &mut picked).is_some() {
                            let off = rng.below(slots) * g.block + first * PAGE;
                            out.push(io(t, OpKind::Write, off, pages * PAGE, false));
                        }
                        replicated += 1;
                        if g.conversion && replicated.is_multiple_of(dcols) {
                            // The set is full: its kept stripe gets its data read and its
                            // parity written (issued at once; the engine may defer it).
                            if let Some(col) = pick(&mut rng, g.disks, g.width, &mut picked) {
                                let off = rng.below(slots) * g.block;
                                let kind = if (col as u64) < dcols {
                                    OpKind::Read
                                } else {
                                    OpKind::Write
                                };
                                out.push(io(t, kind, off, g.block, true));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

fn io(at: Nanos, kind: OpKind, offset: u64, len: u64, background: bool) -> MemberIo {
    MemberIo {
        at,
        kind,
        offset,
        len,
        background,
    }
}

/// Draws `n` distinct members out of `disks`; returns the position of member 0 among them.
fn pick(rng: &mut Rng, disks: usize, n: usize, scratch: &mut Vec<usize>) -> Option<usize> {
    scratch.clear();
    while scratch.len() < n {
        let d = rng.below(disks as u64) as usize;
        if !scratch.contains(&d) {
            scratch.push(d);
        }
    }
    scratch.iter().position(|&d| d == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(time_ns: Nanos, kind: IoKind, offset: u64, len: u64) -> IoRecord {
        IoRecord {
            time_ns,
            kind,
            offset,
            len,
            stream: 0,
        }
    }

    /// Over many requests member 0 gets its fair share of each rule's device I/O.
    #[test]
    fn shares_follow_the_write_path_rules() {
        let g = MemberGeometry {
            conversion: false,
            ..MemberGeometry::paper(1 << 30, 3)
        };
        let n = 58_000u64;
        let block = 64 << 10;
        // Full-stripe writes (6 aligned blocks): each member gets 7/29 of them.
        let full = member_load((0..n).map(|i| rec(i, IoKind::Write, 0, 6 * block)), &g);
        let want = n as f64 * 7.0 / 29.0;
        assert!(
            (full.len() as f64 / want - 1.0).abs() < 0.05,
            "{}",
            full.len()
        );
        assert!(full.iter().all(|x| x.len == block && x.offset % block == 0));
        // 16 KiB writes: replicated, 2/29 of them, 16 KiB each.
        let small = member_load((0..n).map(|i| rec(i, IoKind::Write, 8192, 16384)), &g);
        let want = n as f64 * 2.0 / 29.0;
        assert!(
            (small.len() as f64 / want - 1.0).abs() < 0.05,
            "{}",
            small.len()
        );
        assert!(
            small
                .iter()
                .all(|x| x.len == 16384 && x.offset % block == 8192)
        );
        // 3 whole blocks is not more than floor(7/2): replicated too (3 pieces x 2 copies).
        let three = member_load((0..n).map(|i| rec(i, IoKind::Write, 0, 3 * block)), &g);
        let want = n as f64 * 6.0 / 29.0;
        assert!(
            (three.len() as f64 / want - 1.0).abs() < 0.05,
            "{}",
            three.len()
        );
        // Reads: one member per piece.
        let reads = member_load((0..n).map(|i| rec(i, IoKind::Read, 0, 4096)), &g);
        let want = n as f64 / 29.0;
        assert!(
            (reads.len() as f64 / want - 1.0).abs() < 0.08,
            "{}",
            reads.len()
        );
        assert!(reads.iter().all(|x| x.kind == OpKind::Read));
    }

    #[test]
    fn conversion_adds_one_stripe_per_six_replicated_slots() {
        let g = MemberGeometry::paper(1 << 30, 4);
        let n = 60_000u64;
        let load = member_load((0..n).map(|i| rec(i, IoKind::Write, 0, 4096)), &g);
        let bg: Vec<&MemberIo> = load.iter().filter(|x| x.background).collect();
        // n / 6 conversions, each touching member 0 with probability 7/29.
        let want = n as f64 / 6.0 * 7.0 / 29.0;
        assert!((bg.len() as f64 / want - 1.0).abs() < 0.08, "{}", bg.len());
        let writes = bg.iter().filter(|x| x.kind == OpKind::Write).count() as f64;
        // One parity column of seven.
        assert!(
            (writes / bg.len() as f64 - 1.0 / 7.0).abs() < 0.03,
            "{writes}"
        );
        assert!(load.windows(2).all(|w| w[0].at <= w[1].at));
    }
}
