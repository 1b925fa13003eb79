//! The `fusionraid` command. Each subcommand lives in its own module.

#![warn(clippy::too_many_lines)]

use clap::{Parser, Subcommand};

/// mimalloc rather than glibc's allocator: the engine allocates and frees page-sized
/// buffers (payloads, parity) several times per request, which glibc serves from its
/// general bins; mimalloc cuts the engine's instructions per 4 KiB write by about a tenth
/// (docs/BENCHMARKS.md, "Allocator").
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod assemble;
mod console;
mod control;
mod create_cmd;
mod create_undo;
mod demo;
mod eval_cmd;
#[cfg(test)]
mod fuzz_util;
mod host;
mod listen_check;
mod metadata;
mod metrics;
mod missing;
mod plan_cmd;
mod pool_config;
#[cfg(test)]
mod pool_config_fuzz;
mod pool_fit;
mod pool_limits;
mod scheme_choice;
mod serve_cmd;
mod signals;
mod sim_cmd;
mod socket_server;
mod status_cmd;
mod status_doc;
mod superblock;
#[cfg(test)]
mod superblock_fuzz;
mod top;

#[derive(Parser)]
#[command(
    name = "fusionraid",
    version,
    about = "Consistently low-latency RAID over a pool of commodity SSDs (FusionRAID, FAST'21)"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a pool in virtual time (deterministic) and report latency, write
    /// amplification, space, spikes and redirection.
    // Boxed: its many options made it the one large variant.
    Sim(Box<sim_cmd::Args>),
    /// Run the FusionRAID paper's experiments in the simulator and write a report (Markdown,
    /// SVG charts, JSON per run).
    Eval(eval_cmd::Args),
    /// Format the members of a pool from a pool file (TOML): writes superblocks.
    Create(create_cmd::Args),
    /// Predict each volume's sustained random-write IOPS and device bytes per user byte
    /// across spare shares (over-provisioning), and recommend a share for a target.
    Plan(plan_cmd::Args),
    /// Serve a pool's volumes over NBD. Without a pool file: the demo pool of emulated SSDs
    /// in ./fusionraid-demo/, created on first use.
    Serve(serve_cmd::Args),
    /// Show a running pool: members (healthy, spiking, failed), volumes, space, backlog.
    Status(status_cmd::Args),
    /// A live view of a running pool: members' rates, latency and spikes, volumes, rebuild
    /// and scrub progress (plain text when stdout is not a terminal).
    Top(top::Args),
    /// Declare a member of a running pool failed (its data is rebuilt onto the others).
    Fail(control::FailArgs),
    /// Put a new device in the slot of a failed member once its data has been rebuilt.
    Replace(control::ReplaceArgs),
    /// Check everything a running pool stores against its checksums and parity, in the
    /// background; bad copies are rewritten from good ones (`status` shows progress).
    Scrub(control::ScrubArgs),
}

fn main() -> anyhow::Result<std::process::ExitCode> {
    match run() {
        // A refused operator command: its reason, once, and a failure status.
        Err(e) if e.is::<control::Refused>() => {
            eprintln!("{e}");
            Ok(std::process::ExitCode::FAILURE)
        }
        r => r.map(|()| std::process::ExitCode::SUCCESS),
    }
}

fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Some(Command::Sim(_) | Command::Eval(_) | Command::Plan(_))
    ) {
        signals::default_sigpipe();
    }
    // One timestamped line per event on stderr, filtered by RUST_LOG. `serve` logs the
    // pool's state changes (members failing, spiking and back, rebuilds, scrubs, recovery)
    // at info, so that is its default; the other commands show only warnings.
    let default = match cli.command {
        Some(Command::Serve(_)) => "info",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| default.into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        // An event that can not be written (stderr on a full disk, a closed pipe) is
        // dropped; reporting that on stderr would panic, and a panic stops `serve`.
        .log_internal_errors(false)
        .init();
    match cli.command {
        None => {
            println!("fusionraid: see --help");
            Ok(())
        }
        Some(Command::Sim(args)) => sim_cmd::run(*args),
        Some(Command::Eval(args)) => eval_cmd::run(args),
        Some(Command::Create(args)) => create_cmd::run(args),
        Some(Command::Plan(args)) => plan_cmd::run(args),
        Some(Command::Serve(args)) => {
            serve_cmd::stop_on_panic();
            serve_cmd::run(args)
        }
        Some(Command::Status(args)) => status_cmd::run(args),
        Some(Command::Top(args)) => top::run(args),
        Some(Command::Fail(args)) => control::fail(args),
        Some(Command::Replace(args)) => control::replace(args),
        Some(Command::Scrub(args)) => control::scrub(args),
        #[allow(unreachable_patterns)]
        Some(_) => unreachable!(),
    }
}
