//! Profile-guided steering (Sandook, NSDI'26; github.com/mit-sandook/sandook, MIT): the
//! sans-IO mechanisms that decide how much load each member should get, from its measured
//! load-latency curves and what it shows now. The `sandook` baseline runs them as Sandook
//! does; the `fusionraid` scheme consults them through its policies.
//!
//! - [`curve`]: per-member load-latency curves, predictions and peaks.
//! - [`window`]: what each member completed lately (rates, percentile latency).
//! - [`learn`]: curves learnt online from those windows, for members nobody profiled.
//! - [`weights`]: load shares that equalise predicted latencies (water filling).
//! - [`modes`]: read/write segregation, the write set and its rotation.
//! - [`congestion`]: per-member AIMD rate factors from tail-latency signals.
//! - [`steering`]: the three together, recomputed from the members' recent completions.

pub mod congestion;
pub mod curve;
pub mod learn;

pub use curve::{CurvePoint, DeviceCurves, LoadCurve, Percentile};
pub mod modes;
pub mod steering;
pub mod weights;
pub mod window;

pub use congestion::{Aimd, AimdParams};
pub use modes::Segregation;
pub use steering::{Recent, SteerConfig, Steering};
pub use weights::{FillParams, water_fill};
pub use window::{IoWindow, Tally, WINDOW_NS};
