//! Encoding: frames appended to the connection's write buffer, allocating
//! nothing beyond that buffer's growth.

use bytes::{BufMut, BytesMut};

use super::*;

/// Appends a frame header.
pub(crate) fn encode_head(dst: &mut BytesMut, len: usize, kind: u8, flags: u8, stream: u32) {
    dst.extend_from_slice(&head_bytes(len, kind, flags, stream));
}

/// A frame header's bytes; `len` must fit the 24-bit length field.
fn head_bytes(len: usize, kind: u8, flags: u8, stream: u32) -> [u8; HEADER_LEN] {
    debug_assert!(
        len <= MAX_MAX_FRAME_SIZE as usize,
        "frame payload of {len} bytes"
    );
    let [_, l0, l1, l2] = (len as u32).to_be_bytes();
    let [s0, s1, s2, s3] = (stream & U31_MASK).to_be_bytes();
    [l0, l1, l2, kind, flags, s0, s1, s2, s3]
}

/// HEADERS then as many CONTINUATION frames as `max_frame_size` requires,
/// END_HEADERS on the last; END_STREAM on the HEADERS frame when `end_stream`.
/// (The client encodes in place with [`start_headers`]; this is the tests'.)
#[cfg(test)]
pub(crate) fn encode_headers(
    dst: &mut BytesMut,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame_size: u32,
) {
    let frames = frame_count(block.len(), frame_size(max_frame_size));
    dst.reserve(frames * HEADER_LEN + block.len());
    let start = start_headers(dst);
    dst.extend_from_slice(block);
    finish_headers(dst, start, stream, end_stream, max_frame_size);
}

/// Leaves room for a HEADERS frame header, so the caller can HPACK-encode the
/// block straight into `dst` behind it; returns where the header goes, for
/// [`finish_headers`].
pub(crate) fn start_headers(dst: &mut BytesMut) -> usize {
    let start = dst.len();
    dst.extend_from_slice(&[0; HEADER_LEN]);
    start
}

/// Frames the block appended since [`start_headers`] returned `start`: fills
/// in the HEADERS header, and when the block is larger than `max_frame_size`
/// splits it into HEADERS + CONTINUATION in place, moving each later piece
/// up to make room for its header. The whole block is the rest of `dst`.
///
/// Panics if `start` did not come from `start_headers` on this buffer (a
/// caller bug, not something the network can cause).
pub(crate) fn finish_headers(
    dst: &mut BytesMut,
    start: usize,
    stream: u32,
    end_stream: bool,
    max_frame_size: u32,
) {
    let max = frame_size(max_frame_size);
    let body = start + HEADER_LEN;
    let block_len = dst.len() - body;
    let frames = frame_count(block_len, max);
    if frames > 1 {
        dst.resize(dst.len() + (frames - 1) * HEADER_LEN, 0);
        // Piece i moves up by i headers. Last piece first, so none is
        // overwritten before it has moved.
        for i in (1..frames).rev() {
            let from = body + i * max;
            let to = (from + max).min(body + block_len);
            dst.copy_within(from..to, from + i * HEADER_LEN);
        }
    }
    for i in 0..frames {
        let last = i + 1 == frames;
        let len = if last { block_len - i * max } else { max };
        let (kind, mut flags) = match i {
            0 if end_stream => (kind::HEADERS, END_STREAM),
            0 => (kind::HEADERS, 0),
            _ => (kind::CONTINUATION, 0),
        };
        if last {
            flags |= END_HEADERS;
        }
        let at = start + i * (HEADER_LEN + max);
        dst[at..at + HEADER_LEN].copy_from_slice(&head_bytes(len, kind, flags, stream));
    }
}

/// The peer's SETTINGS_MAX_FRAME_SIZE as a piece size. `decode` has checked
/// the peer's value; the clamp only keeps a caller's 0 from looping forever.
fn frame_size(max_frame_size: u32) -> usize {
    max_frame_size.clamp(DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE) as usize
}

/// How many frames a header block of `len` bytes takes: at least one, even
/// when empty.
fn frame_count(len: usize, max: usize) -> usize {
    len.div_ceil(max).max(1)
}

/// Appends one unpadded DATA frame; the caller keeps `data` within the peer's
/// frame size and flow-control windows.
pub(crate) fn encode_data(dst: &mut BytesMut, stream: u32, data: &[u8], end_stream: bool) {
    let flags = if end_stream { END_STREAM } else { 0 };
    dst.reserve(HEADER_LEN + data.len());
    encode_head(dst, data.len(), kind::DATA, flags, stream);
    dst.extend_from_slice(data);
}

/// Appends a SETTINGS frame carrying `settings` in order.
pub(crate) fn encode_settings(dst: &mut BytesMut, settings: &[(u16, u32)]) {
    let len = settings.len() * SETTING_LEN;
    dst.reserve(HEADER_LEN + len);
    encode_head(dst, len, kind::SETTINGS, 0, 0);
    for &(id, value) in settings {
        dst.put_u16(id);
        dst.put_u32(value);
    }
}

/// Appends the acknowledgement of the peer's SETTINGS.
pub(crate) fn encode_settings_ack(dst: &mut BytesMut) {
    encode_head(dst, 0, kind::SETTINGS, ACK, 0);
}

/// Appends a PING, or with `ack` the answer to the peer's PING.
pub(crate) fn encode_ping(dst: &mut BytesMut, ack: bool, payload: [u8; 8]) {
    let flags = if ack { ACK } else { 0 };
    dst.reserve(HEADER_LEN + payload.len());
    encode_head(dst, payload.len(), kind::PING, flags, 0);
    dst.extend_from_slice(&payload);
}

/// Appends a WINDOW_UPDATE for `stream` (0: the connection); `increment` must
/// be 1..=MAX_WINDOW.
pub(crate) fn encode_window_update(dst: &mut BytesMut, stream: u32, increment: u32) {
    debug_assert!(
        (1..=MAX_WINDOW).contains(&increment),
        "window increment {increment}"
    );
    dst.reserve(HEADER_LEN + 4);
    encode_head(dst, 4, kind::WINDOW_UPDATE, 0, stream);
    dst.put_u32(increment & U31_MASK);
}

/// Appends an RST_STREAM.
pub(crate) fn encode_rst_stream(dst: &mut BytesMut, stream: u32, reason: Reason) {
    dst.reserve(HEADER_LEN + 4);
    encode_head(dst, 4, kind::RST_STREAM, 0, stream);
    dst.put_u32(reason.0);
}

/// Appends a GOAWAY; `debug` is opaque diagnostic data for the peer.
pub(crate) fn encode_goaway(dst: &mut BytesMut, last_stream: u32, reason: Reason, debug: &[u8]) {
    dst.reserve(HEADER_LEN + 8 + debug.len());
    encode_head(dst, 8 + debug.len(), kind::GOAWAY, 0, 0);
    dst.put_u32(last_stream & U31_MASK);
    dst.put_u32(reason.0);
    dst.extend_from_slice(debug);
}
