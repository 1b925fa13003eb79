//! Physical space of a volume: its zone (static layout) and the stripe table (dynamic state).
pub mod remap;
pub mod stale;
pub mod stripes;
pub mod zone;
pub use remap::{Moved, Remaps};
pub use stale::StaleColumns;
pub use stripes::{StripeState, StripeTable};
pub use zone::Zone;
