//! `Alt-Svc` (issue 31): the header a server uses to move a client to
//! HTTP/3, read by a client that learns it (`http3_alt_svc(true)`). The
//! peer writes it, so its length, its entries, its field lines and its
//! parameters are bounded; a value past a bound is ignored whole; an
//! alternative on another host, a plain-http origin's header and `clear`
//! move nothing. Each case answers `/hostile` with one such header on a
//! kept connection: the response must come whole, within the budget, and
//! the follow-up must be served (`it::alt_svc` checks where the client
//! then connects).

use courier::ClientBuilder;

use super::resp;
use crate::corpus::case::{Case, Class::AltSvc, Transport};

fn learning(b: ClientBuilder) -> ClientBuilder {
    b.http3_alt_svc(true)
}

/// A 200 `ok` with these header lines, over TLS (only https origins learn).
fn with(name: &'static str, headers: &[&str]) -> Case {
    let lines: Vec<&str> = ["content-length: 2"]
        .into_iter()
        .chain(headers.iter().copied())
        .collect();
    Case::h1_keep(name, AltSvc, resp("HTTP/1.1 200 OK", &lines, b"ok"))
        .over(&[Transport::TlsH1])
        .client(learning)
        .ok(200, b"ok")
}

fn leaked(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

pub fn cases() -> Vec<Case> {
    let oversized = leaked(format!(
        "alt-svc: h3=\":1\"; x=\"{}\"",
        "a".repeat(16 * 1024)
    ));
    let thousands = leaked(format!(
        "alt-svc: {}",
        vec!["h3=\":1\"; ma=60"; 3000].join(", ")
    ));
    let many_in_bound = leaked(format!("alt-svc: {}", vec!["h3=\":1\""; 200].join(",")));
    let many_lines: Vec<&str> = (0..90)
        .map(|i| leaked(format!("alt-svc: h3=\":{}\"; ma=3600; persist=1", 1000 + i)))
        .collect();
    let many_params = leaked(format!("alt-svc: h3=\":1\"{}", "; p=\"v\"".repeat(1000)));
    vec![
        with("alt-svc-oversized-value", &[oversized]),
        with("alt-svc-thousands-of-entries", &[thousands]),
        with("alt-svc-entries-past-the-kept-count", &[many_in_bound]),
        with("alt-svc-ninety-field-lines", &many_lines),
        with("alt-svc-thousand-parameters", &[many_params]),
        with("alt-svc-ma-negative", &["alt-svc: h3=\":1\"; ma=-1"]),
        with(
            "alt-svc-ma-huge",
            &["alt-svc: h3=\":1\"; ma=99999999999999999999999999"],
        ),
        with("alt-svc-ma-non-numeric", &["alt-svc: h3=\":1\"; ma=soon"]),
        with("alt-svc-ma-zero", &["alt-svc: h3=\":1\"; ma=0"]),
        with(
            "alt-svc-port-zero-and-overflow",
            &["alt-svc: h3=\":0\", h3=\":99999\""],
        ),
        with(
            "alt-svc-another-host",
            &["alt-svc: h3=\"evil.example:443\", h3=\"127.0.0.2:443\""],
        ),
        with(
            "alt-svc-host-too-long",
            &[leaked(format!(
                "alt-svc: h3=\"{}.example:443\"",
                "a".repeat(300)
            ))],
        ),
        with(
            "alt-svc-unterminated-quote",
            &["alt-svc: h3=\":1, h3=\":2\""],
        ),
        with("alt-svc-percent-junk", &["alt-svc: h%3=\":1\", %zz=\":2\""]),
        with(
            "alt-svc-signed-escape-and-port",
            &["alt-svc: h%+3=\":1\", h3=\":+443\", h3=\":-1\""],
        ),
        with("alt-svc-clear", &["alt-svc: clear"]),
        with(
            "alt-svc-clear-among-entries",
            &["alt-svc: clear, h3=\":1\""],
        ),
        // Plain http: never learnt (HTTP/3 needs TLS; anyone on the path
        // could have written it).
        Case::h1_keep(
            "alt-svc-on-plain-http",
            AltSvc,
            resp(
                "HTTP/1.1 200 OK",
                &["content-length: 2", "alt-svc: h3=\":1\""],
                b"ok",
            ),
        )
        .client(learning)
        .ok(200, b"ok"),
    ]
}
