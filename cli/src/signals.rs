//! Clean shutdown on Ctrl-C / SIGTERM: the signals are blocked in every thread (the mask is
//! inherited, so this runs before any thread is spawned) and the main thread waits for
//! them with `sigwait`, then shuts the server down in order.

pub struct Termination {
    set: libc::sigset_t,
}

impl Termination {
    pub fn block() -> Termination {
        // SAFETY: plain libc signal-set manipulation on a local set; pthread_sigmask only
        // changes this thread's mask (and, by inheritance, that of threads it spawns).
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::sigaddset(&mut set, s);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            Termination { set }
        }
    }

    /// Blocks until one of the signals arrives; returns its number.
    pub fn wait(&self) -> i32 {
        let mut sig: libc::c_int = 0;
        // SAFETY: the set was initialised in `block`; sig is a live out-parameter.
        unsafe {
            libc::sigwait(&self.set, &mut sig);
        }
        sig
    }
}

/// For commands that only print a report (`sim`, `eval`, `plan`): a closed stdout (`| head`)
/// ends the process quietly, as it ends `cat`. Rust ignores SIGPIPE, so `println!` to a
/// closed pipe panicked with a backtrace. Not for `serve` or the socket clients, which must
/// see a closed peer as an error.
pub fn default_sigpipe() {
    // SAFETY: restoring the default disposition of one signal, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
