//! What segregation can gain at most on the `sandook` experiment's fleet, from curves alone
//! ([`crate::slo::segregation_bound`]): on the device models the simulator runs, and on the
//! measured profiles those models were fitted to. The load search measures what the
//! mechanisms get; this says how much there was to get, so a shortfall can be told apart
//! from a ceiling the drives set.

use fusionraid_core::steer::{DeviceCurves, Percentile};
use fusionraid_devices::curves::load_serial;
use fusionraid_devices::presets::fleet;

use super::super::paper::{SANDOOK_SEGREGATION_IOPS, SANDOOK_SOURCE};
use super::super::sandook::{FLEET, FLEET_WIDTH, SLO_TENANT, WRITER_TENANTS};
use super::{Comparison, Table};
use crate::fleet_curves::{preset_curves, profiles_dir};
use crate::slo::{SegregationBound, isolation_floor, segregation_bound};
use crate::workload::parse_synthetic;

/// Sandook's copies per write.
const COPIES: u32 = 2;

/// One source of the fleet's curves: every member's, or why they could not be had.
pub struct Source {
    name: &'static str,
    curves: Result<Vec<DeviceCurves>, String>,
}

/// The fleet's curves from its device models and from the measured profiles, loaded once
/// for both tables.
pub fn sources() -> Vec<Source> {
    let names = fleet(FLEET).expect("the experiment's fleet is a named fleet");
    let dir = profiles_dir();
    vec![
        Source {
            name: "device models (swept, as the simulator runs them)",
            curves: names
                .iter()
                .map(|n| preset_curves(n).map(|c| (*c).clone()))
                .collect(),
        },
        Source {
            name: "measured profiles (what the models were fitted to)",
            curves: names
                .iter()
                .map(|n| load_serial(&dir, &n.to_uppercase()))
                .collect(),
        },
    ]
}

/// The SLO load's share of reads.
fn read_share() -> f64 {
    let t = parse_synthetic(SLO_TENANT, "slo").expect("the experiment's tenant parses");
    1.0 - t.write_ratio
}

fn bounds(curves: &[DeviceCurves]) -> Vec<(Percentile, Option<SegregationBound>)> {
    let refs: Vec<&DeviceCurves> = curves.iter().collect();
    [Percentile::P90, Percentile::P99]
        .into_iter()
        .map(|p| (p, segregation_bound(&refs, read_share(), COPIES, p)))
        .collect()
}

fn pname(p: Percentile) -> &'static str {
    match p {
        Percentile::P50 => "P50",
        Percentile::P90 => "P90",
        Percentile::P99 => "P99",
    }
}

/// The writer tenants' device writes in 4 KiB pages per second, `COPIES` copies each (the
/// replicated area and Sandook's log alike).
fn writer_device_writes() -> f64 {
    WRITER_TENANTS
        .iter()
        .map(|t| {
            let w = parse_synthetic(t, "w").expect("the experiment's tenants parse");
            w.iops * w.write_ratio * w.write_sizes.mean_bytes() / 4096.0 * f64::from(COPIES)
        })
        .sum()
}

