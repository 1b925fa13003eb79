//! Pool members: the devices under the engine.
//!
//! A [`Member`] is made for one event loop: `submit` never blocks (what the device can not
//! take yet waits in a queue bounded by the engine's own in-flight limits), `reap` never
//! blocks, and a member that completes work asynchronously signals the loop's shared
//! [`Waker`]. Members report every outcome as a [`Completion`], errors included: the engine
//! decides what a device error means (it fails the member).
//!
//! Kinds: [`mem::MemMember`], [`uring::FileMember`], [`emu::EmuMember`] (wraps any other)
//! and [`nbd::NbdMember`]. [`open_member`] builds one from a [`MemberSpec`].

mod aligned;
mod bufpool;
pub mod emu;
pub mod mem;
pub mod nbd;
mod no_space;
pub mod smart;
mod sync;
pub mod uring;

use std::path::PathBuf;
use std::sync::Arc;

use fusionraid_core::{DevOp, IoResult, Nanos};

use crate::spec::MemberSpec;
use crate::waker::Waker;

pub use no_space::DEFAULT_NO_SPACE_WAIT_NS;
pub use sync::{SyncIoError, run_sync};

/// A finished device operation and the tag it was submitted with.
#[derive(Debug)]
pub struct Completion {
    pub tag: u64,
    pub result: IoResult,
}

pub trait Member: Send {
    /// What the operator wrote to name this member (its spec).
    fn name(&self) -> &str;
    /// Usable bytes.
    fn size_bytes(&self) -> u64;
    /// Starts `op`; its completion comes back from `reap` with `tag`. Never blocks.
    fn submit(&mut self, tag: u64, op: DevOp, now: Nanos);
    /// Hands work queued by `submit` (and by `reap` refilling freed slots) to the device;
    /// called once per loop turn so submissions are batched, and only on the loop thread:
    /// io_uring ties the kernel's side of a submission (its async workers, and cancellation
    /// when the thread exits) to the submitting thread, and a connection thread that runs
    /// turns may exit with its client.
    fn commit(&mut self) {}
    /// Work `submit` queued that only `commit` hands to the device.
    fn uncommitted(&self) -> bool {
        false
    }
    /// Moves finished operations to `out`. Never blocks.
    fn reap(&mut self, now: Nanos, out: &mut Vec<Completion>);
    /// When `reap` will next have something without a wake-up (emulated delays).
    fn next_deadline(&self) -> Option<Nanos> {
        None
    }
    /// Operations submitted and not yet reaped.
    fn inflight(&self) -> usize;
    /// The engine failed this member: it sends it nothing more until the slot is
    /// replaced. A member holding something on another side lets go of it here (a remote
    /// member's connection: nbdkit, asked to stop, waits for its clients to leave, so the
    /// server an operator restarts before `replace` never exited while we held it).
    fn failed(&mut self) {}
    /// Facts worth showing in `status` (e.g. "buffered I/O: O_DIRECT unsupported").
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
    /// Share of its rated endurance the device reports used (0 new, 1 worn out, may exceed
    /// 1), when it reports one: emulated SSDs from their model's flash writes, `file:`
    /// members on NVMe drives from SMART "Percentage Used" (`smart`, read off the loop);
    /// `None` otherwise. Never blocks: a cached value.
    fn wear(&self) -> Option<f64> {
        None
    }
    /// Bytes the device reports its hosts wrote over its whole life (NVMe "Data Units
    /// Written"), when it reports them; unlike the engine's per-member counters, this
    /// includes everything written before this `serve` and by other users of the drive.
    fn device_written_bytes(&self) -> Option<u64> {
        None
    }
}

/// A member that could not be opened, or a spec that does not describe one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("member '{member}': {reason}")]
pub struct MemberError {
    pub member: String,
    pub reason: String,
    /// The device is locked by another process (another `serve` of the pool): not a
    /// missing member to run degraded without, but a mistake to refuse.
    pub in_use: bool,
}

impl MemberError {
    pub fn new(member: impl ToString, reason: impl ToString) -> Self {
        MemberError {
            member: member.to_string(),
            reason: reason.to_string(),
            in_use: false,
        }
    }
}

/// How to open members.
#[derive(Clone)]
pub struct OpenOptions {
    pub waker: Arc<Waker>,
    pub clock: crate::Clock,
    /// Seed of emulated device models; each member should get its own.
    pub seed: u64,
    /// Create a missing `file:` member as a file of this size.
    pub create_size: Option<u64>,
    /// Whether `file:` members that are regular files keep their space allocated.
    pub file_space: uring::FileSpace,
    /// How long a write refused for space (a thin file, a thin-provisioned device, a remote
    /// export on thin storage) is tried again before its member fails.
    pub no_space_wait: Nanos,
    /// Resolve relative `file:` paths against this directory.
    pub base_dir: Option<PathBuf>,
    /// The io_uring every `file:` member opened with these options shares.
    pub uring: uring::ring::RingSlot,
}

/// Opens the member `spec` describes.
pub fn open_member(spec: &MemberSpec, opts: &OpenOptions) -> Result<Box<dyn Member>, MemberError> {
    let spec = match &opts.base_dir {
        Some(b) => spec.resolved(b),
        None => spec.clone(),
    };
    let name = spec.to_string();
    match &spec {
        MemberSpec::Mem { size, populate } => Ok(Box::new(
            mem::MemMember::new(&name, *size, *populate).map_err(|e| MemberError::new(&name, e))?,
        )),
        MemberSpec::File { path } => {
            let ring = opts.uring.get(&opts.waker).map_err(|e| {
                MemberError::new(
                    &name,
                    format!("io_uring setup failed (is io_uring enabled?): {e}"),
                )
            })?;
            let mut m =
                uring::FileMember::open(&name, path, opts.create_size, opts.file_space, ring)?;
            m.set_no_space_wait(opts.no_space_wait);
            Ok(Box::new(m))
        }
        MemberSpec::Emu {
            preset,
            aged,
            seed,
            speed,
            fail_slow,
            inner,
        } => {
            let inner = open_member(inner, opts)?;
            let seed = seed.unwrap_or(opts.seed);
            let mut model = emu::build_model(preset, *aged, seed, *speed)
                .map_err(|e| MemberError::new(&name, e))?;
            if let Some(fs) = fail_slow {
                model = emu::fail_slow(model, *fs, seed, *speed);
            }
            Ok(Box::new(emu::EmuMember::new(&name, inner, model)))
        }
        MemberSpec::Nbd { uri } => {
            let mut m = nbd::NbdMember::connect(&name, uri, opts.waker.clone(), opts.clock)?;
            m.set_no_space_wait(opts.no_space_wait);
            Ok(Box::new(m))
        }
    }
}
