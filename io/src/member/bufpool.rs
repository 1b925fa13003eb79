//! Fixed buffers registered with an io_uring: the kernel pins them once instead of on every
//! O_DIRECT operation. Operations larger than a slot, or arriving when every slot is taken,
//! use a one-off aligned buffer instead.

use super::aligned::AlignedBuf;

pub struct BufPool {
    mem: AlignedBuf,
    slot_bytes: usize,
    free: Vec<u16>,
}

impl BufPool {
    pub fn new(slots: u16, slot_bytes: usize) -> BufPool {
        assert!(slots > 0 && slot_bytes.is_multiple_of(super::aligned::ALIGN));
        BufPool {
            mem: AlignedBuf::new(slots as usize * slot_bytes),
            slot_bytes,
            free: (0..slots).rev().collect(),
        }
    }

    /// One iovec per slot, in index order, for `register_buffers`.
    pub fn iovecs(&mut self) -> Vec<libc::iovec> {
        let base = self.mem.as_mut_ptr();
        let slots = self.mem.len() / self.slot_bytes;
        (0..slots)
            .map(|i| libc::iovec {
                // SAFETY: i * slot_bytes < mem.len(), inside the allocation.
                iov_base: unsafe { base.add(i * self.slot_bytes) }.cast(),
                iov_len: self.slot_bytes,
            })
            .collect()
    }

    pub fn take(&mut self, len: usize) -> Option<u16> {
        if len > self.slot_bytes {
            return None;
        }
        self.free.pop()
    }

    pub fn put(&mut self, idx: u16) {
        debug_assert!(!self.free.contains(&idx));
        self.free.push(idx);
    }

    pub fn ptr(&mut self, idx: u16) -> *mut u8 {
        let off = idx as usize * self.slot_bytes;
        assert!(off < self.mem.len());
        // SAFETY: off is inside the allocation (checked above).
        unsafe { self.mem.as_mut_ptr().add(off) }
    }

    pub fn slice_mut(&mut self, idx: u16, len: usize) -> &mut [u8] {
        let off = idx as usize * self.slot_bytes;
        assert!(len <= self.slot_bytes);
        &mut self.mem.as_mut_slice()[off..off + len]
    }
}
