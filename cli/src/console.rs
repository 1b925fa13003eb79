//! What `serve` prints for its operator (the banner, recovery and state notes). A daemon
//! must not stop because nobody reads it: with its stdout or stderr on a full file system
//! or a pipe whose reader left, `println!` panics, and a panic stops `serve`. These lines
//! are dropped instead; the event log (`tracing`) already drops what it cannot write.

/// A line on stdout, dropped if it can not be written.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

/// A line on stderr, dropped if it can not be written.
macro_rules! tell {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

pub(crate) use {say, tell};
