//! `fusionraid plan`: the over-provisioning planner on a pool file and on the command line,
//! and `create`'s warning that uses the same model.

mod common;

use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(60);

/// Eight emulated `dc` members of 4 GiB (in memory: nothing is allocated by `plan`) and one
/// RAID5 4+1 volume of 1 GiB: the planner's validation pool (docs/EVALUATION.md).
fn dc_pool(dir: &std::path::Path) -> std::path::PathBuf {
    let members: Vec<String> = (0..8).map(|_| "\"emu:dc:mem:4G\"".to_string()).collect();
    pool_file(
        dir,
        &format!(
            "members = [{}]\n{}",
            members.join(", "),
            volume("v", "raid5", 5, "1G", false)
        ),
    )
}

#[test]
fn plan_prices_a_pool_file_and_recommends_a_share() {
    let dir = tempfile::tempdir().unwrap();
    let p = dc_pool(dir.path());
    let pool = p.to_str().unwrap();
    let out = run(BIN, &["plan", pool, "--target-iops", "20k"], T);
    assert!(out.status.success(), "{}", out.stderr);
    let text = &out.stdout;
    for needle in [
        "volume v (raid5 4+1, 1 GiB",
        "8 x dc",
        "auto (",
        "recommended: spare",
        "model error against the simulator",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in:\n{text}");
    }

    let out = run(
        BIN,
        &[
            "plan",
            pool,
            "--shares",
            "0,0.1,0.25,0.5",
            "--json",
            "--target-wa",
            "4",
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let points = doc["volumes"][0]["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    let num = |x: &serde_json::Value, k: &str| x[k].as_f64().unwrap();
    // More spare: fewer device writes per user write and more IOPS.
    for w in points.windows(2) {
        assert!(num(&w[1], "written") < num(&w[0], "written"), "{w:?}");
        assert!(num(&w[1], "iops") > num(&w[0], "iops"), "{w:?}");
    }
    // The recommendation is the smallest share meeting the target.
    let rec = doc["recommended"][0]
        .as_f64()
        .expect("a share meets 4 bytes per byte");
    let meets = |x: &serde_json::Value| num(x, "written") * num(x, "flash_wa") <= 4.0;
    let first = points.iter().find(|x| meets(x)).unwrap();
    assert_eq!(rec, num(first, "spare"));
}

#[test]
fn plan_on_the_command_line_needs_a_drive_model() {
    let base = [
        "plan",
        "--members",
        "8",
        "--member-size",
        "4G",
        "--volume",
        "raid5:5:1G",
    ];
    let out = run(BIN, &base, T);
    assert!(!out.status.success());
    assert!(out.stderr.contains("--device"), "{}", out.stderr);
    let mut args = base.to_vec();
    args.extend(["--device", "consumer", "--shares", "0.25,auto"]);
    let out = run(BIN, &args, T);
    assert!(out.status.success(), "{}", out.stderr);
    assert!(out.stdout.contains("8 x consumer"), "{}", out.stdout);
    let out = run(
        BIN,
        &[
            "plan",
            "--members",
            "8",
            "--member-size",
            "4G",
            "--volume",
            "raid9:5:1G",
            "--device",
            "dc",
        ],
        T,
    );
    assert!(!out.status.success());
}

#[test]
fn create_warns_with_the_predicted_cost_of_a_small_share() {
    let dir = tempfile::tempdir().unwrap();
    let members: Vec<String> = (0..5).map(|i| format!("\"file:d{i}.img\"")).collect();
    let p = pool_file(
        dir.path(),
        &format!(
            "members = [{}]\nmember_size = \"96M\"\n{}spare_fraction = 0.1\n",
            members.join(", "),
            volume("v", "raid5", 4, "32M", false)
        ),
    );
    let out = run(BIN, &["create", p.to_str().unwrap()], T);
    assert!(out.status.success(), "{}", out.stderr);
    assert!(
        out.stderr.contains("spare share of 0.1")
            && out.stderr.contains("predicted to cost")
            && out.stderr.contains("fusionraid plan"),
        "{}",
        out.stderr
    );
}
