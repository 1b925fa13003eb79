//! The paper's evaluation (FusionRAID, FAST'21, §5) in the simulator: experiment definitions,
//! a parallel runner, analysis against the paper's numbers, and a report directory with raw
//! JSON per run, a Markdown summary and SVG charts.
//!
//! Files: `size` (how many and how long), `spec` (one run as data), `experiments` (the runs
//! of each experiment), `runner` (worker pool), `fleets` (aged device fleets shared between
//! runs of one pool and seed), `pitfalls` (the `pitfalls` experiment's configurations and
//! its single-SSD driver), `serw` (the `serw` experiment's arms and figures), `failslow`
//! (the `failslow` experiment's schemes, cases and figures), `sandook` (the `sandook`
//! experiment's load searches, tenants and steering variants), `result` (what a run leaves), `analyze/`
//! (aggregation, one file per experiment), `paper` (the paper's numbers), `svg` and `plot`
//! (charts), `report` (Markdown), `output` (the directory).
//!
//! ```no_run
//! use fusionraid_sim::eval::{self, ExpId, Plan, Size, SizeName};
//! let plan = Plan::new(Size::of(SizeName::Tiny), 1, None, ExpId::ALL.to_vec());
//! let outcomes = eval::run_all(&plan.all_runs(), 2, &|_| {});
//! eval::write_output("eval-out".as_ref(), &plan, &outcomes, &Default::default()).unwrap();
//! ```

pub mod analyze;
pub mod experiments;
pub mod failslow;
mod fleets;
mod output;
pub mod paper;
pub mod pitfalls;
pub mod plot;
pub mod report;
pub mod result;
pub mod runner;
pub mod sandook;
pub mod serw;
pub mod size;
pub mod spec;
pub mod svg;

pub use experiments::{ExpId, Plan};
pub use output::write_output;
pub use report::Context;
pub use result::RunResult;
pub use runner::{Outcome, RunEvent, run_all};
pub use size::{Size, SizeName};
pub use spec::RunSpec;

/// The TPC-C excerpt shipped next to the repository (`shared/data/traces/`), if present.
pub fn default_trace() -> Option<std::path::PathBuf> {
    let p = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/traces/tpcc-small.trace"
    ));
    p.canonicalize().ok()
}
