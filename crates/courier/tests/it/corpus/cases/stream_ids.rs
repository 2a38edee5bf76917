//! Stream identifiers a server must not use (RFC 9113 §5.1): stream 0 for
//! stream frames, streams the client never opened (even or odd), frames
//! after the end of a stream, pushes the client refused, and resets.

use courier::ErrorKind::*;

use super::{block_200, cat, data, h2_headers, w};
use crate::corpus::case::{Case, Class::StreamIds};
use crate::support::h2::{
    frame, goaway, ping, rst_stream, settings, CANCEL, NO_ERROR, REFUSED_STREAM,
};

pub fn cases() -> Vec<Case> {
    vec![
        Case::h2("headers-on-stream-0", StreamIds, |_| {
            vec![w(h2_headers(0, &block_200(&[]), true))]
        })
        .err(Protocol),
        Case::h2("headers-on-even-stream", StreamIds, |s| {
            vec![w(h2_headers(s + 1, &block_200(&[]), true))]
        })
        .err(Protocol),
        Case::h2("headers-on-unopened-stream", StreamIds, |s| {
            vec![w(h2_headers(s + 2, &block_200(&[]), true))]
        })
        .err(Protocol)
        .tls_too(),
        Case::h2("data-on-stream-0", StreamIds, |_| {
            vec![w(data(0, b"x", false))]
        })
        .err(Protocol),
        Case::h2("data-on-unopened-stream", StreamIds, |s| {
            vec![w(data(s + 2, b"x", false))]
        })
        .err(Protocol),
        Case::h2("push-promise-refused", StreamIds, |s| {
            let mut payload = 2u32.to_be_bytes().to_vec();
            payload.extend(block_200(&[]));
            payload[4] = 0x82; // :method GET
            vec![w(frame(0x5, 0x4, s, &payload))]
        })
        .err(Protocol),
        Case::h2("rst-stream-0", StreamIds, |_| {
            vec![w(rst_stream(0, CANCEL))]
        })
        .err(Protocol),
        Case::h2("settings-on-a-stream", StreamIds, |s| {
            let mut f = settings(&[]);
            f[8] = s as u8;
            vec![w(f)]
        })
        .err(Protocol),
        Case::h2("ping-on-a-stream", StreamIds, |s| {
            let mut f = ping(false, [0; 8]);
            f[8] = s as u8;
            vec![w(f)]
        })
        .err(Protocol),
        Case::h2("goaway-on-a-stream", StreamIds, |s| {
            let mut f = goaway(s, NO_ERROR);
            f[8] = s as u8;
            vec![w(f)]
        })
        .err(Protocol),
        Case::h2("headers-after-end-stream", StreamIds, |s| {
            vec![w(cat(&[
                &h2_headers(s, &block_200(&[]), false),
                &data(s, b"hello", true),
                &h2_headers(s, &block_200(&[]), true),
            ]))]
        })
        .ok(200, b"hello"),
        Case::h2("rst-cancel-before-head", StreamIds, |s| {
            vec![w(rst_stream(s, CANCEL))]
        })
        .err(Protocol),
        Case::h2("rst-refused-every-time", StreamIds, |s| {
            vec![w(rst_stream(s, REFUSED_STREAM))]
        })
        .err(Refused),
        Case::h2("rst-mid-body", StreamIds, |s| {
            vec![w(cat(&[
                &h2_headers(s, &block_200(&[("content-length", b"10")]), false),
                &data(s, b"hello", false),
                &rst_stream(s, CANCEL),
            ]))]
        })
        .err(Body),
    ]
}
