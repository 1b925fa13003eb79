//! Statistics of a run: latency histograms per workload and operation, spike intervals, and
//! the serializable [`Report`] with its text rendering.

pub mod latency;
pub mod report;
pub mod spikes;
mod table;
pub mod wear;

pub(crate) use table::{pool_line, source_text};

pub use latency::{LatencyHist, LatencySummary, OpHists, OpLatency};
pub use report::{
    DiskReport, EngineCounters, Latency, Redirection, Report, Requests, Space, Spikes,
    WorkloadLatency, WriteAmp,
};
pub use spikes::SpikeTracker;
