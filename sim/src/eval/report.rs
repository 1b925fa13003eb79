//! The Markdown report (`report.md`).

use std::fmt::Write;

use super::analyze::{ExperimentOutput, Table, comparison_table};
use super::experiments::{ExpId, Plan};
use super::paper::TABLE6_SPIKES_PER_SSD_MIN;
use super::runner::Outcome;
use super::size::SizeName;
use super::spec::{DEFAULT_DEVICE, LoadSpec};

/// What the report says about how it was made (not part of any JSON compared across runs).
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The command line.
    pub command: String,
    /// CPU, cores, memory, OS.
    pub machine: String,
    /// The source revision, if known.
    pub commit: String,
    pub jobs: usize,
    /// Wall-clock seconds of the whole evaluation.
    pub wall_s: f64,
}

pub fn table_md(t: &Table) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "*{}*\n", t.caption);
    let cell = |s: &str| s.replace('|', "\\|");
    let _ = writeln!(
        o,
        "| {} |",
        t.header
            .iter()
            .map(|h| cell(h))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(o, "|{}", " --- |".repeat(t.header.len()));
    for r in &t.rows {
        let _ = writeln!(
            o,
            "| {} |",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    o
}

/// Share of member-time the detector saw members unresponsive, and the share the device
/// models spent in blocking stalls, per device preset over aged and over clean runs (a
/// consumer member stalls far more than a dc one: averaging them would describe neither).
/// The `pitfalls` runs are left out: writes offered far beyond what the pool sustains keep
/// every member at its limit, which says nothing about the device state under the mixes;
/// so are the `serw` runs (the mix scaled to other loads on a small pool, some with HDDs),
/// the `failslow` runs with slow members (members slowed on purpose) and the `sandook` runs
/// (synthetic tenants, load searches, steering variants).
fn device_state(outcomes: &[Outcome]) -> String {
    let mut o = String::new();
    let mut devices: Vec<&str> = Vec::new();
    for x in outcomes {
        if !devices.contains(&x.spec.device.as_str()) {
            devices.push(&x.spec.device);
        }
    }
    devices.sort_by_key(|d| (*d != DEFAULT_DEVICE, *d));
    for device in devices {
        for aged in [true, false] {
            let rs: Vec<_> = outcomes
                .iter()
                .filter_map(|x| x.result.as_ref().ok())
                .filter(|r| {
                    r.spec.device == device
                        && r.spec.aged == aged
                        && r.report.virtual_s > 0.0
                        && !matches!(
                            r.spec.load,
                            LoadSpec::RandomWrites { .. } | LoadSpec::Synthetic { .. }
                        )
                        && r.spec.steer.is_none()
                        && r.spec.slo.is_none()
                        && r.spec.load_scale == 1.0
                        && r.spec.hdds == 0
                        && r.spec.fail_slow.is_none()
                })
                .collect();
            if rs.is_empty() {
                continue;
            }
            let n = rs.len() as f64;
            let unresp = rs
                .iter()
                .map(|r| r.report.spikes.unresponsive_share)
                .sum::<f64>()
                / n;
            let stall = rs
                .iter()
                .map(|r| {
                    let member_ms = r.report.virtual_s * 1e3 * r.report.disks.len().max(1) as f64;
                    r.report.spikes.device_stall_ms / member_ms
                })
                .sum::<f64>()
                / n;
            let _ = writeln!(
                o,
                "- {} `{device}` members ({} runs): the detector called members unresponsive \
                 {:.1}% of member-time on average; the device models spent {:.1}% of \
                 member-time in blocking (GC or buffer-flush) stalls.",
                if aged { "Aged" } else { "Clean" },
                rs.len(),
                unresp * 100.0,
                stall * 100.0
            );
        }
    }
    o
}

pub fn render(
    plan: &Plan,
    outs: &[ExperimentOutput],
    outcomes: &[Outcome],
    ctx: &Context,
) -> String {
    let mut o = String::new();
    let size = match plan.size.name {
        SizeName::Tiny => "tiny (a test of the report's completeness; the numbers mean nothing)",
        SizeName::Quick => "quick (fewer and shorter runs than the full evaluation)",
        SizeName::Full => "full",
    };
    let failed: Vec<&Outcome> = outcomes.iter().filter(|x| x.result.is_err()).collect();
    let _ = writeln!(o, "# fusionraid evaluation against the FusionRAID paper\n");
    let _ = writeln!(
        o,
        "Command: `{}`  \nCommit: {}  \nMachine: {}  \nSize: {size}; base seed {}; {} distinct \
         runs ({} failed) on {} worker(s) in {:.0} s of wall-clock time.\n",
        ctx.command,
        if ctx.commit.is_empty() {
            "unknown"
        } else {
            &ctx.commit
        },
        ctx.machine,
        plan.seed,
        outcomes.len(),
        failed.len(),
        ctx.jobs,
        ctx.wall_s
    );
    let _ = writeln!(
        o,
        "Everything below was simulated by `fusionraid-sim` in virtual time and is \
         deterministic: the same command, seed and commit give the same JSON whatever the \
         number of workers. The paper (Jiang et al., FAST'21) is cited by section, figure and \
         table; its figures' bar heights are not in its text, so only the numbers its text \
         states are compared. `ours/paper` divides our number by the paper's; for reductions \
         (percentages) it divides the reductions.\n"
    );
    let _ = writeln!(o, "## Setup\n");
    let consumer = if plan.experiments.contains(&ExpId::Consumer) {
        "- The `consumer` experiment only (not a paper figure): 29 members of the `consumer` \
         SSD model (Intel 545s class, 240 GB), aged the same way, with the engine's detector \
         setting for consumer SSDs.\n"
    } else {
        ""
    };
    let _ = writeln!(
        o,
        "- Pool: 29 members of the `dc` SSD model (Intel D3-S4510 class, 240 GB), aged to the \
         paper's state unless noted (full sequential write, then random writes until every \
         write creates invalid pages); device models are calibrated on device data only \
         (docs/DEVICE_MODELS.md), never on these results.\n{consumer}\
         - Volumes: one RAID5 6+1 volume per workload, sized to the workload's footprint, \
         written once in full stripes before the run (except where noted), 64 KiB blocks; \
         FusionRAID and Fusion-ND on the MOLS (RAID+) layout over all 29 members, the \
         baselines on four 7-member groups plus a spare, as in the paper.\n\
         - Load: the Table-4 workload generators at Table-4 rates (bursty ON/OFF arrivals), \
         open loop: arrivals do not wait for completions, so an overloaded system shows \
         growing latency rather than lower throughput.\n\
         - Latency is per request from arrival to reply, the first 10% of each run's \
         arrival window excluded; medians and P99 per workload.\n"
    );
    let _ = writeln!(o, "**Device state during the runs.**\n");
    o.push_str(&device_state(outcomes));
    let _ = writeln!(
        o,
        "\nThe aged `dc` model's internal events (block erases, FTL metadata writes) are set so \
         that one member under its share of the main mix spikes as the paper measured on one \
         of its drives ({TABLE6_SPIKES_PER_SSD_MIN} spikes per SSD-minute; \
         docs/DEVICE_MODELS.md); other mixes and schemes load the members differently. \
         Where the device state differs from the paper's devices, our numbers are reported as \
         they came out, without tuning the models or the workloads toward the paper.\n"
    );
    let _ = writeln!(o, "## Headline: ours vs the paper\n");
    let headline: Vec<_> = outs.iter().flat_map(|x| x.headline.clone()).collect();
    o.push_str(&table_md(&comparison_table(
        "The main comparisons of every experiment (details in the sections)",
        &headline,
    )));
    o.push('\n');
    for x in outs {
        let s = &x.section;
        let _ = writeln!(o, "## {}\n", s.title);
        for p in &s.paragraphs {
            let _ = writeln!(o, "{p}\n");
        }
        for t in &s.tables {
            o.push_str(&table_md(t));
            o.push('\n');
        }
        for f in &s.figures {
            let _ = writeln!(o, "![{}](figures/{})\n", f.caption, f.file);
        }
        let _ = writeln!(
            o,
            "Data: `experiments/{}.json`, runs in `runs/`.\n",
            x.id.name()
        );
    }
    let _ = writeln!(o, "## Failed runs\n");
    if failed.is_empty() {
        let _ = writeln!(o, "None.\n");
    } else {
        for f in failed {
            let msg = f.result.as_ref().err().map_or("", |e| e.as_str());
            let first = msg.lines().next().unwrap_or("");
            let _ = writeln!(o, "- `{}`: {}", f.spec.id(), first);
        }
        o.push('\n');
    }
    let _ = writeln!(o, "## Files\n");
    let _ = writeln!(
        o,
        "- `report.md`: this report. `summary.json`: the plan (sizes, mixes) and the headline \
         comparisons.\n\
         - `experiments/<name>.json`: per experiment, cells of aggregated figures (mean, min, \
         max, n over runs) for every series x workload, comparisons with the paper, run ids.\n\
         - `runs/<id>.json`: every run's spec, per-workload latency figures with CDF points, \
         and the simulator's full report (write amplification, space, spikes, redirection, \
         per-member counters).\n\
         - `figures/*.svg`: the charts. `timings.json`: wall-clock time per run (the only \
         machine-dependent output)."
    );
    o
}
