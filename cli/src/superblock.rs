//! The superblock `create` writes at offset 0 of every member, and `serve` checks.
//!
//! ```text
//! member:  [0, 64K) superblock | [64K, data_offset) journal and checkpoints | data ...
//!
//! superblock (little endian):
//!   0  magic "FRAIDSB\0"         8 bytes
//!   8  version                   u32 (2, or 3 for a hybrid pool; 1 is read too, see VERSION)
//!  12  crc32c                    u32 over all 64 KiB with this field zero
//!  16  pool uuid                 16 bytes
//!  32  member index              u32
//!  36  member count              u32
//!  40  member bytes used         u64 (the smallest member at create)
//!  48  created, Unix seconds     u64
//!  56  pool config length        u32
//!  60  member tier               u32: 0 SSD, 1 HDD (version 3; reserved, 0, before)
//!  64  pool config (TOML)        the geometry and policies `create` was given
//!  65532  slot generation        u32: how many devices took this member's slot before
//!                                this one (0 for `create`'s; every version, 0 before)
//! ```
//! The slot generation tells a device taken out of its slot from the one in it now: the
//! pool's metadata counts each replacement (`MemberReplaced`, docs/FORMAT.md), and a device
//! of an older generation holds stale data even if a pool file names it. It sits at the
//! end, where older builds wrote zeros and ignore what is there (the checksum covers it).
//! The region between the superblock and `data_offset` holds the durable mapping metadata
//! (core::meta; docs/FORMAT.md).

use anyhow::bail;
use fusionraid_core::meta::ImageBound;

pub const SUPERBLOCK_BYTES: u64 = 64 << 10;
const MAGIC: [u8; 8] = *b"FRAIDSB\0";
/// The newest version. Version 2 sized the checkpoint area from each volume's zone
/// (`ImageBound::Zone`); pools of version 1 keep the area their three-stripes rule gave
/// them, since it places the second checkpoint slot. Version 3 is version 2 plus the
/// member's tier at offset 60 (issue 21), written only for pools with HDD members, so an
/// older build refuses a hybrid pool (it would lay stripes on its HDDs) while all-SSD
/// pools stay readable by it.
pub const VERSION: u32 = 3;
/// The version an all-SSD pool of the zone rule is written with.
const SSD_ONLY: u32 = 2;
/// The oldest version this build reads.
const OLDEST: u32 = 1;
const HEADER: usize = 64;
/// The longest pool configuration a superblock holds.
pub const MAX_CONFIG_BYTES: usize = GENERATION_AT - HEADER;
/// Where the slot generation lives: the superblock's last 4 bytes.
const GENERATION_AT: usize = SUPERBLOCK_BYTES as usize - 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Superblock {
    pub version: u32,
    pub uuid: [u8; 16],
    pub index: u32,
    pub count: u32,
    pub disk_bytes: u64,
    pub created_unix: u64,
    pub config: String,
    /// This member's tier (version 3; always SSD before).
    pub tier: Tier,
    /// How many devices took this member's slot before this one (see the module doc).
    pub generation: u32,
}

/// What kind of device a member is: SSDs hold the volumes' stripes, HDDs only write logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tier {
    #[default]
    Ssd,
    Hdd,
}

impl Tier {
    pub fn name(self) -> &'static str {
        match self {
            Tier::Ssd => "ssd",
            Tier::Hdd => "hdd",
        }
    }
}

/// Why a member's first 64 KiB are not a usable superblock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SbError {
    /// No magic: the member was never given to `create` (or was wiped).
    Blank,
    Version(u32),
    Checksum,
    Corrupt(String),
}

impl std::error::Error for SbError {}

impl std::fmt::Display for SbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SbError::Blank => write!(f, "no fusionraid superblock (run `fusionraid create`)"),
            SbError::Version(v) => {
                write!(
                    f,
                    "superblock version {v}, this build reads {OLDEST} to {VERSION}"
                )
            }
            SbError::Checksum => write!(f, "superblock checksum mismatch (corrupted)"),
            SbError::Corrupt(m) => write!(f, "superblock corrupted: {m}"),
        }
    }
}

impl Superblock {
    /// How the pool's checkpoint area was sized.
    pub fn image_bound(&self) -> ImageBound {
        if self.version >= 2 {
            ImageBound::Zone
        } else {
            ImageBound::ThreeStripes
        }
    }

    /// The version that records `bound` for a pool with (`hybrid`) or without HDD members
    /// (what `create` writes, and a replacement member's superblock repeats).
    pub fn version_for(bound: ImageBound, hybrid: bool) -> u32 {
        match (bound, hybrid) {
            (ImageBound::ThreeStripes, _) => 1,
            (ImageBound::Zone, false) => SSD_ONLY,
            (ImageBound::Zone, true) => VERSION,
        }
    }

