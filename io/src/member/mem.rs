//! `mem:SIZE`: a member in anonymous memory. Pages are allocated by the kernel on first
//! write (MAP_NORESERVE), so a large pool of mostly empty members costs little, and a trim
//! gives whole pages back. `mem:SIZE,populate` allocates every page when the member opens
//! and keeps them (a trim leaves the bytes, which a trim allows): a first write into a page
//! costs a fault and the zeroing of the page, several times the copy itself, which a
//! storage device does not charge (docs/BENCHMARKS-HISTORY.md, "connection threads run the
//! turns; populated members"), and the engine's discards of freed stripes would otherwise
//! bring that cost back on every stripe it reuses. Operations complete inline;
//! `reap` returns them on the same turn, so no wake-up is needed.

use fusionraid_core::{Data, DevError, DevOp, IoResult, Nanos};

use super::{Completion, Member};

pub struct MemMember {
    name: String,
    base: *mut u8,
    size: usize,
    /// Every page stays allocated: trims are answered without giving pages back.
    populated: bool,
    ready: Vec<Completion>,
}

// SAFETY: the mapping is owned by this value and only touched through &mut self.
unsafe impl Send for MemMember {}

const PAGE: usize = 4096;

impl MemMember {
    pub fn new(name: &str, size: u64, populate: bool) -> Result<MemMember, String> {
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
        let m = MemMember {
            name: name.to_string(),
            base: p.cast(),
            size,
            populated: populate,
            ready: Vec::new(),
        };
        if populate {
            m.populate()?;
        }
        Ok(m)
    }

    /// Allocates every page now (MADV_POPULATE_WRITE, Linux 5.14; older kernels: a write
    /// into each page).
    fn populate(&self) -> Result<(), String> {
        // SAFETY: the range is exactly our mapping.
        let r = unsafe { libc::madvise(self.base.cast(), self.size, libc::MADV_POPULATE_WRITE) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINVAL) {
            return Err(format!("allocating {} bytes: {e}", self.size));
        }
        for off in (0..self.size).step_by(PAGE) {
            // SAFETY: off < size, inside our mapping; nothing else references it yet.
            unsafe { self.base.add(off).write_volatile(0) };
        }
        Ok(())
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
                let Some(bytes) = data.bytes() else {
                    return Err(DevError("size-only write to a real member".into()));
                };
                let (off, len) = self.range(offset, bytes.len() as u64)?;
                self.slice(off, len).copy_from_slice(bytes);
                Ok(None)
            }
            DevOp::Flush => Ok(None),
            DevOp::Trim { offset, len } => {
                let (off, len) = self.range(offset, len)?;
                // Only whole pages can be returned; the edges keep their bytes, which a
                // trim allows.
                let start = off.next_multiple_of(PAGE);
                let end = (off + len) / PAGE * PAGE;
                if end > start && !self.populated {
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

    /// Pages of `m` the kernel has allocated.
    fn resident(m: &MemMember) -> usize {
        let mut vec = vec![0u8; m.size / PAGE];
        // SAFETY: mincore reads our own mapping's state into a buffer of one byte per page.
        let r = unsafe { libc::mincore(m.base.cast(), m.size, vec.as_mut_ptr()) };
        assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
        vec.iter().filter(|b| *b & 1 == 1).count()
    }

    #[test]
    fn populate_allocates_every_page_up_front() {
        let lazy = MemMember::new("mem:4M", 4 << 20, false).unwrap();
        assert_eq!(resident(&lazy), 0);
        let mut full = MemMember::new("mem:4M", 4 << 20, true).unwrap();
        assert_eq!(resident(&full), 1024);
        // Still reads as zeros.
        full.submit(
            1,
            DevOp::Read {
                offset: 8192,
                len: 4096,
            },
            0,
        );
        let mut out = Vec::new();
        full.reap(0, &mut out);
        assert_eq!(out[0].result, Ok(Some(Data::Bytes(vec![0; 4096]))));
        // A trim keeps a populated member's pages (a lazy one's go: `write_read_trim`).
        full.submit(
            2,
            DevOp::Trim {
                offset: 0,
                len: 1 << 20,
            },
            0,
        );
        full.reap(0, &mut out);
        assert_eq!(out[1].result, Ok(None));
        assert_eq!(resident(&full), 1024);
    }

    #[test]
    fn write_read_trim() {
        let mut m = MemMember::new("mem:1M", 1 << 20, false).unwrap();
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
