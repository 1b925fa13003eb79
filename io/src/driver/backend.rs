//! The NBD side of the driver: [`EngineBackend`] turns each NBD command into a message for
//! the loop thread, and [`ExportMux`] lets some exports accept byte-granular I/O (through
//! the nbd crate's read-modify-write wrapper) while the others keep 4 KiB alignment.

use std::sync::Arc;
use std::sync::mpsc::TrySendError;

use fusionraid_nbd::{Backend, BlockSize, Command, Completer, ErrorCode, ExportInfo, RmwBackend};

use super::event_loop::{Shared, in_turn};
use super::{CmdMsg, Inbox, VolumeInfo};

/// How volumes are exported.
#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// Preferred I/O size to advertise (the stripe unit); 0 = 4 KiB.
    pub preferred_bytes: u32,
    /// Export names by volume index; volumes beyond the list keep the engine's names.
    pub names: Vec<String>,
}

pub struct EngineBackend {
    exports: Vec<ExportInfo>,
    inbox: Inbox,
    shared: Arc<Shared>,
}

impl EngineBackend {
    pub(crate) fn new(
        inbox: Inbox,
        shared: Arc<Shared>,
        volumes: &[VolumeInfo],
        max_request_bytes: u64,
        scheme: &str,
        opts: &ExportOptions,
    ) -> Self {
        let maximum = u32::try_from(max_request_bytes).unwrap_or(u32::MAX) / 4096 * 4096;
        let preferred = opts.preferred_bytes.max(4096).min(maximum);
        let preferred = if preferred.is_power_of_two() {
            preferred
        } else {
            4096
        };
        let exports = volumes
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let name = opts.names.get(i).unwrap_or(&v.name);
                ExportInfo::new(name.clone(), v.size_bytes)
                    .with_description(format!("fusionraid volume {name} ({}, {scheme})", v.level))
                    .with_block_size(BlockSize {
                        minimum: 4096,
                        preferred,
                        maximum,
                    })
                    .with_trim(true)
                    .with_write_zeroes(true)
                    // A flush makes every acknowledged write of the pool durable, whichever
                    // connection wrote it: what NBD_FLAG_CAN_MULTI_CONN promises.
                    .with_multi_conn(true)
            })
            .collect();
        EngineBackend {
            exports,
            inbox,
            shared,
        }
    }
}

impl Backend for EngineBackend {
    fn exports(&self) -> Vec<ExportInfo> {
        self.exports.clone()
    }

    fn submit(&self, export: usize, cmd: Command, done: Completer) {
        let msg = CmdMsg {
            volume: export as u32,
            kind: cmd.kind,
            done,
        };
        if in_turn() {
            // A follow-up from a completion, inside a turn: must not block (see Inbox).
            let mut q = self
                .inbox
                .reentrant
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            return q.push_back(msg);
        }
        // Queued without waking anyone: the connection calls `idle` before it waits for
        // its client, and the turns then run (see event_loop.rs). When the queue is full,
        // run them now, or wake the loop thread before waiting for room.
        let res = match self.inbox.tx.try_send(msg) {
            Err(TrySendError::Full(m)) => {
                self.shared.run_inline();
                match self.inbox.tx.try_send(m) {
                    Err(TrySendError::Full(m)) => {
                        self.shared.wake();
                        self.inbox.tx.send(m).map_err(|e| e.0)
                    }
                    r => r.map_err(unsent),
                }
            }
            r => r.map_err(unsent),
        };
        if let Err(m) = res {
            m.done.fail(ErrorCode::Shutdown);
        }
    }

    fn idle(&self) {
        self.shared.run_inline();
    }

    fn rejected(&self, _export: usize, _error: ErrorCode) {
        self.shared
            .rejected
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The command a failed `try_send` gives back.
fn unsent(e: TrySendError<CmdMsg>) -> CmdMsg {
    match e {
        TrySendError::Full(m) | TrySendError::Disconnected(m) => m,
    }
}

/// Routes each export to the engine directly or through read-modify-write.
pub struct ExportMux {
    raw: Arc<EngineBackend>,
    rmw: Arc<RmwBackend<EngineBackend>>,
    unaligned: Vec<bool>,
}

impl ExportMux {
    /// `unaligned[i]`: export i accepts any offset and length (for nbdfuse and other
    /// clients that do not honour the advertised 4 KiB minimum block size).
    pub fn new(backend: EngineBackend, unaligned: Vec<bool>) -> Self {
        let raw = Arc::new(backend);
        ExportMux {
            rmw: Arc::new(RmwBackend::new(raw.clone())),
            raw,
            unaligned,
        }
    }

    fn wants_rmw(&self, export: usize) -> bool {
        self.unaligned.get(export).copied().unwrap_or(false)
    }
}

impl Backend for ExportMux {
    fn exports(&self) -> Vec<ExportInfo> {
        let raw = self.raw.exports();
        let rmw = self.rmw.exports();
        raw.into_iter()
            .zip(rmw)
            .enumerate()
            .map(|(i, (r, u))| if self.wants_rmw(i) { u } else { r })
            .collect()
    }

    fn submit(&self, export: usize, cmd: Command, done: Completer) {
        if self.wants_rmw(export) {
            self.rmw.submit(export, cmd, done)
        } else {
            self.raw.submit(export, cmd, done)
        }
    }

    fn idle(&self) {
        self.raw.idle()
    }

    fn rejected(&self, export: usize, error: ErrorCode) {
        if self.wants_rmw(export) {
            self.rmw.rejected(export, error)
        } else {
            self.raw.rejected(export, error)
        }
    }
}
