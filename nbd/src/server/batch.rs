//! Reply batches: the small replies one thread completes during a call of
//! [`batch_replies`] leave at its end, one send per connection.
//!
//! The engine's event loop answers many commands in one turn; sending each reply on its own
//! costs a system call and a wake-up of the client per reply. Within a batch a completer
//! only appends its reply to this thread's list for its connection (keeping its in-flight
//! slot), and the end of the batch sends each connection's replies with one vectored send
//! (or hands them to the connection's writer thread when the socket is full).

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::mpsc::SyncSender;

use crate::backend::ReplyMsg;

use super::sink::{ReplySink, WriterMsg};

/// One connection's replies in the open batch.
struct Corked {
    sink: Arc<ReplySink>,
    /// Keeps the writer thread alive until the replies are out (it ends with its senders).
    tx: SyncSender<WriterMsg>,
    msgs: Vec<ReplyMsg>,
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
                c.sink.deliver_all(&c.tx, c.msgs);
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
        match list.iter_mut().find(|c| Arc::ptr_eq(&c.sink, sink)) {
            Some(c) => c.msgs.push(msg),
            None => list.push(Corked {
                sink: sink.clone(),
                tx: tx.clone(),
                msgs: vec![msg],
            }),
        }
        None
    })
}
