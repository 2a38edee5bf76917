//! What a connection going away showed about its peer: how many requests
//! it serves on one connection. The protocol that reads it off the wire
//! (HTTP/2's GOAWAY) and the pool that plans connections by it
//! (`pool/budget.rs`) share this one type, below both, so neither imports
//! the other.

/// How many requests a GOAWAY showed the server serves on one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Served {
    pub(crate) count: usize,
    /// The GOAWAY named a stream it had not answered: the server went away
    /// on reading a request, as a request limit makes it (or a restart under
    /// load). Otherwise it named an answered stream while newer ones were in
    /// flight, which an idle close racing a request does too.
    pub(crate) certain: bool,
}
