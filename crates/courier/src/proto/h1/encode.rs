//! Writing a request head in origin form, and choosing how its body is framed.

use std::io::Write as _;

use http::header::{CONNECTION, CONTENT_LENGTH, EXPECT, HOST, TRANSFER_ENCODING, UPGRADE};
use http::{HeaderMap, HeaderValue, Request};

use super::conn::INLINE_BODY;
use crate::body::Body;
use crate::config::WithheldDefaults;
use crate::error::Error;

/// How the request body goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFraming {
    /// `Content-Length` bytes (possibly zero).
    Length(u64),
    /// `Transfer-Encoding: chunked`: a stream of unknown length.
    Chunked,
}

/// When a request body announces itself with `Expect: 100-continue`, and
/// how long it then waits for the `100`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ExpectContinue {
    /// Bodies of unknown length, or longer than this, ask; `None`: only a
    /// caller's own `Expect` does.
    pub(crate) min_size: Option<u64>,
    /// How long a body that asked waits for the server's answer.
    pub(crate) wait: std::time::Duration,
}

/// Requests through an HTTP forward proxy (for `http://` origins): the
/// target in absolute form, and the proxy's credentials.
#[derive(Debug)]
pub(crate) struct Forward {
    /// `http://host[:port]`, without a trailing slash.
    pub(crate) origin: String,
    pub(crate) auth: Option<HeaderValue>,
}

/// Which of the headers that decide a request's head and framing it
/// carries: found in one pass over its names, where a lookup each hashed
/// every name again.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Present {
    pub(crate) host: bool,
    pub(crate) transfer_encoding: bool,
    pub(crate) content_length: bool,
    pub(crate) connection: bool,
    pub(crate) upgrade: bool,
}

impl Present {
    pub(crate) fn of(headers: &HeaderMap) -> Present {
        let mut present = Present::default();
        for name in headers.keys() {
            if *name == HOST {
                present.host = true;
            } else if *name == TRANSFER_ENCODING {
                present.transfer_encoding = true;
            } else if *name == CONTENT_LENGTH {
                present.content_length = true;
            } else if *name == CONNECTION {
                present.connection = true;
            } else if *name == UPGRADE {
                present.upgrade = true;
            }
        }
        present
    }
}

