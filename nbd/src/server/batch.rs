//! Reply batches: the small replies one thread completes during a call of
//! [`batch_replies`] leave at its end, one send per connection.
//!
//! The engine's event loop answers many commands in one turn; sending each reply on its own
//! costs a system call and a wake-up of the client per reply. Within a batch a completer
//! only appends its encoded reply to this thread's list for its connection (keeping its
//! in-flight slot), and the end of the batch sends each connection's replies together (or
//! hands them to the connection's writer thread when the socket is full).

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::mpsc::SyncSender;

use crate::backend::ReplyMsg;

use super::sink::{ReplySink, WriterMsg, frame};

/// One connection's replies in the open batch.
struct Corked {
    sink: Arc<ReplySink>,
    /// Keeps the writer thread alive until the replies are out (it ends with its senders).
    tx: SyncSender<WriterMsg>,
    bytes: Vec<u8>,
    replies: usize,
    budget: u64,
}

thread_local! {
    /// `Some` while a batch is open on this thread.
    static BATCH: RefCell<Option<Vec<Corked>>> = const { RefCell::new(None) };
}

/// Runs `f`; the replies it completes on this thread (to NBD server connections) are sent
/// when it returns, together per connection. Nested calls join the outer batch.
pub fn batch_replies<R>(f: impl FnOnce() -> R) -> R {
    let opened = BATCH.with(|b| {
        let mut b = b.borrow_mut();
        let open = b.is_none();
        if open {
            *b = Some(Vec::new());
        }
        open
    });
    if !opened {
        return f();
    }
    // Sends the batch even if `f` unwinds, so no reply and no slot is ever lost.
    struct Close;
    impl Drop for Close {
        fn drop(&mut self) {
            let corked = BATCH.with(|b| b.borrow_mut().take()).unwrap_or_default();
            for c in corked {
                c.sink.deliver_frames(&c.tx, c.bytes, c.replies, c.budget);
            }
        }
    }
    let _close = Close;
    f()
}

/// Adds `msg` to this thread's open batch; gives it back when there is none.
pub(crate) fn cork(
    sink: &Arc<ReplySink>,
    tx: &SyncSender<WriterMsg>,
    msg: ReplyMsg,
) -> Option<ReplyMsg> {
    BATCH.with(|b| {
        let mut b = b.borrow_mut();
        let Some(list) = b.as_mut() else {
            return Some(msg);
        };
        let i = match list.iter().position(|c| Arc::ptr_eq(&c.sink, sink)) {
            Some(i) => i,
            None => {
                list.push(Corked {
                    sink: sink.clone(),
                    tx: tx.clone(),
                    bytes: Vec::new(),
                    replies: 0,
                    budget: 0,
                });
                list.len() - 1
            }
        };
        let c = &mut list[i];
        let (header, payload) = frame(&msg);
        c.bytes.extend_from_slice(&header);
        c.bytes.extend_from_slice(payload);
        c.replies += 1;
        c.budget += msg.budget;
        None
    })
}
