//! Decides what to do with one request header, before any payload is read
//! and before the backend sees anything. Pure function of the header, the
//! export and the server's payload cap, so it is exhaustively testable.

use crate::error::ErrorCode;
use crate::export::ExportInfo;
use crate::proto::consts::*;
use crate::proto::transmission::RequestHeader;

/// A request that passed every check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    Read {
        offset: u64,
        len: u32,
    },
    /// `len` payload bytes follow the header and still have to be read.
    Write {
        offset: u64,
        len: u32,
        fua: bool,
    },
    Flush,
    Trim {
        offset: u64,
        len: u32,
        fua: bool,
    },
    WriteZeroes {
        offset: u64,
        len: u32,
        no_hole: bool,
        fua: bool,
    },
    Disconnect,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Accept(Action),
    /// Reply success without involving the backend (zero-length requests:
    /// the spec leaves their meaning open but asks us not to disconnect).
    Noop,
    /// Reply with `error`; first skip the `skip` payload bytes that follow
    /// the header so the stream stays in sync.
    Reject {
        error: ErrorCode,
        skip: u32,
    },
    /// The stream cannot be parsed further (unknown command, so unknown
    /// payload; or a payload too large to consume): reply `error` and close.
    Fatal {
        error: ErrorCode,
        reason: String,
    },
}

/// `max_payload` is the server's hard cap on a WRITE payload it is willing
/// to read; the advertised per-export maximum may be lower.
pub(crate) fn check(h: &RequestHeader, e: &ExportInfo, max_payload: u32) -> Verdict {
    match h.typ {
        NBD_CMD_READ => check_read(h, e, e.block_size.maximum.min(max_payload)),
        NBD_CMD_WRITE => check_write(h, e, max_payload),
        NBD_CMD_DISC => Verdict::Accept(Action::Disconnect),
        NBD_CMD_FLUSH => {
            // Offset and length MUST be zero, but nothing depends on them,
            // so a sloppy client is not punished for it.
            if !e.flush || h.flags & !fua_flag(e) != 0 {
                return reject(ErrorCode::Inval);
            }
            Verdict::Accept(Action::Flush)
        }
        NBD_CMD_TRIM => check_trim(h, e),
        NBD_CMD_WRITE_ZEROES => check_write_zeroes(h, e),
        // Known commands we do not offer. None carries a payload without
        // negotiation we never do, so the stream stays parseable. Some
        // clients send CACHE unadvertised; the spec allows EINVAL for it.
        NBD_CMD_CACHE | NBD_CMD_BLOCK_STATUS | NBD_CMD_RESIZE => reject(ErrorCode::Inval),
        other => Verdict::Fatal {
            error: ErrorCode::Inval,
            reason: format!("unknown command type {other}"),
        },
    }
}

/// The flags a command may carry beyond its own: FUA, when the export offers it.
fn fua_flag(e: &ExportInfo) -> u16 {
    if e.fua { NBD_CMD_FLAG_FUA } else { 0 }
}

fn reject(error: ErrorCode) -> Verdict {
    Verdict::Reject { error, skip: 0 }
}

/// A READ of at most `advertised_max` bytes.
fn check_read(h: &RequestHeader, e: &ExportInfo, advertised_max: u32) -> Verdict {
    if h.flags & !fua_flag(e) != 0 {
        return reject(ErrorCode::Inval);
    }
    if h.len > advertised_max {
        return reject(ErrorCode::Inval);
    }
    if let Some(err) = range_error(h, e, ErrorCode::Inval) {
        return reject(err);
    }
    if h.len == 0 {
        return Verdict::Noop;
    }
    Verdict::Accept(Action::Read {
        offset: h.offset,
        len: h.len,
    })
}

