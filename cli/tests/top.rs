//! `fusionraid top` against a served pool under fio: in tmux at 80x24 it must show the
//! member behind the `consumer` SSD model (which spikes under writes) as spiking and the
//! memory members as healthy, fit the screen, and quit on `q`; without a terminal it prints
//! plain text. `serve` must have logged the spike.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// A tmux server of our own (its own socket name), killed on drop.
struct Tmux {
    name: String,
}

impl Tmux {
    fn new() -> Tmux {
        Tmux {
            name: format!("fusionraid-top-{}", std::process::id()),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut all = vec!["-L", &self.name];
        all.extend(args);
        run("tmux", &all, Duration::from_secs(20))
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "top"]).stdout
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.name, "kill-server"])
            .output();
    }
}

/// Six memory members and one emulated consumer SSD (index 6), aged so its garbage
/// collection runs under a few seconds of writes.
fn spiky_pool(dir: &std::path::Path) -> std::path::PathBuf {
    let mut members: Vec<String> = (0..6).map(|_| "\"mem:256M\"".to_string()).collect();
    members.push("\"emu:consumer,aged:mem:256M\"".into());
    pool_file(
        dir,
        &format!(
            "name = \"t\"\nmembers = [{}]\n[detector]\npreset = \"consumer\"\n{}",
            members.join(", "),
            volume("vol0", "raid5", 4, "128M", false)
        ),
    )
}

fn fio_load(uri: String, seconds: u32) -> std::thread::JoinHandle<Output> {
    std::thread::spawn(move || {
        run(
            "fio",
            &[
                "--name=load",
                "--ioengine=nbd",
                &format!("--uri={uri}"),
                "--rw=randwrite",
                "--bs=64k",
                "--iodepth=16",
                "--size=100M",
                "--time_based",
                &format!("--runtime={seconds}"),
            ],
            Duration::from_secs(120),
        )
    })
}

/// The member row of `index` on a screen (tables put the index first, after the border).
fn member_row(screen: &str, index: usize) -> Option<&str> {
    screen.lines().find(|l| {
        let t = l.trim_start_matches(['│', ' ']);
        t.split_whitespace().next() == Some(&index.to_string()) && t.contains(':')
    })
}

/// Watches top's screen until member 6 (the consumer SSD) has shown as spiking and member 0
/// (memory) as healthy, for up to 40 s; returns the last screen.
fn watch_spiking_and_healthy(tmux: &Tmux) -> String {
    let end = Instant::now() + Duration::from_secs(40);
    let mut screen = String::new();
    let mut saw_spiking = false;
    let mut saw_healthy = false;
    while Instant::now() < end && !(saw_spiking && saw_healthy) {
        std::thread::sleep(Duration::from_millis(250));
        screen = tmux.screen();
        saw_spiking |= member_row(&screen, 6).is_some_and(|r| r.contains("spiking"));
        saw_healthy |= member_row(&screen, 0).is_some_and(|r| r.contains("healthy"));
    }
    assert!(
        saw_spiking,
        "top never showed the consumer-SSD member as spiking; last screen:\n{screen}"
    );
    assert!(
        saw_healthy,
        "the memory member never showed healthy:\n{screen}"
    );
    screen
}

/// Everything fits 80x24: the title, every member, the volume, the steering line.
fn assert_fits_80x24(screen: &str) {
    assert!(screen.lines().count() <= 24, "{screen}");
    assert!(
        screen.lines().all(|l| l.chars().count() <= 80),
        "a line is wider than 80:\n{screen}"
    );
    for want in ["fusionraid top", "vol0", "steering:", "q: quit"] {
        assert!(
            screen.contains(want),
            "no {want:?} on the screen:\n{screen}"
        );
    }
    for i in 0..7 {
        assert!(
            member_row(screen, i).is_some(),
            "no row for member {i}:\n{screen}"
        );
    }
}

/// Not a terminal: plain text, one view with --once.
fn check_plain_once(s: &Serve) {
    let out = run(
        BIN,
        &[
            "top",
            "--socket",
            s.status.to_str().unwrap(),
            "--once",
            "--interval",
            "0.5",
        ],
        Duration::from_secs(30),
    )
    .ok("top --once");
    assert!(
        out.stdout.starts_with("fusionraid top: pool t"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("P99 RECENT") && out.stdout.contains("vol0"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains('\x1b'), "escape codes in plain output");
}

#[test]
fn top_in_tmux_shows_the_spiking_member_and_quits_on_q() {
    if !need("top", &["tmux", "fio"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = Serve::start(&spiky_pool(dir.path()), &[]);
    let fio = fio_load(s.uri("vol0"), 25);

    let tmux = Tmux::new();
    let cmd = format!("{BIN} top --socket '{}' --interval 0.5", s.status.display());
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "top",
        "-x",
        "80",
        "-y",
        "24",
        &cmd,
    ])
    .ok("tmux new-session");
    let screen = watch_spiking_and_healthy(&tmux);
    assert_fits_80x24(&screen);

    tmux.run(&["send-keys", "-t", "top", "q"])
        .ok("tmux send-keys");
    wait_for("top to quit on q", Duration::from_secs(10), || {
        !tmux.run(&["has-session", "-t", "top"]).status.success()
    });

    check_plain_once(&s);

    fio.join().unwrap().ok("fio");
    // The status document (which the metrics endpoint renders too) counts the spikes and
    // the time spent in them.
    let j: serde_json::Value = serde_json::from_str(&s.status_text(true)).unwrap();
    let m6 = &j["snapshot"]["members"][6];
    assert!(m6["spikes"].as_u64().unwrap() > 0, "{m6}");
    assert!(m6["unresponsive_seconds"].as_f64().unwrap() > 0.0, "{m6}");
    assert!(m6["write_latency"]["count"].as_u64().unwrap() > 0, "{m6}");
    // A scrub shows as a progress bar, and serve logs it.
    let sock = s.status.to_str().unwrap().to_string();
    run(BIN, &["scrub", "--socket", &sock], Duration::from_secs(30)).ok("fusionraid scrub");
    let out = run(
        BIN,
        &["top", "--socket", &sock, "--once", "--interval", "0.3"],
        Duration::from_secs(30),
    )
    .ok("top --once during a scrub");
    assert!(
        out.stdout.contains("vol0 scrub ["),
        "no scrub progress bar:\n{}",
        out.stdout
    );
    std::thread::sleep(Duration::from_millis(600));
    let log = s.stop();
    assert!(
        log.contains("scrub: "),
        "serve did not log the scrub:\n{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("member spiking") && l.contains("member=6")),
        "serve did not log the spike:\n{log}"
    );
}
