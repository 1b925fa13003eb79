//! How far the planner's predictions are from the simulator's measurements: the error band
//! `plan` prints next to its figures. Measured by the runs in docs/EVALUATION.md
//! ("Over-provisioning planner"): sustained 4 KiB random writes at saturation on aged
//! members, spare shares 0, 0.1, 0.25 and 0.5; error = predicted / measured - 1.

/// Lowest and highest error of the sustained-IOPS predictions over the validation runs.
pub const IOPS_ERROR: (f64, f64) = (f64::NAN, f64::NAN);

/// Lowest and highest error of the device-bytes-written-per-user-byte predictions.
pub const WRITTEN_ERROR: (f64, f64) = (f64::NAN, f64::NAN);

/// One line saying how far to trust the figures.
pub fn band_line() -> String {
    let pct = |x: f64| format!("{:+.0}%", 100.0 * x);
    format!(
        "model error against the simulator (docs/EVALUATION.md): IOPS {} to {}, device \
         writes per user write {} to {}; measured on one pool shape, treat other shapes as \
         estimates",
        pct(IOPS_ERROR.0),
        pct(IOPS_ERROR.1),
        pct(WRITTEN_ERROR.0),
        pct(WRITTEN_ERROR.1)
    )
}
