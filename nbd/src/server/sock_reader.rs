//! The read side of a connection's socket, buffered: under load one syscall brings many
//! 28-byte headers and small payloads, while reads of a buffer's size or more bypass it.
//!
//! Unlike `std::io::BufReader` it can top its buffer up without waiting ([`fill_ready`]),
//! which answers "has the client already sent the next bytes?" with the read that fetches
//! them anyway, where asking the kernel first (FIONREAD) costs a syscall of its own.
//!
//! [`fill_ready`]: SockReader::fill_ready

use std::io::{self, Read};

use crate::stream::NbdStream;

pub(crate) struct SockReader {
    stream: NbdStream,
    buf: Box<[u8]>,
    /// The unread bytes are `buf[pos..end]`.
    pos: usize,
    end: usize,
}

impl SockReader {
    pub fn new(stream: NbdStream, capacity: usize) -> SockReader {
        assert!(capacity > 0);
        SockReader {
            stream,
            buf: vec![0; capacity].into_boxed_slice(),
            pos: 0,
            end: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Bytes read from the socket and not yet consumed.
    pub fn buffered(&self) -> usize {
        self.end - self.pos
    }

    pub fn stream(&self) -> &NbdStream {
        &self.stream
    }

    /// Adds to the buffer what the kernel holds now, without waiting, and returns the bytes
    /// buffered then. The unread bytes move to the front first when that makes room, so up
    /// to `capacity` bytes can be buffered. Errors and EOF are left for the next blocking
    /// read to report (the socket stays in the state that caused them).
    pub fn fill_ready(&mut self) -> usize {
        if self.pos == self.end {
            (self.pos, self.end) = (0, 0);
        } else if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            (self.pos, self.end) = (0, self.end - self.pos);
        }
        if self.end < self.buf.len()
            && let Ok(n) = self.stream.recv_now(&mut self.buf[self.end..])
        {
            self.end += n;
        }
        self.buffered()
    }
}

impl Read for SockReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.end {
            if out.len() >= self.buf.len() {
                return self.stream.read(out);
            }
            let n = self.stream.read(&mut self.buf)?;
            (self.pos, self.end) = (0, n);
        }
        let n = out.len().min(self.end - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    #[test]
    fn fill_ready_takes_what_was_sent_and_never_waits() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut r = SockReader::new(NbdStream::from(a), 16);
        // Nothing sent: no wait, nothing buffered.
        assert_eq!(r.fill_ready(), 0);
        b.write_all(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).unwrap();
        assert_eq!(r.fill_ready(), 10);
        let mut three = [0u8; 3];
        r.read_exact(&mut three).unwrap();
        assert_eq!(three, [1, 2, 3]);
        // More than fits behind the unread bytes: they move to the front, and the buffer
        // fills to its capacity; the rest stays in the socket.
        b.write_all(&(11..=30).collect::<Vec<u8>>()).unwrap();
        assert_eq!(r.fill_ready(), 16);
        let mut all = Vec::new();
        drop(b);
        r.read_to_end(&mut all).unwrap();
        assert_eq!(all, (4..=30).collect::<Vec<u8>>());
        // At EOF: nothing more, and no error until a blocking read.
        assert_eq!(r.fill_ready(), 0);
        assert_eq!(r.read(&mut three).unwrap(), 0);
    }

    #[test]
    fn large_reads_bypass_the_buffer() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut r = SockReader::new(NbdStream::from(a), 8);
        let data: Vec<u8> = (0..100).collect();
        b.write_all(&data).unwrap();
        let mut big = [0u8; 40];
        r.read_exact(&mut big).unwrap();
        assert_eq!(&big[..], &data[..40]);
        assert_eq!(r.buffered(), 0, "a read of 8 or more bytes does not buffer");
        let mut small = [0u8; 3];
        r.read_exact(&mut small).unwrap();
        assert_eq!(small, [40, 41, 42]);
        assert_eq!(r.buffered(), 5);
    }
}
