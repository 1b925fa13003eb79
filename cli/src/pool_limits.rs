//! Ranges of the pool file's numbers and names. The engine takes most of these values as
//! they come and does arithmetic with them (deadlines in nanoseconds, queue allocations,
//! ratios), so a value out of range would not be an error there but an overflow, a huge
//! allocation or a policy that silently never fires. Each bound is far beyond any useful
//! setting; the message names the field.

use anyhow::bail;

use crate::pool_config::{PoolFile, VolumeSection};

/// Longest pool or volume name: volume names are NBD export names and appear in URIs.
pub const MAX_NAME_BYTES: usize = 255;
/// Hedged reads later than a minute are not hedging.
pub const MAX_HEDGE_US: u64 = 60_000_000;
/// Longest stripe-gathering hold: a write held longer waits more than any stripe it could
/// save is worth.
pub const MAX_GATHER_US: u64 = 100_000;
/// A wear ladder's step above half a life holds members back for most of it.
pub const MAX_WEAR_GAP: f64 = 0.5;
/// Idle conversion after more than a day is the same as never.
pub const MAX_IDLE_MS: u64 = 86_400_000;
/// Detector slots longer than a second could not see a latency spike.
pub const MAX_SLOT_US: u64 = 1_000_000;
/// Engine requests in flight; queues of NBD commands.
pub const MAX_REQUESTS: usize = 1 << 20;
pub const MAX_QUEUE_DEPTH: usize = 1 << 16;
pub const MAX_CONCURRENT: usize = 1024;
/// The widest stripe the engine supports; a threshold above it never fires.
pub const MAX_WIDTH: usize = 32;
/// `[offload] min_outstanding`: beyond a member's deepest queue it would turn offload off.
pub const MAX_MIN_OUTSTANDING: f64 = 65_536.0;

/// A name printed in status output and used in URIs: non-empty, bounded, no control
/// characters (they would reach the operator's terminal).
pub fn check_name(what: &str, name: &str) -> anyhow::Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_BYTES {
        bail!("{what} must have 1 to {MAX_NAME_BYTES} bytes");
    }
    if name.chars().any(char::is_control) {
        bail!("{what} must not contain control characters");
    }
    Ok(())
}

fn fraction(what: &str, v: f64, max: f64) -> anyhow::Result<()> {
    if !(v.is_finite() && (0.0..=max).contains(&v)) {
        bail!("{what} is {v}; it must be a number from 0 to {max}");
    }
    Ok(())
}

fn at_most<T: PartialOrd + std::fmt::Display>(
    what: &str,
    v: T,
    min: T,
    max: T,
) -> anyhow::Result<()> {
    if v < min || v > max {
        bail!("{what} is {v}; it must be from {min} to {max}");
    }
    Ok(())
}

/// The settings outside the geometry: engine, detector, conversion, serve.
pub fn check_policies(p: &PoolFile) -> anyhow::Result<()> {
    check_name("`name`", &p.name)?;
    at_most("`max_requests`", p.max_requests, 1, MAX_REQUESTS)?;
    if let Some(h) = p.hedge_us {
        at_most("`hedge_us`", h, 0, MAX_HEDGE_US)?;
    }
    if let Some(h) = p.raid_hedge_us {
        at_most("`raid_hedge_us`", h, 0, MAX_HEDGE_US)?;
    }
    if let Some(h) = p.write_hedge_us {
        at_most("`write_hedge_us`", h, 0, MAX_HEDGE_US)?;
    }
    fraction(
        "`offload.min_outstanding`",
        p.offload.min_outstanding,
        MAX_MIN_OUTSTANDING,
    )?;
    at_most("`gather_us`", p.gather_us, 0, MAX_GATHER_US)?;
    at_most("`row_us`", p.row_us, 0, MAX_GATHER_US)?;
    if let Some(g) = p.wear_gap {
        fraction("`wear_gap`", g, MAX_WEAR_GAP)?;
        if g == 0.0 {
            bail!("`wear_gap` is 0; leave it out to turn wear-aware placement off");
        }
    }
    if let Some(t) = p.raid_threshold {
        at_most("`raid_threshold`", t, 0, MAX_WIDTH)?;
    }
    if let Some(s) = p.detector.slot_us {
        at_most("`detector.slot_us`", s, 1, MAX_SLOT_US)?;
    }
    let c = &p.conversion;
    if let Some(v) = c.spare_low_water {
        fraction("`conversion.spare_low_water`", v, 1.0)?;
    }
    if let Some(v) = c.replicated_high_water {
        fraction("`conversion.replicated_high_water`", v, 1.0)?;
    }
    if let Some(v) = c.idle_ms {
        at_most("`conversion.idle_ms`", v, 0, MAX_IDLE_MS)?;
    }
    if let Some(v) = c.pause_mb_per_s
        && !(v.is_finite() && v >= 0.0)
    {
        bail!("`conversion.pause_mb_per_s` is {v}; it must be a number >= 0");
    }
    if let Some(v) = c.max_concurrent {
        at_most("`conversion.max_concurrent`", v, 1, MAX_CONCURRENT)?;
    }
    if let Some(q) = p.serve.queue_depth {
        at_most("`serve.queue_depth`", q, 1, MAX_QUEUE_DEPTH)?;
    }
    Ok(())
}

/// One `[[volume]]`'s own numbers (sizes are checked against the block size by the caller).
pub fn check_volume(at: &str, v: &VolumeSection) -> anyhow::Result<()> {
    check_name(&format!("{at}: `name`"), &v.name)?;
    if v.name.contains(['/', '?', '#']) {
        bail!("{at}: `name` must not contain / ? or #");
    }
    let level = v
        .parsed_level()
        .map_err(|e| anyhow::anyhow!("{at}: `level`: {e}"))?;
    match level.fixed_width() {
        Some(w) if v.width != 0 && v.width != w => bail!(
            "{at}: `width` {} differs from the mirror's {w} copies (a mirror stripe is a \
             column per copy; leave `width` out)",
            v.width
        ),
        Some(_) => {}
        None => at_most(
            &format!("{at}: `width`"),
            v.width,
            level.nparity() + 2,
            MAX_WIDTH,
        )?,
    }
    fraction(
        &format!("{at}: `replicated_fraction`"),
        v.replicated_fraction,
        1.0,
    )?;
    if let Some(share) = v.spare_fraction.share() {
        fraction(&format!("{at}: `spare_fraction`"), share, 4.0)?;
    }
    Ok(())
}
