//! Writes refused for lack of space, held and tried again until there is room.
//!
//! A thin member file (`FileSpace::Thin`), a file system that can not preallocate, a
//! thin-provisioned block device or a remote export on thin storage refuses a write with
//! ENOSPC (EDQUOT, a short write, NBD_ENOSPC) when the space under it runs out. The member
//! itself is intact: everything it held it still holds. Failing it would fail every member
//! on that storage at once, and a pool that lost more members than its parity covers can
//! not read what it acknowledged. So a refused write is held and tried again, backing off,
//! for up to a patience (60 s by default, like dm-thin's `no_space_timeout`); the operator
//! who makes room in that time loses nothing, and the engine sees a slow member in the
//! meantime (its spike detector steers new writes away). Only a write still refused after
//! the patience fails the member.
//!
//! The held writes are bounded by the engine's in-flight limits, like a member's queue.

use std::collections::VecDeque;

use fusionraid_core::{DevOp, Nanos};

/// How long a refused write is tried again before the member fails.
pub const DEFAULT_NO_SPACE_WAIT_NS: Nanos = 60_000_000_000;
/// The first retry waits this long; each later one waits a quarter of the time the write
/// has been held, up to `MAX_BACKOFF_NS`.
const MIN_BACKOFF_NS: Nanos = 5_000_000;
const MAX_BACKOFF_NS: Nanos = 1_000_000_000;

/// An operation waiting for room in its member's queue.
pub struct Queued {
    pub tag: u64,
    pub op: DevOp,
    /// A write refused for space before: when it first was.
    pub refused: Option<Nanos>,
}

impl Queued {
    /// An operation as the engine submitted it.
    pub fn new(tag: u64, op: DevOp) -> Self {
        Queued {
            tag,
            op,
            refused: None,
        }
    }
}

/// A write waiting for room: the operation as submitted, when it was first refused.
pub struct Held {
    pub tag: u64,
    pub op: DevOp,
    pub since: Nanos,
    retry_at: Nanos,
}

/// An episode of refusals: from the first refused write to the first retried write that
/// goes through with nothing else held.
struct Episode {
    began: Nanos,
    refusals: u64,
}

pub struct NoSpace {
    patience: Nanos,
    held: Vec<Held>,
    episode: Option<Episode>,
}

impl NoSpace {
    pub fn new(patience: Nanos) -> Self {
        NoSpace {
            patience,
            held: Vec::new(),
            episode: None,
        }
    }

    pub fn patience(&self) -> Nanos {
        self.patience
    }

    /// Whether a write first refused at `since` may still be held at `now`.
    pub fn may_hold(&self, since: Nanos, now: Nanos) -> bool {
        now.saturating_sub(since) < self.patience
    }

    /// Holds a refused write (the caller checked `may_hold`) until its next try.
    pub fn hold(&mut self, member: &str, tag: u64, op: DevOp, since: Nanos, now: Nanos) {
        let episode = self.episode.get_or_insert_with(|| {
            tracing::warn!(
                member,
                patience_s = self.patience / 1_000_000_000,
                "out of space: refused writes are held and tried again until there is room; \
                 make room on its storage, or the member fails when the patience runs out"
            );
            Episode {
                began: now,
                refusals: 0,
            }
        });
        episode.refusals += 1;
        let backoff = (now.saturating_sub(since) / 4).clamp(MIN_BACKOFF_NS, MAX_BACKOFF_NS);
        self.held.push(Held {
            tag,
            op,
            since,
            retry_at: now + backoff,
        });
    }

    /// A write that had been refused went through: the episode ends once nothing is held.
    pub fn written(&mut self, member: &str, now: Nanos) {
        if !self.held.is_empty() {
            return;
        }
        if let Some(e) = self.episode.take() {
            tracing::info!(
                member,
                held_ms = now.saturating_sub(e.began) / 1_000_000,
                refusals = e.refusals,
                "room again: the held writes went through"
            );
        }
    }

    /// Puts the held writes due for another try at `now` at the head of `queue`, oldest
    /// first: they are older than anything waiting there.
    pub fn requeue_due(&mut self, now: Nanos, queue: &mut VecDeque<Queued>) {
        for h in self.due(now).into_iter().rev() {
            queue.push_front(Queued {
                tag: h.tag,
                op: h.op,
                refused: Some(h.since),
            });
        }
    }

    /// Takes the held writes due for another try at `now`, oldest first.
    fn due(&mut self, now: Nanos) -> Vec<Held> {
        let (mut due, held): (Vec<Held>, Vec<Held>) =
            self.held.drain(..).partition(|h| h.retry_at <= now);
        self.held = held;
        due.sort_by_key(|h| h.since);
        due
    }

    /// When the next held write is due.
    pub fn next_retry(&self) -> Option<Nanos> {
        self.held.iter().map(|h| h.retry_at).min()
    }

    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// For `status`, while writes are held.
    pub fn note(&self) -> Option<String> {
        let e = self.episode.as_ref()?;
        Some(format!(
            "out of space: {} write(s) held and tried again ({} refusals so far); the \
             member fails if there is no room {} s after a write's first refusal",
            self.held.len(),
            e.refusals,
            self.patience / 1_000_000_000
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusionraid_core::Data;

    fn write(i: u8) -> DevOp {
        DevOp::Write {
            offset: u64::from(i) * 4096,
            data: Data::Bytes(vec![i; 4096]),
            fua: false,
        }
    }

    const MS: Nanos = 1_000_000;

    #[test]
    fn held_writes_back_off_and_come_back_oldest_first() {
        let mut n = NoSpace::new(60_000 * MS);
        n.hold("m", 1, write(1), 0, 0);
        n.hold("m", 2, write(2), 0, MS);
        assert_eq!(n.next_retry(), Some(MIN_BACKOFF_NS));
        assert!(n.due(MIN_BACKOFF_NS - 1).is_empty());
        let due = n.due(MIN_BACKOFF_NS);
        assert_eq!(due.iter().map(|h| h.tag).collect::<Vec<_>>(), vec![1]);
        assert_eq!(n.len(), 1);
        // Held for 400 ms: the next try waits a quarter of that.
        n.hold("m", 1, write(1), 0, 400 * MS);
        assert_eq!(
            n.held.iter().find(|h| h.tag == 1).unwrap().retry_at,
            500 * MS
        );
        // Long waits are capped.
        n.hold("m", 3, write(3), 0, 30_000 * MS);
        assert_eq!(n.next_retry(), Some(MIN_BACKOFF_NS + MS));
        assert_eq!(
            n.held.iter().find(|h| h.tag == 3).unwrap().retry_at,
            31_000 * MS
        );
        assert!(n.note().unwrap().contains("3 write(s) held"));
    }

    #[test]
    fn the_patience_bounds_the_hold_and_the_episode_ends_when_nothing_is_held() {
        let mut n = NoSpace::new(1_000 * MS);
        assert!(n.may_hold(0, 999 * MS));
        assert!(!n.may_hold(0, 1_000 * MS));
        n.hold("m", 1, write(1), 0, 0);
        n.written("m", MS);
        assert!(n.note().is_some(), "still held: the episode goes on");
        let _ = n.due(u64::MAX);
        n.written("m", 10 * MS);
        assert!(n.note().is_none());
        assert_eq!(n.next_retry(), None);
    }
}
