//! courier's side of the HTTP/1.1 differential test (`tests/it/differential.rs`
//! and `fuzz/fuzz_targets/http1_differential.rs`): what courier made of a
//! scripted server's bytes, as a plain record another client's reading can be
//! compared with. A desync is a disagreement about where a response ends or
//! whether its connection can carry the next request, so the record holds the
//! first response, whether the connection went back to the pool, and what the
//! second request on it got.

use std::future::poll_fn;
use std::time::Duration;

use http::{HeaderMap, HeaderValue, Method, Request, Uri};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::ErrorKind;
use crate::proto::h1::Connection;
use crate::{Resolve, Resolving};

/// How long each step may take; tests run this under tokio's paused clock,
/// so a body that never ends costs no real time.
const STEP: Duration = Duration::from_secs(1);

/// Bodies are read up to this much.
const MAX_BODY: u64 = 1 << 20;

/// What a client made of one response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Http1Answer {
    /// No response: the head was refused, never came, or the request failed.
    Refused(ErrorKind),
    /// A response head, and its body or the error that ended it.
    Response {
        /// The status code.
        status: u16,
        /// The number of header lines.
        headers: usize,
        /// The whole body, or the kind of error that cut it short.
        body: Result<Vec<u8>, ErrorKind>,
    },
}

/// What courier made of two requests on one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Http1Outcome {
    /// The first request's answer.
    pub first: Http1Answer,
    /// The connection went back to the pool, idle, once the first answer ended.
    pub pooled: bool,
    /// The second request's answer when it went out on the same connection;
    /// `None` when the pool had no reusable connection for it.
    pub second: Option<Http1Answer>,
}

/// Sends a request with `method` over `stream` through the public API (the
/// pool adopts it as its only connection), reads the whole answer, then
/// sends a second one and reads it if the pool kept the connection. New
/// connections cannot be dialed (name resolution fails), so a second
/// answer can only come from the same connection.
pub async fn http1_two_requests<S>(stream: S, method: Method) -> Http1Outcome
where
    S: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static,
{
    // The deadlines are `answer`'s, one per step; the client has no
    // timeout of its own.
    let client = crate::Client::builder()
        .no_timeout()
        .max_response_body_size(Some(MAX_BODY))
        .dns_resolver(NoNames)
        .build()
        .expect("valid configuration");
    let uri = Uri::from_static("http://fuzz.invalid/");
    let origin = client.pool().origin(&uri).expect("valid origin");
    origin.adopt_exclusive(stream);
    let first = answer(&client, &method, &uri).await;
    let pooled = client.metrics().connections_idle == 1;
    let second = match pooled {
        true => match answer(&client, &method, &uri).await {
            // A new connection was needed: the pooled one was found closed.
            Http1Answer::Refused(ErrorKind::Dns) => None,
            answer => Some(answer),
        },
        false => None,
    };
    Http1Outcome {
        first,
        pooled,
        second,
    }
}

async fn answer(client: &crate::Client, method: &Method, uri: &Uri) -> Http1Answer {
    let sending = client.request(method.clone(), uri.clone()).send();
    let res = match tokio::time::timeout(STEP, sending).await {
        Ok(Ok(res)) => res,
        Ok(Err(e)) => return Http1Answer::Refused(e.kind()),
        Err(_) => return Http1Answer::Refused(ErrorKind::Timeout),
    };
    let status = res.status().as_u16();
    let headers = res.headers().len();
    let body = match tokio::time::timeout(STEP, res.bytes()).await {
        Ok(body) => body.map(|b| b.to_vec()).map_err(|e| e.kind()),
        Err(_) => Err(ErrorKind::Timeout),
    };
    Http1Answer::Response {
        status,
        headers,
        body,
    }
}

/// What courier's connection (under the pool) made of one response, and
/// where it stopped reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Http1Read {
    /// The answer.
    pub answer: Http1Answer,
    /// The connection could carry another request.
    pub reusable: bool,
    /// What was read from the stream but not taken as part of the response:
    /// all the server had sent past the response, as the stream delivers
    /// what it holds in one read (true of `tokio::io::duplex` for small
    /// inputs).
    pub unread: Vec<u8>,
}

/// Sends one request with `method` over `stream` on courier's HTTP/1.1
/// connection alone (no pool), reads the answer to its end, and reports
/// where the connection stopped reading.
pub async fn http1_read_one<S>(stream: S, method: Method) -> Http1Read
where
    S: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static,
{
    let expect = crate::proto::h1::ExpectContinue {
        min_size: None,
        wait: std::time::Duration::ZERO,
    };
    let conn = Connection::new(Box::new(stream), 64 * 1024, expect);
    let req = Request::builder()
        .method(method)
        .uri("/")
        .body(crate::Body::empty())
        .expect("valid request");
    let host = HeaderValue::from_static("fuzz.invalid");
    let sending = Connection::send(conn, req, &host, &HeaderMap::new());
    let (mut conn, head) = match tokio::time::timeout(STEP, sending).await {
        Ok((conn, Ok(answer))) => (conn, answer.head),
        Ok((conn, Err(failure))) => return refused(failure.error.kind(), conn.unread()),
        // The connection went with the future.
        Err(_) => return refused(ErrorKind::Timeout, &[]),
    };
    let mut body = Vec::new();
    let reading = async {
        while let Some(frame) = poll_fn(|cx| conn.poll_frame(cx)).await {
            let frame = frame.map_err(|e| e.kind())?;
            body.extend_from_slice(frame.data_ref().map_or(&[][..], |d| &d[..]));
            if body.len() as u64 > MAX_BODY {
                return Err(ErrorKind::BodyTooLarge);
            }
        }
        Ok(())
    };
    let body = match tokio::time::timeout(STEP, reading).await {
        Ok(Ok(())) => Ok(body),
        Ok(Err(kind)) => Err(kind),
        Err(_) => Err(ErrorKind::Timeout),
    };
    Http1Read {
        answer: Http1Answer::Response {
            status: head.status.as_u16(),
            headers: head.headers.len(),
            body,
        },
        reusable: conn.is_reusable(),
        unread: conn.unread().to_vec(),
    }
}

fn refused(kind: ErrorKind, unread: &[u8]) -> Http1Read {
    Http1Read {
        answer: Http1Answer::Refused(kind),
        reusable: false,
        unread: unread.to_vec(),
    }
}

/// A resolver that knows no names: the differential test's client can use
/// only the connection it was given.
struct NoNames;

impl Resolve for NoNames {
    fn resolve(&self, _host: &str, _port: u16) -> Resolving {
        Box::pin(async { Err(std::io::Error::other("no names in the differential test")) })
    }
}
