//! HTTP/2 flow control both ways (RFC 9113 §5.2, §6.9): a server that
//! sends past the stream window it was given (the connection window has no
//! case: courier opens it as the body is read, so which side of the window
//! a burst lands on is a race), windows pushed past 2^31-1, zero
//! increments, frames larger than allowed, padding that lies; and a server
//! that never opens its window to the client's upload.

use courier::ErrorKind::*;

use super::{block_200, cat, data, h2_headers, w};
use crate::corpus::case::{Case, Class::FlowControl, Request};
use crate::support::h2::{frame, settings, window_update, DATA, PADDED};

pub fn cases() -> Vec<Case> {
    vec![
        // One frame past a window smaller than a frame: no WINDOW_UPDATE
        // courier sends as the body is read can have made room for it.
        Case::h2("data-past-stream-window", FlowControl, |s| {
            vec![w(cat(&[
                &h2_headers(s, &block_200(&[]), false),
                &data(s, &[b'x'; 16_384], false),
            ]))]
        })
        .client(|b| b.http2_initial_stream_window_size(1024))
        .err(Body)
        .tls_too(),
        Case::h2("connection-window-overflow", FlowControl, |_| {
            vec![w(cat(&[
                &window_update(0, 0x7fff_ffff),
                &window_update(0, 0x7fff_ffff),
            ]))]
        })
        .err(Protocol),
        Case::h2("stream-window-overflow", FlowControl, |s| {
            vec![w(cat(&[
                &window_update(s, 0x7fff_ffff),
                &window_update(s, 0x7fff_ffff),
            ]))]
        })
        .err(Protocol),
        Case::h2("window-update-zero", FlowControl, |s| {
            vec![w(window_update(s, 0))]
        })
        .err(Protocol),
        Case::h2("window-update-bad-length", FlowControl, |s| {
            vec![w(frame(
                crate::support::h2::WINDOW_UPDATE,
                0,
                s,
                &[0, 0, 0, 1, 0],
            ))]
        })
        .err(Protocol),
        Case::h2("initial-window-past-max", FlowControl, |_| {
            vec![w(settings(&[(0x4, 1 << 31)]))]
        })
        .err(Protocol),
        Case::h2("frame-past-max-size", FlowControl, |s| {
            vec![w(cat(&[
                &h2_headers(s, &block_200(&[]), false),
                &data(s, &[b'x'; 20_000], true),
            ]))]
        })
        .err(Body),
        Case::h2("padding-longer-than-frame", FlowControl, |s| {
            vec![w(cat(&[
                &h2_headers(s, &block_200(&[]), false),
                &frame(DATA, PADDED, s, &[200, b'x', b'y']),
            ]))]
        })
        .err(Body),
        Case::h2("upload-into-a-closed-window", FlowControl, |_| {
            // The window is shut after the request began: its body waits.
            vec![w(settings(&[(0x4, 0)]))]
        })
        .request(Request::Build(|c, url| {
            c.post(url).body(vec![b'u'; 1 << 20])
        }))
        .client(|b| b.http2_initial_connection_window_size(65_535))
        .times_out(),
    ]
}
