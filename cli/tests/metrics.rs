//! `serve --metrics`: scraped during a fio run, checked with `promtool check metrics`, and
//! counters must grow between two scrapes under load.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;

/// `GET /metrics` over plain HTTP/1.0; returns (headers, body).
fn scrape(port: u16, accept: Option<&str>) -> (String, String) {
    let mut c = TcpStream::connect(("127.0.0.1", port)).expect("metrics endpoint");
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(
        c,
        "GET /metrics HTTP/1.0\r\nHost: localhost\r\n{accept}\r\n"
    )
    .unwrap();
    let mut all = String::new();
    c.read_to_string(&mut all).unwrap();
    let (head, body) = all.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(
        head.starts_with("HTTP/1.") && head.contains(" 200 "),
        "{head}"
    );
    (head.to_string(), body.to_string())
}

/// Samples by their full name with labels, e.g. `fusionraid_requests_total` or
/// `fusionraid_volume_requests_total{volume="vol0",op="write"}`.
fn samples(body: &str) -> HashMap<String, f64> {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

fn promtool_check(dir: &std::path::Path, body: &str, name: &str) {
    let f = dir.join(name);
    std::fs::write(&f, body).unwrap();
    let out = run(
        "sh",
        &["-c", &format!("promtool check metrics < '{}'", f.display())],
        Duration::from_secs(60),
    );
    assert!(
        out.status.success() && out.stdout.trim().is_empty() && out.stderr.trim().is_empty(),
        "promtool check metrics found problems:\n{}\n{}",
        out.stdout,
        out.stderr
    );
}

fn get(s: &HashMap<String, f64>, k: &str) -> f64 {
    *s.get(k)
        .unwrap_or_else(|| panic!("no sample {k} in the scrape"))
}

/// Between two scrapes under load (`a`, then `b`): the counters of the load grow, the
/// families the issue asks for are there, and histogram buckets end at the count.
fn check_samples(a: &HashMap<String, f64>, b: &HashMap<String, f64>) {
    let grows = [
        "fusionraid_requests_total".to_string(),
        r#"fusionraid_volume_requests_total{volume="vol0",op="write"}"#.into(),
        r#"fusionraid_volume_requests_total{volume="vol0",op="read"}"#.into(),
        r#"fusionraid_volume_written_bytes_total{volume="vol0"}"#.into(),
        r#"fusionraid_volume_request_latency_seconds_count{volume="vol0",op="write"}"#.into(),
        r#"fusionraid_volume_request_latency_seconds_sum{volume="vol0",op="read"}"#.into(),
        r#"fusionraid_member_writes_total{member="0",name="mem:256M"}"#.into(),
        r#"fusionraid_member_written_bytes_total{member="0",name="mem:256M"}"#.into(),
        r#"fusionraid_member_latency_seconds_count{member="0",name="mem:256M",op="write"}"#.into(),
        r#"fusionraid_member_latency_seconds_bucket{member="0",name="mem:256M",op="write",le="+Inf"}"#.into(),
        "fusionraid_journal_commits_total".into(),
        "fusionraid_uptime_seconds".into(),
    ];
    for k in &grows {
        assert!(
            get(b, k) > get(a, k),
            "{k} did not grow under load: {} then {}",
            get(a, k),
            get(b, k)
        );
    }
    // The families the issue asks for are there.
    for k in [
        r#"fusionraid_member_state{member="3",name="mem:256M",state="healthy"}"#,
        r#"fusionraid_member_spikes_total{member="3",name="mem:256M"}"#,
        r#"fusionraid_member_unresponsive_seconds_total{member="3",name="mem:256M"}"#,
        r#"fusionraid_member_stragglers{member="3",name="mem:256M"}"#,
        r#"fusionraid_member_queue_depth{member="3",name="mem:256M"}"#,
        r#"fusionraid_member_errors_total{member="3",name="mem:256M"}"#,
        r#"fusionraid_volume_mapped_bytes{volume="vol0"}"#,
        r#"fusionraid_volume_raid_bytes{volume="vol0"}"#,
        r#"fusionraid_volume_replicated_bytes{volume="vol0"}"#,
        r#"fusionraid_volume_free_bytes{volume="vol0"}"#,
        r#"fusionraid_volume_conversion_backlog{volume="vol0"}"#,
        "fusionraid_redirected_reads_total",
        "fusionraid_reconstructed_reads_total",
        "fusionraid_write_amplification_ratio",
        "fusionraid_journal_commit_seconds_total",
        "fusionraid_recovery_replayed_records",
    ] {
        get(b, k);
    }
    assert_eq!(
        get(
            b,
            r#"fusionraid_member_state{member="3",name="mem:256M",state="healthy"}"#
        ),
        1.0
    );
    // Histogram buckets are cumulative and end at the count.
    let inf = get(
        b,
        r#"fusionraid_member_latency_seconds_bucket{member="0",name="mem:256M",op="write",le="+Inf"}"#,
    );
    let count = get(
        b,
        r#"fusionraid_member_latency_seconds_count{member="0",name="mem:256M",op="write"}"#,
    );
    assert_eq!(inf, count);
}

#[test]
fn metrics_scraped_under_fio_pass_promtool_and_move_with_the_load() {
    if !need("metrics", &["fio", "promtool"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = mem_pool(
        dir.path(),
        7,
        "256M",
        &volume("vol0", "raid5", 4, "128M", false),
    );
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let s = Serve::start(&p, &["--metrics", &addr]);

    // Before any load: the endpoint answers and the text is valid.
    let (_, idle) = scrape(port, None);
    promtool_check(dir.path(), &idle, "idle.prom");

    let uri = s.uri("vol0");
    let fio = std::thread::spawn(move || {
        run(
            "fio",
            &[
                "--name=load",
                "--ioengine=nbd",
                &format!("--uri={uri}"),
                "--rw=randrw",
                "--bs=4k",
                "--iodepth=8",
                "--size=64M",
                "--time_based",
                "--runtime=8",
            ],
            Duration::from_secs(120),
        )
    });
    std::thread::sleep(Duration::from_secs(3));
    let (head, first) = scrape(port, None);
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    std::thread::sleep(Duration::from_secs(2));
    let (_, second) = scrape(port, None);
    fio.join().unwrap().ok("fio");
    promtool_check(dir.path(), &first, "first.prom");
    promtool_check(dir.path(), &second, "second.prom");

    check_samples(&samples(&first), &samples(&second));

    dashboard_uses_only_served_metrics(&second);

    // OpenMetrics when the scraper asks for it.
    let (head, om) = scrape(port, Some("application/openmetrics-text; version=1.0.0"));
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(om.trim_end().ends_with("# EOF"), "no # EOF:\n{om}");
    assert!(om.contains("# UNIT fusionraid_member_latency_seconds seconds"));
    s.stop();
}

/// Every `fusionraid_*` name in docs/grafana/fusionraid.json is one the endpoint serves
/// (progress gauges exist only while a rebuild or scrub has run).
fn dashboard_uses_only_served_metrics(scrape: &str) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/grafana/fusionraid.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let _: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    // Sample names, and family names (from `# TYPE name kind`).
    let served: std::collections::HashSet<&str> = scrape
        .lines()
        .filter_map(|l| match l.strip_prefix("# TYPE ") {
            Some(t) => t.split(' ').next(),
            None if l.starts_with('#') => None,
            None => l.split(['{', ' ']).next(),
        })
        .collect();
    let only_while_running = [
        "fusionraid_volume_rebuild_progress_ratio",
        "fusionraid_volume_scrub_progress_ratio",
    ];
    let mut rest = text.as_str();
    let mut checked = 0;
    while let Some(i) = rest.find("fusionraid_") {
        rest = &rest[i..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        rest = &rest[end..];
        if only_while_running.contains(&name) {
            continue;
        }
        assert!(
            served.contains(name),
            "the dashboard queries {name}, which is not served"
        );
        checked += 1;
    }
    assert!(
        checked > 20,
        "only {checked} metric names found in the dashboard"
    );
}

#[test]
fn metrics_are_off_unless_asked_and_the_pool_file_may_ask() {
    let dir = tempfile::tempdir().unwrap();
    let vol = volume("v", "raid5", 4, "32M", false);
    let p = mem_pool(dir.path(), 5, "64M", &vol);
    let mut s = Serve::start(&p, &[]);
    s.guard.stop(Duration::from_secs(30));
    let banner = s.stdout.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(!banner.contains("metrics:"), "{banner}");

    let port = free_port();
    let p = mem_pool(
        dir.path(),
        5,
        "64M",
        &format!("{vol}\n[serve]\nmetrics = \"127.0.0.1:{port}\"\n"),
    );
    let s = Serve::start(&p, &[]);
    let (_, body) = scrape(port, None);
    assert!(body.contains("fusionraid_pool_info{"), "{body}");
    s.stop();
}
