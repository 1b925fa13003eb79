//! `fusionraid status`: ask a running `serve` for its status and show it the way
//! `zpool status` shows a pool: state, members, volumes, space, backlog, then notes.

use std::fmt::Write;
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args as ClapArgs;
use fusionraid_io::driver::{MemberState, StatusSnapshot};

use crate::status_doc::StatusDoc;

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
    let pool = args.pool.as_ref().or(args.pool_flag.as_ref());
    let socket = socket_for(args.socket.as_ref(), pool)?;
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
    let mut o = String::new();
    header(&mut o, doc);
    members(&mut o, doc);
    steering(&mut o, doc);
    volumes(&mut o, doc);
    activity(&mut o, &doc.snapshot);
    metadata(&mut o, &doc.snapshot);
    footer(&mut o, doc);
    o
}

/// The pool, its state and what it runs.
fn header(o: &mut String, doc: &StatusDoc) {
    let s = &doc.snapshot;
    let _ = writeln!(o, "  pool: {}", doc.pool);
    let _ = writeln!(o, "    id: {}", doc.uuid);
    let _ = writeln!(o, " state: {}", pool_state(s));
    let _ = writeln!(
        o,
        "scheme: {} (layout {}, block {})",
        s.scheme,
        doc.layout,
        human(doc.block_size)
    );
    let _ = writeln!(o, "uptime: {:.0} s", s.uptime_s);
}

/// The member table, under the pool's own line.
fn members(o: &mut String, doc: &StatusDoc) {
    let s = &doc.snapshot;
    let _ = writeln!(o, "config:\n");
    let w = s
        .members
        .iter()
        .map(|m| m.name.len() + 2)
        .max()
        .unwrap_or(4)
        .max(doc.pool.len());
    // INDEX: the number `fusionraid fail N` and `replace N SPEC` take. WRITTEN: bytes this
    // `serve` wrote to the member (every member has it, the measure of use when the device
    // reports no wear). WEAR: the share of rated endurance the device reports used (an
    // emulated SSD's model, an NVMe drive's SMART "Percentage Used"), "-" when none.
    let _ = writeln!(
        o,
        "\t{:<w$}  {:>5}  {:<4} {:<8} {:>6} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>6}",
        "NAME",
        "INDEX",
        "TIER",
        "STATE",
        "SPIKES",
        "STRAG",
        "READS",
        "WRITES",
        "READ",
        "WRITTEN",
        "TRIMMED",
        "ERRORS",
        "WEAR"
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
            "\t  {:<w2$}  {:>5}  {:<4} {:<8} {:>6} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>6}",
            m.name,
            m.index,
            m.tier,
            state_word(m.state),
            m.spikes,
            m.stragglers,
            m.reads,
            m.writes,
            human(m.bytes_read),
            human(m.bytes_written),
            human(m.bytes_trimmed),
            m.errors,
            m.wear.map_or("-".into(), |x| format!("{:.2}%", x * 100.0)),
            w2 = w - 2
        );
        if let Some(b) = m.device_written_bytes {
            let _ = writeln!(o, "\t    device reports {} written over its life", human(b));
        }
        for n in &m.notes {
            let _ = writeln!(o, "\t    {n}");
        }
    }
}

/// Each member as steering sees it (sandook, fusionraid+): mode, shares, rate factor.
fn steering(o: &mut String, doc: &StatusDoc) {
    let s = &doc.snapshot;
    if s.members.iter().all(|m| m.steering.is_none()) {
        return;
    }
    let _ = writeln!(o, "\nmodes:\n");
    let _ = writeln!(
        o,
        "\t{:>5}  {:<6} {:>8} {:>8} {:>6}",
        "INDEX", "MODE", "READ WT", "WRITE WT", "RATE"
    );
    for m in &s.members {
        if let Some(st) = &m.steering {
            let mode = if st.writes_allowed { "write" } else { "read" };
            let _ = writeln!(
                o,
                "\t{:>5}  {:<6} {:>8.3} {:>8.3} {:>6.3}",
                m.index, mode, st.read_weight, st.write_weight, st.rate_factor
            );
        }
    }
}

