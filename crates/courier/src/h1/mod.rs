//! HTTP/1.1, courier's own: a client connection on `httparse`.
//!
//! hyper's HTTP/1.1 client runs every connection in a task of its own and
//! talks to requests through channels, so a request costs several task
//! wake-ups (the request handed over, the head handed back, each body chunk)
//! and an idle connection keeps a task parked on its socket. An HTTP/1.1
//! connection serves one request at a time, so here the request's own task
//! writes the request and reads the response straight off the socket, and an
//! idle connection is just a socket and two buffers: whether it is still open
//! is checked with one non-blocking read when it is checked out.
//!
//! - [`encode`]: the request head and the framing of its body;
//! - [`decode`]: the response head, its body framing and keep-alive;
//! - [`upload`]: writing the request, whose body may go on after the answer;
//! - [`body`]: length, chunked and close-delimited response bodies, and trailers;
//! - [`arena`]: small copies out of the read buffer without an allocation each;
//! - [`conn`]: the connection that ties them to a byte stream.

pub(crate) mod arena;
pub(crate) mod body;
pub(crate) mod conn;
pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod upload;

pub(crate) use conn::{Connection, Exchanged, Io};
pub(crate) use encode::{ExpectContinue, Forward};
