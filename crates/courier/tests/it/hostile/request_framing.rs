//! Issue 14, defect 2: a caller's framing headers must agree with the body,
//! or the request is refused before a byte is written. (CR, LF and NUL in
//! header values are refused too, but safe code cannot make such a
//! `HeaderValue` to send: `http`'s unchecked constructor is `unsafe` and
//! validates in debug builds; the check is unit-tested in `src/validate.rs`.)
//! Before the fix, `content-length: 2` with a 40-byte body put 38 bytes on the wire that
//! the server read as a second request.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use courier::{Body, Client, ErrorKind};
use http::{HeaderMap, HeaderValue};
use http_body::{Frame, SizeHint};

use super::h1_wire::{self, Seen};
use super::h2_wire::{self, h2c, DATA, END_STREAM, HEADERS, RST_STREAM};
use super::{within, LIMIT};

/// A streamed body: `pieces`, then `trailers`; `exact` as its size hint.
struct Stream {
    pieces: VecDeque<Bytes>,
    trailers: Option<HeaderMap>,
    exact: Option<u64>,
}

impl Stream {
    fn new(pieces: &[&'static [u8]]) -> Stream {
        Stream {
            pieces: pieces.iter().map(|p| Bytes::from_static(p)).collect(),
            trailers: None,
            exact: None,
        }
    }

    fn body(self) -> Body {
        Body::wrap(self)
    }
}

impl http_body::Body for Stream {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(piece) = self.pieces.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(piece))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn size_hint(&self) -> SizeHint {
        self.exact.map_or_else(SizeHint::new, SizeHint::with_exact)
    }
}

