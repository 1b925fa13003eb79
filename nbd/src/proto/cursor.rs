//! A tiny big-endian reader over a byte slice. Every accessor is checked, so
//! decoding attacker-controlled option data can fail but never panic.

use crate::error::NbdError;

pub struct Cursor<'a> {
    buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], NbdError> {
        if n > self.buf.len() {
            return Err(NbdError::Protocol(format!(
                "truncated message: need {n} bytes, have {}",
                self.buf.len()
            )));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    /// Everything that is left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], NbdError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }

    pub fn u16(&mut self) -> Result<u16, NbdError> {
        self.array().map(u16::from_be_bytes)
    }

    pub fn u32(&mut self) -> Result<u32, NbdError> {
        self.array().map(u32::from_be_bytes)
    }

    pub fn u64(&mut self) -> Result<u64, NbdError> {
        self.array().map(u64::from_be_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_big_endian_and_stops_at_end() {
        let mut c = Cursor::new(&[0, 1, 0, 0, 0, 2, 9]);
        assert_eq!(c.u16().unwrap(), 1);
        assert_eq!(c.u32().unwrap(), 2);
        assert!(c.u16().is_err());
        assert_eq!(c.remaining(), 1);
        assert_eq!(c.rest(), &[9]);
        assert_eq!(c.remaining(), 0);
    }
}
