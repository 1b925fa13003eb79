//! Wear-aware placement in `serve` (issue 22 part 4): with `wear_gap` in the pool file the
//! event loop feeds the members' reported wear to the engine, and `status` names the
//! members the wear ladder holds back; without it nothing is held back.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;

/// Eight emulated `dc` SSDs (they report their model's wear), one RAID5 volume.
fn pool(dir: &Path, wear_gap: Option<f64>) -> std::path::PathBuf {
    let members: Vec<String> = (0..8).map(|_| "\"emu:dc:mem:256M\"".to_string()).collect();
    let gap = wear_gap.map_or(String::new(), |g| format!("wear_gap = {g}\n"));
    pool_file(
        dir,
        &format!(
            "name = \"w\"\nmembers = [{}]\n{gap}{}",
            members.join(", "),
            volume("v", "raid5", 5, "64M", false)
        ),
    )
}

/// Members whose status notes say the wear ladder holds them back.
fn held_back(s: &Serve) -> Vec<usize> {
    let v: serde_json::Value = serde_json::from_str(&s.status_text(true)).expect("status JSON");
    v["snapshot"]["members"]
        .as_array()
        .expect("members")
        .iter()
        .filter(|m| {
            m["notes"].as_array().is_some_and(|n| {
                n.iter()
                    .any(|x| x.as_str().is_some_and(|x| x.contains("wear-aware")))
            })
        })
        .map(|m| m["index"].as_u64().unwrap() as usize)
        .collect()
}

#[test]
fn the_wear_ladder_holds_back_members_only_when_the_pool_asks_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = Serve::start(&pool(dir.path(), Some(0.05)), &[]);
    // Fresh members wear alike: every member but the most worn is too close behind the one
    // ahead, and the ladder holds back a quarter of the pool (2 of 8), the least worn first.
    let mut held = Vec::new();
    wait_for(
        "the ladder to hold members back",
        Duration::from_secs(30),
        || {
            held = held_back(&s);
            !held.is_empty()
        },
    );
    assert_eq!(held.len(), 2, "{held:?}");
    let v: serde_json::Value = serde_json::from_str(&s.status_text(true)).unwrap();
    assert!(
        v["snapshot"]["members"][0]["wear"].as_f64().is_some(),
        "emulated SSDs report wear"
    );
    s.stop();

    let dir = tempfile::tempdir().unwrap();
    let s = Serve::start(&pool(dir.path(), None), &[]);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(held_back(&s).is_empty());
    s.stop();
}