/// Headers a caller sets, in order.
type Headers = Vec<(&'static str, HeaderValue)>;

/// The caller's framing headers that must be refused, with the body they
/// come with: (what, headers, body).
fn refused_framing() -> Vec<(&'static str, Headers, Body)> {
    let v = HeaderValue::from_static;
    let u40 = || Body::from(vec![b'u'; 40]);
    vec![
        ("a shorter length", vec![("content-length", v("2"))], u40()),
        ("a longer length", vec![("content-length", v("41"))], u40()),
        (
            "a length twice",
            vec![("content-length", v("40")), ("content-length", v("40"))],
            u40(),
        ),
        (
            "a list of lengths",
            vec![("content-length", v("40, 40"))],
            u40(),
        ),
        ("a signed length", vec![("content-length", v("+40"))], u40()),
        ("a hex length", vec![("content-length", v("0x28"))], u40()),
        ("an empty length", vec![("content-length", v(""))], u40()),
        (
            "a length past u64",
            vec![("content-length", v("99999999999999999999"))],
            u40(),
        ),
        (
            "a length and chunked",
            vec![
                ("content-length", v("40")),
                ("transfer-encoding", v("chunked")),
            ],
            u40(),
        ),
        ("gzip", vec![("transfer-encoding", v("gzip"))], u40()),
        (
            "gzip, chunked",
            vec![("transfer-encoding", v("gzip, chunked"))],
            u40(),
        ),
        (
            "chunked twice",
            vec![
                ("transfer-encoding", v("chunked")),
                ("transfer-encoding", v("chunked")),
            ],
            u40(),
        ),
        (
            "a streamed body whose size disagrees",
            vec![("content-length", v("5"))],
            Stream {
                exact: Some(10),
                ..Stream::new(&[b"0123456789"])
            }
            .body(),
        ),
    ]
}

/// Headers that would tell two servers two different things.
fn refused_headers() -> Vec<(&'static str, Headers)> {
    vec![(
        "two Hosts",
        vec![
            ("host", HeaderValue::from_static("a.test")),
            ("host", HeaderValue::from_static("b.test")),
        ],
    )]
}

async fn send(
    client: &Client,
    url: String,
    headers: Headers,
    body: Body,
) -> Result<courier::Response, courier::Error> {
    let mut req = client.post(url);
    for (name, value) in headers {
        req = req.header(name, value);
    }
    within("the request", req.body(body).send()).await
}

/// The good requests that end each test, and what the server must see of them.
async fn good_requests(client: &Client, base: &str) {
    let v = HeaderValue::from_static;
    let cases: Vec<(&str, Headers, Body)> = vec![
        (
            "/good/length",
            vec![("content-length", v("3"))],
            "abc".into(),
        ),
        (
            "/good/chunked",
            vec![("transfer-encoding", v("chunked"))],
            "abc".into(),
        ),
        (
            "/good/stream",
            vec![("content-length", v("10"))],
            Stream::new(&[b"01234", b"56789"]).body(),
        ),
        ("/good/plain", vec![], "abc".into()),
    ];
    for (path, headers, body) in cases {
        let res = send(client, format!("{base}{path}"), headers, body)
            .await
            .unwrap_or_else(|e| panic!("{path}: {e:?}"));
        assert_eq!(res.status(), 200, "{path}");
        within("the body", res.bytes()).await.unwrap();
    }
}

fn h1_client() -> Client {
    Client::builder().timeout(LIMIT).build().unwrap()
}

#[tokio::test]
async fn h1_framing_headers_that_disagree_with_the_body_are_refused_before_a_byte() {
    let server = h1_wire::Server::start(|_| h1_wire::ok(b"ok")).await;
    let client = h1_client();
    for (what, headers, body) in refused_framing() {
        let err = send(&client, format!("{}/smuggle", server.url), headers, body)
            .await
            .expect_err(what);
        assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{what}: {err:?}");
    }
    good_requests(&client, &server.url).await;
    let seen = server.seen();
    let lines: Vec<_> = seen.iter().map(|s| s.line()).collect();
    assert_eq!(
        lines,
        [
            Some("POST /good/length HTTP/1.1"),
            Some("POST /good/chunked HTTP/1.1"),
            Some("POST /good/stream HTTP/1.1"),
            Some("POST /good/plain HTTP/1.1"),
        ],
        "exactly the good requests reach the server: {seen:?}"
    );
    for s in &seen {
        let Seen::Request { headers, body, .. } = s else {
            unreachable!()
        };
        let framing: Vec<_> = headers
            .iter()
            .filter(|(n, _)| n == "content-length" || n == "transfer-encoding")
            .collect();
        assert_eq!(framing.len(), 1, "one framing header: {s:?}");
        let expected: &[u8] = if s.line().unwrap().contains("stream") {
            b"0123456789"
        } else {
            b"abc"
        };
        assert_eq!(body, expected, "{s:?}");
    }
}

#[tokio::test]
async fn h1_a_second_host_is_refused_before_a_byte() {
    let server = h1_wire::Server::start(|_| h1_wire::ok(b"ok")).await;
    let client = h1_client();
    for (what, headers) in refused_headers() {
        let err = send(
            &client,
            format!("{}/inject", server.url),
            headers,
            "abc".into(),
        )
        .await
        .expect_err(what);
        assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{what}: {err:?}");
    }
    // Through `execute`, too.
    let mut req = http::Request::post(format!("{}/inject", server.url))
        .body(Body::from("abc"))
        .unwrap();
    req.headers_mut()
        .append("host", HeaderValue::from_static("a.test"));
    req.headers_mut()
        .append("host", HeaderValue::from_static("b.test"));
    let err = within("execute", client.execute(req)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{err:?}");
    good_requests(&client, &server.url).await;
    let seen = server.seen();
    assert_eq!(seen.len(), 4, "only the good requests: {seen:?}");
    for s in &seen {
        assert!(s.line().unwrap().starts_with("POST /good/"), "{s:?}");
    }
}

#[tokio::test]
async fn h1_a_streamed_body_is_held_to_the_callers_content_length() {
    let server = h1_wire::Server::start(|_| h1_wire::ok(b"ok")).await;
    let client = h1_client();
    let v = HeaderValue::from_static;
    for (what, length) in [("too long", "5"), ("too short", "15")] {
        let body = Stream::new(&[b"01234", b"56789"]).body();
        let err = send(
            &client,
            format!("{}/stream", server.url),
            vec![("content-length", v(length))],
            body,
        )
        .await
        .expect_err(what);
        assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{what}: {err:?}");
    }
    good_requests(&client, &server.url).await;
    let seen = server.seen();
    let mut bad_conns = Vec::new();
    for s in &seen {
        match s {
            // Never a byte past the declared length, and never a whole
            // request with fewer.
            Seen::Request {
                conn, line, body, ..
            } if line.starts_with("POST /stream ") => {
                assert_eq!(body, b"01234", "{s:?}");
                bad_conns.push(*conn);
            }
            Seen::Incomplete { conn, bytes } => {
                assert!(bytes.ends_with(b"0123456789"), "{s:?}");
                bad_conns.push(*conn);
            }
            Seen::Request { conn, line, .. } => {
                assert!(line.contains("/good/"), "{s:?}");
                assert!(!bad_conns.contains(conn), "connection reused: {seen:?}");
            }
            Seen::Garbage { .. } => panic!("garbage: {seen:?}"),
        }
    }
    assert_eq!(bad_conns.len(), 2, "{seen:?}");
}

fn h2_route(stream: u32, _: &h2_wire::Frame) -> Vec<u8> {
    h2_wire::respond(stream, b"ok")
}

#[tokio::test]
async fn h2_framing_headers_that_disagree_with_the_body_are_refused_before_a_byte() {
    let server = h2_wire::Server::start(h2_route).await;
    let client = h2c().build().unwrap();
    for (what, headers, body) in refused_framing() {
        let err = send(&client, format!("{}/smuggle", server.url), headers, body)
            .await
            .expect_err(what);
        assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{what}: {err:?}");
    }
    good_requests(&client, &server.url).await;
    let seen = server.seen();
    let heads: Vec<_> = seen.iter().filter(|(_, f)| f.ty == HEADERS).collect();
    assert_eq!(heads.len(), 4, "only the good requests: {seen:?}");
    for (_, f) in &heads {
        assert!(f.contains(b"/good/"), "{f:?}");
    }
    let data: usize = seen
        .iter()
        .filter(|(_, f)| f.ty == DATA)
        .map(|(_, f)| f.payload.len())
        .sum();
    assert_eq!(data, 3 + 3 + 10 + 3, "{seen:?}");
}

#[tokio::test]
async fn h2_a_streamed_body_is_held_to_the_callers_content_length() {
    let server = h2_wire::Server::start(h2_route).await;
    let client = h2c().build().unwrap();
    let v = HeaderValue::from_static;
    for (what, length) in [("too long", "5"), ("too short", "15")] {
        let body = Stream::new(&[b"01234", b"56789"]).body();
        let err = send(
            &client,
            format!("{}/stream/{length}", server.url),
            vec![("content-length", v(length))],
            body,
        )
        .await
        .expect_err(what);
        assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{what}: {err:?}");
    }
    good_requests(&client, &server.url).await;
    let seen = server.seen();
    for length in [5usize, 15] {
        let marker = format!("/stream/{length}");
        let stream = seen
            .iter()
            .find(|(_, f)| f.ty == HEADERS && f.contains(marker.as_bytes()))
            .map(|(_, f)| f.stream)
            .unwrap_or_else(|| panic!("{marker}'s head: {seen:?}"));
        let frames: Vec<_> = seen.iter().filter(|(_, f)| f.stream == stream).collect();
        let data: usize = frames
            .iter()
            .filter(|(_, f)| f.ty == DATA)
            .map(|(_, f)| f.payload.len())
            .sum();
        assert!(data <= length.min(10), "{marker}: {data} bytes sent");
        assert!(
            !frames.iter().any(|(_, f)| f.has(END_STREAM)),
            "{marker}: ended as if whole: {frames:?}"
        );
        assert!(
            frames.iter().any(|(_, f)| f.ty == RST_STREAM),
            "{marker}: reset: {frames:?}"
        );
    }
}
