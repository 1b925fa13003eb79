//! The NVMe SMART / Health Information log page (log identifier 02h): 512 bytes,
//! little-endian, laid out by the NVM Express Base Specification ("SMART / Health
//! Information (Log Page Identifier 02h)"). Only the two fields wear needs are read, and
//! only here, so the layout is checked by tests on hand-built pages rather than on a drive.

/// The page's length; a transfer of any other length is not this page.
pub const PAGE_LEN: usize = 512;

/// Byte 5: "Percentage Used".
const PERCENT_USED: usize = 5;
/// Bytes 48..64: "Data Units Written", a 128-bit counter.
const DATA_UNITS_WRITTEN: std::ops::Range<usize> = 48..64;
/// One data unit: 1000 units of 512 bytes (the counter rounds up to whole units).
const DATA_UNIT_BYTES: u128 = 1000 * 512;

/// What a drive says about its own wear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Health {
    /// The vendor's estimate of the share of rated endurance used, in percent. It may
    /// exceed 100 (a drive used beyond its rating); the drive reports 255 for anything above.
    pub percent_used: u8,
    /// Host writes over the drive's life, in data units (`DATA_UNIT_BYTES`).
    pub data_units_written: u128,
}

impl Health {
    /// The share of rated endurance used, as `Member::wear` reports it (1.0 = rated life).
    pub fn wear(&self) -> f64 {
        f64::from(self.percent_used) / 100.0
    }

    /// Host bytes written over the drive's life (saturating at `u64::MAX`, some 18 EB).
    pub fn bytes_written(&self) -> u64 {
        let b = self.data_units_written.saturating_mul(DATA_UNIT_BYTES);
        u64::try_from(b).unwrap_or(u64::MAX)
    }
}

/// A transfer that can not be the SMART / Health page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a SMART / Health log page is {PAGE_LEN} bytes, got {0}")]
pub struct WrongLength(pub usize);

/// The wear fields of a SMART / Health log page.
pub fn parse(page: &[u8]) -> Result<Health, WrongLength> {
    if page.len() != PAGE_LEN {
        return Err(WrongLength(page.len()));
    }
    let mut units = [0u8; 16];
    units.copy_from_slice(&page[DATA_UNITS_WRITTEN]);
    Ok(Health {
        percent_used: page[PERCENT_USED],
        data_units_written: u128::from_le_bytes(units),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page as a drive would send it: the other fields filled with noise, so a parser
    /// reading the wrong offset would see it.
    fn page(percent_used: u8, units_written: u128) -> Vec<u8> {
        let mut p: Vec<u8> = (0..PAGE_LEN).map(|i| (i * 7 + 3) as u8).collect();
        p[5] = percent_used;
        p[48..64].copy_from_slice(&units_written.to_le_bytes());
        p
    }

    #[test]
    fn reads_percentage_used() {
        let h = parse(&page(17, 0)).unwrap();
        assert_eq!(h.percent_used, 17);
        assert!((h.wear() - 0.17).abs() < 1e-12);
    }

    #[test]
    fn percentage_used_may_exceed_100() {
        let h = parse(&page(142, 0)).unwrap();
        assert_eq!(h.percent_used, 142);
        assert!((h.wear() - 1.42).abs() < 1e-12);
        assert_eq!(parse(&page(255, 0)).unwrap().wear(), 2.55);
    }

    #[test]
    fn reads_data_units_written_little_endian() {
        // 0x0102 units: the low byte first on the wire.
        let p = page(0, 0x0102);
        assert_eq!((p[48], p[49]), (0x02, 0x01));
        let h = parse(&p).unwrap();
        assert_eq!(h.data_units_written, 0x0102);
        assert_eq!(h.bytes_written(), 0x0102 * 512_000);
        // A drive with 1.5 PB written: 3e9 units, beyond 32 bits.
        let h = parse(&page(3, 3_000_000_000)).unwrap();
        assert_eq!(h.bytes_written(), 1_536_000_000_000_000);
    }

    #[test]
    fn bytes_written_saturates() {
        let h = parse(&page(0, u128::MAX)).unwrap();
        assert_eq!(h.bytes_written(), u64::MAX);
    }

    #[test]
    fn a_page_of_the_wrong_length_is_refused() {
        assert_eq!(parse(&[0; 511]), Err(WrongLength(511)));
        assert_eq!(parse(&[0; 4096]), Err(WrongLength(4096)));
        assert_eq!(parse(&[]), Err(WrongLength(0)));
    }
}
