//! The per-volume families of a scrape: users' commands as they saw them, space, the
//! conversion backlog and background progress, each series labelled with the volume's name.

use std::fmt::Error;

use fusionraid_io::driver::LatencyHistogram;
use fusionraid_io::driver::status::VolumeView;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Unit;

use super::encode::{Labels, counter, gauge, histogram, ratio};

/// The volumes of a snapshot, as rows of per-volume series.
struct Volumes<'a> {
    vs: &'a [VolumeView],
    /// The names the pool file gives the volumes, by index.
    names: &'a [String],
}

impl Volumes<'_> {
    fn labels(&self, i: usize) -> Labels {
        let v = &self.vs[i];
        let name = self.names.get(v.index as usize).unwrap_or(&v.name);
        vec![("volume", name.clone())]
    }

    /// One series per volume, valued by `f`.
    fn per<T>(&self, f: impl Fn(&VolumeView) -> T) -> Vec<(Labels, T)> {
        (0..self.vs.len())
            .map(|i| (self.labels(i), f(&self.vs[i])))
            .collect()
    }

    /// Volume `i`'s command histograms, one per kind, labelled with the kind.
    fn ops(&self, i: usize) -> impl Iterator<Item = (Labels, &LatencyHistogram)> {
        let io = &self.vs[i].io;
        [
            ("read", &io.read),
            ("write", &io.write),
            ("flush", &io.flush),
            ("trim", &io.other),
        ]
        .into_iter()
        .map(move |(op, h)| {
            let mut lab = self.labels(i);
            lab.push(("op", op.to_string()));
            (lab, h)
        })
    }
}

pub(super) fn encode(
    vs: &[VolumeView],
    names: &[String],
    e: &mut DescriptorEncoder,
) -> Result<(), Error> {
    let vs = Volumes { vs, names };
    requests(&vs, e)?;
    space(&vs, e)?;
    progress(&vs, e)
}

fn requests(vs: &Volumes, e: &mut DescriptorEncoder) -> Result<(), Error> {
    counter(
        e,
        "fusionraid_volume_requests",
        "Commands answered, by kind, as the volume's users sent them.",
        None,
        (0..vs.vs.len()).flat_map(|i| vs.ops(i).map(|(lab, h)| (lab, h.count))),
    )?;
    counter(
        e,
        "fusionraid_volume_request_errors",
        "Commands answered with an error.",
        None,
        vs.per(|v| v.io.errors),
    )?;
    counter(
        e,
        "fusionraid_volume_read",
        "Bytes users read.",
        Some(Unit::Bytes),
        vs.per(|v| v.io.bytes_read),
    )?;
    counter(
        e,
        "fusionraid_volume_written",
        "Bytes users wrote (zeroes included).",
        Some(Unit::Bytes),
        vs.per(|v| v.io.bytes_written),
    )?;
    histogram(
        e,
        "fusionraid_volume_request_latency",
        "Command latency as users see it, admission to reply.",
        (0..vs.vs.len()).flat_map(|i| vs.ops(i)),
    )
}

fn space(vs: &Volumes, e: &mut DescriptorEncoder) -> Result<(), Error> {
    gauge(
        e,
        "fusionraid_volume_size",
        "Volume size.",
        Some(Unit::Bytes),
        vs.per(|v| v.size_bytes),
    )?;
    gauge(
        e,
        "fusionraid_volume_mapped",
        "User data mapped (written and not trimmed).",
        Some(Unit::Bytes),
        vs.per(|v| v.mapped_bytes),
    )?;
    gauge(
        e,
        "fusionraid_volume_raid",
        "Physical space in RAID-area stripes.",
        Some(Unit::Bytes),
        vs.per(|v| v.raid_bytes),
    )?;
    gauge(
        e,
        "fusionraid_volume_replicated",
        "Physical space in replicated-area stripes.",
        Some(Unit::Bytes),
        vs.per(|v| v.replicated_bytes),
    )?;
    gauge(
        e,
        "fusionraid_volume_free",
        "Physical space in free stripes.",
        Some(Unit::Bytes),
        vs.per(|v| v.free_bytes),
    )?;
    gauge(
        e,
        "fusionraid_volume_metadata",
        "Metadata held in memory for the volume.",
        Some(Unit::Bytes),
        vs.per(|v| v.metadata_bytes),
    )
}

fn progress(vs: &Volumes, e: &mut DescriptorEncoder) -> Result<(), Error> {
    gauge(
        e,
        "fusionraid_volume_conversion_backlog",
        "Replica sets waiting for conversion to RAID stripes.",
        None,
        vs.per(|v| v.conversion_backlog),
    )?;
    gauge(
        e,
        "fusionraid_volume_rebuild_progress",
        "Progress of the rebuild (or the rebalance after a replacement), 1 when done.",
        Some(ratio()),
        (0..vs.vs.len()).filter_map(|i| Some((vs.labels(i), vs.vs[i].rebuild_progress?))),
    )?;
    gauge(
        e,
        "fusionraid_volume_scrub_progress",
        "Progress of the last scrub, 1 when done.",
        Some(ratio()),
        (0..vs.vs.len()).filter_map(|i| Some((vs.labels(i), vs.vs[i].scrub_progress?))),
    )
}
