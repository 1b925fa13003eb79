//! `fusionraid status`: ask a running `serve` for its status and show it the way
//! `zpool status` shows a pool: state, members, volumes, space, backlog, then notes.

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args as ClapArgs;
use fusionraid_io::driver::{MemberState, StatusSnapshot};
use fusionraid_io::format_size;

use crate::status_doc::StatusDoc;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The pool file whose serve.status socket to ask (default: the demo pool's).
    pub pool: Option<PathBuf>,
    /// The status socket of a running `fusionraid serve`.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Print the raw JSON document.
    #[arg(long)]
    pub json: bool,
}

/// The status socket: given, or the pool file's, or the demo pool's.
pub fn socket_for(socket: Option<&PathBuf>, pool: Option<&PathBuf>) -> anyhow::Result<PathBuf> {
    Ok(match (socket, pool) {
        (Some(s), _) => s.clone(),
        (None, Some(p)) => {
            let file = crate::pool_config::PoolFile::load(p)?;
            file.serve.resolve(&crate::create_cmd::base_dir(p)?).status
        }
        (None, None) => PathBuf::from(crate::demo::DEFAULT_DIR).join("status.sock"),
    })
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let socket = socket_for(args.socket.as_ref(), args.pool.as_ref())?;
    let mut c = UnixStream::connect(&socket).with_context(|| {
        format!(
            "connecting to {} (is `fusionraid serve` running?)",
            socket.display()
        )
    })?;
    c.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut body = String::new();
    c.read_to_string(&mut body)
        .context("reading the status document")?;
    if args.json {
        println!("{body}");
        return Ok(());
    }
    let doc: StatusDoc = serde_json::from_str(&body)
        .with_context(|| format!("the server sent no status document: {body}"))?;
    print!("{}", render(&doc));
    Ok(())
}

fn state_word(s: MemberState) -> &'static str {
    match s {
        MemberState::Healthy => "healthy",
        MemberState::Spiking => "spiking",
        MemberState::Failed => "failed",
        MemberState::Missing => "missing",
    }
}

fn pool_state(s: &StatusSnapshot) -> String {
    let down = s
        .members
        .iter()
        .filter(|m| matches!(m.state, MemberState::Failed | MemberState::Missing))
        .count();
    let spiking = s
        .members
        .iter()
        .filter(|m| m.state == MemberState::Spiking)
        .count();
    match (down, spiking) {
        (0, 0) => "ONLINE".into(),
        (0, k) => format!("ONLINE ({k} member(s) in a latency spike, steered around)"),
        (d, _) => format!("DEGRADED ({d} member(s) failed or missing)"),
    }
}

fn lat(l: &fusionraid_io::driver::status::LatencyView) -> String {
    if l.count == 0 {
        return "-".into();
    }
    format!(
        "p50 {:.0} us, p99 {:.0} us, p99.9 {:.0} us, max {:.0} us ({} ops)",
        l.p50_us, l.p99_us, l.p999_us, l.max_us, l.count
    )
}

