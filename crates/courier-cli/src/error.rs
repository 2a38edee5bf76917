//! The one error type of the command line tool.
//!
//! Everything that can go wrong at run time (bad input that clap could not catch, a server that
//! cannot bind, a report that cannot be written) ends up here as a message meant for a person;
//! `main` prints it and exits non-zero. There is no need for a kind enum: nobody matches on it.

use std::fmt;

/// A failure with a message that already says what went wrong and, where it helps, what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError(String);

impl CliError {
    /// Builds an error from anything printable.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CliError {}

/// Result alias used across the binary.
pub type Result<T, E = CliError> = std::result::Result<T, E>;
