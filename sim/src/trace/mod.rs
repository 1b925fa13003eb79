//! Block I/O traces: streaming readers for six public formats, replay pacing and volume
//! remapping.
//!
//! Every reader turns a text trace into [`IoRecord`]s one line at a time, so a multi-gigabyte
//! trace never sits in memory: the only buffering is the optional reorder window and the records
//! of one coarse timestamp tick (see [`TraceOptions`]). Errors name the file, the 1-based line and
//! the 1-based field, e.g. `tpcc.trace:17: field 4 (size in sectors) is not a number: 'x'`.
//!
//! Pipeline, in order: parse a line -> (optional) reorder within a window -> normalise so the
//! first record is at time 0 -> (optional) spread records that share a coarse tick.
//!
//! | format     | line                                                              | time unit     |
//! |------------|-------------------------------------------------------------------|---------------|
//! | `disksim`  | `arrival device lba size type` (type 1 = read, 0 = write), sectors | ns (MQSim)    |
//! | `msr`      | `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`     | 100 ns ticks  |
//! | `alibaba`  | `device_id,opcode,offset,length,timestamp`                        | us            |
//! | `tencent`  | `Timestamp,Offset,Size,IOType,VolumeID`, sectors, 1 = write        | s             |
//! | `blkparse` | `maj,min cpu seq sec.nsec pid action rwbs sector + n [proc]`      | ns            |
//! | `fio`      | iolog v2 `file action [off len]`, v3 `time file action [off len]` | none / us     |

mod alibaba;
mod blkparse;
mod disksim;
mod error;
mod fields;
mod fio;
mod format;
mod lines;
mod looped;
mod msr;
mod open;
mod options;
mod order;
pub mod remap;
pub mod replay;
mod stats;
mod tencent;
mod ties;

use fusionraid_core::Nanos;

pub use error::TraceError;
pub use format::{TraceFormat, UnknownTraceFormat};
pub use looped::Looped;
pub use open::{TraceIter, open_trace, open_trace_with, read_trace};
pub use options::{BlkEvent, TraceOptions};
pub use remap::VolumeRemap;
pub use replay::{Arrival, ReplayError, ReplayMode, Replayer};
pub use stats::TraceStats;

/// Direction of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoKind {
    Read,
    Write,
    /// Discard / unmap: the range's contents may be dropped.
    Trim,
}

/// One block request, the common currency of trace readers, workload generators and the
/// simulator driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoRecord {
    /// Arrival time. Trace readers normalise it so the first record is at 0.
    pub time_ns: Nanos,
    pub kind: IoKind,
    /// Byte offset on the traced device / volume.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// Which device, volume or disk of the trace issued it (generators: the workload's slot).
    pub stream: u32,
}
