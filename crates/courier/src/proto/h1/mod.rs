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
//! - [`names`]: the last heads' header names, and a template map of them;
//! - [`repeated`]: a head laid out as the last one, read without `httparse`;
//! - [`seen`]: what the framing headers of a head say, noted as it is read;
//! - [`arena`]: small copies out of the read buffer without an allocation each;
//! - [`switched`]: the byte stream a connection becomes after a `101` or a
//!   CONNECT's 2xx;
//! - [`deadline`]: a request's deadline, on one timer per connection;
//! - [`conn`]: the connection that ties them to a byte stream.

pub(crate) mod arena;
pub(crate) mod body;
pub(crate) mod conn;
pub(crate) mod deadline;
pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod names;
pub(crate) mod repeated;
pub(crate) mod seen;
pub(crate) mod switched;
pub(crate) mod upload;

pub(crate) use conn::{Connection, Prepared};
pub(crate) use encode::{ExpectContinue, Forward};

use crate::config::Config;
use crate::proto::Io;

/// A connection over an established stream (HTTP/1.1 has no handshake),
/// set up as the client's configuration says.
pub(crate) fn connection<S: Io + 'static>(stream: S, config: &Config) -> Connection {
    let expect = ExpectContinue {
        min_size: config.expect_continue,
        wait: config.expect_continue_timeout,
    };
    Connection::new(Box::new(stream), config.max_response_headers_size, expect)
}

impl Connection {
    /// The exchange being prepared is the connection's last: it closes
    /// after it, as if either side had asked (the client's origin moves
    /// to HTTP/3). Here, not in `conn.rs`, which is at the line limit.
    pub(crate) fn close_after(&mut self) {
        self.keep_alive = false;
    }
}

#[cfg(test)]
mod tests {
    use crate::body::Body;

    /// The send future holds the request (for a retry) and little else: an
    /// `async` layer that kept a second copy would show here first.
    #[tokio::test]
    async fn the_send_future_holds_the_request_once() {
        let (near, _far) = tokio::io::duplex(64);
        let mut conn = super::connection(near, &crate::config::Config::default());
        let host = http::HeaderValue::from_static("h");
        let request_size = std::mem::size_of::<http::Request<Body>>();
        let defaults = http::HeaderMap::new();
        let future = super::Connection::send(
            &mut conn,
            http::Request::new(Body::empty()),
            &host,
            &defaults,
        );
        let future_size = std::mem::size_of_val(&future);
        assert!(
            future_size < request_size + 160,
            "send future {future_size} B for a {request_size} B request"
        );
    }
}
