//! `fusionraid eval --tiny`: the report directory is complete and well formed (every
//! experiment's JSON has every series and workload, report.md has every section, every SVG
//! is XML with data marks), and the results do not depend on the number of workers. These
//! tests check the shape of the output, never the numbers.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const EXPERIMENTS: [&str; 12] = [
    "fig10",
    "fig12",
    "fig13",
    "detector",
    "fig14",
    "consumer",
    "fig11b",
    "trace",
    "sensitivity",
    "pitfalls",
    "serw",
    "failslow",
];

fn eval(out: &Path, extra: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_fusionraid"))
        .args(["eval", "--tiny", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .expect("run fusionraid eval");
    assert!(
        o.status.success(),
        "eval failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn read_json(p: &Path) -> Value {
    let s = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every file under `dir` (recursively) by relative path, except timings.json.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out.remove("timings.json");
    out
}

fn check_block(exp: &str, b: &Value) {
    let name = b["name"].as_str().unwrap();
    let series = b["series"].as_array().unwrap();
    let workloads = b["workloads"].as_array().unwrap();
    let cells = b["cells"].as_array().unwrap();
    assert!(!series.is_empty() && !workloads.is_empty(), "{exp}/{name}");
    assert_eq!(cells.len(), series.len() * workloads.len(), "{exp}/{name}");
    for s in series {
        // A light workload may have no request in a tiny run (TensorFlow: 65 IOPS in
        // bursts), but every series shows data for some workload.
        let mut with_data = 0;
        for w in workloads {
            let c = cells
                .iter()
                .find(|c| c["series"] == *s && c["workload"] == *w)
                .unwrap_or_else(|| panic!("{exp}/{name}: no cell for {s} x {w}"));
            let runs = c["runs"].as_u64().unwrap();
            let has_latency = c["p50_us"]["mean"].is_number() && c["p99_us"]["mean"].is_number();
            let has_extra = c["extra"].as_object().is_some_and(|m| !m.is_empty());
            if runs > 0 {
                assert!(
                    has_latency || has_extra,
                    "{exp}/{name}: {s} x {w} is empty: {c}"
                );
                with_data += 1;
            } else {
                assert!(c["p50_us"].is_null() && c["p99_us"].is_null(), "{c}");
            }
        }
        assert!(with_data > 0, "{exp}/{name}: series {s} has no data at all");
    }
}

fn check_svg(name: &str, text: &str) {
    let doc = roxmltree::Document::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(doc.root_element().tag_name().name(), "svg", "{name}");
    let marks = doc
        .descendants()
        .filter(|n| matches!(n.attribute("class"), Some("bar" | "series")))
        .count();
    assert!(marks > 0, "{name} has no data mark");
}

#[test]
fn tiny_eval_writes_a_complete_well_formed_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    eval(&out, &["--jobs", "2"]);

    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["failed"].as_array().unwrap().len(), 0, "{summary}");
    let listed: Vec<&str> = summary["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(listed, EXPERIMENTS);
    assert!(!summary["headline"].as_array().unwrap().is_empty());

    for exp in EXPERIMENTS {
        let j = read_json(&out.join("experiments").join(format!("{exp}.json")));
        assert_eq!(j["experiment"], exp);
        let blocks = j["blocks"].as_array().unwrap();
        assert!(!blocks.is_empty(), "{exp}");
        for b in blocks {
            check_block(exp, b);
        }
        assert!(!j["comparisons"].as_array().unwrap().is_empty(), "{exp}");
        assert!(j["failed"].as_array().unwrap().is_empty(), "{exp}");
        let runs = j["runs"].as_array().unwrap();
        assert!(!runs.is_empty(), "{exp}");
        let busy = runs
            .iter()
            .filter(|id| check_run(&out, id.as_str().unwrap()))
            .count();
        assert!(busy > 0, "{exp}: no run had any request");
    }
    check_report(&out);
    let timings = read_json(&out.join("timings.json"));
    assert_eq!(timings["jobs"], 2);
}

/// Run `id`'s file parses and lists the workloads of its spec, each with a CDF exactly when
/// it had requests. Returns whether any workload had requests.
fn check_run(out: &Path, id: &str) -> bool {
    let r = read_json(&out.join("runs").join(format!("{id}.json")));
    assert_eq!(r["id"], id);
    assert!(r["report"]["requests"]["completed"].is_u64(), "{id}");
    let ws = r["workloads"].as_array().unwrap();
    assert!(!ws.is_empty(), "{id}");
    let sources = match r["spec"]["load"]["kind"].as_str().unwrap() {
        "mix" => 0,
        _ => 1, // the trace comes first
    } + r["spec"]["load"]["workloads"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(ws.len(), sources, "{id}");
    for w in ws {
        let n = w["requests"].as_u64().unwrap();
        assert_eq!(w["cdf"].as_array().unwrap().is_empty(), n == 0, "{id}: {w}");
    }
    ws.iter().any(|w| w["requests"].as_u64().unwrap() > 0)
}

/// `report.md` has every section and links every figure, and every figure is a well-formed
/// SVG with data in it.
fn check_report(out: &Path) {
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for h in [
        "# fusionraid evaluation",
        "## Setup",
        "## Headline: ours vs the paper",
        "## 1. Overall comparison",
        "## 2. Incremental impact",
        "## 3. In-position conversion",
        "## 4. Spike detection and redirection",
        "## 5. Clean vs aged",
        "## 6. Consumer SSD members",
        "## 7. NV-RAID buffer-size sweep",
        "## 8. The real TPC-C trace",
        "## 9. Spike sensitivity",
        "## 10. Pitfalls",
        "## 11. Write offload to HDD logs",
        "## 12. Fail-slow members",
        "## Failed runs",
        "## Files",
    ] {
        assert!(report.contains(h), "report.md lacks '{h}'");
    }
    let figures: Vec<_> = std::fs::read_dir(out.join("figures"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(figures.len() >= 20, "{} figures", figures.len());
    for f in &figures {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(name.ends_with(".svg"), "{name}");
        check_svg(name, &std::fs::read_to_string(f).unwrap());
        assert!(
            report.contains(&format!("](figures/{name})")),
            "{name} not in report.md"
        );
    }
    for line in report.lines().filter(|l| l.starts_with("![")) {
        let file = line.rsplit_once("](").unwrap().1.trim_end_matches(')');
        assert!(out.join(file).is_file(), "report.md links a missing {file}");
    }
}

#[test]
fn results_do_not_depend_on_the_worker_count() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    // consumer: its fleets (another preset, same seeds as dc runs) must not mix with dc ones.
    let only = ["--only", "fig10,consumer,trace"];
    eval(&a, &[&only[..], &["--jobs", "1"]].concat());
    eval(&b, &[&only[..], &["--jobs", "2"]].concat());
    let (fa, fb) = (files(&a), files(&b));
    assert!(fa.keys().any(|k| k.starts_with("runs/")));
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    for (k, v) in &fa {
        if k == "report.md" {
            continue; // names the worker count and the wall time
        }
        assert!(v == &fb[k], "{k} differs between --jobs 1 and --jobs 2");
    }
}

/// An output directory that can not be made is refused before any run (it used to fail
/// only when the report was written, after every run), and runs that fail (a trace that
/// does not parse) make the command fail, with the report naming why.
#[test]
fn bad_output_directory_and_failed_runs_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_fusionraid"))
        .args(["eval", "--tiny", "--only", "fig10", "--out"])
        .arg(&file)
        .output()
        .expect("run fusionraid eval");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("creating the output directory"), "{err}");
    assert!(!err.contains("eval: ["), "no run may start: {err}");

    let trace = dir.path().join("bad.trace");
    std::fs::write(&trace, "not a trace\n").unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_fusionraid"))
        .args(["eval", "--tiny", "--only", "trace", "--trace"])
        .arg(&trace)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run fusionraid eval");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("runs failed"), "{err}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("## Failed runs"), "{report}");
    assert!(report.contains("bad.trace:1"), "{report}");
}
