//! `fusionraid top`: a live view of a running pool through its status socket (the same
//! document `fusionraid status` reads): members with their rates, device latency over the
//! last interval and a sparkline of it, spikes and stragglers; volumes with their users'
//! rates and latency, space and backlog; rebuild and scrub progress.
//!
//! On a terminal it redraws in place (`tui.rs`); otherwise, or with `--once`, it prints
//! plain-text snapshots (`plain.rs`). Rates and percentiles need two documents, so the first
//! view covers the interval after start-up of `top` (with `--once`: one interval, then exit).

mod model;
mod plain;
mod table;
mod tui;

use std::io::{IsTerminal, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Args as ClapArgs;

use crate::status_doc::StatusDoc;
use model::{History, View};

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The pool file whose serve.status socket to ask (default: the demo pool's).
    pub pool: Option<PathBuf>,
    /// The same, as `fail`, `replace` and `scrub` take it.
    #[arg(long = "pool", value_name = "POOL", conflicts_with = "pool")]
    pub pool_flag: Option<PathBuf>,
    /// The status socket of a running `fusionraid serve`.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Seconds between refreshes (rates and percentiles cover this interval).
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    pub interval: f64,
    /// Print one plain-text view (after one interval) and exit.
    #[arg(long)]
    pub once: bool,
}

/// One status document from the socket.
fn fetch(socket: &Path) -> anyhow::Result<StatusDoc> {
    let mut c = UnixStream::connect(socket).with_context(|| {
        format!(
            "connecting to {} (is `fusionraid serve` running?)",
            socket.display()
        )
    })?;
    c.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut body = String::new();
    c.read_to_string(&mut body)
        .context("reading the status document")?;
    serde_json::from_str(&body)
        .with_context(|| format!("the server sent no status document: {body}"))
}

pub fn run(args: Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.interval.is_finite() && (0.05..=3600.0).contains(&args.interval),
        "--interval must be between 0.05 and 3600 seconds"
    );
    let pool = args.pool.as_ref().or(args.pool_flag.as_ref());
    let socket = crate::status_cmd::socket_for(args.socket.as_ref(), pool)?;
    let interval = Duration::from_secs_f64(args.interval);
    let mut history = History::default();
    let mut prev = Some(fetch(&socket)?);
    let mut next = move || -> anyhow::Result<View> {
        let cur = fetch(&socket)?;
        let v = View::new(prev.as_ref(), &cur, &mut history);
        prev = Some(cur);
        Ok(v)
    };
    if args.once || !std::io::stdout().is_terminal() {
        let mut out = std::io::stdout();
        loop {
            std::thread::sleep(interval);
            let text = plain::render(&next()?);
            // A closed pipe (`top | head`) ends the command quietly.
            if out
                .write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
                || args.once
            {
                return Ok(());
            }
            if out.write_all(b"\n").is_err() {
                return Ok(());
            }
        }
    }
    // The first view shows rates over one interval, like the following ones.
    std::thread::sleep(interval.min(Duration::from_millis(500)));
    tui::run(interval, next)
}
