//! `fusionraid sim`: run one simulation and print its report.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Args as ClapArgs;
use fusionraid_core::scheme::fusion::{LayoutKind, Level};
use fusionraid_devices::fail_slow::FailSlowSpec;
use fusionraid_devices::spikes::SpikeSpec;
use fusionraid_sim::slo::{self, SloOptions, SloTarget};
use fusionraid_sim::trace::{ReplayMode, TraceFormat};
use fusionraid_sim::workload::{Workload, parse_iops, parse_synthetic};
use fusionraid_sim::{Load, Progress, Scenario, Sim};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Simulate a pool in virtual time and report latency, write amplification, space and spikes.
///
/// With no options: 29 aged datacenter SSDs, FusionRAID with one 6+1 RAID5 volume per
/// workload, the 4-workload mix tpcc + ycsb-a + tf + vd for 5 s of virtual time.
#[derive(ClapArgs, Debug)]
#[command(after_help = "Examples:\n  \
    fusionraid sim\n  \
    fusionraid sim --scheme fusion-nd --workload tpcc,vd --duration 20s --seed 7\n  \
    fusionraid sim --trace trace.txt --format disksim --speed 2\n  \
    fusionraid sim --trace trace.txt --format msr --qd 32 --json\n  \
    fusionraid sim --device sandook12 --width 6 --workload ycsb-a\n  \
    fusionraid sim --device pm1725a,sn200 --disks 14\n  \
    fusionraid sim --bench --duration 30s\n  \
    fusionraid sim --disks 12 --synthetic read=0.9,bs=4k,iops=200k --duration 1s --slo p90:1ms")]
