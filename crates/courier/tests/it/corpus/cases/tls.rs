//! TLS gone wrong: handshakes answered with garbage, an alert or plain
//! HTTP; bodies truncated by a close without close_notify (an attacker's
//! truncation must not pass for the end of a close-delimited body), and
//! plaintext records injected into the encrypted stream.

use courier::ErrorKind::*;

use super::{cat, h2_headers, ok, resp, w};
use crate::corpus::case::{Case, Class, Step, Transport::*};

const CLASS: Class = Class::Tls;

const L200: &str = "HTTP/1.1 200 OK";
/// A fatal handshake_failure alert, in a plaintext record.
const ALERT: &[u8] = b"\x15\x03\x03\x00\x02\x02\x28";
/// The server's pause between a head and what breaks the body after it:
/// written together, rustls reports the bad record before the head.
const PAST_THE_HEAD: std::time::Duration = std::time::Duration::from_millis(200);

pub fn cases() -> Vec<Case> {
    let raw = |name, steps| Case::raw(name, CLASS, TlsH1, steps);
    vec![
        raw("handshake-garbage", vec![w(vec![b'z'; 512])])
            .err(Tls)
            .over(&[TlsH1, TlsH2]),
        raw("handshake-alert", vec![w(ALERT)])
            .err(Tls)
            .over(&[TlsH1, TlsH2]),
        raw("handshake-http-answer", vec![w(ok(b"hello")), Step::Close]).err(Tls),
        raw("handshake-closed", vec![Step::Close]).err(Tls),
        // A handshake that never finishes: once the attempt has run a quarter
        // of connect_timeout, the waiting request gets a dial of its own and is
        // served on it (the corpus server answers every later connection);
        // the stuck attempt ends at connect_timeout. Before, the request waited
        // for the stuck attempt and failed with ConnectTimeout.
        raw("handshake-silent", vec![])
            .client(|b| b.connect_timeout(std::time::Duration::from_millis(1000)))
            .ok_len(200, 13),
        Case::h1_steps(
            "truncated-cl-body",
            CLASS,
            vec![
                w(resp(L200, &["content-length: 100"], &[b'x'; 50])),
                Step::Abort,
            ],
        )
        .over(&[TlsH1])
        .err(Body),
        Case::h1_steps(
            "close-notify-mid-cl-body",
            CLASS,
            vec![
                w(resp(L200, &["content-length: 100"], &[b'x'; 50])),
                Step::Close,
            ],
        )
        .over(&[TlsH1])
        .err(Body),
        Case::h1_steps(
            "truncated-close-delimited-body",
            CLASS,
            vec![w(resp(L200, &[], &[b'x'; 50])), Step::Abort],
        )
        .over(&[TlsH1])
        .err(Body),
        Case::h1_steps(
            "close-notify-ends-close-delimited-body",
            CLASS,
            vec![w(resp(L200, &[], &[b'x'; 50])), Step::Close],
        )
        .over(&[TlsH1])
        .ok_len(200, 50),
        Case::h1_steps(
            "truncated-chunked-body",
            CLASS,
            vec![
                w(resp(
                    L200,
                    &["transfer-encoding: chunked"],
                    b"5\r\nhello\r\n",
                )),
                Step::Abort,
            ],
        )
        .over(&[TlsH1])
        .err(Body),
        Case::h1_steps(
            "plaintext-alert-mid-body",
            CLASS,
            vec![
                w(resp(L200, &["content-length: 100"], &[b'x'; 50])),
                // Past the head: the alert breaks the body, not the head.
                Step::Pause(PAST_THE_HEAD),
                Step::Inject(ALERT.to_vec()),
            ],
        )
        .over(&[TlsH1])
        .err(Body),
        Case::h1_steps(
            "garbage-record-before-head",
            CLASS,
            vec![Step::Inject(b"\x17\x03\x03\x00\x05hello".to_vec())],
        )
        .over(&[TlsH1])
        // rustls's own error (a record that does not decrypt) before the
        // head: a TLS failure, as a refused client certificate is.
        .err(Tls),
        Case::h2("h2-truncated-mid-body", CLASS, |s| {
            vec![
                w(cat(&[
                    &h2_headers(s, &super::block_200(&[]), false),
                    &super::data(s, b"hel", false),
                ])),
                Step::Abort,
            ]
        })
        .over(&[TlsH2])
        .err(Body),
        Case::h2("h2-plaintext-alert-mid-body", CLASS, |s| {
            vec![
                w(cat(&[
                    &h2_headers(s, &super::block_200(&[]), false),
                    &super::data(s, b"hel", false),
                ])),
                Step::Pause(PAST_THE_HEAD),
                Step::Inject(ALERT.to_vec()),
            ]
        })
        .over(&[TlsH2])
        .err(Body),
    ]
}
