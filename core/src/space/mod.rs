//! Physical space of a volume: its zone (static layout) and the stripe table (dynamic state).
pub mod stripes;
pub mod zone;
pub use stripes::{StripeState, StripeTable};
pub use zone::Zone;