/// Appends the request line and headers (with `Host`, the client's default
/// headers the request does not override, and the framing header the body
/// needs when the caller set none) to `out`; `present` is what
/// [`Present::of`] found in the request's headers.
pub(crate) fn head(
    req: &Request<Body>,
    present: Present,
    host: &HeaderValue,
    defaults: &HeaderMap,
    expect: Option<u64>,
    forward: Option<&Forward>,
    out: &mut Vec<u8>,
) -> Result<BodyFraming, Error> {
    if req
        .extensions()
        .get::<crate::proto::exchange::Protocol>()
        .is_some()
    {
        return Err(Error::msg(
            crate::error::ErrorKind::InvalidRequest,
            "an extended CONNECT (a :protocol) needs HTTP/2; this connection is HTTP/1.1",
        ));
    }
    out.extend_from_slice(req.method().as_str().as_bytes());
    out.push(b' ');
    if req.method() == http::Method::CONNECT {
        // Authority form (RFC 9112 §3.2.3), through a proxy too: the
        // tunnel's far end, with its port.
        authority_form(req.uri(), out)?;
    } else {
        if let Some(forward) = forward {
            // Absolute form: the proxy needs to know where the request goes.
            out.extend_from_slice(forward.origin.as_bytes());
        }
        let target = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
        out.extend_from_slice(target.as_bytes());
    }
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let headers = req.headers();
    if !present.host {
        header(out, b"host", host.as_bytes());
    }
    if let Some(auth) = forward.and_then(|f| f.auth.as_ref()) {
        header(out, b"proxy-authorization", auth.as_bytes());
    }
    let framing = framing(req, present)?;
    let declared = present.transfer_encoding || present.content_length;
    if !declared {
        match framing {
            BodyFraming::Chunked => header(out, b"transfer-encoding", b"chunked"),
            // GET and friends without a body say nothing; methods that carry
            // one say 0, or some servers wait for a body that never comes.
            BodyFraming::Length(0) if !crate::body::expects_body(req.method()) => {}
            BodyFraming::Length(n) => {
                out.extend_from_slice(b"content-length: ");
                // Writing into a Vec cannot fail.
                let _ = write!(out, "{n}");
                out.extend_from_slice(b"\r\n");
            }
        }
    }
    if expects_continue(req, framing, defaults, expect) {
        header(out, b"expect", b"100-continue");
    }
    let withheld = WithheldDefaults::of(req.extensions());
    for (name, value) in defaults {
        if !headers.contains_key(name) && !withheld.contains(name) {
            header(out, name.as_str().as_bytes(), value.as_bytes());
        }
    }
    for (name, value) in headers {
        header(out, name.as_str().as_bytes(), value.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    Ok(framing)
}

/// `host:port` of a CONNECT's URI, the port the scheme's default when the
/// URI names none.
fn authority_form(uri: &http::Uri, out: &mut Vec<u8>) -> Result<(), Error> {
    let Some(authority) = uri.authority() else {
        return Err(Error::msg(
            crate::error::ErrorKind::InvalidRequest,
            "a CONNECT request needs host:port",
        ));
    };
    out.extend_from_slice(authority.host().as_bytes());
    let port = authority.port_u16().unwrap_or_else(|| {
        if uri.scheme() == Some(&http::uri::Scheme::HTTPS) {
            443
        } else {
            80
        }
    });
    // Writing into a Vec cannot fail.
    let _ = write!(out, ":{port}");
    Ok(())
}

fn header(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// A body that does not go out in the head's own write (streamed, or
/// buffered past [`INLINE_BODY`]), of unknown length or longer than
/// `min_size` (`None`: never), announces itself with `Expect:
/// 100-continue` (as curl does), and waits for the `100` (see
/// [`super::upload`]). Half-duplex servers need it: Go's
/// net/http (Caddy, Go proxies), when a handler answers before reading the
/// whole body, reads and throws away up to 256 KiB of what is left of it,
/// so that an echo (or a streaming proxy in front of one) sends back a body
/// with a hole in a well-framed `200`; with the expectation it skips that
/// and reads on, answering `Connection: close` (see
/// `Connection::early_answer`). A body that goes out with the head is read
/// with it; a caller's own `Expect` (on the request or in the defaults) is
/// left alone.
fn expects_continue(
    req: &Request<Body>,
    framing: BodyFraming,
    defaults: &HeaderMap,
    min_size: Option<u64>,
) -> bool {
    let Some(min) = min_size else {
        return false;
    };
    let later = match (req.body().as_buffered(), framing) {
        (Some(body), _) => body.len() > INLINE_BODY && body.len() as u64 > min,
        (None, BodyFraming::Length(n)) => n > min,
        (None, BodyFraming::Chunked) => true,
    };
    later && !req.headers().contains_key(EXPECT) && !defaults.contains_key(EXPECT)
}

/// The head (as [`head`] writes it) asks for a `100 Continue` before a
/// body: one of ours, or the caller's.
pub(crate) fn asks_continue(
    req: &Request<Body>,
    framing: BodyFraming,
    defaults: &HeaderMap,
    min_size: Option<u64>,
) -> bool {
    // No body, nothing to wait for: asked before any header is looked up.
    if framing == BodyFraming::Length(0) {
        return false;
    }
    let said = |headers: &HeaderMap| {
        headers
            .get(EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
    };
    let own = if req.headers().contains_key(EXPECT) {
        said(req.headers())
    } else {
        said(defaults)
    };
    own || expects_continue(req, framing, defaults, min_size)
}

/// The caller's `Transfer-Encoding`/`Content-Length` if set, else what the body knows of its length.
fn framing(req: &Request<Body>, present: Present) -> Result<BodyFraming, Error> {
    if present.transfer_encoding {
        return Ok(BodyFraming::Chunked);
    }
    // Parsed as the request's validation did (one value, digits only), so
    // what frames the body is what was checked against it.
    if present.content_length {
        if let Some(n) = crate::validate::content_length(req.headers())? {
            return Ok(BodyFraming::Length(n));
        }
    }
    Ok(req
        .body()
        .len()
        .map_or(BodyFraming::Chunked, BodyFraming::Length))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    /// The client's default `expect_continue`.
    const DEFAULT_MIN: Option<u64> = Some(16 * 1024);

    /// [`super::head`], with the request's headers looked over as `prepare` does.
    fn head(
        req: &Request<Body>,
        host: &HeaderValue,
        defaults: &HeaderMap,
        expect: Option<u64>,
        forward: Option<&Forward>,
        out: &mut Vec<u8>,
    ) -> Result<BodyFraming, Error> {
        let present = Present::of(req.headers());
        super::head(req, present, host, defaults, expect, forward, out)
    }

    fn encode(req: Request<Body>) -> (String, BodyFraming) {
        let mut out = Vec::new();
        let host = HeaderValue::from_static("example.com:8080");
        let framing = head(&req, &host, &HeaderMap::new(), DEFAULT_MIN, None, &mut out).unwrap();
        (String::from_utf8(out).unwrap(), framing)
    }

    #[test]
    fn a_get_in_origin_form_with_host() {
        let req = Request::get("http://example.com:8080/a/b?c=d")
            .header("accept", "*/*")
            .body(Body::empty())
            .unwrap();
        let (text, framing) = encode(req);
        assert_eq!(
            text,
            "GET /a/b?c=d HTTP/1.1\r\nhost: example.com:8080\r\naccept: */*\r\n\r\n"
        );
        assert_eq!(framing, BodyFraming::Length(0));
    }

    #[test]
    fn bodies_are_framed_by_length_or_chunks() {
        let (text, framing) = encode(Request::post("http://h/").body("abc".into()).unwrap());
        assert!(text.contains("content-length: 3\r\n"), "{text}");
        assert_eq!(framing, BodyFraming::Length(3));
        let (text, _) = encode(Request::post("http://h/").body(Body::empty()).unwrap());
        assert!(text.contains("content-length: 0\r\n"), "{text}");
        let stream = Body::wrap(Unsized);
        let (text, framing) = encode(Request::put("http://h/").body(stream).unwrap());
        assert!(text.contains("transfer-encoding: chunked\r\n"), "{text}");
        assert_eq!(framing, BodyFraming::Chunked);
    }

    #[test]
    fn bodies_sent_after_the_head_expect_100_continue() {
        let expect = "expect: 100-continue\r\n";
        let stream = Request::put("http://h/").body(Body::wrap(Unsized));
        let (text, _) = encode(stream.unwrap());
        assert_eq!(text.matches(expect).count(), 1, "{text}");
        let sized = Request::put("http://h/")
            .header("content-length", "0")
            .body(Body::wrap(Unsized));
        let (text, _) = encode(sized.unwrap());
        assert!(!text.contains("expect"), "{text}");
        let (text, _) = encode(Request::post("http://h/").body("abc".into()).unwrap());
        assert!(!text.contains("expect"), "{text}");
        let inline = Body::from(vec![b'x'; INLINE_BODY]);
        let (text, _) = encode(Request::post("http://h/").body(inline).unwrap());
        assert!(!text.contains("expect"), "{text}");
        let large = Body::from(vec![b'x'; INLINE_BODY + 1]);
        let (text, _) = encode(Request::post("http://h/").body(large).unwrap());
        assert_eq!(text.matches(expect).count(), 1, "{text}");
        let own = Request::put("http://h/")
            .header("expect", "100-continue")
            .body(Body::wrap(Unsized));
        let (text, _) = encode(own.unwrap());
        assert_eq!(text.matches(expect).count(), 1, "{text}");
        let mut defaults = HeaderMap::new();
        defaults.insert("expect", HeaderValue::from_static("100-continue"));
        let req = Request::put("http://h/").body(Body::wrap(Unsized)).unwrap();
        let mut out = Vec::new();
        head(
            &req,
            &HeaderValue::from_static("h"),
            &defaults,
            DEFAULT_MIN,
            None,
            &mut out,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches(expect).count(), 1, "{text}");
    }

    #[test]
    fn the_callers_framing_and_host_headers_win() {
        let req = Request::post("http://h/")
            .header("host", "other")
            .header("content-length", "3")
            .body("abc".into())
            .unwrap();
        let (text, framing) = encode(req);
        assert_eq!(
            text,
            "POST / HTTP/1.1\r\nhost: other\r\ncontent-length: 3\r\n\r\n"
        );
        assert_eq!(framing, BodyFraming::Length(3));
        let bad = Request::post("http://h/")
            .header("content-length", "x")
            .body(Body::empty())
            .unwrap();
        let err = head(
            &bad,
            &HeaderValue::from_static("h"),
            &HeaderMap::new(),
            DEFAULT_MIN,
            None,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidRequest);
    }

    #[test]
    fn through_a_forward_proxy_the_target_is_absolute_and_credentials_are_added() {
        let req = Request::get("http://h:8080/p?q=1")
            .body(Body::empty())
            .unwrap();
        let forward = Forward {
            origin: "http://h:8080".into(),
            auth: Some(HeaderValue::from_static("Basic dTpw")),
        };
        let mut out = Vec::new();
        head(
            &req,
            &HeaderValue::from_static("h:8080"),
            &HeaderMap::new(),
            DEFAULT_MIN,
            Some(&forward),
            &mut out,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET http://h:8080/p?q=1 HTTP/1.1\r\nhost: h:8080\r\nproxy-authorization: Basic dTpw\r\n\r\n"
        );
    }

    #[test]
    fn connect_is_written_in_authority_form_with_its_port_through_a_proxy_too() {
        for (uri, line) in [
            (
                "http://10.0.0.7:5432/ignored",
                "CONNECT 10.0.0.7:5432 HTTP/1.1\r\n",
            ),
            ("http://example.com", "CONNECT example.com:80 HTTP/1.1\r\n"),
            ("https://[::1]", "CONNECT [::1]:443 HTTP/1.1\r\n"),
        ] {
            let req = Request::builder()
                .method(http::Method::CONNECT)
                .uri(uri)
                .body(Body::empty())
                .unwrap();
            let forward = Forward {
                origin: "http://proxy:3128".into(),
                auth: None,
            };
            for forward in [None, Some(&forward)] {
                let mut out = Vec::new();
                let host = HeaderValue::from_static("h");
                head(
                    &req,
                    &host,
                    &HeaderMap::new(),
                    DEFAULT_MIN,
                    forward,
                    &mut out,
                )
                .unwrap();
                let text = String::from_utf8(out).unwrap();
                assert!(text.starts_with(line), "{text:?}");
                assert!(!text.contains("content-length"), "{text:?}");
            }
        }
    }

    #[test]
    fn default_headers_fill_in_what_the_request_does_not_set() {
        let mut defaults = HeaderMap::new();
        defaults.insert("user-agent", HeaderValue::from_static("svc/1"));
        defaults.insert("accept", HeaderValue::from_static("*/*"));
        let req = Request::get("http://h/")
            .header("accept", "application/json")
            .body(Body::empty())
            .unwrap();
        let mut out = Vec::new();
        head(
            &req,
            &HeaderValue::from_static("h"),
            &defaults,
            DEFAULT_MIN,
            None,
            &mut out,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET / HTTP/1.1\r\nhost: h\r\nuser-agent: svc/1\r\naccept: application/json\r\n\r\n"
        );
    }

    /// A body of unknown length.
    struct Unsized;

    impl http_body::Body for Unsized {
        type Data = bytes::Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
            std::task::Poll::Ready(None)
        }
    }
}
