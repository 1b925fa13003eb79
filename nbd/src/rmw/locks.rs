//! Exclusive locks on aligned byte ranges of an export, for the
//! read-modify-write adapter.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

/// (export, start, end) of a locked range.
pub(super) type Key = (usize, u64, u64);

/// Exclusive locks on aligned byte ranges, with a FIFO of waiters. A waiter
/// starts only when it conflicts neither with a held lock nor with an
/// earlier waiter, so conflicting requests run in arrival order.
#[derive(Default)]
pub(super) struct LockTable {
    state: Mutex<LockState>,
}

#[derive(Default)]
struct LockState {
    held: Vec<Key>,
    waiting: VecDeque<(Key, Box<dyn FnOnce() + Send>)>,
}

fn overlaps(a: &Key, b: &Key) -> bool {
    a.0 == b.0 && a.1 < b.2 && b.1 < a.2
}

impl LockTable {
    fn lock(&self) -> MutexGuard<'_, LockState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn acquire(&self, key: Key, start: Box<dyn FnOnce() + Send>) {
        let mut s = self.lock();
        let blocked = s.held.iter().any(|h| overlaps(h, &key))
            || s.waiting.iter().any(|(w, _)| overlaps(w, &key));
        if blocked {
            s.waiting.push_back((key, start));
            return;
        }
        s.held.push(key);
        drop(s);
        // Outside the lock: the inner backend may complete inline, which
        // re-enters release().
        start();
    }

    pub(super) fn release(&self, key: Key) {
        let mut s = self.lock();
        if let Some(i) = s.held.iter().position(|h| *h == key) {
            s.held.swap_remove(i);
        }
        let mut ready = Vec::new();
        let mut still = VecDeque::new();
        for (k, f) in std::mem::take(&mut s.waiting) {
            let blocked = s.held.iter().any(|h| overlaps(h, &k))
                || still.iter().any(|(w, _): &(Key, _)| overlaps(w, &k));
            if blocked {
                still.push_back((k, f));
            } else {
                s.held.push(k);
                ready.push(f);
            }
        }
        s.waiting = still;
        drop(s);
        for f in ready {
            f();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn conflicting_ranges_run_in_arrival_order() {
        let t = LockTable::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let push = |n: u32| {
            let l = log.clone();
            Box::new(move || l.lock().unwrap().push(n)) as Box<dyn FnOnce() + Send>
        };
        t.acquire((0, 0, 8192), push(1)); // runs now
        t.acquire((0, 4096, 8192), push(2)); // waits for 1
        t.acquire((0, 8192, 12288), push(3)); // disjoint: runs now
        t.acquire((0, 0, 4096), push(4)); // overlaps 1, must wait
        t.acquire((1, 0, 8192), push(5)); // other export: runs now
        assert_eq!(*log.lock().unwrap(), [1, 3, 5]);
        t.release((0, 0, 8192));
        assert_eq!(*log.lock().unwrap(), [1, 3, 5, 2, 4]);
        t.acquire((0, 4096, 4097), push(6)); // overlaps held 2
        assert_eq!(log.lock().unwrap().len(), 5);
        t.release((0, 4096, 8192));
        assert_eq!(*log.lock().unwrap(), [1, 3, 5, 2, 4, 6]);
    }

    #[test]
    fn a_waiter_does_not_overtake_an_earlier_conflicting_waiter() {
        let t = LockTable::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let push = |n: u32| {
            let l = log.clone();
            Box::new(move || l.lock().unwrap().push(n)) as Box<dyn FnOnce() + Send>
        };
        t.acquire((0, 0, 4096), push(1));
        t.acquire((0, 0, 8192), push(2)); // waits for 1
        t.acquire((0, 4096, 8192), push(3)); // free now, but conflicts with 2
        assert_eq!(*log.lock().unwrap(), [1]);
        t.release((0, 0, 4096));
        assert_eq!(*log.lock().unwrap(), [1, 2]);
        t.release((0, 0, 8192));
        assert_eq!(*log.lock().unwrap(), [1, 2, 3]);
    }
}
