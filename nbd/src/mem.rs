//! An in-memory [`Backend`] that completes every command inline. For tests,
//! examples and interop checks against real NBD tools.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::backend::{Backend, Command, CommandKind, Completer};
use crate::error::ErrorCode;
use crate::export::ExportInfo;

/// Exports backed by `Vec<u8>`s. Supports trim (which zeroes) and
/// write-zeroes, and advertises multi-conn: there is no cache, so every
/// completed write is visible to every connection at once.
pub struct MemBackend {
    exports: Vec<ExportInfo>,
    disks: Vec<Mutex<Vec<u8>>>,
    stats: MemStats,
}

/// Commands executed, by kind (across all exports).
#[derive(Debug, Default)]
pub struct MemStats {
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    pub flushes: AtomicU64,
    pub trims: AtomicU64,
    pub write_zeroes: AtomicU64,
}

impl MemBackend {
    /// One export. Trim, write-zeroes and multi-conn are switched on; the
    /// rest of `info` (name, size, block sizes, read-only) is kept.
    ///
    /// Panics if the size does not fit in this process's address space.
    pub fn new(info: ExportInfo) -> Self {
        Self::with_exports(vec![info])
    }

    /// Several exports, in `Backend::exports` order.
    pub fn with_exports(infos: Vec<ExportInfo>) -> Self {
        let exports: Vec<ExportInfo> = infos
            .into_iter()
            .map(|e| {
                e.with_trim(true)
                    .with_write_zeroes(true)
                    .with_multi_conn(true)
            })
            .collect();
        let disks = exports
            .iter()
            .map(|e| {
                let len = usize::try_from(e.size).expect("export size exceeds address space");
                Mutex::new(vec![0u8; len])
            })
            .collect();
        MemBackend {
            exports,
            disks,
            stats: MemStats::default(),
        }
    }

    fn disk(&self, export: usize) -> Option<MutexGuard<'_, Vec<u8>>> {
        self.disks
            .get(export)
            .map(|d| d.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// A copy of an export's bytes (`None` for an unknown export).
    pub fn contents(&self, export: usize) -> Option<Vec<u8>> {
        self.disk(export).map(|d| d.clone())
    }

    /// Overwrites bytes directly (test setup). False if out of range.
    pub fn fill(&self, export: usize, offset: u64, data: &[u8]) -> bool {
        let Some(mut d) = self.disk(export) else {
            return false;
        };
        match span(offset, data.len() as u64, d.len()) {
            Some(r) => {
                d[r].copy_from_slice(data);
                true
            }
            None => false,
        }
    }

    pub fn stats(&self) -> &MemStats {
        &self.stats
    }

    fn execute(&self, export: usize, kind: CommandKind) -> Result<Vec<u8>, ErrorCode> {
        let info = self.exports.get(export).ok_or(ErrorCode::Inval)?;
        if kind.is_write() && info.read_only {
            return Err(ErrorCode::Perm);
        }
        let mut d = self.disk(export).ok_or(ErrorCode::Inval)?;
        // The server already validated ranges; re-checking keeps direct
        // callers (Completer::from_fn) from panicking us.
        let bump = |c: &AtomicU64| c.fetch_add(1, Ordering::Relaxed);
        match kind {
            CommandKind::Read { offset, len } => {
                bump(&self.stats.reads);
                let r = span(offset, u64::from(len), d.len()).ok_or(ErrorCode::Inval)?;
                Ok(d[r].to_vec())
            }
            CommandKind::Write { offset, data, .. } => {
                bump(&self.stats.writes);
                let r = span(offset, data.len() as u64, d.len()).ok_or(ErrorCode::NoSpc)?;
                d[r].copy_from_slice(&data);
                Ok(Vec::new())
            }
            CommandKind::Flush => {
                bump(&self.stats.flushes);
                Ok(Vec::new())
            }
            CommandKind::Trim { offset, len, .. } => {
                bump(&self.stats.trims);
                let r = span(offset, u64::from(len), d.len()).ok_or(ErrorCode::Inval)?;
                d[r].fill(0);
                Ok(Vec::new())
            }
            CommandKind::WriteZeroes { offset, len, .. } => {
                bump(&self.stats.write_zeroes);
                let r = span(offset, u64::from(len), d.len()).ok_or(ErrorCode::NoSpc)?;
                d[r].fill(0);
                Ok(Vec::new())
            }
        }
    }
}

/// `offset..offset+len` as a slice range if it lies within `size` bytes.
fn span(offset: u64, len: u64, size: usize) -> Option<std::ops::Range<usize>> {
    let end = offset.checked_add(len)?;
    if end > size as u64 {
        return None;
    }
    Some(offset as usize..end as usize)
}

impl Backend for MemBackend {
    fn exports(&self) -> Vec<ExportInfo> {
        self.exports.clone()
    }

    fn submit(&self, export: usize, cmd: Command, done: Completer) {
        done.complete(self.execute(export, cmd.kind));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn run(b: &MemBackend, kind: CommandKind) -> Result<Vec<u8>, ErrorCode> {
        let out = Arc::new(Mutex::new(None));
        let o = out.clone();
        b.submit(
            0,
            Command { handle: 1, kind },
            Completer::from_fn(1, move |r| *o.lock().unwrap() = Some(r)),
        );
        out.lock().unwrap().take().expect("completed inline")
    }

    #[test]
    fn write_read_trim_zero() {
        let b = MemBackend::new(ExportInfo::new("m", 16384));
        let data = vec![7u8; 4096];
        assert_eq!(
            run(
                &b,
                CommandKind::Write {
                    offset: 4096,
                    data: data.clone(),
                    fua: false
                }
            ),
            Ok(vec![])
        );
        assert_eq!(
            run(
                &b,
                CommandKind::Read {
                    offset: 4096,
                    len: 4096
                }
            ),
            Ok(data)
        );
        run(
            &b,
            CommandKind::WriteZeroes {
                offset: 4096,
                len: 4096,
                no_hole: true,
                fua: false,
            },
        )
        .unwrap();
        assert_eq!(
            run(
                &b,
                CommandKind::Read {
                    offset: 4096,
                    len: 4096
                }
            ),
            Ok(vec![0; 4096])
        );
        assert_eq!(b.stats().writes.load(Ordering::Relaxed), 1);
        assert_eq!(b.stats().reads.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn out_of_range_is_an_error_not_a_panic() {
        let b = MemBackend::new(ExportInfo::new("m", 4096));
        assert_eq!(
            run(
                &b,
                CommandKind::Read {
                    offset: u64::MAX,
                    len: 4096
                }
            ),
            Err(ErrorCode::Inval)
        );
        assert_eq!(
            run(
                &b,
                CommandKind::Write {
                    offset: 4096,
                    data: vec![1],
                    fua: false
                }
            ),
            Err(ErrorCode::NoSpc)
        );
        assert!(!b.fill(0, 4095, &[1, 2]));
        assert!(b.fill(0, 4094, &[1, 2]));
        assert_eq!(&b.contents(0).unwrap()[4094..], &[1, 2]);
    }

    #[test]
    fn read_only_refuses_writes() {
        let b = MemBackend::new(ExportInfo::new("m", 4096).with_read_only(true));
        assert_eq!(
            run(
                &b,
                CommandKind::Trim {
                    offset: 0,
                    len: 4096,
                    fua: false
                }
            ),
            Err(ErrorCode::Perm)
        );
    }
}
