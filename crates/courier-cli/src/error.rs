//! The one error type of the command line tool.
//!
//! Everything that can go wrong at run time (bad input that clap could not catch, a server that
//! cannot bind, a report that cannot be written, a run whose every request failed, a threshold
//! that did not hold) ends up here as a message meant for a person; `main` prints it and exits
//! with the error's code. There is no need for a kind enum: nobody matches on it, and the exit
//! code is the only thing scripts look at.

use std::fmt;

/// Exit code of a run that failed (every request failed, a file could not be written, …).
pub const EXIT_FAILURE: u8 = 1;

/// Exit code after Ctrl-C (128 + SIGINT, what shells report for an interrupted command).
pub const EXIT_INTERRUPTED: u8 = 130;

/// A failure with a message that already says what went wrong and, where it helps, what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    message: String,
    code: u8,
}

impl CliError {
    /// Builds an error from anything printable; exits with [`EXIT_FAILURE`].
    pub fn new(message: impl Into<String>) -> Self {
        Self::with_code(EXIT_FAILURE, message)
    }

    /// An error with its own exit code.
    pub fn with_code(code: u8, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code,
        }
    }

    /// The process exit code for this error.
    pub fn code(&self) -> u8 {
        self.code
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// Result alias used across the binary.
pub type Result<T, E = CliError> = std::result::Result<T, E>;
