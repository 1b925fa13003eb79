//! Knobs of the trace readers. The defaults read every format as its public documentation
//! describes it.

use fusionraid_core::Nanos;

/// Which blkparse event stands for "the request arrived".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BlkEvent {
    /// `Q`: the bio was queued by the submitter: what the application asked for, before merging.
    #[default]
    Queue,
    /// `D`: the request was issued to the driver: what the device saw, after merging/splitting.
    Issue,
}

impl BlkEvent {
    pub(crate) fn action(self) -> &'static str {
        match self {
            BlkEvent::Queue => "Q",
            BlkEvent::Issue => "D",
        }
    }
}

/// How to read a trace. `TraceOptions::default()` is what `open_trace` uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceOptions {
    /// Records out of time order. `0` (default): a record earlier than its predecessor is an
    /// error naming both times, and the record is dropped. `n > 0`: records are held in a
    /// window of `n` and released smallest time first (ties in file order, so the sort is
    /// stable); a record earlier than one already released is still an error. Memory is
    /// `O(n)`.
    pub reorder_window: usize,
    /// Spread records that share one timestamp evenly across the format's tick (default on):
    /// the i-th of k records stamped `t` gets `t + i * tick / k`. This matters for coarse clocks
    /// (Tencent's whole seconds put thousands of requests on one instant); for nanosecond
    /// formats it changes nothing, and fio v2 logs (no clock at all) are never spread. One
    /// tick's records are buffered (at most
    /// [`MAX_TIE_GROUP`](Self::MAX_TIE_GROUP); a larger group is an error).
    pub spread_ties: bool,
    /// Which blkparse action counts as an arrival (default `Q`).
    pub blkparse_event: BlkEvent,
    /// Unit of the DiskSim arrival-time column. Default 1 ns, as MQSim writes it; original
    /// DiskSim traces use milliseconds (set 1_000_000; decimals are accepted).
    pub disksim_time_unit_ns: Nanos,
    /// Unit of fio iolog v3 timestamps. Default 1 us: fio's `write_iolog` prints microseconds
    /// since the job started and its replay waits in microseconds (the HOWTO does not name a
    /// unit). Set 1_000_000 for logs written in milliseconds by other tools.
    pub fio_time_unit_ns: Nanos,
    /// Sector size for the formats that count in sectors (DiskSim, Tencent, blkparse).
    pub sector_size: u64,
}

impl TraceOptions {
    /// Cap on the records of one tick held for [`spread_ties`](Self::spread_ties).
    pub const MAX_TIE_GROUP: usize = 1 << 20;
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            reorder_window: 0,
            spread_ties: true,
            blkparse_event: BlkEvent::Queue,
            disksim_time_unit_ns: 1,
            fio_time_unit_ns: 1_000,
            sector_size: 512,
        }
    }
}
