/// Where (a piece of) a user block lives.
///
/// *FLBN* (Fusion logical block number): a block address in the volume's zone, numbered
/// stripe by stripe: `flbn = stripe * width + column`. The static layout turns it into a disk
/// and an offset, so mapping tables only ever store FLBNs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Loc {
    /// Never written (or trimmed): reads as zeros.
    Unmapped,
    /// RAID area: a data block of a parity-protected stripe.
    Raid(u64),
    /// Replicated area: the *key* of a replica slot, the FLBN of its copy in the first stripe
    /// of its pair set; the Block Pairing Table finds the other copies.
    Rep(u64),
}

/// FLBNs use 38 bits, as in the paper's 40-bit BMT entry (16 PiB of 64 KiB blocks).
pub const FLBN_BITS: u32 = 38;
pub const FLBN_MAX: u64 = (1 << FLBN_BITS) - 2;
const FLBN_NONE: u64 = (1 << FLBN_BITS) - 1;

impl Loc {
    pub fn flbn(self) -> Option<u64> {
        match self {
            Loc::Unmapped => None,
            Loc::Raid(f) | Loc::Rep(f) => Some(f),
        }
    }

    /// Packs into the low 39 bits: bit 38 is the W bit (1 = replicated), bits 0..38 the FLBN.
    pub fn pack(self) -> u64 {
        match self {
            Loc::Unmapped => FLBN_NONE,
            Loc::Raid(f) => {
                assert!(f <= FLBN_MAX, "FLBN {f} does not fit in 38 bits");
                f
            }
            Loc::Rep(f) => {
                assert!(f <= FLBN_MAX, "FLBN {f} does not fit in 38 bits");
                f | (1 << FLBN_BITS)
            }
        }
    }

    pub fn unpack(v: u64) -> Loc {
        let f = v & FLBN_NONE;
        if f == FLBN_NONE {
            Loc::Unmapped
        } else if v & (1 << FLBN_BITS) != 0 {
            Loc::Rep(f)
        } else {
            Loc::Raid(f)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_round_trips() {
        for l in [
            Loc::Unmapped,
            Loc::Raid(0),
            Loc::Rep(0),
            Loc::Raid(FLBN_MAX),
            Loc::Rep(12345),
        ] {
            assert_eq!(Loc::unpack(l.pack()), l);
            assert!(l.pack() < 1 << 39);
        }
    }
}
