//! The `fusionraid` command. Each subcommand lives in its own module.

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "fusionraid", version, about = "Consistently low-latency RAID over a pool of commodity SSDs (FusionRAID, FAST'21)")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        None => {
            println!("fusionraid: see --help");
            Ok(())
        }
        #[allow(unreachable_patterns)]
        Some(_) => unreachable!(),
    }
}
