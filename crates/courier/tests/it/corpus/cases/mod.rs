//! The corpus's cases, one file per class of misbehaviour, and the small
//! byte builders their tables share.

mod across;
#[cfg(feature = "http3")]
mod alt_svc;
#[cfg(feature = "cookies")]
mod cookies;
mod decompression;
mod floods;
mod flow_control;
mod framing;
mod goaway;
mod headers;
mod hpack;
#[cfg(all(feature = "http3", feature = "dns-srv"))]
mod https_record;
mod injection;
mod interim;
mod lengths;
mod proxies;
mod redirects;
mod routes;
mod stream_ids;
mod tls;
mod upgrades;

use super::case::Case;

/// Every case, in class order.
pub async fn all() -> Vec<Case> {
    let mut cases = Vec::new();
    cases.extend(framing::cases());
    cases.extend(interim::cases());
    cases.extend(headers::cases());
    cases.extend(floods::cases());
    cases.extend(hpack::cases());
    cases.extend(flow_control::cases());
    cases.extend(stream_ids::cases());
    cases.extend(goaway::cases());
    cases.extend(lengths::cases());
    cases.extend(tls::cases());
    cases.extend(through_the_client(decompression::cases().await));
    cases.extend(through_the_client(redirects::cases()));
    cases.extend(injection::cases());
    cases.extend(proxies::cases());
    cases.extend(routes::cases());
    cases.extend(upgrades::cases());
    #[cfg(feature = "cookies")]
    cases.extend(cookies::cases());
    #[cfg(feature = "http3")]
    cases.extend(alt_svc::cases());
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    cases.extend(https_record::cases());
    cases.extend(across::cases());
    cases
}

/// `cases`, and a twin of each that runs through a middleware stack of
/// only redirects and decompression: the twin (named `…/client`) gives
/// those settings to a plain `Client`, which follows and decodes with the
/// same code (issue 28), and must meet the same outcome.
fn through_the_client(cases: Vec<Case>) -> Vec<Case> {
    let mut out = Vec::with_capacity(cases.len() * 2);
    for case in cases {
        let twin = case.stack.and_then(|stack| {
            let stack = stack();
            let defaults = courier::middleware::RedirectConfig::default();
            let only_these = stack.trace.is_none()
                && stack.concurrency_limit.is_none()
                && stack.timeout.is_none()
                && stack.retry.is_none()
                && stack.hedging.is_none()
                && stack.circuit_breaker.is_none();
            #[cfg(feature = "cookies")]
            let only_these = only_these && stack.cookies.is_none();
            // The client has reqwest's fixed rules: no downgrade, its list
            // of sensitive headers.
            let client_rules = stack.redirect.as_ref().is_none_or(|r| {
                !r.allow_https_to_http && r.sensitive_headers == defaults.sensitive_headers
            });
            (only_these && client_rules).then(|| {
                let mut twin = case.clone();
                twin.name = Box::leak(format!("{}/client", case.name).into_boxed_str());
                twin.by_client = true;
                twin
            })
        });
        out.push(case);
        out.extend(twin);
    }
    out
}

/// An HTTP/1.1 response: `status_line` (e.g. `HTTP/1.1 200 OK`), header
/// lines as given, an empty line, `body`.
pub fn resp(status_line: &str, headers: &[&str], body: &[u8]) -> Vec<u8> {
    let mut out = format!("{status_line}\r\n").into_bytes();
    for h in headers {
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

/// `parts` one after another.
pub fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// `200 OK` with a Content-Length and `body`.
pub fn ok(body: &[u8]) -> Vec<u8> {
    resp(
        "HTTP/1.1 200 OK",
        &[&format!("content-length: {}", body.len())],
        body,
    )
}

/// A response the next request must never see: its body marks a desync.
pub fn evil() -> Vec<u8> {
    ok(b"EVIL")
}

/// Writes `bytes` (a step).
pub fn w(bytes: impl Into<Vec<u8>>) -> super::case::Step {
    super::case::Step::Write(bytes.into())
}

/// An HTTP/2 HEADERS frame (END_HEADERS) on `stream` carrying `block`,
/// ending the stream if `end`.
pub fn h2_headers(stream: u32, block: &[u8], end: bool) -> Vec<u8> {
    use crate::support::h2::{frame, END_HEADERS, END_STREAM, HEADERS};
    let flags = END_HEADERS | if end { END_STREAM } else { 0 };
    frame(HEADERS, flags, stream, block)
}

/// `:status: 200` and `fields`, as one header block.
pub fn block_200(fields: &[(&str, &[u8])]) -> Vec<u8> {
    use crate::support::h2::{field, STATUS_200};
    let mut block = vec![STATUS_200];
    for (name, value) in fields {
        block.extend(field(name, value));
    }
    block
}

/// A DATA frame on `stream`.
pub fn data(stream: u32, bytes: &[u8], end: bool) -> Vec<u8> {
    use crate::support::h2::{frame, DATA, END_STREAM};
    frame(DATA, if end { END_STREAM } else { 0 }, stream, bytes)
}

/// `frame` `n` times.
pub fn times(frame: &[u8], n: usize) -> Vec<u8> {
    frame.repeat(n)
}
