//! One operation at a time, waiting for it: for superblocks and other work done before the
//! event loop owns the members.

use std::time::{Duration, Instant};

use fusionraid_core::{Data, DevOp};

use super::{Completion, Member};
use crate::Clock;
use crate::waker::Waker;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyncIoError {
    #[error("{0}")]
    Device(String),
    #[error("no completion within {0:?}")]
    Timeout(Duration),
}

/// Submits `op` to `member` and waits (in `waker`, not spinning) for its completion.
/// Returns read data for reads. The member must have nothing else in flight.
pub fn run_sync(
    member: &mut dyn Member,
    op: DevOp,
    clock: &Clock,
    waker: &Waker,
    timeout: Duration,
) -> Result<Option<Vec<u8>>, SyncIoError> {
    const TAG: u64 = u64::MAX;
    assert_eq!(member.inflight(), 0, "run_sync needs an idle member");
    let start = Instant::now();
    member.submit(TAG, op, clock.now());
    member.commit();
    let mut out: Vec<Completion> = Vec::new();
    loop {
        member.reap(clock.now(), &mut out);
        member.commit();
        if let Some(c) = out.pop() {
            assert_eq!(c.tag, TAG);
            return match c.result {
                Ok(d) => Ok(d.and_then(Data::into_bytes)),
                Err(e) => Err(SyncIoError::Device(e.0)),
            };
        }
        let left = timeout.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Err(SyncIoError::Timeout(timeout));
        }
        let wait = member
            .next_deadline()
            .map_or(left, |d| clock.until(d).min(left));
        waker.prepare_sleep();
        waker.wait(Some(wait.min(Duration::from_millis(50))));
    }
}