/// The volume table, with each volume's rebuild and scrub in words.
fn volumes(o: &mut String, doc: &StatusDoc) {
    let _ = writeln!(o, "\nvolumes:\n");
    let _ = writeln!(
        o,
        "\t{:<12} {:<12} {:>10} {:>10} {:>10} {:>11} {:>10} {:>8} {:>10}",
        "NAME", "LEVEL", "SIZE", "MAPPED", "RAID", "REPLICATED", "FREE", "BACKLOG", "METADATA"
    );
    for v in &doc.snapshot.volumes {
        let name = doc.volume_names.get(v.index as usize).unwrap_or(&v.name);
        let _ = writeln!(
            o,
            "\t{:<12} {:<12} {:>10} {:>10} {:>10} {:>11} {:>10} {:>8} {:>10}",
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
}

/// Requests, steering around slow members, background work and integrity counters.
fn activity(o: &mut String, s: &StatusSnapshot) {
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
    let c = &s.counters;
    if c.offloaded_writes > 0 || s.members.iter().any(|m| m.tier == "hdd") {
        let _ = writeln!(
            o,
            "offload: {} replica writes to HDD logs ({}), {} reads served from the logs",
            c.offloaded_writes,
            human(c.offloaded_bytes),
            c.log_reads
        );
    }
    let _ = writeln!(
        o,
        "integrity: {} checksum errors, {} blocks repaired, {} parities rewritten, {} pages unrecoverable",
        s.checksum_errors, s.repaired_blocks, s.parity_rewrites, s.unrecoverable_pages
    );
}

/// The journal, and what recovery found at start.
fn metadata(o: &mut String, s: &StatusSnapshot) {
    match &s.metadata {
        Some(m) => {
            let _ = writeln!(
                o,
                "metadata: journaled; {} commits ({} failed), {} checkpoints (last {}), {} journal blocks, {} records, {} freed stripes awaiting commit",
                m.commits,
                m.failed_commits,
                m.checkpoints,
                human(m.last_checkpoint_bytes),
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
}

/// Latency, exports, missing members, notes and the errors line.
fn footer(o: &mut String, doc: &StatusDoc) {
    let s = &doc.snapshot;
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
}

/// Bytes with their unit, in the largest binary unit that keeps the number at least 1:
/// "512 B", "64 KiB", "1.5 GiB" (one decimal, dropped when it is 0).
pub fn human(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    let t = format!("{v:.1}");
    let t = t.strip_suffix(".0").unwrap_or(&t);
    format!("{t} {}", UNITS[u])
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusionraid_io::driver::status::{LatencyView, MetadataView, VolumeView};
    use fusionraid_io::driver::{MemberStatus, StatusSnapshot};

    fn member(index: usize, state: MemberState) -> MemberStatus {
        MemberStatus {
            index,
            name: format!("emu:consumer:file:d{index}.img"),
            tier: if index == 12 { "hdd" } else { "ssd" }.into(),
            state,
            size_bytes: 2 << 30,
            inflight: 0,
            stragglers: 0,
            spikes: 0,
            reads: 10,
            writes: 20,
            bytes_read: 1536 << 20,
            bytes_written: 123_457,
            bytes_trimmed: 64 << 20,
            errors: 0,
            notes: vec![],
            read_latency: Default::default(),
            write_latency: Default::default(),
            unresponsive_seconds: 0.0,
            steering: None,
            background_bytes: 0,
            // An emulated SSD reports its wear; the HDD does not.
            wear: (index != 12).then_some(0.0123),
            // Member 0 stands for an NVMe drive that reports its lifetime writes.
            device_written_bytes: (index == 0).then_some(3 << 39),
        }
    }

    fn doc() -> StatusDoc {
        StatusDoc {
            pool: "demo".into(),
            uuid: "u".into(),
            layout: "mols".into(),
            block_size: 65536,
            exports: vec![],
            volume_names: vec!["vol0".into()],
            missing: vec![],
            notes: vec![],
            snapshot: StatusSnapshot {
                scheme: "fusionraid".into(),
                uptime_s: 1.0,
                members: vec![
                    member(0, MemberState::Healthy),
                    member(7, MemberState::Failed),
                    member(12, MemberState::Spiking),
                ],
                volumes: vec![VolumeView {
                    index: 0,
                    name: "vol0".into(),
                    level: "raid5 4+1".into(),
                    size_bytes: 3 << 30,
                    mapped_bytes: 1_234_567,
                    raid_bytes: 999,
                    replicated_bytes: 0,
                    free_bytes: (9 << 30) + (800 << 20),
                    conversion_backlog: 2,
                    metadata_bytes: 537_293,
                    ..Default::default()
                }],
                inflight_requests: 0,
                inflight_ios: 0,
                requests: 5,
                failed_requests: 0,
                redirected_writes: 0,
                steered_pair_sets: 0,
                redirected_reads: 0,
                reconstructed_reads: 0,
                checksum_errors: 0,
                unrecoverable_pages: 0,
                repaired_blocks: 0,
                parity_rewrites: 0,
                conversions: 0,
                write_amplification: 1.0,
                read_latency: LatencyView::default(),
                write_latency: LatencyView::default(),
                flush_latency: LatencyView::default(),
                metadata: Some(MetadataView {
                    last_checkpoint_bytes: 262_145,
                    ..Default::default()
                }),
                counters: Default::default(),
            },
        }
    }

    /// Issue 19: every member line says the index `fail N` / `replace N` take.
    #[test]
    fn every_member_line_shows_its_index() {
        let text = render(&doc());
        for (i, name) in [(0, "d0.img"), (7, "d7.img"), (12, "d12.img")] {
            let line = text.lines().find(|l| l.contains(name)).unwrap();
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(words[1], i.to_string(), "{line}");
            assert_eq!(words[2], if i == 12 { "hdd" } else { "ssd" }, "{line}");
            // Issue 22: the last column is the wear the device reports, "-" when none.
            let wear = if i == 12 { "-" } else { "1.23%" };
            assert_eq!(words.last(), Some(&wear), "{line}");
            // Every member, reporting wear or not, shows what this serve wrote to it.
            let n = words.len();
            assert_eq!(words[n - 6..n - 4], ["120.6", "KiB"], "{line}");
        }
        assert!(text.contains("INDEX") && text.contains("WEAR"), "{text}");
    }

    /// Issue 22: a device that reports its lifetime writes gets a line under its row;
    /// the others none.
    #[test]
    fn device_reported_writes_follow_the_member_line() {
        let text = render(&doc());
        let lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().position(|l| l.contains("d0.img")).unwrap();
        assert_eq!(
            lines[at + 1].trim(),
            "device reports 1.5 TiB written over its life",
            "{text}"
        );
        assert_eq!(text.matches("written over its life").count(), 1, "{text}");
    }

    /// Issue 22: a document from a `serve` that predates device-reported writes still reads.
    #[test]
    fn members_without_device_writes_in_the_document_still_parse() {
        let mut v = serde_json::to_value(member(0, MemberState::Healthy)).unwrap();
        v.as_object_mut().unwrap().remove("device_written_bytes");
        let m: MemberStatus = serde_json::from_value(v).unwrap();
        assert_eq!(m.device_written_bytes, None);
        assert_eq!(m.wear, Some(0.0123));
    }

    /// Issue 19: byte counts carry units, never bare numbers ("last 262145", "999B", "1.2M").
    #[test]
    fn byte_counts_carry_units() {
        let text = render(&doc());
        for want in [
            "1.5 GiB",   // member bytes read
            "120.6 KiB", // member bytes written (123,457)
            "999 B",     // RAID bytes
            "1.2 MiB",   // mapped
            "9.8 GiB",   // free
            "524.7 KiB", // metadata
            "last 256 KiB",
            "block 64 KiB",
        ] {
            assert!(text.contains(want), "no {want:?} in\n{text}");
        }
        for bare in ["262145", "123457", "1234567", "537293"] {
            assert!(!text.contains(bare), "bare {bare} in\n{text}");
        }
        assert_eq!(human(0), "0 B");
        assert_eq!(human(1024), "1 KiB");
        assert_eq!(human(3 << 40), "3 TiB");
    }
}
