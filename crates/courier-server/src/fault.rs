//! What a fault is, as values: [`RawFault`] (acted out on the socket) and
//! [`Fault`] (what the service must carry out, by protocol).
//!
//! Why a leaf of its own: the routing (`faults.rs`), the response body, the
//! connection state, its control and every protocol driver pass faults
//! around; they name these types without importing the endpoints that
//! produce them or the code that acts them out.

/// A fault acted out on the raw socket instead of through hyper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawFault {
    /// Close (FIN) without writing anything.
    Close,
    /// Reset (RST via SO_LINGER 0) without writing anything.
    Reset,
    /// Head with `content-length: 1000`, 500 body bytes, close.
    CloseMidBody,
    /// Chunked head, two chunks, close without the terminating chunk.
    ChunkedMidBody,
    /// `HTTP/1.1 abc nonsense`, close.
    MalformedStatus,
    /// Bytes that are not HTTP at all, close.
    Garbage,
    /// Never answer; hold the connection until the client closes it.
    NoAnswer,
}

/// A fault the service must carry out, since how depends on the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    Raw(RawFault),
    /// Answer, then shut the connection down gracefully.
    GoAway,
    /// Reset the request's stream instead of answering.
    RstStream,
}
