//! The one error type of the trace readers.

use std::fmt;

/// Why a trace could not be read. Every variant names the file (as the caller spelled it) so a
/// message printed on its own is enough to find the problem.
#[derive(Debug)]
pub enum TraceError {
    /// Opening or reading the file failed; the stream ends after this error.
    Io {
        file: String,
        source: std::io::Error,
    },
    /// One line could not be used. The reader skips the line and goes on, so a caller may count
    /// bad lines instead of stopping at the first one.
    Line {
        file: String,
        /// 1-based line number.
        line: u64,
        msg: String,
    },
}

impl TraceError {
    pub(crate) fn line(file: &str, line: u64, msg: impl Into<String>) -> Self {
        TraceError::Line {
            file: file.to_string(),
            line,
            msg: msg.into(),
        }
    }

    /// The 1-based line the error is about, if it is about one.
    pub fn line_number(&self) -> Option<u64> {
        match self {
            TraceError::Line { line, .. } => Some(*line),
            TraceError::Io { .. } => None,
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Io { file, source } => write!(f, "{file}: {source}"),
            TraceError::Line { file, line, msg } => write!(f, "{file}:{line}: {msg}"),
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TraceError::Io { source, .. } => Some(source),
            TraceError::Line { .. } => None,
        }
    }
}
