//! The frame codec's tests: RFC layouts, every error, round trips, and
//! truncations and byte flips that must never panic.

use super::decode::*;
use super::encode::*;
use super::*;
use bytes::{Bytes, BytesMut};

/// Decodes one whole frame given as bytes (header included).
fn decode_bytes(bytes: &[u8]) -> Result<Frame, FrameError> {
    let (header, payload) = bytes.split_first_chunk::<HEADER_LEN>().expect("a header");
    let head = Head::parse(header);
    assert_eq!(head.len as usize, payload.len(), "test frame length");
    decode(head, Bytes::copy_from_slice(payload))
}

fn ok(bytes: &[u8]) -> Frame {
    decode_bytes(bytes).expect("a valid frame")
}

/// A frame's bytes, built by hand from RFC 9113 §4.1's layout.
fn raw(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

fn settings_of(frame: &Frame) -> Vec<(u16, u32)> {
    match frame {
        Frame::Settings { settings, .. } => settings.iter().collect(),
        other => panic!("not SETTINGS: {other:?}"),
    }
}

/// Cuts `data` into frames as the connection's reader does and decodes
/// each; every frame the client can itself send must come back unchanged
/// from encoding and decoding again. Returns how many frames decoded.
/// (The fuzz entry point proposed for `fuzzing.rs` does the same.)
fn decode_stream(data: &[u8]) -> usize {
    let mut data = Bytes::copy_from_slice(data);
    let mut decoded = 0;
    while let Some(header) = data.first_chunk::<HEADER_LEN>() {
        let head = Head::parse(header);
        let end = HEADER_LEN + head.len as usize;
        if data.len() < end {
            break;
        }
        let payload = data.slice(HEADER_LEN..end);
        data = data.slice(end..);
        let Ok(frame) = decode(head, payload) else {
            continue;
        };
        decoded += 1;
        if let Some((again, expected)) = reencode(frame) {
            assert_eq!(decode_bytes(&again), Ok(expected));
        }
    }
    decoded
}

/// Encodes `frame` again where the client has an encoder for it: the bytes
/// and the frame they must decode to (padding, dropped, no longer counts).
fn reencode(frame: Frame) -> Option<(BytesMut, Frame)> {
    let mut dst = BytesMut::new();
    let expected = match frame {
        Frame::Data {
            stream,
            end_stream,
            data,
            ..
        } => {
            encode_data(&mut dst, stream, &data, end_stream);
            let flow_len = data.len() as u32;
            Frame::Data {
                stream,
                end_stream,
                data,
                flow_len,
            }
        }
        Frame::Headers {
            stream,
            end_stream,
            end_headers: true,
            ref fragment,
        } if fragment.len() <= DEFAULT_MAX_FRAME_SIZE as usize => {
            encode_headers(&mut dst, stream, fragment, end_stream, 0);
            frame
        }
        Frame::Settings { ack: true, .. } => {
            encode_settings_ack(&mut dst);
            frame
        }
        Frame::Settings { ref settings, .. } => {
            encode_settings(&mut dst, &settings.iter().collect::<Vec<_>>());
            frame
        }
        Frame::RstStream { stream, reason } => {
            encode_rst_stream(&mut dst, stream, reason);
            frame
        }
        Frame::Ping { ack, payload } => {
            encode_ping(&mut dst, ack, payload);
            frame
        }
        Frame::GoAway {
            last_stream,
            reason,
            ref debug,
        } => {
            encode_goaway(&mut dst, last_stream, reason, debug);
            frame
        }
        Frame::WindowUpdate { stream, increment } => {
            encode_window_update(&mut dst, stream, increment);
            frame
        }
        _ => return None,
    };
    Some((dst, expected))
}

#[test]
fn constants() {
    assert_eq!(PREFACE.len(), 24);
    assert_eq!(MAX_WINDOW, 2_147_483_647);
    assert_eq!(MAX_MAX_FRAME_SIZE, (1 << 24) - 1);
}

#[test]
fn reasons_print_their_names() {
    assert_eq!(Reason::NO_ERROR.to_string(), "NO_ERROR");
    assert_eq!(Reason::REFUSED_STREAM.to_string(), "REFUSED_STREAM");
    assert_eq!(Reason::HTTP_1_1_REQUIRED.to_string(), "HTTP_1_1_REQUIRED");
    assert_eq!(Reason(0xe).to_string(), "unknown error code 0xe");
    assert_eq!(Reason(0x1f).to_string(), "unknown error code 0x1f");
    let err = FrameError::on_stream(3, Reason::PROTOCOL_ERROR, "oops");
    assert_eq!(err.to_string(), "oops (PROTOCOL_ERROR on stream 3)");
    let err = FrameError::conn(Reason::FRAME_SIZE_ERROR, "oops");
    assert_eq!(err.to_string(), "oops (FRAME_SIZE_ERROR)");
}

#[test]
fn head_parses_rfc_layout() {
    let head = Head::parse(&[0x01, 0x02, 0x03, 0x01, 0x25, 0x80, 0x00, 0x01, 0x03]);
    assert_eq!(
        head,
        Head {
            len: 0x01_0203,
            kind: kind::HEADERS,
            flags: 0x25,
            stream: 0x103, // reserved bit ignored
        }
    );
    let max = Head::parse(&[0xff; HEADER_LEN]);
    assert_eq!(max.len, MAX_MAX_FRAME_SIZE);
    assert_eq!(max.stream, (1 << 31) - 1);
}

#[test]
fn data_decodes_with_and_without_padding() {
    let plain = [0, 0, 3, 0x0, 0x1, 0, 0, 0, 1, b'a', b'b', b'c'];
    assert_eq!(
        ok(&plain),
        Frame::Data {
            stream: 1,
            end_stream: true,
            data: Bytes::from_static(b"abc"),
            flow_len: 3,
        }
    );
    // Pad Length 2, "ab", two bytes of padding; PADDED only.
    let padded = [0, 0, 5, 0x0, 0x8, 0, 0, 0, 3, 2, b'a', b'b', 0, 0];
    assert_eq!(
        ok(&padded),
        Frame::Data {
            stream: 3,
            end_stream: false,
            data: Bytes::from_static(b"ab"),
            flow_len: 5,
        }
    );
    // All padding: legal, and still counted for flow control.
    let all_padding = [0, 0, 3, 0x0, 0x9, 0, 0, 0, 5, 2, 0, 0];
    assert_eq!(
        ok(&all_padding),
        Frame::Data {
            stream: 5,
            end_stream: true,
            data: Bytes::new(),
            flow_len: 3,
        }
    );
    let empty = [0, 0, 0, 0x0, 0x0, 0, 0, 0, 7];
    assert!(matches!(ok(&empty), Frame::Data { ref data, flow_len: 0, .. } if data.is_empty()));
}

#[test]
fn headers_decode_with_padding_and_priority() {
    let plain = [0, 0, 2, 0x1, 0x5, 0, 0, 0, 1, 0x82, 0x84];
    assert_eq!(
        ok(&plain),
        Frame::Headers {
            stream: 1,
            end_stream: true,
            end_headers: true,
            fragment: Bytes::from_static(&[0x82, 0x84]),
        }
    );
    let padded = [0, 0, 4, 0x1, 0x8, 0, 0, 0, 1, 1, 0x82, 0x84, 0];
    assert_eq!(
        ok(&padded),
        Frame::Headers {
            stream: 1,
            end_stream: false,
            end_headers: false,
            fragment: Bytes::from_static(&[0x82, 0x84]),
        }
    );
    // E + dependency 3, weight 15, then the block.
    let priority = [
        0, 0, 7, 0x1, 0x24, 0, 0, 0, 5, 0x80, 0, 0, 3, 15, 0x82, 0x84,
    ];
    assert_eq!(
        ok(&priority),
        Frame::Headers {
            stream: 5,
            end_stream: false,
            end_headers: true,
            fragment: Bytes::from_static(&[0x82, 0x84]),
        }
    );
    let both = [
        0, 0, 10, 0x1, 0x2d, 0, 0, 0, 7, 2, 0, 0, 0, 1, 200, 0x82, 0x84, 0, 0,
    ];
    assert_eq!(
        ok(&both),
        Frame::Headers {
            stream: 7,
            end_stream: true,
            end_headers: true,
            fragment: Bytes::from_static(&[0x82, 0x84]),
        }
    );
    // A stream depending on itself is not this module's concern.
    let self_dependent = [0, 0, 5, 0x1, 0x24, 0, 0, 0, 9, 0, 0, 0, 9, 0];
    assert!(
        matches!(ok(&self_dependent), Frame::Headers { ref fragment, .. } if fragment.is_empty())
    );
}

#[test]
fn other_frames_decode() {
    assert_eq!(
        ok(&[0, 0, 3, 0x9, 0x4, 0, 0, 0, 1, 1, 2, 3]),
        Frame::Continuation {
            stream: 1,
            end_headers: true,
            fragment: Bytes::from_static(&[1, 2, 3]),
        }
    );
    assert_eq!(
        ok(&[0, 0, 0, 0x9, 0x0, 0, 0, 0, 1]),
        Frame::Continuation {
            stream: 1,
            end_headers: false,
            fragment: Bytes::new(),
        }
    );
    assert_eq!(
        ok(&[0, 0, 4, 0x3, 0x0, 0, 0, 0, 3, 0, 0, 0, 8]),
        Frame::RstStream {
            stream: 3,
            reason: Reason::CANCEL,
        }
    );
    assert_eq!(
        ok(&[0, 0, 4, 0x3, 0x0, 0, 0, 0, 3, 0xde, 0xad, 0xbe, 0xef]),
        Frame::RstStream {
            stream: 3,
            reason: Reason(0xdead_beef),
        }
    );
    let ping = [0, 0, 8, 0x6, 0x0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
    assert_eq!(
        ok(&ping),
        Frame::Ping {
            ack: false,
            payload: [1, 2, 3, 4, 5, 6, 7, 8],
        }
    );
    let pong = [0, 0, 8, 0x6, 0x1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
    assert!(matches!(ok(&pong), Frame::Ping { ack: true, .. }));
    let goaway = [
        0, 0, 10, 0x7, 0x0, 0, 0, 0, 0, 0x80, 0, 0, 7, 0, 0, 0, 0xb, b'h', b'i',
    ];
    assert_eq!(
        ok(&goaway),
        Frame::GoAway {
            last_stream: 7,
            reason: Reason::ENHANCE_YOUR_CALM,
            debug: Bytes::from_static(b"hi"),
        }
    );
    let goaway = [0, 0, 8, 0x7, 0x0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    assert!(
        matches!(ok(&goaway), Frame::GoAway { last_stream: 0, reason: Reason::NO_ERROR, ref debug } if debug.is_empty())
    );
    // Reserved bit of the increment ignored.
    let window = [0, 0, 4, 0x8, 0x0, 0, 0, 0, 0, 0x80, 0x01, 0, 0];
    assert_eq!(
        ok(&window),
        Frame::WindowUpdate {
            stream: 0,
            increment: 0x1_0000,
        }
    );
    let window = [0, 0, 4, 0x8, 0x0, 0, 0, 0, 9, 0x7f, 0xff, 0xff, 0xff];
    assert_eq!(
        ok(&window),
        Frame::WindowUpdate {
            stream: 9,
            increment: MAX_WINDOW,
        }
    );
    // Promised stream 2, padded, with a block: only the stream is kept.
    let push = [0, 0, 8, 0x5, 0xc, 0, 0, 0, 1, 1, 0, 0, 0, 2, 0x82, 0x84, 0];
    assert_eq!(ok(&push), Frame::PushPromise { stream: 1 });
    let priority = [0, 0, 5, 0x2, 0x0, 0, 0, 0, 3, 0, 0, 0, 1, 16];
    assert_eq!(ok(&priority), Frame::Ignored);
    for unknown in [0xa, 0xc, 0x10, 0xff] {
        assert_eq!(ok(&raw(unknown, 0xff, 0, b"whatever")), Frame::Ignored);
        assert_eq!(ok(&raw(unknown, 0, 3, b"")), Frame::Ignored);
    }
}

#[test]
fn settings_decode_in_order_with_unknown_ids() {
    let frame = [
        0, 0, 24, 0x4, 0x0, 0, 0, 0, 0, //
        0, 3, 0, 0, 0, 100, //
        0, 0x42, 0xff, 0xff, 0xff, 0xff, // unknown: passed through
        0, 4, 0x7f, 0xff, 0xff, 0xff, //
        0, 3, 0, 0, 0, 0, // a later value replaces an earlier one
    ];
    let frame = ok(&frame);
    assert!(matches!(frame, Frame::Settings { ack: false, ref settings } if settings.len() == 4));
    assert_eq!(
        settings_of(&frame),
        [
            (setting::MAX_CONCURRENT_STREAMS, 100),
            (0x42, u32::MAX),
            (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW),
            (setting::MAX_CONCURRENT_STREAMS, 0),
        ]
    );
    assert_eq!(
        format!("{frame:?}"),
        "Settings { ack: false, settings: [(3, 100), (66, 4294967295), (4, 2147483647), (3, 0)] }"
    );
    let empty = ok(&[0, 0, 0, 0x4, 0x0, 0, 0, 0, 0]);
    assert!(matches!(empty, Frame::Settings { ack: false, ref settings } if settings.is_empty()));
    let ack = ok(&[0, 0, 0, 0x4, 0x1, 0, 0, 0, 0]);
    assert!(matches!(ack, Frame::Settings { ack: true, ref settings } if settings.is_empty()));
    // The bounds themselves are legal.
    for (id, value) in [
        (setting::ENABLE_PUSH, 0),
        (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW),
        (setting::MAX_FRAME_SIZE, DEFAULT_MAX_FRAME_SIZE),
        (setting::MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE),
        (setting::HEADER_TABLE_SIZE, u32::MAX),
        (setting::MAX_HEADER_LIST_SIZE, 0),
    ] {
        let mut payload = id.to_be_bytes().to_vec();
        payload.extend_from_slice(&value.to_be_bytes());
        assert_eq!(
            settings_of(&ok(&raw(kind::SETTINGS, 0, 0, &payload))),
            [(id, value)]
        );
    }
}

/// Every rule `decode` checks, with the error it must give.
#[test]
fn invalid_frames_give_the_right_error() {
    const CONN: Option<u32> = None;
    let setting = |id: u16, value: u32| {
        let mut payload = id.to_be_bytes().to_vec();
        payload.extend_from_slice(&value.to_be_bytes());
        raw(kind::SETTINGS, 0, 0, &payload)
    };
    let protocol = Reason::PROTOCOL_ERROR;
    let size = Reason::FRAME_SIZE_ERROR;
    let cases: Vec<(Vec<u8>, Reason, Option<u32>)> = vec![
        // Stream 0 where a stream is required.
        (raw(kind::DATA, 0, 0, b"x"), protocol, CONN),
        (raw(kind::HEADERS, 0x4, 0, b"x"), protocol, CONN),
        (raw(kind::CONTINUATION, 0x4, 0, b"x"), protocol, CONN),
        (raw(kind::RST_STREAM, 0, 0, &[0, 0, 0, 8]), protocol, CONN),
        (raw(kind::PUSH_PROMISE, 0, 0, &[0, 0, 0, 2]), protocol, CONN),
        (raw(kind::PRIORITY, 0, 0, &[0, 0, 0, 1, 16]), protocol, CONN),
        // A stream where stream 0 is required.
        (raw(kind::SETTINGS, 0, 1, b""), protocol, CONN),
        (raw(kind::SETTINGS, ACK, 1, b""), protocol, CONN),
        (raw(kind::PING, 0, 1, &[0; 8]), protocol, CONN),
        (raw(kind::GOAWAY, 0, 1, &[0; 8]), protocol, CONN),
        // Fixed lengths.
        (raw(kind::RST_STREAM, 0, 1, &[0; 3]), size, CONN),
        (raw(kind::RST_STREAM, 0, 1, &[0; 5]), size, CONN),
        (raw(kind::PING, 0, 0, &[0; 7]), size, CONN),
        (raw(kind::PING, ACK, 0, &[0; 9]), size, CONN),
        (raw(kind::WINDOW_UPDATE, 0, 0, &[0, 0, 1]), size, CONN),
        (raw(kind::WINDOW_UPDATE, 0, 1, &[0, 0, 0, 1, 0]), size, CONN),
        (raw(kind::PRIORITY, 0, 3, &[0; 4]), size, Some(3)),
        (raw(kind::PRIORITY, 0, 3, &[0; 6]), size, Some(3)),
        (raw(kind::SETTINGS, 0, 0, &[0; 5]), size, CONN),
        (raw(kind::SETTINGS, 0, 0, &[0; 7]), size, CONN),
        (raw(kind::SETTINGS, ACK, 0, &[0; 6]), size, CONN),
        (raw(kind::GOAWAY, 0, 0, &[0; 7]), size, CONN),
        (raw(kind::GOAWAY, 0, 0, b""), size, CONN),
        // Padding.
        (raw(kind::DATA, PADDED, 1, &[3, b'a', b'b']), protocol, CONN),
        (raw(kind::DATA, PADDED, 1, &[255]), protocol, CONN),
        (raw(kind::DATA, PADDED, 1, b""), size, CONN),
        (raw(kind::HEADERS, PADDED, 1, &[2, 0x82]), protocol, CONN),
        (raw(kind::HEADERS, PADDED, 1, b""), size, CONN),
        (raw(kind::HEADERS, PRIORITY, 1, &[0; 4]), size, CONN),
        (
            raw(kind::HEADERS, PADDED | PRIORITY, 1, &[0; 5]),
            size,
            CONN,
        ),
        (
            raw(
                kind::HEADERS,
                PADDED | PRIORITY,
                1,
                &[3, 0, 0, 0, 0, 0, 0x82, 0],
            ),
            protocol,
            CONN,
        ),
        (raw(kind::PUSH_PROMISE, 0, 1, &[0, 0, 2]), size, CONN),
        (
            raw(kind::PUSH_PROMISE, PADDED, 1, &[1, 0, 0, 0, 2]),
            protocol,
            CONN,
        ),
        (raw(kind::PUSH_PROMISE, PADDED, 1, b""), size, CONN),
        // SETTINGS values.
        (setting(setting::ENABLE_PUSH, 1), protocol, CONN),
        (setting(setting::ENABLE_PUSH, 2), protocol, CONN),
        (setting(setting::ENABLE_CONNECT_PROTOCOL, 2), protocol, CONN),
        (
            setting(setting::INITIAL_WINDOW_SIZE, MAX_WINDOW + 1),
            Reason::FLOW_CONTROL_ERROR,
            CONN,
        ),
        (
            setting(setting::INITIAL_WINDOW_SIZE, u32::MAX),
            Reason::FLOW_CONTROL_ERROR,
            CONN,
        ),
        (setting(setting::MAX_FRAME_SIZE, 0), protocol, CONN),
        (setting(setting::MAX_FRAME_SIZE, 16_383), protocol, CONN),
        (setting(setting::MAX_FRAME_SIZE, 16_777_216), protocol, CONN),
        // A zero increment: on the stream it was meant for.
        (raw(kind::WINDOW_UPDATE, 0, 0, &[0; 4]), protocol, CONN),
        (raw(kind::WINDOW_UPDATE, 0, 5, &[0; 4]), protocol, Some(5)),
        (
            raw(kind::WINDOW_UPDATE, 0, 5, &[0x80, 0, 0, 0]),
            protocol,
            Some(5),
        ),
    ];
    for (bytes, reason, stream) in cases {
        let err = decode_bytes(&bytes).expect_err(&format!("{bytes:?} is invalid"));
        assert_eq!(
            (err.reason, err.stream),
            (reason, stream),
            "{bytes:?}: {err}"
        );
        assert!(!err.what.is_empty());
    }
    // A bad value after good ones still fails the frame.
    let mut two = raw(kind::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 1, 0, 5, 0, 0, 0, 1]);
    two[2] = 12;
    assert_eq!(decode_bytes(&two).unwrap_err().reason, protocol);
}

#[test]
fn encoders_write_rfc_layout() {
    let mut dst = BytesMut::new();
    encode_head(&mut dst, 0x01_0203, kind::HEADERS, 0x25, 0x8000_0103);
    assert_eq!(&dst[..], [1, 2, 3, 1, 0x25, 0, 0, 1, 3]);

    let mut dst = BytesMut::new();
    encode_data(&mut dst, 1, b"abc", true);
    encode_data(&mut dst, 3, b"", false);
    assert_eq!(
        &dst[..],
        [0, 0, 3, 0, 1, 0, 0, 0, 1, b'a', b'b', b'c', 0, 0, 0, 0, 0, 0, 0, 0, 3]
    );

    let mut dst = BytesMut::new();
    encode_settings(
        &mut dst,
        &[
            (setting::ENABLE_PUSH, 0),
            (setting::INITIAL_WINDOW_SIZE, 1 << 20),
        ],
    );
    assert_eq!(
        &dst[..],
        [0, 0, 12, 4, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 4, 0, 0x10, 0, 0]
    );

    let mut dst = BytesMut::new();
    encode_settings(&mut dst, &[]);
    encode_settings_ack(&mut dst);
    assert_eq!(
        &dst[..],
        [0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0]
    );

    let mut dst = BytesMut::new();
    encode_ping(&mut dst, false, [1, 2, 3, 4, 5, 6, 7, 8]);
    encode_ping(&mut dst, true, [8; 8]);
    assert_eq!(
        &dst[..],
        [
            0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, //
            0, 0, 8, 6, 1, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8,
        ]
    );

    let mut dst = BytesMut::new();
    encode_window_update(&mut dst, 0, MAX_WINDOW);
    encode_window_update(&mut dst, 7, 1);
    assert_eq!(
        &dst[..],
        [
            0, 0, 4, 8, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, //
            0, 0, 4, 8, 0, 0, 0, 0, 7, 0, 0, 0, 1,
        ]
    );

    let mut dst = BytesMut::new();
    encode_rst_stream(&mut dst, 5, Reason::REFUSED_STREAM);
    assert_eq!(&dst[..], [0, 0, 4, 3, 0, 0, 0, 0, 5, 0, 0, 0, 7]);

    let mut dst = BytesMut::new();
    encode_goaway(&mut dst, 9, Reason::PROTOCOL_ERROR, b"bye");
    assert_eq!(
        &dst[..],
        [0, 0, 11, 7, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, b'b', b'y', b'e']
    );

    let mut dst = BytesMut::new();
    encode_headers(&mut dst, 1, &[0x82, 0x84], true, DEFAULT_MAX_FRAME_SIZE);
    encode_headers(&mut dst, 3, &[], false, DEFAULT_MAX_FRAME_SIZE);
    assert_eq!(
        &dst[..],
        [
            0, 0, 2, 1, 0x5, 0, 0, 0, 1, 0x82, 0x84, //
            0, 0, 0, 1, 0x4, 0, 0, 0, 3,
        ]
    );
}

#[test]
fn encoded_frames_decode_to_themselves() {
    let mut dst = BytesMut::new();
    encode_data(&mut dst, 1, b"hello", true);
    encode_headers(&mut dst, 3, b"block", false, DEFAULT_MAX_FRAME_SIZE);
    encode_settings(&mut dst, &[(setting::MAX_FRAME_SIZE, 1 << 20), (0x99, 7)]);
    encode_settings_ack(&mut dst);
    encode_ping(&mut dst, true, *b"12345678");
    encode_window_update(&mut dst, 0, 1_000);
    encode_rst_stream(&mut dst, 3, Reason::CANCEL);
    encode_goaway(&mut dst, 3, Reason::NO_ERROR, b"");
    assert_eq!(decode_stream(&dst), 8);
}

/// Reads back what `finish_headers` wrote: the frames' heads and the
/// fragments joined.
fn read_block(mut bytes: &[u8]) -> (Vec<Head>, Vec<u8>) {
    let mut heads = Vec::new();
    let mut block = Vec::new();
    while let Some(header) = bytes.first_chunk::<HEADER_LEN>() {
        let head = Head::parse(header);
        heads.push(head);
        let frame = &bytes[..HEADER_LEN + head.len as usize];
        match decode_bytes(frame).expect("valid") {
            Frame::Headers { fragment, .. } | Frame::Continuation { fragment, .. } => {
                block.extend_from_slice(&fragment)
            }
            other => panic!("not a header block frame: {other:?}"),
        }
        bytes = &bytes[frame.len()..];
    }
    assert!(bytes.is_empty(), "whole frames");
    (heads, block)
}

#[test]
fn header_blocks_split_at_the_frame_size() {
    let block: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let max = DEFAULT_MAX_FRAME_SIZE;
    let cases = [
        (0, max, vec![0]),
        (100, max, vec![100]),
        (16_384, max, vec![16_384]),
        (16_385, max, vec![16_384, 1]),
        (32_768, max, vec![16_384, 16_384]),
        (40_000, max, vec![16_384, 16_384, 7_232]),
        (40_000, 20_000, vec![20_000, 20_000]),
        (40_000, MAX_MAX_FRAME_SIZE, vec![40_000]),
        // Below the legal minimum: treated as the minimum.
        (40_000, 0, vec![16_384, 16_384, 7_232]),
    ];
    for (len, max, sizes) in cases {
        let block = &block[..len];
        for end_stream in [false, true] {
            // Something before it in the buffer, as in a real write buffer.
            let mut dst = BytesMut::new();
            encode_ping(&mut dst, false, [0; 8]);
            let before = dst.len();
            let start = start_headers(&mut dst);
            assert_eq!(start, before);
            dst.extend_from_slice(block);
            finish_headers(&mut dst, start, 5, end_stream, max);

            let (heads, joined) = read_block(&dst[before..]);
            assert_eq!(joined, block, "{len} bytes in frames of {max}");
            let lens: Vec<usize> = heads.iter().map(|h| h.len as usize).collect();
            assert_eq!(lens, sizes);
            for (i, head) in heads.iter().enumerate() {
                let last = i + 1 == heads.len();
                let (kind, mut flags) = match i {
                    0 => (kind::HEADERS, if end_stream { END_STREAM } else { 0 }),
                    _ => (kind::CONTINUATION, 0),
                };
                if last {
                    flags |= END_HEADERS;
                }
                assert_eq!((head.kind, head.flags, head.stream), (kind, flags, 5));
            }

            let mut direct = BytesMut::new();
            encode_ping(&mut direct, false, [0; 8]);
            encode_headers(&mut direct, 5, block, end_stream, max);
            assert_eq!(direct, dst, "encode_headers writes the same frames");
        }
    }
}

/// Valid frames of every type, for the robustness tests.
fn samples() -> Vec<Vec<u8>> {
    vec![
        raw(kind::DATA, PADDED | END_STREAM, 1, &[2, b'a', b'b', 0, 0]),
        raw(kind::DATA, 0, 1, b"abc"),
        raw(
            kind::HEADERS,
            PADDED | PRIORITY | END_HEADERS,
            3,
            &[1, 0, 0, 0, 1, 9, 0x82, 0],
        ),
        raw(
            kind::HEADERS,
            END_HEADERS | END_STREAM,
            3,
            &[0x82, 0x84, 0x87],
        ),
        raw(kind::CONTINUATION, END_HEADERS, 3, &[0x82]),
        raw(kind::PRIORITY, 0, 3, &[0, 0, 0, 1, 16]),
        raw(kind::RST_STREAM, 0, 3, &[0, 0, 0, 8]),
        raw(
            kind::SETTINGS,
            0,
            0,
            &[0, 4, 0, 1, 0, 0, 0, 5, 0, 0, 0x40, 0, 0, 2, 0, 0, 0, 0],
        ),
        raw(kind::SETTINGS, ACK, 0, b""),
        raw(
            kind::PUSH_PROMISE,
            PADDED | END_HEADERS,
            1,
            &[1, 0, 0, 0, 2, 0x82, 0],
        ),
        raw(kind::PING, ACK, 0, &[1, 2, 3, 4, 5, 6, 7, 8]),
        raw(kind::GOAWAY, 0, 0, &[0, 0, 0, 3, 0, 0, 0, 0, b'x']),
        raw(kind::WINDOW_UPDATE, 0, 0, &[0, 0, 1, 0]),
        raw(kind::WINDOW_UPDATE, 0, 1, &[0, 0, 1, 0]),
        raw(0xee, 0xff, 1, b"extension"),
    ]
}

#[test]
fn every_truncation_and_byte_flip_decodes_without_panicking() {
    let samples = samples();
    for sample in &samples {
        assert!(decode_bytes(sample).is_ok(), "sample {sample:?} is valid");
        // Every shorter payload, with a header that says so.
        for cut in HEADER_LEN..=sample.len() {
            let mut frame = sample[..cut].to_vec();
            let len = (cut - HEADER_LEN) as u32;
            frame[..3].copy_from_slice(&len.to_be_bytes()[1..]);
            let _ = decode_bytes(&frame);
        }
        // Every value of every byte, header included, read as a stream.
        for at in 0..sample.len() {
            for value in 0..=u8::MAX {
                let mut frame = sample.clone();
                frame[at] = value;
                decode_stream(&frame);
            }
        }
    }
    // The whole lot as one stream, cut at every point.
    let stream: Vec<u8> = samples.concat();
    assert_eq!(decode_stream(&stream), samples.len());
    for cut in 0..stream.len() {
        decode_stream(&stream[..cut]);
        decode_stream(&stream[cut..]);
    }
}

#[test]
fn random_bytes_decode_without_panicking() {
    // xorshift: deterministic, no dependency.
    let mut next = crate::test_support::xorshift(0x2545_f491_4f6c_dd1d_u64);
    for _ in 0..20_000 {
        let kind = (next() % 12) as u8;
        let flags = next() as u8;
        let stream = (next() % 3) as u32;
        let len = (next() % 24) as usize;
        let payload: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        decode_stream(&raw(kind, flags, stream, &payload));
    }
}
