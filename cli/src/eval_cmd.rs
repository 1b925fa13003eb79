//! `fusionraid eval`: run the paper's experiments in the simulator and write a report.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::Args as ClapArgs;
use fusionraid_sim::eval::{self, Context, ExpId, Plan, RunEvent, Size, SizeName};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Run the FusionRAID paper's experiments (§5) in the simulator and write a report directory:
/// report.md, SVG charts, raw JSON per run and per experiment.
///
/// Experiments: fig10 (20 random 4-workload mixes, five systems), fig12 (techniques one at
/// a time), fig13 (conversion: latency, write amplification, space), detector (Table 6 and
/// the x̂ x t sweep of Fig. 13d), fig14 (clean vs aged), consumer (not a paper figure:
/// Fig. 12's systems on consumer SSD members), fig11b (NV-RAID buffer sizes), trace (the
/// real TPC-C trace alone and in a mix), sensitivity (not a paper figure: every system
/// under a spike process swept over rate and length), pitfalls (not a paper figure:
/// sustained 4 KiB random-write speed-up against spare share for one SSD, in-place RAID5, a
/// FusionRAID mirror and RAID5 volume, next to the Pitfalls study's), serw (not a paper
/// figure: write offload from busy SSDs to HDD logs, the main mix scaled to low, medium and
/// high load on 8 SSDs alone, with 2 HDDs and offload off, and on, next to the SeRW talk's
/// numbers), failslow (not a paper figure: every scheme on the main mix with no, one and
/// two fail-slow members, next to the field studies' fail-slow rates), sandook (not a paper
/// figure: Sandook's mechanisms as the sandook scheme and as fusionraid+ policies, throughput
/// at P90 < 1 ms on 12 heterogeneous drives, a reader's isolation from write-heavy tenants,
/// the main mix with the policies on and off, next to the Sandook talk's numbers). Every
/// experiment comparing systems
/// also runs fusionraid+ (FusionRAID with every pool policy, same space). Results do not
/// depend on --jobs.
#[derive(ClapArgs, Debug)]
#[command(after_help = "Examples:\n  \
    fusionraid eval --quick                 # every experiment but pitfalls and sandook, about 1.5 minutes\n  \
    fusionraid eval --out eval-full         # the full evaluation (20 mixes), about 10 minutes\n  \
    fusionraid eval --quick --only fig10,fig12 --jobs 1\n  \
    fusionraid eval --only sensitivity      # spike rate x length on every system\n  \
    fusionraid eval --quick --only pitfalls # spare share vs random-write speed\n  \
    fusionraid eval --only serw             # write offload to HDD logs vs the SeRW talk\n  \
    fusionraid eval --only failslow         # every scheme with 0, 1, 2 fail-slow members\n  \
    fusionraid eval --quick --only sandook  # Sandook's mechanisms vs the Sandook talk\n\n\
    Run times (release build, 2-vCPU VM, measured 2026-11-25 at 5a82d15 with other builds \
    running): --tiny 1.7 s (78 runs), --quick 94 s (56 runs); full about 10 minutes \
    (an estimate, not measured today: 6x the quick run, the ratio of the full and quick \
    runs measured on 2026-11-21, docs/EVALUATION.md). An idle machine is about twice as \
    fast. Issue 23 added the sensitivity experiment and the fusionraid+ runs since: --tiny \
    104 runs (7 s with other builds running), --quick 109, full 319. Issue 22's pitfalls \
    experiment adds 6 runs to --tiny and 24 to full; --quick leaves it out unless --only \
    names it (12 runs, 32 minutes on 2 workers measured 2026-11-26 with other benchmarks \
    running: its runs last 25-55 s of virtual time at saturation; docs/EVALUATION.md, \
    \"Pitfalls\"). Issue 21's serw experiment adds 6 runs to --tiny, 12 to --quick and 24 to \
    full, a third of them the TPC-C trace (2-4 s each on the loaded VM). The failslow experiment (issue 23) adds 22 runs to \
    --tiny (2 s alone), 22 to --quick (its 30 runs alone: 96 s on 2 workers of the loaded VM; \
    its healthy runs are sensitivity's) and 46 to full (60 alone: 316 s on 2 workers; its \
    healthy runs are fig12's and fig14's). Issue 20's sandook experiment runs in the full size \
    and with --only (22 runs in full, 18 with --quick, 8 of them load searches; full 15 \
    minutes and --quick under a minute on 2 workers, docs/EVALUATION.md, \"Sandook's \
    mechanisms\").")]