    pub fn encode(&self) -> anyhow::Result<Vec<u8>> {
        let cfg = self.config.as_bytes();
        if cfg.len() > MAX_CONFIG_BYTES {
            bail!(
                "the pool configuration is {} bytes; the superblock holds at most \
                 {MAX_CONFIG_BYTES}",
                cfg.len(),
            );
        }
        let mut b = vec![0u8; SUPERBLOCK_BYTES as usize];
        b[0..8].copy_from_slice(&MAGIC);
        assert!((OLDEST..=VERSION).contains(&self.version));
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[16..32].copy_from_slice(&self.uuid);
        b[32..36].copy_from_slice(&self.index.to_le_bytes());
        b[36..40].copy_from_slice(&self.count.to_le_bytes());
        b[40..48].copy_from_slice(&self.disk_bytes.to_le_bytes());
        b[48..56].copy_from_slice(&self.created_unix.to_le_bytes());
        b[56..60].copy_from_slice(&(cfg.len() as u32).to_le_bytes());
        assert!(
            self.version >= 3 || self.tier == Tier::Ssd,
            "tiers need version 3"
        );
        let tier: u32 = match self.tier {
            Tier::Ssd => 0,
            Tier::Hdd => 1,
        };
        b[60..64].copy_from_slice(&tier.to_le_bytes());
        b[HEADER..HEADER + cfg.len()].copy_from_slice(cfg);
        b[GENERATION_AT..].copy_from_slice(&self.generation.to_le_bytes());
        let crc = crc32c::crc32c(&b);
        b[12..16].copy_from_slice(&crc.to_le_bytes());
        // Check what we are about to write, as it will be checked when read back.
        assert_eq!(Superblock::decode(&b).as_ref(), Ok(self));
        Ok(b)
    }

    pub fn decode(b: &[u8]) -> Result<Superblock, SbError> {
        if b.len() < SUPERBLOCK_BYTES as usize {
            return Err(SbError::Corrupt(format!("only {} bytes", b.len())));
        }
        let b = &b[..SUPERBLOCK_BYTES as usize];
        if b[0..8] != MAGIC {
            return Err(SbError::Blank);
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let version = u32_at(8);
        if !(OLDEST..=VERSION).contains(&version) {
            return Err(SbError::Version(version));
        }
        let mut copy = b.to_vec();
        copy[12..16].fill(0);
        if crc32c::crc32c(&copy) != u32_at(12) {
            return Err(SbError::Checksum);
        }
        let len = u32_at(56) as usize;
        if len > b.len() - HEADER {
            return Err(SbError::Corrupt(format!("config length {len}")));
        }
        let config = std::str::from_utf8(&b[HEADER..HEADER + len])
            .map_err(|e| SbError::Corrupt(format!("config is not UTF-8: {e}")))?
            .to_string();
        let sb = Superblock {
            version,
            uuid: b[16..32].try_into().expect("16 bytes"),
            index: u32_at(32),
            count: u32_at(36),
            disk_bytes: u64_at(40),
            created_unix: u64_at(48),
            config,
            // Before version 3 the field was reserved (and written 0).
            tier: match (version, u32_at(60)) {
                (..3, _) | (_, 0) => Tier::Ssd,
                (_, 1) => Tier::Hdd,
                (_, t) => return Err(SbError::Corrupt(format!("member tier {t}"))),
            },
            // A configuration reaching into the field (written before it existed) leaves
            // the generation at 0.
            generation: if HEADER + len <= GENERATION_AT {
                u32_at(GENERATION_AT)
            } else {
                0
            },
        };
        if sb.count == 0 || sb.index >= sb.count {
            return Err(SbError::Corrupt(format!(
                "member index {} of {}",
                sb.index, sb.count
            )));
        }
        Ok(sb)
    }
}

/// A fresh random pool id.
pub fn new_uuid() -> anyhow::Result<[u8; 16]> {
    let mut u = [0u8; 16];
    // SAFETY: getrandom writes at most 16 bytes into `u`.
    let n = unsafe { libc::getrandom(u.as_mut_ptr().cast(), u.len(), 0) };
    if n != 16 {
        bail!("getrandom: {}", std::io::Error::last_os_error());
    }
    // RFC 4122 version 4, variant 1.
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    Ok(u)
}

pub fn uuid_string(u: &[u8; 16]) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Superblock {
        Superblock {
            version: VERSION,
            uuid: new_uuid().unwrap(),
            index: 3,
            count: 7,
            disk_bytes: 1 << 30,
            created_unix: 1_700_000_000,
            config: "name = \"t\"\n".into(),
            tier: Tier::Ssd,
            generation: 0,
        }
    }