pub struct Args {
    /// Scheme: fusionraid, fusionraid+ (with Sandook's steering), fusion-nd, 4-raid5 (raid5),
    /// raid50, lograid, toleraid, nvraid, 4-raidm, sitout, sandook.
    #[arg(long, default_value = "fusionraid")]
    scheme: String,
    /// Steering mechanisms sandook and fusionraid+ run: a comma-separated list of weights
    /// (profile-guided; else equal), segregation (read/write modes), congestion (AIMD), or
    /// none.
    #[arg(long, default_value = "weights,segregation,congestion", value_parser = parse_steer)]
    steer: fusionraid_core::steer::SteerConfig,
    /// Table-4 workloads, one volume each: ycsb-load, ycsb-a, ycsb-b, tpcc, tf, vd, exchange,
    /// proxy. Repeat the option or give a comma-separated list.
    #[arg(long, value_delimiter = ',', conflicts_with = "trace")]
    workload: Vec<String>,
    /// A synthetic tenant, one volume each: iops=RATE[,read=SHARE][,bs=SIZE][,footprint=SIZE]
    /// [,seq=P][,hot=DATA/ACCESS][,burst=ON_MS/OFF_MS/OFF_RATIO][,name=NAME]: Poisson
    /// arrivals, uniform random offsets (defaults: all reads, bs 4k, footprint 8G, named
    /// syn0, syn1, ...). Repeatable.
    #[arg(long, value_name = "SPEC", value_parser = check_synthetic,
          conflicts_with_all = ["trace", "workload"])]
    synthetic: Vec<String>,
    /// Multiply every workload's Table-4 IOPS (or synthetic tenant's IOPS) by this.
    // A trace's rate is its own (--speed): refused with --trace rather than ignored.
    #[arg(long, default_value_t = 1.0, conflicts_with = "trace")]
    load: f64,
    /// Replay a trace file instead of generating workloads (into one volume); a gzipped file is
    /// read as it is.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Trace format: disksim, msr, alibaba, tencent, blkparse, fio.
    #[arg(long, default_value = "disksim", requires = "trace")]
    format: String,
    /// Replay at the trace's timestamps sped up by this factor (default 1).
    #[arg(
        long,
        requires = "trace",
        conflicts_with = "qd",
        allow_negative_numbers = true
    )]
    speed: Option<f64>,
    /// Replay closed-loop, keeping this many requests outstanding.
    #[arg(long, requires = "trace")]
    qd: Option<u32>,
    /// Members in the pool (default 29, or the fleet's size when --device names one fleet).
    #[arg(long)]
    disks: Option<usize>,
    /// Device preset (dc, consumer, pm1725a, sn200, hdd7200, or a profiled drive's serial in
    /// lower case such as s39wna0kb01161), a fleet (sandook12: the 12 profiled drives of
    /// docs/DEVICE_MODELS.md), or a comma-separated list of them, cycled over the members.
    #[arg(long, default_value = "dc")]
    device: String,
    /// HDD members (hdd7200) added after the --disks SSDs: a hybrid pool (issue 21). They
    /// hold no stripes (the fusionraid schemes only; the baselines refuse them). Members
    /// --device names with an HDD preset are HDDs too.
    #[arg(long, default_value_t = 0)]
    hdds: usize,
    /// Precondition the members to the paper's aged state (default).
    #[arg(long, overrides_with = "clean")]
    aged: bool,
    /// Start from fresh (secure-erased) members.
    #[arg(long, overrides_with = "aged")]
    clean: bool,
    /// With --aged: share of each member's capacity the ageing leaves unwritten (user
    /// over-provisioning, as in the Pitfalls study), 0 to 1.
    // Fresh members are not aged: refused with --clean rather than ignored (and reported).
    #[arg(long, default_value_t = 0.0, conflicts_with = "clean")]
    spare: f64,
    /// Member capacity, e.g. 240GB (default: the preset's).
    #[arg(long, value_parser = parse_bytes)]
    capacity: Option<u64>,
    /// Slow a member down: DISK=FACTOR (2 = twice as slow, at most 1000). Repeatable.
    #[arg(long, value_name = "DISK=FACTOR", value_parser = parse_slow)]
    slow: Vec<(usize, f64)>,
    /// Fail-slow members: DISKS=FACTORx/ON/OFF (periodic: normal for OFF, slow for ON),
    /// FACTORx/ON/OFF/random (exponential episodes and gaps of those means) or
    /// FACTORx/ON/P% (random episodes of mean ON, slow P% of the time; Tail at Store's SSDs:
    /// 0.6%). DISKS is one disk or several joined by '+'. Example: 3+7=4x/2s/3s. Repeatable.
    #[arg(long, value_name = "DISKS=SPEC", value_parser = parse_fail_slow)]
    fail_slow: Vec<Vec<(usize, FailSlowSpec)>>,
    /// A spike process on every member: RATE/min:LENGTH unresponsive periods (a Poisson
    /// process per member from its own seed, each period LENGTH long, RATE per minute on
    /// average), e.g. 20/min:10ms. For spike-sensitivity studies; docs/DEVICE_MODELS.md.
    #[arg(long, value_name = "RATE/min:LENGTH", value_parser = SpikeSpec::parse)]
    spikes: Option<SpikeSpec>,
    /// Blocks per stripe, data and parity (7 = 6+1 with RAID5).
    #[arg(long, default_value_t = 7)]
    width: usize,
    /// raid5, raid6, mirror (2 copies) or mirror3.
    #[arg(long, default_value = "raid5")]
    level: String,
    /// A volume with a level of its own, e.g. db=mirror next to RAID5 tenants
    /// (FusionRAID schemes; a mirror's width is its copies). Repeatable.
    #[arg(long, value_name = "VOLUME=LEVEL", value_parser = parse_volume_level)]
    volume_level: Vec<(String, Level)>,
    /// Stripe unit.
    #[arg(long, default_value = "64KiB", value_parser = parse_bytes)]
    block_size: u64,
    /// Declustering layout: mols, permutation, groups (default: mols when possible).
    #[arg(long)]
    layout: Option<String>,
    /// Do not write every volume once before the run (reads of unwritten blocks then cost
    /// no device I/O).
    #[arg(long)]
    no_prefill: bool,
    /// FusionRAID and Fusion-ND: discard freed stripes on the members (on|off; default: on
    /// for fusionraid+ only).
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    trim: Option<bool>,
    /// FusionRAID and Fusion-ND: convert replicated pairs to parity stripes in the
    /// background (on|off; default on; off keeps every block in two copies, the paper's
    /// Fig. 13 "conversion off").
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    conversion: Option<bool>,
    /// FusionRAID and Fusion-ND: re-issue a replicated read to the other copy when it has
    /// not completed after this long (hedged read), e.g. 500us.
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    hedge: Option<u64>,
    /// FusionRAID and Fusion-ND: rebuild a read of a RAID block from the rest of its
    /// stripe when it has not completed after this long, racing the direct read (hedged
    /// RAID read), e.g. 2ms.
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    raid_hedge: Option<u64>,
    /// FusionRAID: place a write again, away from the member, when one of its device
    /// writes has waited this long on a member the detector marks unresponsive (hedged
    /// write), e.g. 1ms, or `off` (default: 1ms for fusionraid+, off otherwise).
    #[arg(long, value_name = "TIME|off", value_parser = parse_time_or_off)]
    write_hedge: Option<TimeOrOff>,
    /// FusionRAID: hold a write of a sequential stream, smaller than a stripe, up to this
    /// long while the rest of its stripe arrives, so the stream is written as full stripes
    /// (stripe gathering), e.g. 1ms, or `off` (the default here; `serve` gathers for 1 ms).
    #[arg(long, value_name = "TIME|off", value_parser = parse_time_or_off)]
    gather: Option<TimeOrOff>,
    /// FusionRAID: hold a write of 1 to 8 pages inside a block up to this long while
    /// writes of its size arrive to fill a parity row (the same pages of every data column
    /// of a stripe plus their parity, written instead of two or three copies), e.g. 500us,
    /// or `off` (the default here; `serve` holds for 500 us).
    #[arg(long, value_name = "TIME|off", value_parser = parse_time_or_off)]
    rows: Option<TimeOrOff>,
    /// Members' wear: `report` adds each member's wear and its wear-out time at the run's
    /// pace to the report; a share of rated life (e.g. 0.05) also turns on wear-aware
    /// placement, which keeps each member that far behind the next more worn one
    /// (FusionRAID schemes).
    #[arg(long, value_name = "report|GAP", value_parser = parse_wear)]
    wear: Option<WearArg>,
    /// FusionRAID: offload replica writes from busy SSDs to the HDD members' logs (SeRW,
    /// issue 21; on|off, default off). Needs HDD members (--hdds).
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    offload: Option<bool>,
    /// With --offload on: an SSD counts as busy only with at least this many I/Os
    /// outstanding on average over its last 10 ms (default 0.5; 0: SeRW's rule alone).
    #[arg(long, value_name = "IOS", value_parser = parse_floor, requires = "offload")]
    offload_floor: Option<f64>,
    /// Size of every volume (default: each workload's footprint; traces 64GiB).
    #[arg(long, value_parser = parse_bytes)]
    volume_size: Option<u64>,
    /// Every volume's spare share (FusionRAID: spare stripes as a share of the data, as a
    /// pool file's spare_fraction; default 0.25), 0 to 4.
    #[arg(long, value_name = "SHARE")]
    volume_spare: Option<f64>,
    /// Virtual time during which requests arrive, e.g. 10s, 500ms, 2m (default 5s; traces:
    /// the whole trace).
    #[arg(long, value_parser = parse_duration)]
    duration: Option<u64>,
    /// Leave requests arriving before this out of the latency statistics.
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    warmup: u64,
    /// Seed of every random choice: engine, device models, workload generators.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the report as JSON (deterministic: same seed, same bytes).
    #[arg(long)]
    json: bool,
    /// Requests carry sizes only (default; fast).
    #[arg(long, overrides_with = "data")]
    size_only: bool,
    /// Requests carry real data through the engine; reads are checked against what was
    /// written. Member contents are kept in memory: use small volumes (e.g. --volume-size
    /// 2GiB).
    #[arg(long, overrides_with = "size_only")]
    data: bool,
    /// User requests the engine takes at once (beyond: held by the driver, then dropped).
    #[arg(long, default_value_t = 4096)]
    max_requests: usize,
    /// Also measure simulation speed (user I/Os per wall-clock second) and peak memory, on
    /// stderr.
    #[arg(long)]
    bench: bool,
    /// Find the highest load meeting a latency target, [read:|write:]PERCENTILE:LATENCY
    /// (p90:1ms, p99.9:500us, read:p99:2ms): runs at loads scaled from the workloads' or
    /// tenants' own (every rate together), doubling then bisecting. Dropping requests or
    /// answering under 95% of them before arrivals stop fails the target too.
    #[arg(long, value_name = "TARGET", value_parser = parse_slo,
          conflicts_with_all = ["trace", "bench"])]
    slo: Option<SloTarget>,
    /// With --slo: offered IOPS of the first run, e.g. 500k (default: the load as given).
    #[arg(long, value_name = "IOPS", value_parser = parse_iops, requires = "slo")]
    slo_start: Option<f64>,
    /// With --slo: stop when the lowest failing load is within this share above the highest
    /// passing one.
    #[arg(long, default_value_t = 0.02, requires = "slo")]
    slo_precision: f64,
    /// With --slo: at most this many simulation runs.
    #[arg(long, default_value_t = 20, requires = "slo")]
    slo_max_runs: usize,
    /// With --slo: a reference rate (e.g. the sum of the members' peak IOPS) to print
    /// achieved / ideal against (default: the sum of the members' peaks from their curves at
    /// the load's write share).
    #[arg(long, value_name = "IOPS", value_parser = parse_iops, requires = "slo")]
    ideal_iops: Option<f64>,
}

