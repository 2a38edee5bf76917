//! Request routing and the regular (well-behaved) endpoints.
//!
//! Routing is method-agnostic: the path alone picks the endpoint, so a
//! client test can use any method against any endpoint.

use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, LOCATION};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};

use crate::body::ResponseBody;
use crate::fault::Fault;
use crate::faults;
use crate::reply::{
    bad_request, not_found, ok, respond, response, Outcome, APPLICATION_JSON, OCTET_STREAM,
    TEXT_PLAIN,
};
use crate::request_body::RequestBody;

/// Picks the endpoint for `req`.
pub(crate) fn route(req: Request<RequestBody>) -> Outcome {
    let path = req.uri().path();
    if let Some(n) = path.strip_prefix("/bytes/") {
        return bytes(n, req.uri().query());
    }
    if let Some(n) = path.strip_prefix("/json/") {
        return json(n);
    }
    if let Some(delay) = path.strip_prefix("/delay/") {
        return match delay_of(delay) {
            Some(delay) => Outcome::Delay(delay),
            None => bad_request("invalid delay: expected /delay/{ms}, /delay/{n}ms or /delay/{n}s"),
        };
    }
    if let Some(code) = path.strip_prefix("/status/") {
        return status(code);
    }
    if let Some(n) = path.strip_prefix("/redirect/") {
        return redirect_chain(n);
    }
    if let Some(code) = path.strip_prefix("/redirect-to/") {
        return redirect_to(code, req.uri().query());
    }
    if let Some(fault) = path.strip_prefix("/fault/") {
        return faults::route(fault);
    }
    match path {
        "/get" => crate::httpbin::get(&req),
        "/gzip" => crate::httpbin::gzip(&req),
        "/echo" => echo(req),
        "/headers" => headers(req.headers()),
        // RFC 8470: 425 for a request received in early data (0-RTT),
        // 200 once the handshake is done; `/too-early/always` never takes
        // the request.
        "/too-early" if req.headers().contains_key(crate::protocol::EARLY_DATA) => too_early(),
        "/too-early" => Outcome::Respond(ok()),
        "/too-early/always" => too_early(),
        "/response-headers" => response_headers(req.uri().query()),
        // The HTTP/2 equivalent of `connection: close` is a GOAWAY.
        "/close" => Outcome::Fault(Fault::GoAway),
        _ => not_found(),
    }
}

/// `/delay/`'s argument: milliseconds (`250`, as it always was), or with a unit, the CLI's
/// duration syntax (`250ms`, `1.5s`), so a path can say what it means.
fn delay_of(text: &str) -> Option<Duration> {
    if let Ok(ms) = text.parse::<u64>() {
        return Some(Duration::from_millis(ms));
    }
    let (number, scale) = match text.strip_suffix("ms") {
        Some(n) => (n, 1e-3),
        None => (text.strip_suffix('s')?, 1.0),
    };
    let value = number.parse::<f64>().ok().filter(|v| *v >= 0.0)?;
    Duration::try_from_secs_f64(value * scale).ok()
}

/// `/bytes/{n}[?chunked=1]`: `n` bytes of the shared pattern, streamed in
/// 64 KiB frames without copying.
fn bytes(n: &str, query: Option<&str>) -> Outcome {
    let Ok(n) = n.parse::<u64>() else {
        return bad_request("invalid length: expected /bytes/{n}");
    };
    let chunked = query.is_some_and(|q| {
        q.split('&')
            .any(|pair| pair == "chunked=1" || pair == "chunked=true")
    });
    let body = ResponseBody::patterned(Bytes::new(), n, Bytes::new(), !chunked);
    respond(StatusCode::OK, &OCTET_STREAM, body)
}

/// `/json/{n}`: a valid JSON object of exactly `n` bytes, for any `n >= 2`
/// (`{"data":"…"}` from 11 bytes on, `{` spaces `}` below that). Smaller
/// `n` gets the smallest object, `{}`.
fn json(n: &str) -> Outcome {
    const PREFIX: &[u8] = b"{\"data\":\"";
    const SUFFIX: &[u8] = b"\"}";
    const FRAMING: u64 = (PREFIX.len() + SUFFIX.len()) as u64;
    let Ok(n) = n.parse::<u64>() else {
        return bad_request("invalid length: expected /json/{n}");
    };
    let body = if n >= FRAMING {
        ResponseBody::patterned(
            Bytes::from_static(PREFIX),
            n - FRAMING,
            Bytes::from_static(SUFFIX),
            true,
        )
    } else {
        // Fewer than 11 bytes: whitespace padding keeps it valid JSON.
        let spaces = usize::try_from(n.saturating_sub(2)).unwrap_or(0);
        let mut small = Vec::with_capacity(spaces + 2);
        small.push(b'{');
        small.resize(spaces + 1, b' ');
        small.push(b'}');
        ResponseBody::full(small)
    };
    respond(StatusCode::OK, &APPLICATION_JSON, body)
}

