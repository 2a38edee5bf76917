//! The HTTP/2 cases: each the server's frames for the first request (on
//! stream `s`, 1), verbatim.

use super::harness::Class;
use super::{case, Allowed, Case};
use crate::support::h2::*;

const PUSH_PROMISE: u8 = 0x5;
const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// A header block from its fields.
fn block(fields: &[Vec<u8>]) -> Vec<u8> {
    fields.concat()
}

/// One HEADERS frame with END_HEADERS (and `flags`) carrying `fields`.
fn headers(s: u32, flags: u8, fields: &[Vec<u8>]) -> Vec<u8> {
    frame(HEADERS, END_HEADERS | flags, s, &block(fields))
}

/// `:status: 200` and `x-case: h2`, one HEADERS frame, the stream left open.
fn head(s: u32) -> Vec<u8> {
    headers(s, 0, &[status(200), field("x-case", b"h2")])
}

/// `head` then `fields`, then `hello` ending the stream.
fn with(s: u32, fields: &[Vec<u8>]) -> Vec<u8> {
    let mut all = vec![status(200)];
    all.extend_from_slice(fields);
    let mut out = headers(s, 0, &all);
    out.extend(frame(DATA, END_STREAM, s, b"hello"));
    out
}

/// A head whose block is `fields` exactly, then `hello` ending the stream.
fn raw_head(s: u32, fields: &[Vec<u8>]) -> Vec<u8> {
    let mut out = headers(s, 0, fields);
    out.extend(frame(DATA, END_STREAM, s, b"hello"));
    out
}

fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

fn hello(s: u32) -> Vec<u8> {
    frame(DATA, END_STREAM, s, b"hello")
}

/// RFC 9113 §8.1.1 makes a malformed response a stream error; h2 (which
/// checks names and values while decoding the block) closes the connection.
const MALFORMED_STREAM: &str = "RFC 9113 §8.1.1/§8.2.1/§8.3.2: a malformed response head is a stream error of type PROTOCOL_ERROR; courier resets the stream and keeps the connection, h2 treats it as a connection error (GOAWAY)";