/// A WRITE: a payload beyond `max_payload` can not be skipped and ends the connection; any
/// other refusal skips the payload so the stream stays in sync.
fn check_write(h: &RequestHeader, e: &ExportInfo, max_payload: u32) -> Verdict {
    if h.len > max_payload {
        return Verdict::Fatal {
            error: ErrorCode::Inval,
            reason: format!(
                "write payload of {} bytes exceeds the {max_payload}-byte cap",
                h.len
            ),
        };
    }
    let skip = |error| Verdict::Reject { error, skip: h.len };
    if e.read_only {
        return skip(ErrorCode::Perm);
    }
    if h.flags & !fua_flag(e) != 0 || h.len > e.block_size.maximum.min(max_payload) {
        return skip(ErrorCode::Inval);
    }
    if let Some(err) = range_error(h, e, ErrorCode::NoSpc) {
        return skip(err);
    }
    if h.len == 0 {
        return Verdict::Noop;
    }
    Verdict::Accept(Action::Write {
        offset: h.offset,
        len: h.len,
        fua: h.flags & NBD_CMD_FLAG_FUA != 0,
    })
}

fn check_trim(h: &RequestHeader, e: &ExportInfo) -> Verdict {
    if e.read_only {
        return reject(ErrorCode::Perm);
    }
    if !e.trim || h.flags & !fua_flag(e) != 0 {
        return reject(ErrorCode::Inval);
    }
    if let Some(err) = range_error(h, e, ErrorCode::Inval) {
        return reject(err);
    }
    if h.len == 0 {
        return Verdict::Noop;
    }
    Verdict::Accept(Action::Trim {
        offset: h.offset,
        len: h.len,
        fua: h.flags & NBD_CMD_FLAG_FUA != 0,
    })
}

fn check_write_zeroes(h: &RequestHeader, e: &ExportInfo) -> Verdict {
    if e.read_only {
        return reject(ErrorCode::Perm);
    }
    // FAST_ZERO is not advertised, so it is an unknown flag here.
    if !e.write_zeroes || h.flags & !(fua_flag(e) | NBD_CMD_FLAG_NO_HOLE) != 0 {
        return reject(ErrorCode::Inval);
    }
    if let Some(err) = range_error(h, e, ErrorCode::NoSpc) {
        return reject(err);
    }
    if h.len == 0 {
        return Verdict::Noop;
    }
    Verdict::Accept(Action::WriteZeroes {
        offset: h.offset,
        len: h.len,
        no_hole: h.flags & NBD_CMD_FLAG_NO_HOLE != 0,
        fua: h.flags & NBD_CMD_FLAG_FUA != 0,
    })
}

