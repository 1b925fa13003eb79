//! Model-based integrity test of every baseline scheme (4-RAID5, RAID50, LogRAID, ToleRAID,
//! NV-RAID, 4-RAIDM, sit-out, Sandook), in data mode, on the shared deterministic driver: random reads,
//! writes of every size and alignment, overlapping requests, trims, write-zeroes, flushes,
//! injected latency spikes and member failures up to the scheme's tolerance, with each
//! scheme's own machinery pushed hard (tiny NV buffers, little log spare so cleaning runs,
//! batching delays, aggressive slow-disk detection so reads get rebuilt).
//!
//! The oracle follows block-device semantics: a read returns, page by page, either what the last
//! write acknowledged before the read was submitted left there, or what a write that overlapped
//! the read in time wrote; trimmed pages may read as anything. The schemes order overlapping
//! writes, so acknowledged state is applied in acknowledgement order. After the run every volume
//! is read back and compared exactly.
//!
//! Seeds: `FUSIONRAID_SEEDS=N` runs seeds 0..N per scheme (default 100), `FUSIONRAID_SEED=S`
//! replays one, `FUSIONRAID_SCHEME=name` restricts to one scheme. A failure prints the scheme,
//! the seed and the scenario.
//!
//! The files: `scenario` (what a seed runs), `oracle` (what a read may return), `model` (a
//! data-mode run), `requests` (its random requests), `verify` (checking replies and the
//! final read-back), `size_only` (the same scenario without bytes); the driver is
//! `tests/common`.

#[path = "../common/mod.rs"]
mod common;
mod model;
mod oracle;
mod requests;
mod scenario;
mod size_only;
mod verify;

use fusionraid_core::scheme::baselines;

use model::run;
use scenario::scenario;
use size_only::run_size_only;

fn run_scheme(scheme: &'static str) {
    if let Ok(only) = std::env::var("FUSIONRAID_SCHEME")
        && baselines::canonical(&only).ok() != Some(scheme)
    {
        return;
    }
    let seeds = common::seeds("FUSIONRAID_SEED", "FUSIONRAID_SEEDS", 100);
    for &seed in &seeds {
        let sc = scenario(scheme, seed);
        let result = std::panic::catch_unwind(|| {
            run(&sc);
            if seed % 4 == 0 {
                run_size_only(&sc);
            }
        });
        if let Err(e) = result {
            eprintln!(
                "FAILED {scheme} seed {seed}: replay with FUSIONRAID_SEED={seed} FUSIONRAID_SCHEME={scheme} cargo test -p fusionraid-core --test baselines_model\nscenario: {sc:?}"
            );
            std::panic::resume_unwind(e);
        }
    }
    eprintln!("{scheme}: {} seeds passed", seeds.len());
}

#[test]
fn raid5_model() {
    run_scheme("4-raid5");
}
#[test]
fn raid50_model() {
    run_scheme("raid50");
}
#[test]
fn lograid_model() {
    run_scheme("lograid");
}
#[test]
fn toleraid_model() {
    run_scheme("toleraid");
}
#[test]
fn nvraid_model() {
    run_scheme("nvraid");
}
#[test]
fn raidm_model() {
    run_scheme("4-raidm");
}
#[test]
fn sandook_model() {
    run_scheme("sandook");
}
#[test]
fn sitout_model() {
    run_scheme("sitout");
}
