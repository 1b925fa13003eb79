//! NBD commands in flight through the engine: splitting a command into engine requests,
//! gathering their replies, and answering the client once every part is done.
//!
//! READ and WRITE are never split: the exports advertise the engine's request limit as
//! their maximum payload, and the server rejects anything larger. TRIM and WRITE_ZEROES
//! carry no payload and may cover up to 4 GiB, so they are cut into pieces of at most the
//! engine's limit. An engine request's id is `(command << PART_BITS) | part`, its top bit clear:
//! ids with it set are the loop's own requests (`ctl_flush`).

use std::collections::HashMap;

use fusionraid_core::{Data, Nanos, Op, ReqError, Request, VolumeId};
use fusionraid_nbd::{CommandKind, Completer, ErrorCode};

const PART_BITS: u32 = 16;

/// The NBD error for an engine error.
pub fn error_code(e: &ReqError) -> ErrorCode {
    match e {
        ReqError::NoVolume(_)
        | ReqError::OutOfRange { .. }
        | ReqError::Misaligned { .. }
        | ReqError::BadPayload { .. } => ErrorCode::Inval,
        ReqError::TooLarge { .. } => ErrorCode::Overflow,
        ReqError::NoSpace => ErrorCode::NoSpc,
        ReqError::Busy(_) | ReqError::Io(_) => ErrorCode::Io,
    }
}

/// What kind of command finished, for latency accounting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Read,
    Write,
    Flush,
    Other,
}

struct Pending {
    done: Completer,
    volume: VolumeId,
    /// Bytes the command reads or writes (zeroes included), for the volume's counters.
    bytes: u64,
    parts_left: u32,
    error: Option<ErrorCode>,
    data: Option<Vec<u8>>,
    class: Class,
    started: Nanos,
}

/// A command answered: what the loop records about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished {
    pub class: Class,
    pub latency: Nanos,
    pub volume: VolumeId,
    pub bytes: u64,
    pub failed: bool,
}

#[derive(Default)]
pub struct Tracker {
    next: u64,
    cmds: HashMap<u64, Pending>,
}

impl Tracker {
    /// Registers a command and returns the engine requests that carry it out, or answers
    /// it at once if it can not be carried out.
    pub fn admit(
        &mut self,
        volume: VolumeId,
        kind: CommandKind,
        done: Completer,
        max_bytes: u64,
        now: Nanos,
    ) -> Vec<Request> {
        let bytes = match &kind {
            CommandKind::Read { len, .. } => u64::from(*len),
            CommandKind::Write { data, .. } => data.len() as u64,
            CommandKind::WriteZeroes { len, .. } => u64::from(*len),
            CommandKind::Flush | CommandKind::Trim { .. } => 0,
        };
        let (class, ops) = match split(kind, max_bytes) {
            Ok(x) => x,
            Err(code) => {
                done.fail(code);
                return Vec::new();
            }
        };
        if ops.is_empty() {
            // A zero-length trim or write-zeroes: nothing to do.
            done.ok();
            return Vec::new();
        }
        if ops.len() > 1 << PART_BITS {
            done.fail(ErrorCode::Overflow);
            return Vec::new();
        }
        let id = self.next;
        // The top bit stays clear (`ctl_flush::INTERNAL_BIT`).
        self.next = (self.next + 1) & ((1u64 << (63 - PART_BITS)) - 1);
        assert!(
            !self.cmds.contains_key(&id),
            "command id reused while in flight"
        );
        self.cmds.insert(
            id,
            Pending {
                done,
                volume,
                bytes,
                parts_left: ops.len() as u32,
                error: None,
                data: None,
                class,
                started: now,
            },
        );
        ops.into_iter()
            .enumerate()
            .map(|(i, op)| Request {
                id: (id << PART_BITS) | i as u64,
                volume,
                op,
            })
            .collect()
    }

    /// One engine reply. Returns what finished when it was the command's last part.
    pub fn on_reply(
        &mut self,
        req_id: u64,
        result: Result<Option<Data>, ReqError>,
        now: Nanos,
    ) -> Option<Finished> {
        let id = req_id >> PART_BITS;
        let Some(p) = self.cmds.get_mut(&id) else {
            tracing::error!(req_id, "engine reply for an unknown request");
            return None;
        };
        match result {
            Ok(Some(Data::Size(_))) => p.error = Some(ErrorCode::Io),
            Ok(Some(d)) => p.data = d.into_bytes(),
            Ok(None) => {}
            Err(e) => {
                tracing::debug!("request failed: {e}");
                p.error.get_or_insert(error_code(&e));
            }
        }
        p.parts_left -= 1;
        if p.parts_left > 0 {
            return None;
        }
        let p = self.cmds.remove(&id).expect("present above");
        let finished = Finished {
            class: p.class,
            latency: now.saturating_sub(p.started),
            volume: p.volume,
            bytes: p.bytes,
            failed: p.error.is_some(),
        };
        match p.error {
            Some(e) => p.done.fail(e),
            None => p.done.complete(Ok(p.data.unwrap_or_default())),
        }
        Some(finished)
    }

