//! Reservation queues: a pool of identical FIFO servers (controller cores / command
//! processors) and the stall windows during which a device serves nothing (or no writes).

use fusionraid_core::Nanos;

/// `n` identical servers; a job goes to the server that frees up first. Pools are small (a
/// few command processors), so a linear scan beats a heap's pop and push.
#[derive(Clone, Debug)]
pub struct ServerPool {
    free_at: Vec<Nanos>,
}

impl ServerPool {
    pub fn new(n: u32) -> Self {
        ServerPool {
            free_at: vec![0; n.max(1) as usize],
        }
    }

    pub fn servers(&self) -> usize {
        self.free_at.len()
    }

    /// Books `parts` jobs of `part_ns` each, arriving at `arrive`, and returns the longest
    /// queueing delay among them (the request can go on once its last part has started and
    /// finished; the service itself is part of the unloaded latency).
    #[inline]
    pub fn reserve(&mut self, arrive: Nanos, parts: u32, part_ns: Nanos) -> Nanos {
        let mut wait = 0;
        for _ in 0..parts.max(1) {
            let (i, &free) = self
                .free_at
                .iter()
                .enumerate()
                .min_by_key(|&(_, &t)| t)
                .expect("pool is never empty");
            let start = free.max(arrive);
            wait = wait.max(start - arrive);
            self.free_at[i] = start + part_ns;
        }
        wait
    }
}

/// Which requests a stall window holds back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallScope {
    /// Everything: buffer flushes and GC passes of consumer drives (paper §2.3: "these
    /// flushes block read requests as well"; "requests are blocked during GC").
    All,
    /// Only writes: a datacenter drive's urgent GC throttles writes while reads are still
    /// interleaved between GC steps (paper §2.3, multi-core DC controllers).
    Writes,
}

/// Sorted, merged windows `[start, end)` per scope.
#[derive(Clone, Debug, Default)]
pub struct StallWindows {
    all: Vec<(Nanos, Nanos)>,
    writes: Vec<(Nanos, Nanos)>,
}

fn insert(list: &mut Vec<(Nanos, Nanos)>, start: Nanos, end: Nanos) {
    if end <= start {
        return;
    }
    let i = list.partition_point(|w| w.0 < start);
    list.insert(i, (start, end));
    // Merge neighbours so the list stays disjoint and sorted.
    let mut merged: Vec<(Nanos, Nanos)> = Vec::with_capacity(list.len());
    for &(s, e) in list.iter() {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    *list = merged;
}

/// First time >= `t` outside every window of `list`.
fn escape(list: &[(Nanos, Nanos)], mut t: Nanos) -> Nanos {
    let i = list.partition_point(|w| w.1 <= t);
    for &(s, e) in &list[i..] {
        if s > t {
            break;
        }
        t = t.max(e);
    }
    t
}

impl StallWindows {
    pub fn add(&mut self, scope: StallScope, start: Nanos, end: Nanos) {
        match scope {
            StallScope::All => insert(&mut self.all, start, end),
            StallScope::Writes => insert(&mut self.writes, start, end),
        }
    }

    /// Forget windows that ended at or before `now`: no later request can meet them.
    pub fn prune(&mut self, now: Nanos) {
        if !self.all.is_empty() {
            self.all.retain(|w| w.1 > now);
        }
        if !self.writes.is_empty() {
            self.writes.retain(|w| w.1 > now);
        }
    }

    /// The first instant >= `t` at which a request of this kind may proceed.
    ///
    /// Inlined for the common case (no stall decided), which costs two length tests: a
    /// device I/O asks this three or four times.
    #[inline]
    pub fn defer(&self, t: Nanos, is_write: bool) -> Nanos {
        if self.all.is_empty() && self.writes.is_empty() {
            return t;
        }
        self.defer_in_windows(t, is_write)
    }

    #[inline(never)]
    fn defer_in_windows(&self, t: Nanos, is_write: bool) -> Nanos {
        let mut t = escape(&self.all, t);
        if is_write {
            loop {
                let t2 = escape(&self.all, escape(&self.writes, t));
                if t2 == t {
                    break;
                }
                t = t2;
            }
        }
        t
    }

    /// Whether `t` falls in a writes-only window (a DC drive's urgent GC is running).
    pub fn in_write_window(&self, t: Nanos) -> bool {
        let i = self.writes.partition_point(|w| w.1 <= t);
        self.writes.get(i).is_some_and(|w| w.0 <= t)
    }

    pub fn len(&self) -> usize {
        self.all.len() + self.writes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_queues_when_all_servers_busy() {
        let mut p = ServerPool::new(2);
        assert_eq!(p.reserve(0, 1, 10), 0);
        assert_eq!(p.reserve(0, 1, 10), 0);
        assert_eq!(p.reserve(0, 1, 10), 10);
        assert_eq!(p.reserve(25, 1, 10), 0);
        // Four parts over two servers: the last two wait.
        let mut p = ServerPool::new(2);
        assert_eq!(p.reserve(0, 4, 5), 5);
    }

    #[test]
    fn windows_merge_and_defer() {
        let mut w = StallWindows::default();
        w.add(StallScope::All, 100, 200);
        w.add(StallScope::All, 150, 300);
        w.add(StallScope::All, 400, 500);
        assert_eq!(w.defer(50, false), 50);
        assert_eq!(w.defer(120, false), 300);
        assert_eq!(w.defer(300, false), 300);
        assert_eq!(w.defer(450, true), 500);
        w.add(StallScope::Writes, 500, 600);
        assert_eq!(w.defer(450, false), 500);
        assert_eq!(w.defer(450, true), 600);
        assert!(w.in_write_window(550));
        assert!(!w.in_write_window(600));
        w.prune(500);
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn chained_windows_of_both_scopes() {
        let mut w = StallWindows::default();
        w.add(StallScope::Writes, 0, 100);
        w.add(StallScope::All, 100, 150);
        w.add(StallScope::Writes, 150, 160);
        assert_eq!(w.defer(10, true), 160);
        assert_eq!(w.defer(10, false), 10);
    }
}
