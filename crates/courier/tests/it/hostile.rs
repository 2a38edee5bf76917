//! Hostile servers (issue 14): what a server declares or sends must not crash,
//! exhaust or desynchronise the client, and what a caller sets must not put
//! a second request on the wire.
//!
//! - [`body_size`]: a declared Content-Length sizes no buffer (HTTP/1.1, HTTP/2);
//! - [`request_framing`]: a caller's framing headers must agree with the body,
//!   and no CR, LF or NUL reaches the wire (HTTP/1.1, HTTP/2);
//! - [`settings`]: RFC 9113 §6.5's rules for SETTINGS frames.
//!
//! The servers are scripts on loopback ([`h1_wire`]: requests parsed and
//! logged byte for byte; [`h2_wire`]: frames read and written by hand). Every
//! wait is bounded by [`LIMIT`]; every test ends with the same client serving
//! a good request.

mod body_size;
pub mod h1_wire;
mod h2_wire;
mod request_framing;
mod settings;

// The bound on every wait, shared with the other HTTP/2 tests.
pub use crate::support::h2::{within, LIMIT};
