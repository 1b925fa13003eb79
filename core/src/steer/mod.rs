//! Profile-guided steering (Sandook, NSDI'26; github.com/mit-sandook/sandook, MIT): the
//! sans-IO mechanisms that decide how much load each member should get, from its measured
//! load-latency curves and what it shows now. The `sandook` baseline runs them as Sandook
//! does; the `fusionraid` scheme consults them through its policies.
//!
//! - [`curve`]: per-member load-latency curves, predictions and peaks.

pub mod curve;

pub use curve::{CurvePoint, DeviceCurves, LoadCurve, Percentile};