pub struct Args {
    /// Fewer and shorter runs (every experiment still runs but pitfalls and sandook, which
    /// --only runs).
    #[arg(long, conflicts_with = "tiny")]
    quick: bool,
    /// Tiny pool and millisecond runs: checks the report is complete; numbers mean nothing.
    #[arg(long, hide = true)]
    tiny: bool,
    /// Output directory (created; earlier runs/, experiments/ and figures/ files in it are
    /// replaced).
    #[arg(long, default_value = "eval-out")]
    out: PathBuf,
    /// Base seed: mix i runs with seed N + i, replicate r of the single-mix experiments
    /// with N + r.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Simulations run at once (default: every core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Only these experiments (comma-separated): fig10, fig12, fig13, detector, fig14,
    /// consumer, fig11b, trace, sensitivity, pitfalls, serw, failslow, sandook.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// The TPC-C trace in DiskSim format (default: shared/data/traces/tpcc-small.trace
    /// next to the repository).
    #[arg(long, value_name = "FILE", conflicts_with = "no_trace")]
    trace: Option<PathBuf>,
    /// Skip the trace experiment.
    #[arg(long)]
    no_trace: bool,
    /// Print the runs the evaluation would make (one id per line) and exit.
    #[arg(long)]
    list: bool,
}

impl Args {
    fn plan(&self) -> anyhow::Result<Plan> {
        let size = if self.tiny {
            SizeName::Tiny
        } else if self.quick {
            SizeName::Quick
        } else {
            SizeName::Full
        };
        let mut exps = if self.only.is_empty() {
            let mut all = ExpId::ALL.to_vec();
            // Saturated random writes for tens of seconds of virtual time per run: minutes
            // where the rest of --quick takes 1.5. It runs in the full and tiny sizes and
            // with --only.
            if self.quick {
                all.retain(|&e| e != ExpId::Pitfalls);
            }
            // Load searches, each several runs whose Sandook prefill alone takes seconds:
            // about a minute even at the quick size, 45 s at the tiny one (too much for the
            // tiny test). It runs in the full size and with --only.
            if self.quick || self.tiny {
                all.retain(|&e| e != ExpId::Sandook);
            }
            all
        } else {
            self.only
                .iter()
                .map(|s| ExpId::parse(s))
                .collect::<Result<Vec<_>, _>>()
                .map_err(anyhow::Error::msg)?
        };
        let trace = if self.no_trace {
            None
        } else if let Some(t) = &self.trace {
            if !t.is_file() {
                bail!("trace {} not found", t.display());
            }
            Some(t.clone())
        } else {
            eval::default_trace()
        };
        if trace.is_none() {
            exps.retain(|&e| e != ExpId::Trace);
        }
        // Each experiment once, in the order given. `dedup` only dropped adjacent repeats:
        // `--only fig10,fig12,fig10` ran fig10 twice and panicked writing its figures twice.
        let mut seen = Vec::new();
        exps.retain(|e| {
            let first = !seen.contains(e);
            seen.push(*e);
            first
        });
        Ok(Plan::new(Size::of(size), self.seed, trace, exps))
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let plan = args.plan()?;
    let runs = plan.all_runs();
    if args.list {
        for r in &runs {
            println!("{}", r.id());
        }
        return Ok(());
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    if plan.trace.is_none() && !args.no_trace {
        eprintln!("eval: no TPC-C trace found (give --trace FILE); skipping the trace experiment");
    }
    eprintln!(
        "eval: {} runs of {} experiment(s) on {jobs} worker(s), output in {}",
        runs.len(),
        plan.experiments.len(),
        args.out.display()
    );
    // Before the runs, not after: an output directory that can not be made (a file's path,
    // /proc) failed only when the report was written, minutes of runs later.
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating the output directory {}", args.out.display()))?;
    // Before the runs: the tree may change while they go on.
    let revision = commit();
    let bar = progress_bar(runs.len() as u64);
    let t0 = Instant::now();
    let on_done = |e: RunEvent| {
        bar.set_position(e.done as u64);
        let status = if e.ok { "" } else { " FAILED" };
        bar.set_message(format!("{} ({:.1} s){status}", e.id, e.wall_s));
        if bar.is_hidden() {
            eprintln!(
                "eval: [{}/{}] {} {:.1} s{status}",
                e.done, e.total, e.id, e.wall_s
            );
        }
    };
    let outcomes = eval::run_all(&runs, jobs, &on_done);
    bar.finish_and_clear();
    let wall = t0.elapsed().as_secs_f64();
    let ctx = Context {
        command: std::iter::once("fusionraid".to_string())
            .chain(std::env::args().skip(1))
            .collect::<Vec<_>>()
            .join(" "),
        machine: machine(),
        commit: revision,
        jobs,
        wall_s: wall,
    };
    eval::write_output(&args.out, &plan, &outcomes, &ctx)
        .with_context(|| format!("writing the report to {}", args.out.display()))?;
    let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
    eprintln!(
        "eval: {} runs ({failed} failed) in {wall:.1} s; report: {}",
        outcomes.len(),
        args.out.join("report.md").display()
    );
    // A script must not take an evaluation whose runs failed (a trace that does not
    // parse fails every run of the trace experiment) for a good one.
    if failed > 0 {
        bail!(
            "{failed} of {} runs failed (why: the report's \"Failed runs\")",
            outcomes.len()
        );
    }
    Ok(())
}

fn progress_bar(len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(len);
    b.set_style(
        ProgressStyle::with_template(
            "{bar:40} {pos}/{len} runs [{elapsed_precise}, eta {eta}] {wide_msg}",
        )
        .expect("valid template"),
    );
    b.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
    b
}

/// `git describe`-like revision of the source tree the binary was built from, with
/// `-dirty` when it has uncommitted changes; empty when git or the tree is not there.
fn commit() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let Some(rev) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        return String::new();
    };
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    if dirty { format!("{rev}-dirty") } else { rev }
}

