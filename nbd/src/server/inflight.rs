//! Per-connection admission control. A request holds one slot (and, for
//! reads and writes, its payload size in bytes) from the moment its header is
//! read until its reply has been written. When either limit is reached the
//! reader stops reading the socket, so TCP flow control pushes back on the
//! client and the connection's memory stays bounded. Payload bytes are also counted
//! against the server-wide [`ByteBudget`], which bounds all connections together.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::budget::ByteBudget;

pub(crate) struct Inflight {
    state: Mutex<State>,
    cv: Condvar,
    max_requests: usize,
    max_bytes: u64,
    /// Every connection's bytes together.
    server: Arc<ByteBudget>,
    /// `State::closed`, readable while waiting on the server's budget.
    closed: AtomicBool,
}

#[derive(Default)]
struct State {
    requests: usize,
    bytes: u64,
    /// Set when the writer can no longer deliver replies: waiting is over.
    closed: bool,
    /// Threads waiting on `cv`: a release wakes (a system call) only when one is.
    waiting: usize,
}

impl Inflight {
    pub fn new(max_requests: usize, max_bytes: u64, server: Arc<ByteBudget>) -> Self {
        Inflight {
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
            max_requests: max_requests.max(1),
            max_bytes,
            server,
            closed: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the counters torn
        // (every update is a single statement), so poisoning is ignored.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a free request slot. False if the connection is closing. `before_wait`
    /// runs (without the lock) once if there is no slot now.
    pub fn acquire_slot(&self, before_wait: impl FnOnce()) -> bool {
        let full = |s: &State| s.requests >= self.max_requests;
        self.acquire(full, before_wait, |s| s.requests += 1)
    }

    /// Waits until `n` more payload bytes fit in the connection's budget, then in the
    /// server's. A request is always admitted when no bytes are held, so a single
    /// payload larger than a budget cannot deadlock. False if the connection is closing.
    /// `before_wait` as for [`Inflight::acquire_slot`] (once, before the first wait).
    pub fn acquire_bytes(&self, n: u64, before_wait: impl FnOnce()) -> bool {
        let mut before_wait = Some(before_wait);
        let mut announce = || {
            if let Some(f) = before_wait.take() {
                f();
            }
        };
        let full = |s: &State| s.bytes > 0 && s.bytes + n > self.max_bytes;
        if !self.acquire(full, &mut announce, |s| s.bytes += n) {
            return false;
        }
        if !self.server.acquire(n, &self.closed, announce) {
            let mut s = self.lock();
            s.bytes = s.bytes.saturating_sub(n);
            return false;
        }
        true
    }

    /// Waits while `full` holds (calling `before_wait` first, without the lock, if it
    /// does), then `take`s; false instead if the connection closes.
    fn acquire(
        &self,
        full: impl Fn(&State) -> bool,
        before_wait: impl FnOnce(),
        take: impl FnOnce(&mut State),
    ) -> bool {
        let mut s = self.lock();
        if !s.closed && full(&s) {
            drop(s);
            before_wait();
            s = self.lock();
        }
        while !s.closed && full(&s) {
            s = self.wait(s);
        }
        if s.closed {
            return false;
        }
        take(&mut s);
        true
    }

    fn wait<'a>(&self, mut s: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        s.waiting += 1;
        let mut s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        s.waiting -= 1;
        s
    }

    /// Returns one slot and `bytes` of budget.
    pub fn release(&self, bytes: u64) {
        self.release_n(1, bytes);
    }

    /// Returns `slots` slots and `bytes` of budget (replies sent together).
    pub fn release_n(&self, slots: usize, bytes: u64) {
        let mut s = self.lock();
        s.requests = s.requests.saturating_sub(slots);
        s.bytes = s.bytes.saturating_sub(bytes);
        let wake = s.waiting > 0;
        drop(s);
        self.server.release(bytes);
        if wake {
            self.cv.notify_all();
        }
    }

    /// Wakes every waiter and makes further acquisitions fail.
    pub fn close(&self) {
        self.lock().closed = true;
        self.closed.store(true, Ordering::SeqCst);
        self.cv.notify_all();
        self.server.wake_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unbounded() -> Arc<ByteBudget> {
        Arc::new(ByteBudget::new(u64::MAX))
    }
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn slots_block_until_released() {
        let f = Arc::new(Inflight::new(2, 1 << 20, unbounded()));
        assert!(f.acquire_slot(|| {}));
        assert!(f.acquire_slot(|| {}));
        let f2 = f.clone();
        let t = std::thread::spawn(move || f2.acquire_slot(|| {}));
        std::thread::sleep(Duration::from_millis(50));
        assert!(!t.is_finished(), "third slot must wait");
        f.release(0);
        assert!(t.join().unwrap());
    }

    #[test]
    fn oversized_request_admitted_when_idle_and_close_wakes() {
        let f = Arc::new(Inflight::new(8, 100, unbounded()));
        assert!(
            f.acquire_bytes(1000, || {}),
            "idle connection admits any size"
        );
        let f2 = f.clone();
        let t = std::thread::spawn(move || f2.acquire_bytes(1, || {}));
        std::thread::sleep(Duration::from_millis(50));
        assert!(!t.is_finished(), "budget exhausted, must wait");
        f.close();
        assert!(!t.join().unwrap());
        assert!(!f.acquire_slot(|| {}));
    }
}
