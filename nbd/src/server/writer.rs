//! The per-connection writer thread: the only code that writes replies to
//! the socket, so replies from many completing threads never interleave.
//! Replies go out in completion order, which is what makes out-of-order
//! completion by the backend visible to the client.

use std::io::{BufWriter, Write};
use std::net::Shutdown;
use std::sync::mpsc::Receiver;

use crate::backend::ReplyMsg;
use crate::error::ErrorCode;
use crate::proto::transmission::SimpleReply;
use crate::stream::NbdStream;

use super::inflight::Inflight;

/// Replies smaller than this are coalesced before hitting the socket.
const WRITE_BUFFER: usize = 64 * 1024;

/// Runs until every sender of `rx` (the reader and all outstanding
/// completers) is gone, i.e. until every admitted request has a reply.
pub(crate) fn run(stream: NbdStream, rx: Receiver<ReplyMsg>, inflight: &Inflight) {
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, stream);
    let mut broken = false;
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        while let Some(msg) = next {
            let budget = msg.budget;
            if !broken && let Err(e) = write_reply(&mut out, msg) {
                broken = true;
                fail_connection(out.get_ref(), inflight, &e);
            }
            // The slot is returned only now that the reply left our hands,
            // which bounds replies queued here as well as work in the backend.
            inflight.release(budget);
            next = rx.try_recv().ok();
        }
        // Flush once the queue is momentarily empty: batches small replies
        // under load without delaying a lone reply.
        if !broken && let Err(e) = out.flush() {
            broken = true;
            fail_connection(out.get_ref(), inflight, &e);
        }
    }
}

fn write_reply(out: &mut BufWriter<NbdStream>, msg: ReplyMsg) -> std::io::Result<()> {
    let result = match (msg.result, msg.read_len) {
        (Ok(data), Some(len)) if data.len() != len as usize => {
            tracing::error!(
                handle = msg.handle,
                got = data.len(),
                want = len,
                "backend returned a read of the wrong length; replying EIO"
            );
            Err(ErrorCode::Io)
        }
        (r, _) => r,
    };
    let error = match &result {
        Ok(_) => 0,
        Err(e) => e.to_wire(),
    };
    out.write_all(
        &SimpleReply {
            error,
            handle: msg.handle,
        }
        .encode(),
    )?;
    if let (Ok(data), Some(_)) = (&result, msg.read_len) {
        out.write_all(data)?;
    }
    Ok(())
}

/// The client can no longer receive replies: shut the socket so the reader
/// stops too, and stop admitting requests. Remaining completions are still
/// drained (and their slots released) by the caller's loop.
fn fail_connection(stream: &NbdStream, inflight: &Inflight, e: &std::io::Error) {
    tracing::debug!("writing reply failed, closing connection: {e}");
    let _ = stream.shutdown(Shutdown::Both);
    inflight.close();
}
