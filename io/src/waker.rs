//! The one place the event loop sleeps: an eventfd that every source of work signals.
//!
//! io_uring rings post to it directly (registered with `IORING_REGISTER_EVENTFD`), the NBD
//! receiver threads of remote members write to it after each reply, and NBD connection
//! threads write to it after queueing a command, but only when the loop is actually asleep
//! (the `sleeping` flag), so a busy loop costs senders no system call.
//!
//! The flag protocol is the classic store-buffer handshake: the loop stores `sleeping = true`
//! and then checks its queues; a sender pushes to a queue and then loads `sleeping`. A SeqCst
//! fence on each side between the store and the load guarantees that at least one of them
//! sees the other, so a message can never sit in a queue while the loop sleeps.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::time::Duration;

pub struct Waker {
    fd: OwnedFd,
    sleeping: AtomicBool,
}

impl Waker {
    pub fn new() -> io::Result<Waker> {
        // SAFETY: eventfd has no memory-safety preconditions; we own the returned fd.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Waker {
            // SAFETY: fd is a fresh descriptor nobody else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            sleeping: AtomicBool::new(false),
        })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Wakes the loop unconditionally (a completion arrived).
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our own eventfd. The only possible
        // failure is EAGAIN on counter overflow, which still leaves the fd readable.
        unsafe {
            libc::write(self.raw_fd(), (&one as *const u64).cast(), 8);
        }
    }

    /// Wakes the loop if it is asleep; call after pushing work onto one of its queues.
    /// Only the first sender to find it asleep writes the eventfd: the others' work is
    /// already queued for the turn that wake-up starts.
    pub fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) && self.sleeping.swap(false, Ordering::Relaxed) {
            self.wake();
        }
    }

    /// Loop side: announce the intention to sleep. The caller must check its queues after
    /// this and before [`Waker::wait`] (or call [`Waker::cancel_sleep`]).
    pub fn prepare_sleep(&self) {
        self.sleeping.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    pub fn cancel_sleep(&self) {
        self.sleeping.store(false, Ordering::Relaxed);
    }

    /// Sleeps until signalled or `timeout` passes (`None`: no timeout), then clears the
    /// signal. Spurious returns are fine: the caller re-checks everything.
    pub fn wait(&self, timeout: Option<Duration>) {
        let mut pfd = libc::pollfd {
            fd: self.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: d.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: pfd and ts live across the call; a null sigmask leaves signals alone.
        // EINTR and other errors just end the sleep early.
        unsafe {
            libc::ppoll(&mut pfd, 1, tsp, std::ptr::null());
        }
        self.sleeping.store(false, Ordering::Relaxed);
        self.drain();
    }

    fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64; nonblocking, EAGAIN when not signalled.
        unsafe {
            libc::read(self.raw_fd(), (&mut v as *mut u64).cast(), 8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn timeout_and_wake() {
        let w = Arc::new(Waker::new().unwrap());
        let t = Instant::now();
        w.prepare_sleep();
        w.wait(Some(Duration::from_millis(20)));
        assert!(t.elapsed() >= Duration::from_millis(19));

        let w2 = w.clone();
        let th = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            w2.notify();
        });
        let t = Instant::now();
        w.prepare_sleep();
        w.wait(Some(Duration::from_secs(10)));
        assert!(t.elapsed() < Duration::from_secs(5));
        th.join().unwrap();
    }

    #[test]
    fn notify_while_awake_costs_nothing_and_does_not_stick() {
        let w = Waker::new().unwrap();
        w.notify(); // not sleeping: no signal
        let t = Instant::now();
        w.prepare_sleep();
        w.wait(Some(Duration::from_millis(10)));
        assert!(t.elapsed() >= Duration::from_millis(9));
    }
}