/// `on` or `off`.
/// A delay, or `off`.
#[derive(Clone, Copy, Debug)]
struct TimeOrOff(Option<u64>);

fn parse_time_or_off(s: &str) -> Result<TimeOrOff, String> {
    match s {
        "off" => Ok(TimeOrOff(None)),
        _ => parse_duration(s).map(|ns| TimeOrOff(Some(ns))),
    }
}

fn parse_floor(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=65_536.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}': expected a number of I/Os from 0 to 65536")),
    }
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("'{s}': expected on or off")),
    }
}

/// `--steer`: which of steering's mechanisms run (`none`: none of them).
fn parse_steer(s: &str) -> Result<fusionraid_core::steer::SteerConfig, String> {
    let names = s.split(',').map(str::trim);
    fusionraid_core::steer::SteerConfig::with_mechanisms(
        names.filter(|p| !p.is_empty() && *p != "none"),
    )
}

impl Args {
    fn scenario(&self) -> anyhow::Result<Scenario> {
        let secs = self.duration.map_or(5.0, |d| d as f64 / 1e9);
        let mut sc = Scenario::default_mix(secs);
        sc.scheme = self.scheme.clone();
        scheme_options::check(self, &self.scheme)?;
        sc.scheme_options.steer = self.steer.clone();
        sc.scheme_options.trim = self.trim;
        if let Some(c) = self.conversion {
            sc.scheme_options.conversion = c;
        }
        sc.scheme_options.hedge_ns = self.hedge;
        sc.scheme_options.raid_hedge_ns = self.raid_hedge;
        sc.scheme_options.write_hedge_ns = self.write_hedge.map(|t| t.0);
        sc.scheme_options.gather_ns = self.gather.and_then(|t| t.0);
        sc.scheme_options.row_ns = self.rows.and_then(|t| t.0);
        sc.report_wear = self.wear.is_some();
        sc.scheme_options.wear_gap = match self.wear {
            Some(WearArg::Gap(g)) => Some(g),
            _ => None,
        };
        sc.scheme_options.offload = self.offload.unwrap_or(false);
        sc.scheme_options.offload_floor = self.offload_floor;
        sc.pool.disks = self
            .disks
            .or_else(|| fusionraid_devices::fleet(self.device.trim()).map(<[_]>::len))
            .unwrap_or(sc.pool.disks);
        sc.pool.disks += self.hdds;
        sc.pool.hdds = self.hdds;
        sc.pool.device = self.device.clone();
        sc.pool.aged = !self.clean;
        sc.pool.spare = self.spare;
        sc.prefill = !self.no_prefill;
        sc.pool.capacity_bytes = self.capacity;
        sc.pool.speed_factors = self.slow.clone();
        sc.pool.fail_slow = self.fail_slow.concat();
        sc.pool.spikes = self.spikes;
        sc.pool.block_size = self.block_size;
        sc.pool.layout = match self.layout.as_deref() {
            None | Some("auto") => None,
            Some(l) => Some(l.parse::<LayoutKind>().map_err(anyhow::Error::msg)?),
        };
        sc.level = self.level.parse::<Level>().map_err(anyhow::Error::msg)?;
        sc.width = self.width;
        sc.volume_levels = self.volume_level.clone();
        sc.volume_bytes = self.volume_size;
        sc.volume_spare = self.volume_spare;
        sc.warmup_ns = self.warmup;
        sc.seed = self.seed;
        sc.size_only = !self.data;
        sc.max_requests = self.max_requests;
        if let Some(load) = self.load_choice(&sc.load)? {
            sc.load = load;
        }
        if self.trace.is_some() {
            sc.duration_ns = self.duration;
        }
        // The scenario needs two (one data and one redundant member at the least); this said
        // "at least 1", and --disks 1 then failed with "need at least 2 disks".
        if sc.pool.disks < 2 {
            bail!("--disks must be at least 2, got {}", sc.pool.disks);
        }
        Ok(sc)
    }

