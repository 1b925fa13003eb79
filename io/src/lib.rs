//! Real devices for the engine, and the event loop that drives it.
//!
//! * [`member`]: pool members behind one non-blocking [`member::Member`] trait: files and
//!   block devices through io_uring (`file:`), memory (`mem:`), an SSD-model latency
//!   emulator around any member (`emu:`) and remote NBD exports (`nbd://`, `nbd+unix://`).
//! * [`spec`]: the member spec strings and their parser.
//! * [`driver`]: one thread that owns the sans-IO [`fusionraid_core::Engine`], feeds it NBD
//!   commands, device completions and time, and a [`fusionraid_nbd::Backend`] that hands
//!   commands to it.
//!
//! Everything that waits, waits in one place: the loop thread sleeps in `ppoll` on one
//! eventfd ([`waker::Waker`]) that every source of work signals, with the engine's next
//! deadline as the timeout.

#![warn(clippy::too_many_lines)]

pub mod clock;
pub mod driver;
pub mod member;
pub mod spec;
pub mod waker;

pub use clock::Clock;
pub use driver::{Driver, DriverConfig, EngineBackend, ExportMux, StatusSnapshot};
pub use member::{Completion, Member, MemberError, OpenOptions, open_member};
pub use spec::{MemberSpec, SpecError, format_size, parse_size};
pub use waker::Waker;
