//! The little-endian byte reader the durable formats are decoded with: checkpoint images
//! (`image`) and journal records (`record`) both read fixed-width integers and byte runs in
//! order from a slice, so they share this one reader rather than each keeping its own.
//!
//! Running out of bytes is reported as [`Truncated`], with the offset the read started at;
//! each format turns that into its own error (an image names that byte, a record names where
//! the record began), so the reader knows nothing of either format.

/// A read wanted more bytes than were left; `at` is the offset it started at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Truncated {
    pub at: usize,
}

/// Reads a byte slice front to back; every read either consumes exactly its width or fails
/// with [`Truncated`] and consumes nothing.
pub(super) struct LeReader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> LeReader<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        LeReader { b, at: 0 }
    }

    /// How many bytes have been read: the offset of the next one.
    pub fn at(&self) -> usize {
        self.at
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.at == self.b.len()
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Truncated> {
        // Compared as what is left, so a hostile `n` can not overflow `at + n`.
        if self.b.len() - self.at < n {
            return Err(Truncated { at: self.at });
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8, Truncated> {
        Ok(self.take(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16, Truncated> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2")))
    }

    pub fn u32(&mut self) -> Result<u32, Truncated> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }

    pub fn u64(&mut self) -> Result<u64, Truncated> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_in_order_and_stops_short_without_consuming() {
        let b = [1, 2, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 9];
        let mut r = LeReader::new(&b);
        assert_eq!(r.u8(), Ok(1));
        assert_eq!(r.u16(), Ok(2));
        assert_eq!(r.u32(), Ok(3));
        assert_eq!(r.u64(), Ok(4));
        assert_eq!(r.at(), 15);
        assert!(!r.is_empty());
        assert_eq!(r.u16(), Err(Truncated { at: 15 }));
        assert_eq!(r.take(usize::MAX), Err(Truncated { at: 15 }));
        assert_eq!(r.take(1), Ok(&[9u8][..]));
        assert!(r.is_empty());
        assert_eq!(r.u8(), Err(Truncated { at: 16 }));
    }
}