    /// The load the options ask for; `None` keeps the default mix.
    fn load_choice(&self, default: &Load) -> anyhow::Result<Option<Load>> {
        if let Some(path) = &self.trace {
            let format: TraceFormat = self.format.parse()?;
            let mode = match (self.speed, self.qd) {
                (_, Some(queue_depth)) => ReplayMode::ClosedLoop { queue_depth },
                (speed, None) => ReplayMode::Timestamp {
                    speed: speed.unwrap_or(1.0),
                },
            };
            return Ok(Some(Load::Trace {
                path: path.clone(),
                format,
                mode,
            }));
        }
        if !self.synthetic.is_empty() {
            let mut tenants = Vec::with_capacity(self.synthetic.len());
            for (i, text) in self.synthetic.iter().enumerate() {
                let mut t =
                    parse_synthetic(text, &format!("syn{i}")).map_err(anyhow::Error::msg)?;
                t.iops *= self.load;
                tenants.push(t);
            }
            return Ok(Some(Load::Synthetic { tenants }));
        }
        if self.workload.is_empty() && self.load == 1.0 {
            return Ok(None);
        }
        let list = if self.workload.is_empty() {
            match default {
                Load::Workloads { list, .. } => list.clone(),
                Load::Synthetic { .. } | Load::Trace { .. } | Load::TraceMix { .. } => {
                    unreachable!("default is a workload mix")
                }
            }
        } else {
            self.workload
                .iter()
                .map(|w| w.parse::<Workload>())
                .collect::<Result<Vec<_>, _>>()?
        };
        Ok(Some(Load::Workloads {
            list,
            scale: self.load,
        }))
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let sc = args.scenario()?;
    if let Some(target) = args.slo {
        return run_slo(&args, &sc, &target);
    }
    let t0 = Instant::now();
    let sim = Sim::new(&sc).context("setting up the simulation")?;
    let setup = t0.elapsed();
    let bar = progress_bar(&sc, args.json);
    let t1 = Instant::now();
    let cpu1 = thread_cpu_s();
    let report = sim
        .run_with(&mut |p: &Progress| {
            bar.set_position(p.now / 1_000_000);
            bar.set_message(format!("{} requests", p.completed));
        })
        .context("running the simulation")?;
    // Generators offering under one request in the duration (`--duration 1ns`,
    // `iops=0.001`) gave a report of zeros and status 0. Here, not in the simulator:
    // experiments (`eval --tiny`) run such loads on purpose.
    if report.requests.arrived == 0 {
        bail!(
            "no request arrived in the run's {} s: the load offers less than one request in \
             that time (raise the rate or the duration)",
            sc.duration_ns.unwrap_or(0) as f64 / 1e9
        );
    }
    let wall = t1.elapsed();
    let cpu = thread_cpu_s() - cpu1;
    bar.finish_and_clear();
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_table());
    }
    std::io::stdout().flush()?;
    if args.bench {
        let ios = report.requests.completed;
        eprintln!(
            "bench: {ios} user I/Os ({} events) in {:.3} s wall ({:.3} s setup): {:.0} user I/Os/s, {:.0} events/s, {:.1}x real time; {:.3} s CPU: {:.0} user I/Os per CPU-s; peak RSS {}",
            report.events,
            wall.as_secs_f64(),
            setup.as_secs_f64(),
            ios as f64 / wall.as_secs_f64(),
            report.events as f64 / wall.as_secs_f64(),
            report.virtual_s / wall.as_secs_f64(),
            cpu,
            ios as f64 / cpu.max(1e-9),
            peak_rss().unwrap_or_else(|| "unknown".into())
        );
    }
    Ok(())
}

