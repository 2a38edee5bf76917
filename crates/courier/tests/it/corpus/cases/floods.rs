//! HTTP/2 frames that cost the client work and do nothing (CVE-2019-9512,
//! -9515, -9518, the 2024 CONTINUATION flood): each alone is legal, in a
//! loop they must end the connection (GOAWAY ENHANCE_YOUR_CALM) within a
//! CPU budget, not keep a core busy.

use courier::ErrorKind::*;

use super::{block_200, cat, data, h2_headers, times, w};
use crate::corpus::case::{Case, Class::Floods, Step};
use crate::support::h2::{
    frame, ping, rst_stream, settings, window_update, ACK, CONTINUATION, HEADERS, NO_ERROR,
    PRIORITY_FRAME, SETTINGS,
};

/// Frames per batch: three times courier's burst of 1000.
const N: usize = 3000;

/// A flood: batches of frames for as long as the client reads them (up to
/// 300,000 frames), so a client that does not stop them burns CPU for the
/// whole request timeout and fails its budget, not only its outcome.
fn flood(batch: Vec<u8>) -> Step {
    Step::Flood(batch, 100)
}

pub fn cases() -> Vec<Case> {
    let cases = vec![
        Case::h2("settings-flood", Floods, |_| {
            vec![flood(times(&settings(&[]), N))]
        })
        .err(Protocol)
        .tls_too(),
        Case::h2("settings-with-params-flood", Floods, |_| {
            vec![flood(times(
                &settings(&[(0x3, 100), (0x4, 65535), (0x2, 0)]),
                N,
            ))]
        })
        .err(Protocol),
        Case::h2("ping-flood", Floods, |_| {
            vec![flood(times(&ping(false, [7; 8]), N))]
        })
        .err(Protocol)
        .tls_too(),
        Case::h2("unsolicited-ping-ack-flood", Floods, |_| {
            vec![flood(times(&ping(true, [7; 8]), N))]
        })
        .err(Protocol),
        Case::h2("settings-ack-flood", Floods, |_| {
            vec![flood(times(&frame(SETTINGS, ACK, 0, &[]), N))]
        })
        .err(Protocol),
        Case::h2("empty-data-flood", Floods, |s| {
            vec![
                w(cat(&[&h2_headers(s, &block_200(&[]), false)])),
                flood(times(&data(s, b"", false), N)),
            ]
        })
        .err(Body)
        .tls_too(),
        Case::h2("unknown-frame-flood", Floods, |s| {
            vec![flood(times(&frame(0xfa, 0, s, b"x"), N))]
        })
        .err(Protocol),
        Case::h2("priority-flood", Floods, |s| {
            vec![flood(times(
                &frame(PRIORITY_FRAME, 0, s, &[0, 0, 0, 0, 16]),
                N,
            ))]
        })
        .err(Protocol),
        Case::h2("empty-continuation-flood", Floods, |s| {
            vec![
                w(cat(&[&frame(HEADERS, 0, s, &block_200(&[]))])),
                flood(times(&frame(CONTINUATION, 0, s, b""), N)),
            ]
        })
        .err(Protocol),
        Case::h2("window-update-flood", Floods, |s| {
            vec![
                flood(times(&window_update(0, 1), N)),
                w(cat(&[&h2_headers(s, &block_200(&[]), true)])),
            ]
        })
        .err(Protocol),
        Case::h2("rst-after-response-flood", Floods, |s| {
            vec![
                w(cat(&[
                    &h2_headers(s, &block_200(&[]), false),
                    &data(s, b"hello", true),
                ])),
                flood(times(&rst_stream(s, NO_ERROR), N)),
            ]
        })
        .ok(200, b"hello"),
        Case::h2("data-after-end-flood", Floods, |s| {
            vec![
                w(cat(&[
                    &h2_headers(s, &block_200(&[]), false),
                    &data(s, b"hello", true),
                ])),
                flood(times(&data(s, b"x", false), N)),
            ]
        })
        .ok(200, b"hello"),
        Case::h2("ping-flood-mid-body", Floods, |s| {
            vec![
                w(cat(&[
                    &h2_headers(s, &block_200(&[]), false),
                    &data(s, b"hel", false),
                ])),
                flood(times(&ping(false, [1; 8]), N)),
                w(cat(&[&data(s, b"lo", true)])),
            ]
        })
        .err(Body),
    ];
    // A flood the client stops costs it a few ms; one it does not would
    // cost it a core for the whole timeout.
    cases.into_iter().map(|c| c.cpu(200)).collect()
}