/// Alignment to the advertised minimum block size (EINVAL) and the export
/// bounds (`beyond_end`: EINVAL for reads/trims, ENOSPC for writes).
fn range_error(h: &RequestHeader, e: &ExportInfo, beyond_end: ErrorCode) -> Option<ErrorCode> {
    let min = u64::from(e.block_size.minimum.max(1));
    if !h.offset.is_multiple_of(min) || !u64::from(h.len).is_multiple_of(min) {
        return Some(ErrorCode::Inval);
    }
    match h.offset.checked_add(u64::from(h.len)) {
        Some(end) if end <= e.size => None,
        _ => Some(beyond_end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::BlockSize;
    use proptest::prelude::*;

    const SIZE: u64 = 1 << 20;
    const CAP: u32 = 1 << 25;

    fn export() -> ExportInfo {
        ExportInfo::new("e", SIZE)
            .with_trim(true)
            .with_write_zeroes(true)
    }

    fn hdr(typ: u16, flags: u16, offset: u64, len: u32) -> RequestHeader {
        RequestHeader {
            flags,
            typ,
            handle: 1,
            offset,
            len,
        }
    }

    fn rej(error: ErrorCode, skip: u32) -> Verdict {
        Verdict::Reject { error, skip }
    }

    #[test]
    fn well_formed_requests_are_accepted() {
        let e = export();
        assert_eq!(
            check(&hdr(NBD_CMD_READ, 0, 4096, 8192), &e, CAP),
            Verdict::Accept(Action::Read {
                offset: 4096,
                len: 8192
            })
        );
        assert_eq!(
            check(&hdr(NBD_CMD_WRITE, NBD_CMD_FLAG_FUA, 0, 4096), &e, CAP),
            Verdict::Accept(Action::Write {
                offset: 0,
                len: 4096,
                fua: true
            })
        );
        assert_eq!(
            check(
                &hdr(
                    NBD_CMD_WRITE_ZEROES,
                    NBD_CMD_FLAG_NO_HOLE,
                    SIZE - 4096,
                    4096
                ),
                &e,
                CAP
            ),
            Verdict::Accept(Action::WriteZeroes {
                offset: SIZE - 4096,
                len: 4096,
                no_hole: true,
                fua: false
            })
        );
        assert_eq!(
            check(&hdr(NBD_CMD_FLUSH, NBD_CMD_FLAG_FUA, 0, 0), &e, CAP),
            Verdict::Accept(Action::Flush)
        );
        assert_eq!(
            check(&hdr(NBD_CMD_DISC, 0, 0, 0), &e, CAP),
            Verdict::Accept(Action::Disconnect)
        );
    }

    #[test]
    fn errors_follow_the_spec() {
        let e = export();
        // Misaligned: EINVAL; the write payload is still skipped.
        assert_eq!(
            check(&hdr(NBD_CMD_READ, 0, 512, 4096), &e, CAP),
            rej(ErrorCode::Inval, 0)
        );
        assert_eq!(
            check(&hdr(NBD_CMD_WRITE, 0, 0, 512), &e, CAP),
            rej(ErrorCode::Inval, 512)
        );
        // Beyond the end: EINVAL for read/trim, ENOSPC for writes.
        assert_eq!(
            check(&hdr(NBD_CMD_READ, 0, SIZE, 4096), &e, CAP),
            rej(ErrorCode::Inval, 0)
        );
        assert_eq!(
            check(&hdr(NBD_CMD_TRIM, 0, SIZE, 4096), &e, CAP),
            rej(ErrorCode::Inval, 0)
        );
        assert_eq!(
            check(&hdr(NBD_CMD_WRITE, 0, SIZE, 4096), &e, CAP),
            rej(ErrorCode::NoSpc, 4096)
        );
        assert_eq!(
            check(&hdr(NBD_CMD_WRITE_ZEROES, 0, SIZE, 4096), &e, CAP),
            rej(ErrorCode::NoSpc, 0)
        );
        // Offset + length overflowing u64 is out of range, not a panic.
        assert_eq!(
            check(&hdr(NBD_CMD_READ, 0, u64::MAX - 4095, 8192), &e, CAP),
            rej(ErrorCode::Inval, 0)
        );
        // Unknown or inapplicable flags.
        assert_eq!(
            check(&hdr(NBD_CMD_READ, NBD_CMD_FLAG_DF, 0, 4096), &e, CAP),
            rej(ErrorCode::Inval, 0)
        );
        assert_eq!(
            check(&hdr(NBD_CMD_WRITE, NBD_CMD_FLAG_NO_HOLE, 0, 4096), &e, CAP),
            rej(ErrorCode::Inval, 4096)
        );
        assert_eq!(
            check(
                &hdr(NBD_CMD_WRITE_ZEROES, NBD_CMD_FLAG_FAST_ZERO, 0, 4096),
                &e,
                CAP
            ),
            rej(ErrorCode::Inval, 0)
        );
        // Known but unoffered commands: EINVAL, stream continues.
        assert_eq!(
            check(&hdr(NBD_CMD_CACHE, 0, 0, 4096), &e, CAP),
            rej(ErrorCode::Inval, 0)
        );
        // Oversized read: EINVAL; oversized write: fatal.
        assert_eq!(
            check(&hdr(NBD_CMD_READ, 0, 0, CAP + 4096), &e, CAP),
            rej(ErrorCode::Inval, 0)
        );
        assert!(matches!(
            check(&hdr(NBD_CMD_WRITE, 0, 0, CAP + 4096), &e, CAP),
            Verdict::Fatal { .. }
        ));
        assert!(matches!(
            check(&hdr(42, 0, 0, 0), &e, CAP),
            Verdict::Fatal { .. }
        ));
    }

    #[test]
    fn read_only_and_unadvertised_features() {
        let ro = export().with_read_only(true);
        assert_eq!(
            check(&hdr(NBD_CMD_WRITE, 0, 0, 4096), &ro, CAP),
            rej(ErrorCode::Perm, 4096)
        );
        assert_eq!(
            check(&hdr(NBD_CMD_TRIM, 0, 0, 4096), &ro, CAP),
            rej(ErrorCode::Perm, 0)
        );
        assert_eq!(
            check(&hdr(NBD_CMD_WRITE_ZEROES, 0, 0, 4096), &ro, CAP),
            rej(ErrorCode::Perm, 0)
        );
        let plain = ExportInfo::new("p", SIZE);
        assert_eq!(
            check(&hdr(NBD_CMD_TRIM, 0, 0, 4096), &plain, CAP),
            rej(ErrorCode::Inval, 0)
        );
        let mut no_fua = ExportInfo::new("p", SIZE);
        no_fua.fua = false;
        assert_eq!(
            check(&hdr(NBD_CMD_WRITE, NBD_CMD_FLAG_FUA, 0, 4096), &no_fua, CAP),
            rej(ErrorCode::Inval, 4096)
        );
    }

    #[test]
    fn zero_length_is_a_noop_and_advertised_max_is_enforced() {
        let e = export();
        assert_eq!(check(&hdr(NBD_CMD_READ, 0, 0, 0), &e, CAP), Verdict::Noop);
        assert_eq!(
            check(&hdr(NBD_CMD_WRITE, 0, SIZE, 0), &e, CAP),
            Verdict::Noop
        );
        let small = export().with_block_size(BlockSize {
            minimum: 512,
            preferred: 4096,
            maximum: 65536,
        });
        assert_eq!(
            check(&hdr(NBD_CMD_WRITE, 0, 0, 65536 + 512), &small, CAP),
            rej(ErrorCode::Inval, 65536 + 512)
        );
        assert!(matches!(
            check(&hdr(NBD_CMD_READ, 0, 512, 512), &small, CAP),
            Verdict::Accept(_)
        ));
    }

    proptest! {
        /// Whatever the header says, an accepted request lies inside the
        /// export and is aligned; a write's skip length is its payload.
        #[test]
        fn accepted_requests_are_in_bounds(typ in 0u16..12, flags: u16, offset: u64, len: u32) {
            let e = export();
            let h = hdr(typ, flags, offset, len);
            match check(&h, &e, CAP) {
                Verdict::Accept(Action::Read { offset, len })
                | Verdict::Accept(Action::Write { offset, len, .. })
                | Verdict::Accept(Action::Trim { offset, len, .. })
                | Verdict::Accept(Action::WriteZeroes { offset, len, .. }) => {
                    prop_assert!(len > 0);
                    prop_assert!(offset + u64::from(len) <= SIZE);
                    prop_assert_eq!(offset % 4096, 0);
                    prop_assert_eq!(len % 4096, 0);
                }
                Verdict::Reject { skip, .. } => {
                    prop_assert_eq!(skip, if typ == NBD_CMD_WRITE { len } else { 0 });
                }
                Verdict::Fatal { .. } => prop_assert!(typ > NBD_CMD_RESIZE || (typ == NBD_CMD_WRITE && len > CAP)),
                Verdict::Accept(_) | Verdict::Noop => {}
            }
        }
    }
}