/// `--slo`: the search, a line per run on stderr when it is a terminal, then the table (or
/// JSON) on stdout.
fn run_slo(args: &Args, sc: &Scenario, target: &SloTarget) -> anyhow::Result<()> {
    let opts = SloOptions {
        start_iops: args.slo_start,
        precision: args.slo_precision,
        max_runs: args.slo_max_runs,
        ideal_iops: match args.ideal_iops {
            Some(i) => Some(i),
            None => slo::ideal_iops(sc, target).map_err(anyhow::Error::msg)?,
        },
        ..SloOptions::default()
    };
    let show = !args.json && std::io::stderr().is_terminal();
    let mut runs = 0;
    let result = slo::search(sc, target, &opts, &mut |p| {
        runs += 1;
        if show {
            eprintln!(
                "run {runs}: {:.0} IOPS offered, {:.0} achieved: {}",
                p.offered_iops,
                p.achieved_iops,
                p.verdict.word()
            );
        }
    })
    .context("searching for the highest load at the SLO")?;
    if args.json {
        println!("{}", result.to_json());
    } else {
        print!("{}", result.to_table());
    }
    std::io::stdout().flush()?;
    Ok(())
}

/// `--synthetic`: checked here so a bad tenant is refused with the option's name; the
/// scenario parses it again with its default name.
fn check_synthetic(s: &str) -> Result<String, String> {
    parse_synthetic(s, "syn").map(|_| s.to_string())
}

