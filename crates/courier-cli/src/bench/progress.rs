//! The live progress line on stderr: elapsed time, requests/s, connections, errors.
//!
//! Only when stderr is a terminal: in CI logs and redirected output, a line rewritten every
//! second with `\r` is noise. The line goes to stderr so stdout stays the report alone.

use std::io::{IsTerminal, Write};

/// Writes the progress line, or nothing when stderr is not a terminal.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    enabled: bool,
}

impl Progress {
    /// A progress line that shows only if stderr is a terminal.
    pub fn auto() -> Self {
        Self {
            enabled: std::io::stderr().is_terminal(),
        }
    }

    /// Replaces the line with `text`.
    pub fn show(&self, text: &str) {
        if self.enabled {
            let mut err = std::io::stderr().lock();
            // Progress is best effort: a closed stderr must not fail the run.
            let _ = write!(err, "\r{text}\x1b[K");
            let _ = err.flush();
        }
    }

    /// Erases the line, before the report is printed.
    pub fn clear(&self) {
        if self.enabled {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}