    pub fn len(&self) -> usize {
        self.cmds.len()
    }
    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }
}

fn split(kind: CommandKind, max: u64) -> Result<(Class, Vec<Op>), ErrorCode> {
    let pieces = |offset: u64, len: u64, mk: &dyn Fn(u64, u64) -> Op| -> Vec<Op> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < len {
            let n = (len - at).min(max);
            out.push(mk(offset + at, n));
            at += n;
        }
        out
    };
    Ok(match kind {
        CommandKind::Read { offset, len } => {
            if u64::from(len) > max {
                return Err(ErrorCode::Overflow);
            }
            (
                Class::Read,
                vec![Op::Read {
                    offset,
                    len: u64::from(len),
                }],
            )
        }
        CommandKind::Write { offset, data, fua } => {
            if data.len() as u64 > max {
                return Err(ErrorCode::Overflow);
            }
            (
                Class::Write,
                vec![Op::Write {
                    offset,
                    data: Data::Bytes(data),
                    fua,
                }],
            )
        }
        CommandKind::Flush => (Class::Flush, vec![Op::Flush]),
        CommandKind::Trim { offset, len, .. } => (
            Class::Other,
            pieces(offset, u64::from(len), &|offset, len| Op::Trim {
                offset,
                len,
            }),
        ),
        CommandKind::WriteZeroes {
            offset, len, fua, ..
        } => (
            Class::Write,
            pieces(offset, u64::from(len), &|offset, len| Op::WriteZeroes {
                offset,
                len,
                fua,
            }),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    type Slot = Arc<Mutex<Option<Result<Vec<u8>, ErrorCode>>>>;

    fn completer() -> (Completer, Slot) {
        let got = Arc::new(Mutex::new(None));
        let g = got.clone();
        (
            Completer::from_fn(1, move |r| *g.lock().unwrap() = Some(r)),
            got,
        )
    }

    #[test]
    fn trims_are_split_and_joined() {
        let mut t = Tracker::default();
        let (c, got) = completer();
        let kind = CommandKind::Trim {
            offset: 0,
            len: 100 << 20,
            fua: false,
        };
        let reqs = t.admit(0, kind, c, 32 << 20, 0);
        assert_eq!(reqs.len(), 4);
        let total: u64 = reqs
            .iter()
            .map(|r| match r.op {
                Op::Trim { len, .. } => len,
                _ => panic!(),
            })
            .sum();
        assert_eq!(total, 100 << 20);
        for (i, r) in reqs.iter().enumerate() {
            let res = if i == 2 {
                Err(ReqError::NoSpace)
            } else {
                Ok(None)
            };
            let fin = t.on_reply(r.id, res, 10);
            assert_eq!(fin.is_some(), i == 3);
        }
        assert_eq!(*got.lock().unwrap(), Some(Err(ErrorCode::NoSpc)));
        assert!(t.is_empty());
    }

    #[test]
    fn reads_return_data_and_oversize_is_refused() {
        let mut t = Tracker::default();
        let (c, got) = completer();
        let reqs = t.admit(
            0,
            CommandKind::Read {
                offset: 0,
                len: 4096,
            },
            c,
            1 << 20,
            5,
        );
        assert_eq!(reqs.len(), 1);
        let fin = t.on_reply(reqs[0].id, Ok(Some(Data::Bytes(vec![7; 4096]))), 12);
        let fin = fin.unwrap();
        assert_eq!(
            (fin.class, fin.latency, fin.bytes, fin.failed),
            (Class::Read, 7, 4096, false)
        );
        assert_eq!(*got.lock().unwrap(), Some(Ok(vec![7; 4096])));

        let (c, got) = completer();
        let big = CommandKind::Read {
            offset: 0,
            len: 2 << 20,
        };
        assert!(t.admit(0, big, c, 1 << 20, 0).is_empty());
        assert_eq!(*got.lock().unwrap(), Some(Err(ErrorCode::Overflow)));
    }
}