fn parse_slo(s: &str) -> Result<SloTarget, String> {
    s.parse()
}

/// CPU time this thread has used (s). On a shared machine wall time also counts the time
/// other processes held the core; CPU time is the steadier measure of simulator cost.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec we pass, which lives on this frame.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn progress_bar(sc: &Scenario, json: bool) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = match sc.duration_ns {
        Some(d) => {
            let b = ProgressBar::new(d / 1_000_000);
            b.set_style(
                ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} ms virtual, {msg} [{elapsed_precise}, eta {eta}]",
                )
                .expect("valid template"),
            );
            b
        }
        None => {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template(
                    "{spinner} {pos} ms virtual, {msg} [{elapsed_precise}]",
                )
                .expect("valid template"),
            );
            b
        }
    };
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
    bar
}

/// Peak resident memory of this process (Linux `VmHWM`).
fn peak_rss() -> Option<String> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .map(|l| l["VmHWM:".len()..].trim().to_string())
}

/// `10s`, `500ms`, `250us`, `2m`, `1h`, or plain seconds (`1.5`).
fn parse_duration(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (e.g. 10s, 500ms, 2m)"))?;
    let scale = match unit.trim() {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" => 1.0,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        u => {
            return Err(format!(
                "unknown time unit '{u}' in '{s}' (ns, us, ms, s, m, h)"
            ));
        }
    };
    in_u64(v * scale).ok_or_else(|| format!("'{s}' is too long a duration"))
}

/// `4096`, `64KiB`, `240GB`, `1.5TiB` (binary and decimal units).
fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 64KiB, 240GB)"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024f64.powi(2),
        "g" | "gib" => 1024f64.powi(3),
        "t" | "tib" => 1024f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        u => return Err(format!("unknown size unit '{u}' in '{s}'")),
    };
    in_u64(v * scale).ok_or_else(|| format!("'{s}' is too large a size"))
}

/// `x` rounded, if it is a count that fits in a u64 (`as` would saturate silently).
fn in_u64(x: f64) -> Option<u64> {
    let r = x.round();
    // 2^64 as f64 is exact; every f64 below it converts without loss of range.
    (0.0..18_446_744_073_709_551_616.0)
        .contains(&r)
        .then_some(r as u64)
}

/// `DISK=FACTOR`.
fn parse_volume_level(s: &str) -> Result<(String, Level), String> {
    let (name, level) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not VOLUME=LEVEL"))?;
    Ok((name.trim().to_string(), level.trim().parse()?))
}

fn parse_slow(s: &str) -> Result<(usize, f64), String> {
    let (d, f) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not DISK=FACTOR"))?;
    let d = d.trim().parse().map_err(|_| format!("bad disk in '{s}'"))?;
    let f: f64 = f
        .trim()
        .parse()
        .map_err(|_| format!("bad factor in '{s}'"))?;
    Ok((d, f))
}

/// `DISKS=SPEC`, DISKS one disk or several joined by '+'.
fn parse_fail_slow(s: &str) -> Result<Vec<(usize, FailSlowSpec)>, String> {
    let (disks, spec) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not DISKS=SPEC"))?;
    let spec = FailSlowSpec::parse(spec)?;
    disks
        .split('+')
        .map(|d| {
            d.trim()
                .parse()
                .map(|d| (d, spec))
                .map_err(|_| format!("bad disk '{d}' in '{s}'"))
        })
        .collect()
}

/// `--wear`: report only, or wear-aware placement with a ladder gap.
#[derive(Clone, Copy, Debug, PartialEq)]
enum WearArg {
    Report,
    Gap(f64),
}

fn parse_wear(s: &str) -> Result<WearArg, String> {
    if s == "report" {
        return Ok(WearArg::Report);
    }
    match s.parse::<f64>() {
        Ok(g) if g > 0.0 && g < 1.0 => Ok(WearArg::Gap(g)),
        _ => Err(format!(
            "'{s}': give 'report' or a share of rated life between 0 and 1 (e.g. 0.05)"
        )),
    }
}

mod scheme_options;
#[cfg(test)]
mod tests;
