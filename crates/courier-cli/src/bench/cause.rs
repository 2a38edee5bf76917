//! What a failed request's error says, in words that name the real cause.
//!
//! A count per error kind (`connect 97,673`) tells a user that something failed, not what: the
//! report needs "connection refused 127.0.0.1:1", the host whose name did not resolve, or that
//! the server's certificate has an unknown issuer and how to get past it. The library's error
//! carries the kind and the underlying cause as its source chain; this module turns both, plus
//! the URL the request went to, into one line. Messages are grouped by their text, so anything
//! that varies per request (a local port, a stream id) would split them: only the origin is
//! added, and the source chain is kept as the library words it.

use std::error::Error as _;

use courier::{Error, ErrorKind};
use http::Uri;

/// A failed request: its kind for the per-kind counts and a line naming the cause for the
/// verdict (built only on failure, so successful requests pay nothing for it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// `ErrorKind::as_str()`.
    pub kind: &'static str,
    /// See [`describe`].
    pub message: String,
}

impl Failure {
    pub(super) fn new(error: &Error, uri: &Uri) -> Self {
        Self {
            kind: error.kind().as_str(),
            message: describe(error, uri),
        }
    }
}

/// One line for a failed request to `uri`.
pub fn describe(error: &Error, uri: &Uri) -> String {
    let origin = origin(uri);
    let chain = chain(error);
    let lower = chain.to_ascii_lowercase();
    match error.kind() {
        ErrorKind::Connect if lower.contains("refused") => format!("connection refused {origin}"),
        ErrorKind::Connect => format!("cannot connect to {origin}: {chain}"),
        ErrorKind::ConnectTimeout => {
            format!("connect to {origin} timed out (see --connect-timeout)")
        }
        ErrorKind::Dns => format!(
            "DNS lookup of {} failed: {}",
            uri.host().unwrap_or("(no host)"),
            chain
                .strip_prefix("DNS resolution failed: ")
                .unwrap_or(&chain)
        ),
        ErrorKind::Tls if lower.contains("unknownissuer") || lower.contains("unknown issuer") => {
            format!("TLS to {origin}: certificate has an unknown issuer — use `--insecure` or `--cacert FILE`")
        }
        ErrorKind::Tls => format!("TLS to {origin}: {chain}"),
        _ => format!("{chain} ({origin})"),
    }
}

/// `host:port`, with the scheme's default port filled in.
fn origin(uri: &Uri) -> String {
    let host = uri.host().unwrap_or("");
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    // `Uri::host` keeps an IPv6 address's brackets, so `host:port` is right for every host.
    format!("{host}:{port}")
}

/// The error and each source that adds something its parent's text does not already say.
fn chain(error: &Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let part = cause.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = cause.source();
    }
    text
}

/// A hint for the verdict when the messages point at a protocol mismatch: over plain TCP,
/// `--http 2` sends HTTP/2 without asking (prior knowledge), which a server that speaks only
/// HTTP/1.1 answers with an HTTP/1.1 error or a closed connection.
pub fn protocol_hint(http2_prior_knowledge: bool, kinds: &[&str]) -> Option<String> {
    let mismatch = [
        "protocol",
        "connection_closed",
        "body",
        "canceled",
        "refused",
    ];
    (http2_prior_knowledge && kinds.iter().any(|k| mismatch.contains(k))).then(|| {
        "`--http 2` over http:// speaks HTTP/2 without negotiation; the server may speak only HTTP/1.1 — try `--http 1.1` (or https:// so ALPN chooses)".to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_fill_in_default_ports() {
        assert_eq!(
            origin(&"http://127.0.0.1:1/".parse().unwrap()),
            "127.0.0.1:1"
        );
        assert_eq!(
            origin(&"https://example.com/x".parse().unwrap()),
            "example.com:443"
        );
        assert_eq!(
            origin(&"http://example.com/".parse().unwrap()),
            "example.com:80"
        );
        assert_eq!(origin(&"http://[::1]:8080/".parse().unwrap()), "[::1]:8080");
    }

    #[test]
    fn protocol_hint_only_for_prior_knowledge() {
        assert!(protocol_hint(true, &["protocol"]).is_some());
        assert!(protocol_hint(false, &["protocol"]).is_none());
        assert!(protocol_hint(true, &["dns"]).is_none());
    }
}