/// `/status/{code}`: that status with a tiny body (none where HTTP forbids
/// one). Informational codes (1xx) cannot be a final response: 400.
fn status(code: &str) -> Outcome {
    let status = match code.parse::<u16>().map(StatusCode::from_u16) {
        Ok(Ok(status)) if !status.is_informational() => status,
        _ => return bad_request("invalid status: expected /status/{200..999}"),
    };
    let body = match status.as_u16() {
        204 | 205 | 304 => ResponseBody::empty(),
        _ => ResponseBody::full(Bytes::from_static(
            status.canonical_reason().unwrap_or("status").as_bytes(),
        )),
    };
    respond(status, &TEXT_PLAIN, body)
}

/// `/redirect/{n}`: 302 to `/redirect/{n-1}`; `/redirect/0` answers 200 "ok".
fn redirect_chain(n: &str) -> Outcome {
    match n.parse::<u64>() {
        Ok(0) => Outcome::Respond(ok()),
        Ok(n) => redirect(StatusCode::FOUND, &format!("/redirect/{}", n - 1)),
        Err(_) => bad_request("invalid count: expected /redirect/{n}"),
    }
}

/// `/redirect-to/{status}?{location}`: that redirect status with the whole
/// query string, verbatim, as `Location` (relative or absolute, any origin).
fn redirect_to(code: &str, location: Option<&str>) -> Outcome {
    let status = match code.parse::<u16>().map(StatusCode::from_u16) {
        Ok(Ok(status)) if status.is_redirection() => status,
        _ => return bad_request("invalid status: expected /redirect-to/{300..399}?{location}"),
    };
    match location {
        Some(location) if !location.is_empty() => redirect(status, location),
        _ => bad_request("missing location: expected /redirect-to/{status}?{location}"),
    }
}

fn redirect(status: StatusCode, location: &str) -> Outcome {
    let Ok(location) = HeaderValue::from_str(location) else {
        return bad_request("invalid location");
    };
    let mut response = response(status, &TEXT_PLAIN, ResponseBody::full("redirect"));
    response.headers_mut().insert(LOCATION, location);
    Outcome::Respond(response)
}

/// `/echo`: the request body streamed back with the request's content type.
fn echo(req: Request<RequestBody>) -> Outcome {
    let content_type = req.headers().get(CONTENT_TYPE).cloned();
    let mut response = Response::new(ResponseBody::echo(req.into_body()));
    if let Some(content_type) = content_type {
        response.headers_mut().insert(CONTENT_TYPE, content_type);
    }
    Outcome::Respond(response)
}

/// `/headers`: the request headers as a JSON object; repeated names are
/// joined with ", ", non-UTF-8 bytes are replaced.
/// `/response-headers?name=value&…` (httpbin's): `200` with those header
/// lines (percent-decoded; an invalid name or value is a `400`), so a test
/// can have any protocol's response carry, say, `alt-svc: clear`.
fn response_headers(query: Option<&str>) -> Outcome {
    let mut response = Response::new(ResponseBody::full(Bytes::new()));
    for (name, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()).take(32) {
        let (Ok(name), Ok(value)) = (
            http::HeaderName::try_from(name.as_ref()),
            HeaderValue::try_from(value.as_ref()),
        ) else {
            return bad_request("invalid header name or value");
        };
        response.headers_mut().append(name, value);
    }
    Outcome::Respond(response)
}

fn headers(headers: &HeaderMap) -> Outcome {
    let mut object = serde_json::Map::with_capacity(headers.keys_len());
    for name in headers.keys() {
        let joined = headers
            .get_all(name)
            .iter()
            .map(|value| String::from_utf8_lossy(value.as_bytes()))
            .collect::<Vec<_>>()
            .join(", ");
        object.insert(name.as_str().to_owned(), serde_json::Value::String(joined));
    }
    match serde_json::to_vec(&serde_json::Value::Object(object)) {
        Ok(json) => respond(StatusCode::OK, &APPLICATION_JSON, ResponseBody::full(json)),
        // Serialising strings into a Vec cannot fail; answer rather than panic.
        Err(_) => respond(
            StatusCode::INTERNAL_SERVER_ERROR,
            &TEXT_PLAIN,
            ResponseBody::full("cannot serialise headers"),
        ),
    }
}

/// `425 Too Early` (RFC 8470 §5.2).
fn too_early() -> Outcome {
    let status = StatusCode::from_u16(425).unwrap_or(StatusCode::BAD_REQUEST);
    respond(
        status,
        &TEXT_PLAIN,
        ResponseBody::full(Bytes::from_static(b"too early\n")),
    )
}
