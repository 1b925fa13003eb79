//! One io_uring shared by every file member of a pool.
//!
//! Sharing matters: the loop turns over once per batch of completions, and with a ring per
//! member every turn cost one `io_uring_enter` per member with new work; with one ring it
//! costs one. The ring owns every buffer the kernel may touch (staging buffers live in the
//! slot of their operation, fixed buffers in the registered pool), so a member can go away
//! while its operations are in flight, and dropping the ring waits for the kernel first.
//!
//! The state sits behind a mutex only because members must be `Send`; it is only ever
//! locked by the loop thread, so the lock is never contended.

use std::sync::{Arc, Mutex, MutexGuard};

use io_uring::{IoUring, squeue};

use super::super::aligned::AlignedBuf;
use super::super::bufpool::BufPool;
use crate::waker::Waker;

/// Operations in the kernel at once, over all members.
pub const DEPTH: u32 = 512;
/// Registered buffer slots: 128 x 128 KiB = 16 MiB covers a deep queue of 64 KiB blocks;
/// larger operations (blocks are at most 1 MiB) and overflow use one-off aligned buffers.
const FIXED_SLOTS: u16 = 128;
pub const FIXED_SLOT_BYTES: usize = 128 << 10;

pub enum Buf {
    None,
    Fixed(u16),
    Heap(AlignedBuf),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
    Flush,
    Trim,
}

/// One operation in the kernel.
pub struct Inflight {
    pub member: u32,
    pub tag: u64,
    pub kind: Kind,
    pub offset: u64,
    pub len: usize,
    pub buf: Buf,
    /// A write's RWF_DSYNC (FUA), kept so a write refused for space goes again as it came.
    pub fua: bool,
    /// When the file system first refused this write for space (see full.rs).
    pub refused: Option<fusionraid_core::Nanos>,
}

pub struct RingState {
    ring: IoUring,
    slots: Vec<Option<Inflight>>,
    free: Vec<u32>,
    pub pool: Option<BufPool>,
    /// Completions reaped from the ring, per member, waiting for that member's `reap`.
    done: Vec<Vec<(Inflight, i32)>>,
    unsubmitted: bool,
}

/// A cloneable handle on the shared ring.
#[derive(Clone)]
pub struct SharedRing(Arc<Mutex<RingState>>);

impl SharedRing {
    pub fn new(waker: &Waker) -> std::io::Result<SharedRing> {
        let ring = IoUring::new(DEPTH)?;
        ring.submitter().register_eventfd(waker.raw_fd())?;
        let mut pool = BufPool::new(FIXED_SLOTS, FIXED_SLOT_BYTES);
        // SAFETY: the iovecs point into `pool`, which lives in the same RingState as the
        // ring and is only dropped after the ring has no operation left (see Drop).
        let pool = match unsafe { ring.submitter().register_buffers(&pool.iovecs()) } {
            Ok(()) => Some(pool),
            Err(e) => {
                tracing::debug!("fixed buffers unavailable, staging in plain buffers: {e}");
                None
            }
        };
        Ok(SharedRing(Arc::new(Mutex::new(RingState {
            ring,
            slots: (0..DEPTH).map(|_| None).collect(),
            free: (0..DEPTH).rev().collect(),
            pool,
            done: Vec::new(),
            unsubmitted: false,
        }))))
    }

    pub fn lock(&self) -> MutexGuard<'_, RingState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl RingState {
    /// A new member's id, for routing completions.
    pub fn register_member(&mut self) -> u32 {
        self.done.push(Vec::new());
        (self.done.len() - 1) as u32
    }

    pub fn has_free_slot(&self) -> bool {
        !self.free.is_empty()
    }

    /// Queues `entry` for `op`, whose buffers the ring now owns. The caller checked
    /// `has_free_slot`.
    ///
    /// # Safety
    /// Every pointer in `entry` must point into `op.buf` or the fixed pool, which stay
    /// put until the completion is reaped.
    pub unsafe fn push(&mut self, entry: squeue::Entry, op: Inflight) {
        let slot = self.free.pop().expect("caller checked for a free slot");
        self.slots[slot as usize] = Some(op);
        // SAFETY: per the contract above; at most DEPTH operations exist, so the
        // submission queue (DEPTH entries) has room.
        let pushed = unsafe {
            self.ring
                .submission()
                .push(&entry.user_data(u64::from(slot)))
        };
        assert!(pushed.is_ok(), "submission queue overflow with a free slot");
        self.unsubmitted = true;
    }

    /// Entries pushed that `submit` has not handed to the kernel yet.
    pub fn unsubmitted(&self) -> bool {
        self.unsubmitted
    }

    /// Hands queued entries to the kernel (one system call for every member).
    pub fn submit(&mut self) {
        if !self.unsubmitted {
            return;
        }
        match self.ring.submit() {
            Ok(_) => self.unsubmitted = false,
            // The kernel is short of resources or completions: the entries stay queued and
            // go with the next submit.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EBUSY | libc::EAGAIN | libc::EINTR)
                ) => {}
            Err(e) => tracing::error!("io_uring submit: {e}"),
        }
    }

    /// Moves finished operations from the kernel to their members' lists, then returns
    /// `member`'s.
    pub fn take_done(&mut self, member: u32) -> Vec<(Inflight, i32)> {
        let cqes: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (slot, res) in cqes {
            let Some(op) = self.slots.get_mut(slot as usize).and_then(Option::take) else {
                tracing::error!(slot, "io_uring completion for an empty slot");
                continue;
            };
            self.free.push(slot as u32);
            self.done[op.member as usize].push((op, res));
        }
        std::mem::take(&mut self.done[member as usize])
    }

    /// Returns a fixed buffer to the pool once its operation has been finished.
    pub fn release(&mut self, buf: &Buf) {
        if let Buf::Fixed(i) = buf {
            self.pool.as_mut().expect("fixed slot without pool").put(*i);
        }
    }

    fn in_kernel(&self) -> usize {
        DEPTH as usize - self.free.len()
    }
}

impl Drop for RingState {
    fn drop(&mut self) {
        // The kernel may still write into our buffers: wait for every operation before the
        // buffers and the ring go away.
        while self.in_kernel() > 0 {
            if self.ring.submit_and_wait(1).is_err() {
                break;
            }
            let done: Vec<u64> = self.ring.completion().map(|c| c.user_data()).collect();
            for slot in done {
                if let Some(s) = self.slots.get_mut(slot as usize)
                    && s.take().is_some()
                {
                    self.free.push(slot as u32);
                }
            }
        }
    }
}

/// Where members find the pool's shared ring; created on first use, so pools without file
/// members never need io_uring.
#[derive(Clone, Default)]
pub struct RingSlot(Arc<Mutex<Option<SharedRing>>>);

impl RingSlot {
    pub fn get(&self, waker: &Waker) -> std::io::Result<SharedRing> {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = &*g {
            return Ok(r.clone());
        }
        let r = SharedRing::new(waker)?;
        *g = Some(r.clone());
        Ok(r)
    }
}
