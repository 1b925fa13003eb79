//! The server-wide bound on READ/WRITE payload bytes admitted but not yet answered,
//! shared by every connection.
//!
//! Each connection already bounds its own bytes in flight (`Inflight`), but that bound
//! times `max_connections` is far beyond any machine's memory (256 MiB x 256): a client
//! that opens many connections, fills each with large reads and never reads the replies
//! pinned every reply buffer, and the server's memory grew with each connection until the
//! kernel killed it. With this budget such a client pins at most
//! `ServerConfig::max_total_in_flight_bytes`; the connections over it stop reading their
//! sockets, as at their own bound.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

pub(crate) struct ByteBudget {
    state: Mutex<State>,
    cv: Condvar,
    max_bytes: u64,
}

#[derive(Default)]
struct State {
    bytes: u64,
    /// Threads waiting on `cv`: a release wakes (a system call) only when one is.
    waiting: usize,
}

impl ByteBudget {
    pub fn new(max_bytes: u64) -> Self {
        ByteBudget {
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
            max_bytes,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update is a single statement: a poisoned lock holds consistent counters.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until `n` more bytes fit, then takes them; false instead once `closed` is
    /// set (by a connection that is closing, which then calls [`ByteBudget::wake_all`]).
    /// A request is admitted whenever no bytes are held, so one payload larger than the
    /// budget can not wait forever. `before_wait` runs (without the lock) once if the
    /// bytes do not fit now.
    pub fn acquire(&self, n: u64, closed: &AtomicBool, before_wait: impl FnOnce()) -> bool {
        let full = |s: &State| s.bytes > 0 && s.bytes.saturating_add(n) > self.max_bytes;
        let mut s = self.lock();
        if !closed.load(Ordering::SeqCst) && full(&s) {
            drop(s);
            before_wait();
            s = self.lock();
        }
        while !closed.load(Ordering::SeqCst) && full(&s) {
            s.waiting += 1;
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
            s.waiting -= 1;
        }
        if closed.load(Ordering::SeqCst) {
            return false;
        }
        s.bytes += n;
        true
    }

    /// Returns `n` bytes.
    pub fn release(&self, n: u64) {
        if n == 0 {
            return;
        }
        let mut s = self.lock();
        s.bytes = s.bytes.saturating_sub(n);
        let wake = s.waiting > 0;
        drop(s);
        if wake {
            self.cv.notify_all();
        }
    }

    /// Wakes every waiter, so one whose connection closed gives up.
    pub fn wake_all(&self) {
        let _s = self.lock();
        self.cv.notify_all();
    }

    #[cfg(test)]
    pub fn held(&self) -> u64 {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn bytes_beyond_the_budget_wait_for_a_release() {
        let b = Arc::new(ByteBudget::new(100));
        let open = Arc::new(AtomicBool::new(false));
        assert!(b.acquire(60, &open, || {}));
        assert!(b.acquire(40, &open, || {}));
        let (b2, o2) = (b.clone(), open.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let ok = b2.acquire(10, &o2, || tx.send(()).unwrap());
            (ok, b2.held())
        });
        // The waiter announces it is about to wait (its bytes do not fit).
        rx.recv().unwrap();
        b.release(60);
        let (ok, held) = t.join().unwrap();
        assert!(ok);
        assert_eq!(held, 50);
    }

    #[test]
    fn one_payload_larger_than_the_budget_is_admitted_alone() {
        let b = ByteBudget::new(100);
        let open = AtomicBool::new(false);
        assert!(b.acquire(1000, &open, || panic!("must not wait")));
        assert_eq!(b.held(), 1000);
    }

    #[test]
    fn a_closed_connection_stops_waiting() {
        let b = Arc::new(ByteBudget::new(100));
        let closed = Arc::new(AtomicBool::new(false));
        assert!(b.acquire(100, &closed, || {}));
        let (b2, c2) = (b.clone(), closed.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || b2.acquire(1, &c2, || tx.send(()).unwrap()));
        rx.recv().unwrap();
        closed.store(true, Ordering::SeqCst);
        b.wake_all();
        assert!(!t.join().unwrap());
        assert_eq!(b.held(), 100);
    }
}