    /// Re-seal `b` after an edit, as a build that wrote it would have.
    fn reseal(b: &mut [u8]) {
        b[12..16].fill(0);
        let crc = crc32c::crc32c(b);
        b[12..16].copy_from_slice(&crc.to_le_bytes());
    }

    #[test]
    fn the_slot_generation_sits_at_the_end_and_reads_0_where_older_builds_wrote_nothing() {
        let s = Superblock {
            generation: 5,
            ..sample()
        };
        let b = s.encode().unwrap();
        assert_eq!(b[GENERATION_AT..], 5u32.to_le_bytes());
        assert_eq!(Superblock::decode(&b).unwrap(), s);
        // Any version carries it: older builds wrote zeros there and never read it.
        for version in [1, 2] {
            let old = Superblock {
                version,
                ..s.clone()
            };
            assert_eq!(
                Superblock::decode(&old.encode().unwrap())
                    .unwrap()
                    .generation,
                5
            );
        }
        let mut older = sample().encode().unwrap();
        assert_eq!(Superblock::decode(&older).unwrap().generation, 0);
        // A configuration an older build let run into those bytes is configuration.
        let long = "x".repeat(SUPERBLOCK_BYTES as usize - HEADER);
        older[56..60].copy_from_slice(&(long.len() as u32).to_le_bytes());
        older[HEADER..].copy_from_slice(long.as_bytes());
        reseal(&mut older);
        let back = Superblock::decode(&older).unwrap();
        assert_eq!((back.config.len(), back.generation), (long.len(), 0));
        assert!(
            Superblock {
                config: long,
                ..sample()
            }
            .encode()
            .is_err()
        );
    }

    #[test]
    fn round_trip() {
        let s = sample();
        assert_eq!(Superblock::decode(&s.encode().unwrap()).unwrap(), s);
        assert_eq!(uuid_string(&s.uuid).len(), 36);
        // Version 1 superblocks are still read, and say how their pool was sized.
        let old = Superblock { version: 1, ..s };
        let back = Superblock::decode(&old.encode().unwrap()).unwrap();
        assert_eq!(back.version, 1);
        assert_eq!(back.image_bound(), ImageBound::ThreeStripes);
        assert_eq!(Superblock::version_for(back.image_bound(), false), 1);
        assert_eq!(sample().image_bound(), ImageBound::Zone);
    }

    #[test]
    fn tiers_need_version_3_and_older_superblocks_read_as_ssds() {
        // A version 2 superblock (all-SSD pools are still written so) reads as an SSD
        // member, whatever its reserved field held.
        let v2 = Superblock {
            version: 2,
            ..sample()
        };
        let mut b = v2.encode().unwrap();
        assert_eq!(b[60..64], [0; 4]);
        b[60] = 1;
        b[12..16].fill(0);
        let crc = crc32c::crc32c(&b);
        b[12..16].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(Superblock::decode(&b).unwrap().tier, Tier::Ssd);
        // Version 3 records the tier; an unknown tier is corruption.
        let hdd = Superblock {
            version: 3,
            tier: Tier::Hdd,
            ..sample()
        };
        let mut b = hdd.encode().unwrap();
        assert_eq!(Superblock::decode(&b).unwrap().tier, Tier::Hdd);
        b[60] = 7;
        b[12..16].fill(0);
        let crc = crc32c::crc32c(&b);
        b[12..16].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(Superblock::decode(&b), Err(SbError::Corrupt(_))));
        assert_eq!(Superblock::version_for(ImageBound::Zone, false), 2);
        assert_eq!(Superblock::version_for(ImageBound::Zone, true), 3);
    }

    #[test]
    fn damage_is_detected() {
        let s = sample();
        let mut b = s.encode().unwrap();
        b[100] ^= 1;
        assert_eq!(Superblock::decode(&b), Err(SbError::Checksum));
        assert_eq!(
            Superblock::decode(&vec![0; SUPERBLOCK_BYTES as usize]),
            Err(SbError::Blank)
        );
        let mut v = s.encode().unwrap();
        v[8] = 9;
        assert_eq!(Superblock::decode(&v), Err(SbError::Version(9)));
        v[8] = 0;
        assert_eq!(Superblock::decode(&v), Err(SbError::Version(0)));
        let big = Superblock {
            config: "x".repeat(70_000),
            ..s
        };
        assert!(big.encode().is_err());
    }
}
