//! `mem:SIZE`: a member in anonymous memory. Pages are allocated by the kernel on first
//! write (MAP_NORESERVE), so a large pool of mostly empty members costs little, and a trim
//! gives whole pages back. Operations complete inline; `reap` returns them on the same loop
//! turn, so no wake-up is needed.

use fusionraid_core::{Data, DevError, DevOp, IoResult, Nanos};

use super::{Completion, Member};

pub struct MemMember {
    name: String,
    base: *mut u8,
    size: usize,
    ready: Vec<Completion>,
}

// SAFETY: the mapping is owned by this value and only touched through &mut self.
unsafe impl Send for MemMember {}

const PAGE: usize = 4096;

impl MemMember {
    pub fn new(name: &str, size: u64) -> Result<MemMember, String> {
        let size = usize::try_from(size).map_err(|_| "size does not fit in memory".to_string())?;
        if size == 0 || size % PAGE != 0 {
            return Err(format!("size {size} must be a positive multiple of {PAGE}"));
        }
        // SAFETY: a fresh private anonymous mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!(
                "mmap of {size} bytes: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(MemMember {
            name: name.to_string(),
            base: p.cast(),
            size,
            ready: Vec::new(),
        })
    }

    fn range(&self, offset: u64, len: u64) -> Result<(usize, usize), DevError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size as u64 => Ok((offset as usize, len as usize)),
            _ => Err(DevError(format!(
                "{}: range {offset}+{len} beyond the member's {} bytes",
                self.name, self.size
            ))),
        }
    }

    fn slice(&mut self, off: usize, len: usize) -> &mut [u8] {
        // SAFETY: `range` checked off+len <= size, the mapping is live while self is, and
        // &mut self makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(off), len) }
    }

    fn execute(&mut self, op: DevOp) -> IoResult {
        match op {
            DevOp::Read { offset, len } => {
                let (off, len) = self.range(offset, len)?;
                Ok(Some(Data::Bytes(self.slice(off, len).to_vec())))
            }
            DevOp::Write { offset, data, .. } => {
                let Data::Bytes(bytes) = data else {
                    return Err(DevError("size-only write to a real member".into()));
                };
                let (off, len) = self.range(offset, bytes.len() as u64)?;
                self.slice(off, len).copy_from_slice(&bytes);
                Ok(None)
            }
            DevOp::Flush => Ok(None),
            DevOp::Trim { offset, len } => {
                let (off, len) = self.range(offset, len)?;
                // Only whole pages can be returned; the edges keep their bytes, which a
                // trim allows.
                let start = off.next_multiple_of(PAGE);
                let end = (off + len) / PAGE * PAGE;
                if end > start {
                    // SAFETY: [start, end) lies inside our mapping. DONTNEED on a private
                    // anonymous mapping makes the pages read as zeros afterwards.
                    unsafe {
                        libc::madvise(
                            self.base.add(start).cast(),
                            end - start,
                            libc::MADV_DONTNEED,
                        );
                    }
                }
                Ok(None)
            }
        }
    }
}

impl Drop for MemMember {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `new`.
        unsafe {
            libc::munmap(self.base.cast(), self.size);
        }
    }
}

impl Member for MemMember {
    fn name(&self) -> &str {
        &self.name
    }
    fn size_bytes(&self) -> u64 {
        self.size as u64
    }
    fn submit(&mut self, tag: u64, op: DevOp, _now: Nanos) {
        let result = self.execute(op);
        self.ready.push(Completion { tag, result });
    }
    fn reap(&mut self, _now: Nanos, out: &mut Vec<Completion>) {
        out.append(&mut self.ready);
    }
    fn inflight(&self) -> usize {
        self.ready.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_trim() {
        let mut m = MemMember::new("mem:1M", 1 << 20).unwrap();
        let data: Vec<u8> = (0..8192).map(|i| i as u8).collect();
        m.submit(
            1,
            DevOp::Write {
                offset: 4096,
                data: Data::Bytes(data.clone()),
                fua: false,
            },
            0,
        );
        m.submit(
            2,
            DevOp::Read {
                offset: 4096,
                len: 8192,
            },
            0,
        );
        m.submit(
            3,
            DevOp::Trim {
                offset: 4096,
                len: 4096,
            },
            0,
        );
        m.submit(
            4,
            DevOp::Read {
                offset: 4096,
                len: 8192,
            },
            0,
        );
        m.submit(
            5,
            DevOp::Read {
                offset: 1 << 20,
                len: 4096,
            },
            0,
        );
        let mut out = Vec::new();
        m.reap(0, &mut out);
        assert_eq!(out.len(), 5);
        assert_eq!(out[1].result, Ok(Some(Data::Bytes(data.clone()))));
        let Ok(Some(Data::Bytes(after))) = &out[3].result else {
            panic!()
        };
        assert!(after[..4096].iter().all(|&b| b == 0));
        assert_eq!(&after[4096..], &data[4096..]);
        assert!(out[4].result.is_err());
        assert_eq!(m.inflight(), 0);
    }
}