pub fn corpus() -> Vec<Case> {
    vec![
        // Well formed.
        case("well-formed", "content_length", |s| response(s, b"hello")),
        case("well-formed", "no_content_length", |s| {
            cat(&[head(s), hello(s)])
        }),
        case("well-formed", "end_stream_on_headers", |s| {
            headers(s, END_STREAM, &[status(200), field("x-case", b"h2")])
        }),
        case("well-formed", "status_204", |s| {
            headers(s, END_STREAM, &[status(204)])
        }),
        case("well-formed", "trailers", |s| {
            cat(&[
                head(s),
                frame(DATA, 0, s, b"hello"),
                headers(s, END_STREAM, &[field("x-checksum", b"abc")]),
            ])
        }),
        case("well-formed", "continuation", |s| {
            cat(&[
                frame(HEADERS, 0, s, &status(200)),
                frame(CONTINUATION, 0, s, &field("x-a", b"1")),
                frame(CONTINUATION, END_HEADERS, s, &field("x-b", b"2")),
                hello(s),
            ])
        }),
        case("well-formed", "padding", |s| {
            let mut h = vec![3];
            h.extend(status(200));
            h.extend([0, 0, 0]);
            cat(&[
                frame(HEADERS, END_HEADERS | PADDED, s, &h),
                frame(DATA, END_STREAM | PADDED, s, b"\x02hello\0\0"),
            ])
        }),
        case("well-formed", "priority_flag", |s| {
            let mut h = vec![0, 0, 0, 0, 15];
            h.extend(status(200));
            cat(&[frame(HEADERS, END_HEADERS | PRIORITY, s, &h), hello(s)])
        }),
        case("well-formed", "informational_first", |s| {
            cat(&[
                headers(s, 0, &[status(103), field("link", b"</a>")]),
                head(s),
                hello(s),
            ])
        }),
        case("well-formed", "two_informational", |s| {
            cat(&[
                headers(s, 0, &[status(100)]),
                headers(s, 0, &[status(103)]),
                response(s, b"hello"),
            ])
        }),
        case("well-formed", "many_data_frames", |s| {
            let mut out = head(s);
            for _ in 0..20 {
                out.extend(frame(DATA, 0, s, b"0123456789"));
            }
            out.extend(frame(DATA, END_STREAM, s, b""));
            out
        }),
        case("well-formed", "large_body", |s| {
            // Two max-size frames: more than one read, within the initial window.
            let chunk = vec![b'a'; 16_384];
            cat(&[
                head(s),
                frame(DATA, 0, s, &chunk),
                frame(DATA, END_STREAM, s, &chunk),
            ])
        }),
        case("well-formed", "ping_before_head", |s| {
            cat(&[ping(false, *b"12345678"), response(s, b"hello")])
        }),
        case("well-formed", "unknown_frame_type", |s| {
            cat(&[
                frame(0x42, 0xff, s, b"junk"),
                frame(0x42, 0, 0, b""),
                response(s, b"hello"),
            ])
        }),
        case("well-formed", "priority_frame", |s| {
            cat(&[
                frame(PRIORITY_FRAME, 0, s, &[0, 0, 0, 0, 15]),
                response(s, b"hello"),
            ])
        }),
        case("well-formed", "window_updates", |s| {
            cat(&[
                window_update(0, 1000),
                window_update(s, 1000),
                response(s, b"hello"),
            ])
        }),
        case("well-formed", "settings_midway", |s| {
            cat(&[
                settings(&[(SETTINGS_INITIAL_WINDOW_SIZE, 100_000)]),
                response(s, b"hello"),
            ])
        }),
        case("well-formed", "rst_no_error_after_end", |s| {
            cat(&[response(s, b"hello"), rst_stream(s, NO_ERROR)])
        }),
        case("well-formed", "content_type_and_cl_zero", |s| {
            headers(
                s,
                END_STREAM,
                &[
                    status(200),
                    field("content-type", b"text/plain"),
                    field("content-length", b"0"),
                ],
            )
        }),
        // Malformed heads (RFC 9113 §8.1.1, §8.2, §8.3).
        case("malformed-head", "missing_status", |s| {
            raw_head(s, &[field("x-case", b"h2")])
        }),
        case("malformed-head", "uppercase_name", |s| {
            with(s, &[field("X-Upper", b"1")])
        }).allow(Allowed::BothFail(Class::Stream, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "pseudo_after_regular", |s| {
            raw_head(s, &[field("x-case", b"h2"), status(200)])
        }),
        case("malformed-head", "duplicate_status", |s| {
            raw_head(s, &[status(200), status(200)])
        }),
        case("malformed-head", "unknown_pseudo", |s| {
            with(s, &[field(":foo", b"1")])
        }).allow(Allowed::BothFail(Class::Stream, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "request_pseudo", |s| {
            with(s, &[field(":path", b"/")])
        }).allow(Allowed::CourierRefuses, "RFC 9113 §8.3: request pseudo-header fields MUST NOT appear in responses (malformed, §8.1.1); courier resets the stream, h2 ignores :path"),
        case("malformed-head", "connection_header", |s| {
            with(s, &[field("connection", b"keep-alive")])
        }),
        case("malformed-head", "keep_alive_header", |s| {
            with(s, &[field("keep-alive", b"timeout=5")])
        }),
        case("malformed-head", "transfer_encoding", |s| {
            with(s, &[field("transfer-encoding", b"chunked")])
        }),
        case("malformed-head", "upgrade_header", |s| {
            with(s, &[field("upgrade", b"h2c")])
        }),
        case("malformed-head", "te_trailers", |s| {
            with(s, &[field("te", b"trailers")])
        }),
        case("malformed-head", "te_gzip", |s| {
            with(s, &[field("te", b"gzip")])
        }),
        case("malformed-head", "status_abc", |s| {
            raw_head(s, &[field(":status", b"abc")])
        }).allow(Allowed::BothFail(Class::Stream, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "status_99", |s| {
            raw_head(s, &[status(99)])
        }).allow(Allowed::BothFail(Class::Stream, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "status_1000", |s| {
            raw_head(s, &[status(1000)])
        }).allow(Allowed::BothFail(Class::Stream, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "status_two_digits", |s| {
            raw_head(s, &[field(":status", b"20")])
        }).allow(Allowed::BothFail(Class::Stream, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "value_with_newline", |s| {
            with(s, &[field("x-a", b"a\nb")])
        }).allow(Allowed::BothFail(Class::Stream, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "empty_name", |s| {
            with(s, &[field("", b"v")])
        }).allow(Allowed::BothFail(Class::Stream, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "informational_end_stream", |s| {
            cat(&[
                headers(s, END_STREAM, &[status(100)]),
                response(s, b"hello"),
            ])
        }),
        // Content-Length against the DATA (RFC 9113 §8.1.1).
        case("length", "cl_longer_than_data", |s| {
            cat(&[head_200_declaring(s, "10"), hello(s)])
        }),
        case("length", "cl_shorter_than_data", |s| {
            cat(&[head_200_declaring(s, "3"), hello(s)])
        }),
        case("length", "cl_split_overrun", |s| {
            cat(&[
                head_200_declaring(s, "5"),
                frame(DATA, 0, s, b"hel"),
                frame(DATA, END_STREAM, s, b"lo!"),
            ])
        }),
        case("length", "cl_two_different", |s| {
            raw_head(
                s,
                &[
                    status(200),
                    field("content-length", b"5"),
                    field("content-length", b"6"),
                ],
            )
        }),
        case("length", "cl_two_equal", |s| {
            raw_head(
                s,
                &[
                    status(200),
                    field("content-length", b"5"),
                    field("content-length", b"5"),
                ],
            )
        }),
        case("length", "cl_non_numeric", |s| {
            cat(&[head_200_declaring(s, "abc"), hello(s)])
        }),
        case("length", "cl_with_end_stream_headers", |s| {
            headers(s, END_STREAM, &[status(200), field("content-length", b"5")])
        }),
        case("length", "cl_on_204_no_data", |s| {
            headers(s, END_STREAM, &[status(204), field("content-length", b"5")])
        }),
        case("length", "data_on_204", |s| {
            cat(&[headers(s, 0, &[status(204)]), hello(s)])
        }),
        case("length", "data_on_304", |s| {
            cat(&[
                headers(s, 0, &[status(304), field("content-length", b"5")]),
                hello(s),
            ])
        }),
        // Frames out of place.
        case("frames", "data_before_headers", |s| {
            cat(&[frame(DATA, 0, s, b"early"), response(s, b"hello")])
        }).allow(Allowed::BothFail(Class::Stream, Class::Connection), "RFC 9113 §8.1: a response begins with HEADERS, so DATA first makes it malformed, a stream error (§8.1.1) that courier applies; h2 closes the connection with GOAWAY"),
        case("frames", "data_on_stream_0", |s| {
            cat(&[frame(DATA, 0, 0, b"zero"), response(s, b"hello")])
        }),
        case("frames", "headers_on_even_stream", |s| {
            cat(&[
                headers(2, END_STREAM, &[status(200)]),
                response(s, b"hello"),
            ])
        }),
        case("frames", "headers_on_idle_odd_stream", |s| {
            cat(&[
                headers(s + 2, END_STREAM, &[status(200)]),
                response(s, b"hello"),
            ])
        }),
        case("frames", "push_promise_disabled", |s| {
            cat(&[
                frame(PUSH_PROMISE, END_HEADERS, s, &[0, 0, 0, 2, 0x82]),
                response(s, b"hello"),
            ])
        }),
        case("frames", "data_after_end_stream", |s| {
            cat(&[response(s, b"hello"), frame(DATA, END_STREAM, s, b"more")])
        }).allow(Allowed::CourierCloses, "RFC 9113 §5.1 (closed): a frame after END_STREAM MUST be treated as a connection error of type STREAM_CLOSED; courier does (the response itself read whole), h2 ignores the frame and keeps the connection"),
        case("frames", "headers_after_end_stream", |s| {
            cat(&[
                response(s, b"hello"),
                headers(s, END_STREAM, &[status(200)]),
            ])
        }).allow(Allowed::CourierCloses, "RFC 9113 §5.1 (closed): a frame after END_STREAM MUST be treated as a connection error of type STREAM_CLOSED; courier does (the response itself read whole), h2 ignores the frame and keeps the connection"),
        case("frames", "continuation_other_stream", |s| {
            cat(&[
                frame(HEADERS, 0, s, &status(200)),
                frame(CONTINUATION, END_HEADERS, s + 2, &field("x-a", b"1")),
                hello(s),
            ])
        }),
        case("frames", "continuation_interrupted", |s| {
            cat(&[
                frame(HEADERS, 0, s, &status(200)),
                ping(false, *b"12345678"),
                frame(CONTINUATION, END_HEADERS, s, &field("x-a", b"1")),
                hello(s),
            ])
        }),
        case("frames", "continuation_without_headers", |s| {
            cat(&[
                frame(CONTINUATION, END_HEADERS, s, &field("x-a", b"1")),
                response(s, b"hello"),
            ])
        }),
        case("frames", "pad_longer_than_frame", |s| {
            cat(&[head(s), frame(DATA, END_STREAM | PADDED, s, b"\x09hello")])
        }),
        case("frames", "hpack_bad_index", |s| {
            cat(&[
                frame(HEADERS, END_HEADERS, s, &[0xff, 0xff, 0x7f]),
                hello(s),
            ])
        }),
        case("frames", "frame_over_max_size", |s| {
            cat(&[head(s), frame(DATA, END_STREAM, s, &vec![b'a'; 16_385])])
        }),
        case("frames", "ping_bad_length", |s| {
            cat(&[frame(PING, 0, 0, b"1234567"), response(s, b"hello")])
        }),
        case("frames", "ping_on_stream", |s| {
            cat(&[frame(PING, 0, s, b"12345678"), response(s, b"hello")])
        }),
        // RST_STREAM and GOAWAY.
        case("reset", "rst_before_head", |s| {
            rst_stream(s, INTERNAL_ERROR)
        }),
        case("reset", "rst_refused", |s| rst_stream(s, REFUSED_STREAM)).allow(Allowed::CourierRetries, "RFC 9113 §8.7: a refused stream was not processed and may be retried; courier resends it on a connection that takes streams (http2_max_refused_retries), h2 reports REFUSED_STREAM"),
        case("reset", "rst_after_head", |s| {
            cat(&[
                head(s),
                frame(DATA, 0, s, b"hel"),
                rst_stream(s, INTERNAL_ERROR),
            ])
        }),
        case("reset", "rst_on_stream_0", |s| {
            cat(&[rst_stream(0, CANCEL), response(s, b"hello")])
        }),
        case("reset", "goaway_last_0", |_| goaway(0, NO_ERROR)).closing().allow(Allowed::CourierRetries, "RFC 9113 §6.8/§8.7: a stream past GOAWAY's last stream id was not processed and may be retried; courier resends it on a new connection, h2 reports the GOAWAY"),
        case("reset", "goaway_last_1_then_response", |s| {
            cat(&[goaway(1, NO_ERROR), response(s, b"hello")])
        })
        .closing(),
        case("reset", "response_then_goaway", |s| {
            cat(&[response(s, b"hello"), goaway(1, NO_ERROR)])
        })
        .closing(),
        case("reset", "goaway_error_mid_body", |s| {
            cat(&[
                head(s),
                frame(DATA, 0, s, b"hel"),
                goaway(1, PROTOCOL_ERROR),
            ])
        })
        .closing(),
        case("reset", "close_mid_body", |s| {
            cat(&[head(s), frame(DATA, 0, s, b"hel")])
        })
        .closing(),
        case("reset", "close_before_head", |_| Vec::new()).closing().allow(Allowed::CourierRetries, "the connection closed with no GOAWAY and no answer: courier resends an idempotent request once on a new connection (RFC 9110 §9.2.2 permits it), h2 reports the closed connection"),
        // Flow control and SETTINGS (RFC 9113 §6.5.2, §6.9).
        case("settings", "window_update_0_stream", |s| {
            cat(&[window_update(s, 0), response(s, b"hello")])
        }).allow(Allowed::BothFail(Class::Stream, Class::Connection), "RFC 9113 §6.9: a zero increment on a stream is a stream error of type PROTOCOL_ERROR (only on stream 0 a connection error); courier resets the stream, h2 closes the connection"),
        case("settings", "window_update_0_connection", |s| {
            cat(&[window_update(0, 0), response(s, b"hello")])
        }),
        case("settings", "enable_push_1", |s| {
            cat(&[
                settings(&[(SETTINGS_ENABLE_PUSH, 1)]),
                response(s, b"hello"),
            ])
        }).allow(Allowed::CourierRefuses, "RFC 9113 §6.5.2: a client MUST treat SETTINGS_ENABLE_PUSH = 1 from a server as a connection error of type PROTOCOL_ERROR; courier does, h2 accepts it"),
        case("settings", "enable_push_2", |s| {
            cat(&[
                settings(&[(SETTINGS_ENABLE_PUSH, 2)]),
                response(s, b"hello"),
            ])
        }),
        case("settings", "window_too_large", |s| {
            cat(&[
                settings(&[(SETTINGS_INITIAL_WINDOW_SIZE, 1 << 31)]),
                response(s, b"hello"),
            ])
        }),
        case("settings", "max_frame_size_too_small", |s| {
            cat(&[
                settings(&[(SETTINGS_MAX_FRAME_SIZE, 100)]),
                response(s, b"hello"),
            ])
        }),
        case("settings", "settings_bad_length", |s| {
            cat(&[
                frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0]),
                response(s, b"hello"),
            ])
        }),
        case("settings", "settings_on_stream", |s| {
            cat(&[frame(SETTINGS, 0, s, &[]), response(s, b"hello")])
        }),
        case("settings", "unknown_setting", |s| {
            cat(&[settings(&[(0x99, 7)]), response(s, b"hello")])
        }),
        // Trailers (RFC 9113 §8.1).
        case("trailers", "trailers_with_pseudo", |s| {
            cat(&[
                head(s),
                frame(DATA, 0, s, b"hello"),
                headers(s, END_STREAM, &[status(200)]),
            ])
        }).allow(Allowed::CourierRefuses, "RFC 9113 §8.1: trailers MUST NOT include pseudo-header fields (malformed, §8.1.1); courier fails the body, h2 drops the field and reads the response whole"),
        case("trailers", "trailers_without_end_stream", |s| {
            cat(&[
                head(s),
                frame(DATA, 0, s, b"hello"),
                headers(s, 0, &[field("x-checksum", b"abc")]),
            ])
        }),
        case("trailers", "trailers_no_data", |s| {
            cat(&[
                head(s),
                headers(s, END_STREAM, &[field("x-checksum", b"abc")]),
            ])
        }),
        case("trailers", "trailers_uppercase", |s| {
            cat(&[
                head(s),
                frame(DATA, 0, s, b"hello"),
                headers(s, END_STREAM, &[field("X-Checksum", b"abc")]),
            ])
        }).allow(Allowed::H2Closes, "RFC 9113 §8.2.1: an uppercase field name makes the trailers malformed, a stream error (§8.1.1); both fail the body, courier keeps the connection, h2 closes it with GOAWAY"),
        case("trailers", "trailers_connection_header", |s| {
            cat(&[
                head(s),
                frame(DATA, 0, s, b"hello"),
                headers(s, END_STREAM, &[field("connection", b"close")]),
            ])
        }),
    ]
}