pub fn render(doc: &StatusDoc) -> String {
    use std::fmt::Write;
    let s = &doc.snapshot;
    let mut o = String::new();
    let _ = writeln!(o, "  pool: {}", doc.pool);
    let _ = writeln!(o, "    id: {}", doc.uuid);
    let _ = writeln!(o, " state: {}", pool_state(s));
    let _ = writeln!(
        o,
        "scheme: {} (layout {}, block {})",
        s.scheme,
        doc.layout,
        format_size(doc.block_size)
    );
    let _ = writeln!(o, "uptime: {:.0} s", s.uptime_s);
    let _ = writeln!(o, "config:\n");
    let w = s
        .members
        .iter()
        .map(|m| m.name.len() + 2)
        .max()
        .unwrap_or(4)
        .max(doc.pool.len());
    let _ = writeln!(
        o,
        "\t{:<w$}  {:<8} {:>6} {:>6} {:>10} {:>10} {:>9} {:>9} {:>6}",
        "NAME", "STATE", "SPIKES", "STRAG", "READS", "WRITES", "READ", "WRITTEN", "ERRORS"
    );
    let _ = writeln!(
        o,
        "\t{:<w$}  {}",
        doc.pool,
        pool_state(s).split(' ').next().unwrap_or("")
    );
    for m in &s.members {
        let _ = writeln!(
            o,
            "\t  {:<w2$}  {:<8} {:>6} {:>6} {:>10} {:>10} {:>9} {:>9} {:>6}",
            m.name,
            state_word(m.state),
            m.spikes,
            m.stragglers,
            m.reads,
            m.writes,
            human(m.bytes_read),
            human(m.bytes_written),
            m.errors,
            w2 = w - 2
        );
        for n in &m.notes {
            let _ = writeln!(o, "\t    {n}");
        }
    }
    let _ = writeln!(o, "\nvolumes:\n");
    let _ = writeln!(
        o,
        "\t{:<12} {:<12} {:>8} {:>8} {:>9} {:>11} {:>8} {:>8} {:>9}",
        "NAME", "LEVEL", "SIZE", "MAPPED", "RAID", "REPLICATED", "FREE", "BACKLOG", "METADATA"
    );
    for v in &s.volumes {
        let name = doc.volume_names.get(v.index as usize).unwrap_or(&v.name);
        let _ = writeln!(
            o,
            "\t{:<12} {:<12} {:>8} {:>8} {:>9} {:>11} {:>8} {:>8} {:>9}",
            name,
            v.level,
            human(v.size_bytes),
            human(v.mapped_bytes),
            human(v.raid_bytes),
            human(v.replicated_bytes),
            human(v.free_bytes),
            v.conversion_backlog,
            human(v.metadata_bytes)
        );
        if let Some(r) = &v.rebuild {
            let _ = writeln!(o, "	  rebuild: {r}");
        }
        if let Some(r) = &v.scrub {
            let _ = writeln!(o, "	  scrub: {r}");
        }
    }
    let _ = writeln!(
        o,
        "\nrequests: {} ({} failed, {} in flight, {} device I/Os in flight)",
        s.requests, s.failed_requests, s.inflight_requests, s.inflight_ios
    );
    let _ = writeln!(
        o,
        "steering: {} writes redirected, {} pair sets opened away from slow members, {} reads redirected, {} reads reconstructed",
        s.redirected_writes, s.steered_pair_sets, s.redirected_reads, s.reconstructed_reads
    );
    let _ = writeln!(
        o,
        "background: {} conversions, write amplification {:.2}",
        s.conversions, s.write_amplification
    );
    let _ = writeln!(
        o,
        "integrity: {} checksum errors, {} blocks repaired, {} parities rewritten, {} pages unrecoverable",
        s.checksum_errors, s.repaired_blocks, s.parity_rewrites, s.unrecoverable_pages
    );
    match &s.metadata {
        Some(m) => {
            let _ = writeln!(
                o,
                "metadata: journaled; {} commits ({} failed), {} checkpoints (last {}), {} journal blocks, {} records, {} freed stripes awaiting commit",
                m.commits,
                m.failed_commits,
                m.checkpoints,
                fusionraid_io::format_size(m.last_checkpoint_bytes),
                m.journal_blocks_written,
                m.records,
                m.held_stripes
            );
            if let Some(r) = &m.recovery {
                let _ = writeln!(o, "recovery: {r}");
            }
        }
        None => {
            let _ = writeln!(o, "metadata: not journaled");
        }
    }
    let _ = writeln!(o, "latency: read  {}", lat(&s.read_latency));
    let _ = writeln!(o, "         write {}", lat(&s.write_latency));
    let _ = writeln!(o, "         flush {}", lat(&s.flush_latency));
    let _ = writeln!(o, "exports:");
    for e in &doc.exports {
        let _ = writeln!(o, "\t{e}");
    }
    for m in &doc.missing {
        let _ = writeln!(o, "missing: {m}");
    }
    for n in &doc.notes {
        let _ = writeln!(o, "note: {n}");
    }
    let errors: u64 = s.members.iter().map(|m| m.errors).sum();
    let _ = writeln!(
        o,
        "errors: {}",
        if errors == 0 && s.failed_requests == 0 && s.checksum_errors == 0 {
            "No known data errors".to_string()
        } else {
            format!(
                "{errors} device errors, {} checksum errors ({} pages unrecoverable), {} failed requests",
                s.checksum_errors, s.unrecoverable_pages, s.failed_requests
            )
        }
    );
    o
}

/// Bytes in the largest unit that keeps one decimal meaningful.
fn human(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "K", "M", "G", "T"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n}B")
    } else {
        format!("{v:.1}{}", UNITS[u])
    }
}