/// CPU model, logical CPUs, memory and kernel, from /proc (Linux); what is missing is left
/// out.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = crate::host::memory_bytes();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let mut m = format!("{cpu}, {cpus} logical CPUs");
    if let Some(bytes) = mem {
        m.push_str(&format!(", {:.0} GiB", bytes as f64 / (1u64 << 30) as f64));
    }
    if !kernel.is_empty() {
        m.push_str(&format!(", Linux {kernel}"));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn plan(argv: &[&str]) -> Result<Plan, String> {
        let cli = Cli::try_parse_from(std::iter::once("eval").chain(argv.iter().copied()))
            .map_err(|e| e.to_string())?;
        cli.args.plan().map_err(|e| e.to_string())
    }

    #[test]
    fn options_select_size_experiments_and_trace() {
        let p = plan(&[
            "--quick",
            "--only",
            "fig12,fig10,consumer",
            "--seed",
            "7",
            "--no-trace",
        ])
        .unwrap();
        assert_eq!(p.size.name, SizeName::Quick);
        assert_eq!(
            p.experiments,
            vec![ExpId::Fig12, ExpId::Fig10, ExpId::Consumer]
        );
        assert_eq!(p.seed, 7);
        assert!(p.trace.is_none());
        let full = plan(&["--no-trace"]).unwrap();
        assert_eq!(full.size.name, SizeName::Full);
        assert_eq!(full.mixes.len(), 20);
        assert!(!full.experiments.contains(&ExpId::Trace));
        assert!(full.experiments.contains(&ExpId::Pitfalls));
        let quick = plan(&["--quick", "--no-trace"]).unwrap();
        assert!(!quick.experiments.contains(&ExpId::Pitfalls));
        for e in [ExpId::Serw, ExpId::FailSlow] {
            assert!(quick.experiments.contains(&e) && full.experiments.contains(&e));
        }
        let only = plan(&["--quick", "--only", "pitfalls"]).unwrap();
        assert_eq!(only.experiments, vec![ExpId::Pitfalls]);
        assert!(full.experiments.contains(&ExpId::Sandook));
        assert!(!quick.experiments.contains(&ExpId::Sandook));
        let tiny = plan(&["--tiny", "--no-trace"]).unwrap();
        assert!(!tiny.experiments.contains(&ExpId::Sandook));
        let only = plan(&["--quick", "--only", "sandook"]).unwrap();
        assert_eq!(only.experiments, vec![ExpId::Sandook]);
        assert!(plan(&["--only", "fig99"]).unwrap_err().contains("fig99"));
        // A repeat that is not adjacent runs the experiment once: twice would write its
        // figures twice (a panic).
        let p = plan(&["--only", "fig10,fig12,fig10,fig12", "--no-trace"]).unwrap();
        assert_eq!(p.experiments, vec![ExpId::Fig10, ExpId::Fig12]);
        assert!(plan(&["--quick", "--tiny"]).is_err());
        assert!(
            plan(&["--trace", "/nonexistent.trace"])
                .unwrap_err()
                .contains("not found")
        );
    }
}

#[cfg(test)]
mod help_tests {
    use clap::Args as _;

    /// Issue 19: `eval --help` said "a few minutes" for --quick and nothing for the rest.
    #[test]
    fn help_gives_the_run_time_of_each_size() {
        let help = super::Args::augment_args(clap::Command::new("eval"))
            .render_long_help()
            .to_string();
        for want in [
            "--tiny 1.7 s",
            "--quick 94 s",
            "full about 10 minutes",
            "estimate",
        ] {
            assert!(help.contains(want), "no {want:?} in\n{help}");
        }
    }
}
