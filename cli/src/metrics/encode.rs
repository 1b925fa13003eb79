//! The encoding of metric families shared by every part of a scrape: one descriptor, then
//! one sample (or histogram) per label set, in the units Prometheus expects.

use std::fmt::Error;

use fusionraid_io::driver::LatencyHistogram;
use fusionraid_io::driver::latency::BOUNDS_US;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

/// The label set of one series, as the encoder takes it.
pub(super) type Labels = Vec<(&'static str, String)>;

/// One metric family: its descriptor, then one sample (or histogram) per label set.
fn family<T>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    ty: MetricType,
    rows: impl IntoIterator<Item = (Labels, T)>,
    mut sample: impl FnMut(&mut MetricEncoder, &T) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut rows = rows.into_iter().peekable();
    if rows.peek().is_none() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, unit.as_ref(), ty)?;
    for (labels, v) in rows {
        let mut f = m.encode_family(&labels)?;
        sample(&mut f, &v)?;
    }
    Ok(())
}

pub(super) fn counter(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    rows: impl IntoIterator<Item = (Labels, u64)>,
) -> Result<(), Error> {
    family(enc, name, help, unit, MetricType::Counter, rows, |m, v| {
        m.encode_counter::<NoLabelSet, _, u64>(v, None)
    })
}

pub(super) fn counter_f(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    rows: impl IntoIterator<Item = (Labels, f64)>,
) -> Result<(), Error> {
    family(enc, name, help, unit, MetricType::Counter, rows, |m, v| {
        m.encode_counter::<NoLabelSet, _, u64>(v, None)
    })
}

pub(super) fn gauge<T: prometheus_client::encoding::EncodeGaugeValue>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    rows: impl IntoIterator<Item = (Labels, T)>,
) -> Result<(), Error> {
    family(enc, name, help, unit, MetricType::Gauge, rows, |m, v| {
        m.encode_gauge(v)
    })
}

pub(super) fn histogram<'a>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (Labels, &'a LatencyHistogram)>,
) -> Result<(), Error> {
    family(
        enc,
        name,
        help,
        Some(Unit::Seconds),
        MetricType::Histogram,
        rows,
        |m, h| {
            // Per-bucket counts; the encoder makes them cumulative.
            let buckets: Vec<(f64, u64)> = h
                .counts
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    (
                        BOUNDS_US.get(i).map_or(f64::INFINITY, |&b| b as f64 / 1e6),
                        c,
                    )
                })
                .collect();
            m.encode_histogram::<NoLabelSet>(h.sum_ns as f64 / 1e9, h.count, &buckets, None)
        },
    )
}

/// Prometheus spells the unit of a ratio in the singular (the client's `Unit::Ratios` does not).
pub(super) fn ratio() -> Unit {
    Unit::Other("ratio".into())
}

/// The one series of a pool-wide family.
pub(super) fn one<T>(v: T) -> [(Labels, T); 1] {
    [(Vec::new(), v)]
}