/// How few of the isolation reader's reads any write set leaves on writers, per source of
/// curves: the floor under the isolation target.
pub fn isolation_table(sources: &[Source]) -> Table {
    let writes = writer_device_writes();
    let mut table_rows = Vec::new();
    for src in sources {
        let pct = |x: f64| format!("{:.1}%", x * 100.0);
        let cells = match &src.curves {
            Ok(curves) => {
                let refs: Vec<&DeviceCurves> = curves.iter().collect();
                let f =
                    |np| isolation_floor(&refs, writes, Percentile::P90, FLEET_WIDTH, np, COPIES);
                match (f(1), f(2)) {
                    (Some(r5), Some(r6)) => vec![
                        r5.writers.to_string(),
                        pct(r5.parity_reads_on_writers),
                        pct(r6.parity_reads_on_writers),
                        pct(r5.replica_reads_on_writers),
                    ],
                    _ => vec![
                        "the pool cannot carry the writes".into(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                    ],
                }
            }
            Err(e) => vec![
                format!("not computed: {e}"),
                "-".into(),
                "-".into(),
                "-".into(),
            ],
        };
        let mut row = vec![src.name.to_string()];
        row.extend(cells);
        table_rows.push(row);
    }
    Table {
        caption: format!(
            "What any write set leaves the isolation reader: the two writers put {:.0}K \
             4 KiB pages per second on the members ({COPIES} copies of each write); the \
             fewest members whose write-only P90 peaks carry that, and with that write set \
             the share of the reader's reads that land on a writer with no way around it \
             (RAID stripes {FLEET_WIDTH} wide: rebuilding would read another writer; \
             {COPIES} copies: both on writers). A larger write set leaves more. Keeping the \
             reader's P99 near its private P99 needs this under 1%",
            writes / 1e3
        ),
        header: [
            "curves",
            "fewest writers",
            "RAID5 5+1 reads on writers",
            "RAID6 4+2 reads on writers",
            "2-copy reads on writers",
        ]
        .map(String::from)
        .to_vec(),
        rows: table_rows,
    }
}

/// The table, and the bound at P90 on the measured profiles next to the talk's gain.
pub fn bound_table(sources: &[Source]) -> (Table, Vec<Comparison>) {
    let mut table_rows = Vec::new();
    let mut comps = Vec::new();
    let (lo, hi) = SANDOOK_SEGREGATION_IOPS;
    for src in sources {
        let curves = match &src.curves {
            Ok(c) => c,
            Err(e) => {
                table_rows.push(vec![
                    src.name.into(),
                    "-".into(),
                    format!("not computed: {e}"),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]);
                continue;
            }
        };
        for (p, b) in &bounds(curves) {
            let Some(b) = b else { continue };
            table_rows.push(vec![
                src.name.into(),
                format!("{} < 1 ms", pname(*p)),
                format!("{:.2} M", b.mixed_iops / 1e6),
                format!("{:.2} M", b.segregated_iops / 1e6),
                b.writers.len().to_string(),
                format!("{:.2}x", b.gain()),
                format!("{:.1}%", b.reads_on_writers * 100.0),
            ]);
            if *p == Percentile::P90 {
                comps.push(Comparison::new(
                    &format!("sandook: most segregation can gain at P90, {}", src.name),
                    Some(b.gain()),
                    Some(hi / lo),
                    "x",
                    SANDOOK_SOURCE,
                ));
            }
        }
    }
    let reads = read_share();
    let writes = (1.0 - reads) * f64::from(COPIES);
    let table = Table {
        caption: format!(
            "What segregation can gain at most on `{FLEET}`, from the curves alone (no \
             simulation): user requests per second with {:.0}% reads and {COPIES} copies per \
             write ({:.0}% of the members' requests are writes), every member at that mix \
             against the best split into write-only and read-only members, each at its \
             curve's peak (Sandook's 1 ms rule). Both are upper bounds; their ratio is the \
             most the load search's segregation arm could gain over its weights-only arm. \
             The last column is the share of reads whose {COPIES} copies both sit on a writer \
             when copies are placed at random: above the percentile's allowance (10% at \
             P90, 1% at P99) the writers' reads set the percentile and the bound is out of \
             reach",
            reads * 100.0,
            100.0 * writes / (reads + writes),
        ),
        header: [
            "curves",
            "percentile",
            "every member mixed",
            "best segregation",
            "writers",
            "most segregation gains",
            "reads left on writers",
        ]
        .map(String::from)
        .to_vec(),
        rows: table_rows,
    };
    (table, comps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fleet_models_bound_segregation_at_p90_and_gain_more_at_p99() {
        let names = fleet(FLEET).unwrap();
        let models: Vec<DeviceCurves> = names
            .iter()
            .map(|n| (*preset_curves(n).unwrap()).clone())
            .collect();
        let b = bounds(&models);
        let gain = |p| {
            b.iter()
                .find(|(q, _)| *q == p)
                .and_then(|(_, b)| b.as_ref())
                .unwrap()
                .gain()
        };
        // Reads hurt by writes far more at the tail than at P90 (the profiles' shape the
        // models were fitted to), so splitting them apart pays more at P99.
        assert!(gain(Percentile::P99) > gain(Percentile::P90) * 1.2, "{b:?}");
        assert!(gain(Percentile::P90) > 1.0, "{b:?}");
    }
}
