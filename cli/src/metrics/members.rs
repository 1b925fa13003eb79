//! The per-member families of a scrape: state, size, device I/O, the detector's view and
//! device-level latency, each series labelled with the member's slot and name.

use std::fmt::Error;

use fusionraid_io::driver::{MemberState, MemberStatus};
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Unit;

use super::encode::{Labels, counter, counter_f, gauge, histogram};

/// The members of a snapshot, as rows of per-member series.
struct Members<'a>(&'a [MemberStatus]);

impl Members<'_> {
    /// Member `i`'s labels: its slot (the index `fail` and `replace` take) and its name.
    fn labels(&self, i: usize) -> Labels {
        vec![("member", i.to_string()), ("name", self.0[i].name.clone())]
    }

    /// One series per member, valued by `f`.
    fn per<T>(&self, f: impl Fn(&MemberStatus) -> T) -> Vec<(Labels, T)> {
        (0..self.0.len())
            .map(|i| (self.labels(i), f(&self.0[i])))
            .collect()
    }
}

pub(super) fn encode(ms: &[MemberStatus], e: &mut DescriptorEncoder) -> Result<(), Error> {
    let ms = Members(ms);
    state_and_size(&ms, e)?;
    device_io(&ms, e)?;
    detector(&ms, e)?;
    latency(&ms, e)
}

fn state_name(s: MemberState) -> &'static str {
    match s {
        MemberState::Healthy => "healthy",
        MemberState::Spiking => "spiking",
        MemberState::Failed => "failed",
        MemberState::Missing => "missing",
    }
}

fn state_and_size(ms: &Members, e: &mut DescriptorEncoder) -> Result<(), Error> {
    // A state set: one series per state, 1 for the member's current one.
    let states = [
        MemberState::Healthy,
        MemberState::Spiking,
        MemberState::Failed,
        MemberState::Missing,
    ];
    let rows: Vec<(Labels, u64)> = (0..ms.0.len())
        .flat_map(|i| {
            states.iter().map(move |&s| {
                let mut lab = ms.labels(i);
                lab.push(("state", state_name(s).to_string()));
                (lab, u64::from(ms.0[i].state == s))
            })
        })
        .collect();
    gauge(
        e,
        "fusionraid_member_state",
        "Member state: 1 for the current one (healthy; spiking: the detector steers I/O around it; failed; missing).",
        None,
        rows,
    )?;
    gauge(
        e,
        "fusionraid_member_size",
        "Usable size of the member.",
        Some(Unit::Bytes),
        ms.per(|m| m.size_bytes),
    )
}

fn device_io(ms: &Members, e: &mut DescriptorEncoder) -> Result<(), Error> {
    counter(
        e,
        "fusionraid_member_reads",
        "Device reads issued to the member.",
        None,
        ms.per(|m| m.reads),
    )?;
    counter(
        e,
        "fusionraid_member_writes",
        "Device writes issued to the member.",
        None,
        ms.per(|m| m.writes),
    )?;
    counter(
        e,
        "fusionraid_member_read",
        "Bytes read from the member.",
        Some(Unit::Bytes),
        ms.per(|m| m.bytes_read),
    )?;
    counter(
        e,
        "fusionraid_member_written",
        "Bytes written to the member.",
        Some(Unit::Bytes),
        ms.per(|m| m.bytes_written),
    )?;
    counter(
        e,
        "fusionraid_member_background",
        "Bytes read and written by background work (conversion, relocation, rebuild, scrub).",
        Some(Unit::Bytes),
        ms.per(|m| m.background_bytes),
    )?;
    counter(
        e,
        "fusionraid_member_errors",
        "Device I/O errors (any fails the member).",
        None,
        ms.per(|m| m.errors),
    )
}

fn detector(ms: &Members, e: &mut DescriptorEncoder) -> Result<(), Error> {
    counter(
        e,
        "fusionraid_member_spikes",
        "Times the spike detector marked the member unresponsive.",
        None,
        ms.per(|m| m.spikes),
    )?;
    counter_f(
        e,
        "fusionraid_member_unresponsive",
        "Time the detector held the member unresponsive.",
        Some(Unit::Seconds),
        ms.per(|m| m.unresponsive_seconds),
    )?;
    gauge(
        e,
        "fusionraid_member_stragglers",
        "Requests pending longer than the detector's window.",
        None,
        ms.per(|m| u64::from(m.stragglers)),
    )?;
    gauge(
        e,
        "fusionraid_member_queue_depth",
        "Device operations submitted and not completed.",
        None,
        ms.per(|m| m.inflight),
    )
}

fn latency(ms: &Members, e: &mut DescriptorEncoder) -> Result<(), Error> {
    let lat = (0..ms.0.len()).flat_map(|i| {
        [
            ("read", &ms.0[i].read_latency),
            ("write", &ms.0[i].write_latency),
        ]
        .into_iter()
        .map(move |(op, h)| {
            let mut lab = ms.labels(i);
            lab.push(("op", op.to_string()));
            (lab, h)
        })
    });
    histogram(
        e,
        "fusionraid_member_latency",
        "Device-level latency, submission to completion.",
        lat,
    )
}
