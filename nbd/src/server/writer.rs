//! The per-connection writer thread: writes the replies their completers could not send
//! at once (see `sink.rs`), so replies from many completing threads never interleave.
//! Replies go out in completion order, which is what makes out-of-order completion by the
//! backend visible to the client.

use std::io::{BufWriter, Write};
use std::sync::mpsc::Receiver;

use super::sink::{ReplySink, SinkState, WriterMsg, frame};

/// Replies smaller than this are coalesced before hitting the socket.
const WRITE_BUFFER: usize = 64 * 1024;

/// Runs until every sender of `rx` (the reader and all outstanding completers) is gone,
/// i.e. until every admitted request has a reply.
pub(crate) fn run(sink: &ReplySink, rx: Receiver<WriterMsg>) {
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, &sink.stream);
    while let Ok(first) = rx.recv() {
        // Holding the sink keeps completers from writing in the middle of our replies;
        // they queue to us meanwhile (and we pick those up below).
        let mut st = sink.lock();
        resume_partial(sink, &mut st, &mut out);
        let mut next = Some(first);
        while let Some(msg) = next {
            let (replies, budget) = match msg {
                WriterMsg::Reply(msg) => {
                    if !st.broken {
                        let (header, payload) = frame(&msg);
                        let r = out.write_all(&header).and_then(|()| out.write_all(payload));
                        if let Err(e) = r {
                            sink.fail(&mut st, &e);
                        }
                    }
                    (1, msg.budget)
                }
                WriterMsg::Resume => (0, 0),
            };
            // Slots are returned only now that the replies left our hands, which bounds
            // replies queued here as well as work in the backend.
            if replies > 0 {
                sink.inflight.release_n(replies, budget);
            }
            next = rx.try_recv().ok();
        }
        // Flush once the queue is momentarily empty: batches small replies under load
        // without delaying a lone reply.
        if !st.broken
            && let Err(e) = out.flush()
        {
            sink.fail(&mut st, &e);
        }
    }
}

/// Sends the rest of replies a completer could only partly send, before anything else.
fn resume_partial(sink: &ReplySink, st: &mut SinkState, out: &mut BufWriter<&crate::NbdStream>) {
    if st.partial.is_empty() {
        return;
    }
    let msgs = std::mem::take(&mut st.partial);
    let mut skip = std::mem::take(&mut st.partial_sent);
    for m in &msgs {
        let (header, payload) = frame(m);
        for piece in [&header[..], payload] {
            let n = skip.min(piece.len());
            skip -= n;
            if !st.broken
                && let Err(e) = out.write_all(&piece[n..])
            {
                sink.fail(st, &e);
            }
        }
    }
    sink.inflight
        .release_n(msgs.len(), msgs.iter().map(|m| m.budget).sum());
}
