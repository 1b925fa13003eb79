//! Engine flushes the loop submits on its own behalf, so an operator command is answered
//! only once what it changed is durable.
//!
//! `fusionraid fail N` changes the pool's metadata (the engine journals the member as
//! failed). Answering "failed" while that record sits in memory would let a crash right
//! after the answer bring the member back as healthy, with the writes that skipped it since
//! missing from it. An engine FLUSH is answered once a journal commit sealed after it is
//! durable (`Scheme` FLUSH semantics), so the loop submits one after failing the member and
//! answers the operator with the flush's reply. `fusionraid replace N` is answered the same
//! way: a crash after its answer keeps the new device in the slot.
//!
//! These requests carry ids with [`INTERNAL_BIT`] set; NBD commands' ids never do
//! (`commands::Tracker`), so a reply is routed by its id alone.

use std::collections::HashMap;
use std::sync::mpsc::SyncSender;

use fusionraid_core::{Data, Op, ReqError, Request, VolumeId};

/// The bit that marks an engine request id as the loop's own.
pub const INTERNAL_BIT: u64 = 1 << 63;

/// Internal flushes in flight and whom to answer when each is done.
#[derive(Default)]
pub struct CtlFlushes {
    next: u64,
    waiting: HashMap<u64, Waiter>,
}

struct Waiter {
    /// What the answer is about, for its error message.
    what: String,
    reply: SyncSender<Result<(), String>>,
}

impl CtlFlushes {
    /// A FLUSH of `volume` (any volume: the journal is the pool's) whose reply answers
    /// `reply`; `what` says what it makes durable.
    pub fn request(
        &mut self,
        volume: VolumeId,
        what: String,
        reply: SyncSender<Result<(), String>>,
    ) -> Request {
        let id = INTERNAL_BIT | self.next;
        self.next = (self.next + 1) & !INTERNAL_BIT;
        self.waiting.insert(id, Waiter { what, reply });
        Request {
            id,
            volume,
            op: Op::Flush,
        }
    }

    /// An engine reply: answers its waiter and returns true if `id` was one of ours.
    pub fn on_reply(&mut self, id: u64, result: &Result<Option<Data>, ReqError>) -> bool {
        if id & INTERNAL_BIT == 0 {
            return false;
        }
        match self.waiting.remove(&id) {
            Some(w) => {
                let r = result
                    .as_ref()
                    .map(|_| ())
                    .map_err(|e| format!("{}, but it could not be made durable: {e}", w.what));
                let _ = w.reply.try_send(r);
            }
            None => tracing::error!(id, "engine reply for an unknown internal request"),
        }
        true
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    #[test]
    fn replies_reach_their_waiter_and_errors_say_what_was_not_durable() {
        let mut f = CtlFlushes::default();
        let (tx1, rx1) = sync_channel(1);
        let (tx2, rx2) = sync_channel(1);
        let a = f.request(0, "member 1 failed".into(), tx1);
        let b = f.request(0, "member 2 failed".into(), tx2);
        assert!(a.id & INTERNAL_BIT != 0 && b.id & INTERNAL_BIT != 0 && a.id != b.id);
        assert!(matches!(a.op, Op::Flush));
        // An NBD command's reply is not ours.
        assert!(!f.on_reply(5 << 16, &Ok(None)));
        assert!(f.on_reply(b.id, &Err(ReqError::Io("journal lost".into()))));
        assert!(f.on_reply(a.id, &Ok(None)));
        assert_eq!(rx1.try_recv().unwrap(), Ok(()));
        let e = rx2.try_recv().unwrap().unwrap_err();
        assert!(
            e.contains("member 2 failed") && e.contains("journal lost"),
            "{e}"
        );
        assert!(f.is_empty());
    }
}
