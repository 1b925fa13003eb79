//! Synthetic workloads: the eight applications of FusionRAID's Table 4 as deterministic,
//! bursty record generators, tenants described by their knobs alone (`synthetic.rs`), a
//! time-ordered merge of several of them, and the paper's "instantaneous complementarity"
//! measure of such mixes.
//!
//! ```
//! use fusionraid_sim::workload::{Mix, Workload};
//! let mix = Mix::of_workloads(&[Workload::Tpcc, Workload::Proxy], 42, 10_000_000);
//! assert!(mix.count() > 0);
//! ```

mod address;
mod arrivals;
mod catalog;
mod complementarity;
mod generator;
mod member;
mod mix;
mod sizes;
mod spec;
mod synthetic;

pub use address::Hotspot;
pub use arrivals::Burst;
pub use complementarity::{
    ComplementarityReport, MixResult, PAPER_FOUR_WAY, PAPER_TWO_WAY, SlotSeries, complementarity,
    complementarity_of, slot_is_complementary,
};
pub use generator::{Generator, InvalidSpec};
pub use member::{MemberGeometry, MemberIo, member_load};
pub use mix::Mix;
pub use sizes::{SizeClass, SizeMix};
pub use spec::{Table4Row, UnknownWorkload, Workload, WorkloadSpec};
pub use synthetic::{
    SYNTHETIC_BS, SYNTHETIC_FOOTPRINT, parse_iops, parse_synthetic, synthetic_seed,
};
