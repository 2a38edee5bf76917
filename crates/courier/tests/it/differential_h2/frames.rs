//! The HTTP/2 cases about frames rather than heads: frames out of place,
//! resets and GOAWAY, SETTINGS and flow control, trailers, HPACK.

use super::corpus::{cat, head, headers, hello};
use courier::ErrorKind;

use super::harness::Class;
use super::{case, Allowed, Case};
use crate::support::h2::*;

const PUSH_PROMISE: u8 = 0x5;
const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

pub fn cases() -> Vec<Case> {
    vec![
        // Frames out of place.
        case("frames", "data_before_headers", |s| {
            cat(&[frame(DATA, 0, s, b"early"), response(s, b"hello")])
        }).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), "RFC 9113 §8.1: a response begins with HEADERS, so DATA first makes it malformed, a stream error (§8.1.1) that courier applies; h2 closes the connection with GOAWAY"),
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
        case("reset", "rst_refused", |s| rst_stream(s, REFUSED_STREAM)).allow(Allowed::CourierRetries(Class::Refused), "RFC 9113 §8.7: a refused stream was not processed and may be retried; courier resends it on a connection that takes streams (http2_max_refused_retries), h2 reports REFUSED_STREAM"),
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
        case("reset", "goaway_last_0", |_| goaway(0, NO_ERROR)).closing().allow(Allowed::CourierRetries(Class::Refused), "RFC 9113 §6.8/§8.7: a stream past GOAWAY's last stream id was not processed and may be retried; courier resends it on a new connection, h2 reports the GOAWAY"),
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
        case("reset", "close_before_head", |_| Vec::new()).closing().allow(Allowed::CourierRetries(Class::Connection), "the connection closed with no GOAWAY and no answer: courier resends an idempotent request once on a new connection (RFC 9110 §9.2.2 permits it), h2 reports the closed connection"),
        // Flow control and SETTINGS (RFC 9113 §6.5.2, §6.9).
        case("settings", "window_update_0_stream", |s| {
            cat(&[window_update(s, 0), response(s, b"hello")])
        }).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), "RFC 9113 §6.9: a zero increment on a stream is a stream error of type PROTOCOL_ERROR (only on stream 0 a connection error); courier resets the stream, h2 closes the connection"),
        case("settings", "window_update_0_connection", |s| {
            cat(&[window_update(0, 0), response(s, b"hello")])
        }),
        case("settings", "enable_push_1", |s| {
            cat(&[
                settings(&[(SETTINGS_ENABLE_PUSH, 1)]),
                response(s, b"hello"),
            ])
        }).allow(Allowed::CourierRefuses(Class::Connection, ErrorKind::Protocol), "RFC 9113 §6.5.2: a client MUST treat SETTINGS_ENABLE_PUSH = 1 from a server as a connection error of type PROTOCOL_ERROR; courier does, h2 accepts it"),
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
        }).allow(Allowed::CourierRefuses(Class::Body, ErrorKind::Body), "RFC 9113 §8.1: trailers MUST NOT include pseudo-header fields (malformed, §8.1.1); courier fails the body, h2 drops the field and reads the response whole"),
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
        }).allow(Allowed::H2Closes(Class::Body, ErrorKind::Body), "RFC 9113 §8.2.1: an uppercase field name makes the trailers malformed, a stream error (§8.1.1); both fail the body, courier keeps the connection, h2 closes it with GOAWAY"),
        case("trailers", "trailers_connection_header", |s| {
            cat(&[
                head(s),
                frame(DATA, 0, s, b"hello"),
                headers(s, END_STREAM, &[field("connection", b"close")]),
            ])
        }),
        // HPACK (RFC 7541).
        case("hpack", "incremental_indexing_across_blocks", |s| {
            let mut lit = vec![0x40];
            hpack_str(b"x-a", &mut lit);
            hpack_str(b"1", &mut lit);
            let mut h = vec![STATUS_200];
            h.extend(lit);
            // Index 62: the newest dynamic entry, x-a: 1, now in the trailers.
            cat(&[frame(HEADERS, END_HEADERS, s, &h), frame(DATA, 0, s, b"hello"), frame(HEADERS, END_HEADERS | END_STREAM, s, &[0x80 | 62])])
        }),
        case("hpack", "never_indexed", |s| {
            let mut h = vec![STATUS_200, 0x10];
            hpack_str(b"x-secret", &mut h);
            hpack_str(b"1", &mut h);
            cat(&[frame(HEADERS, END_HEADERS, s, &h), hello(s)])
        }),
        case("hpack", "table_size_update_zero", |s| cat(&[frame(HEADERS, END_HEADERS, s, &[0x20, STATUS_200]), hello(s)])),
        case("hpack", "table_size_update_too_big", |s| {
            let mut h = Vec::new();
            hpack_int(0x20, 5, 8192, &mut h);
            h.push(STATUS_200);
            cat(&[frame(HEADERS, END_HEADERS, s, &h), hello(s)])
        }),
        case("hpack", "table_size_update_after_field", |s| cat(&[frame(HEADERS, END_HEADERS, s, &[STATUS_200, 0x20]), hello(s)])),
        case("hpack", "index_zero", |s| cat(&[frame(HEADERS, END_HEADERS, s, &[STATUS_200, 0x80]), hello(s)])),
        case("hpack", "huffman_eos", |s| {
            let mut h = vec![STATUS_200, 0x00];
            hpack_str(b"x-h", &mut h);
            // A Huffman string of all ones: the EOS symbol, which must not appear.
            hpack_int(0x80, 7, 4, &mut h);
            h.extend([0xff; 4]);
            cat(&[frame(HEADERS, END_HEADERS, s, &h), hello(s)])
        }),
        case("hpack", "truncated_block", |s| cat(&[frame(HEADERS, END_HEADERS, s, &[STATUS_200, 0x00, 0x05, b'x']), hello(s)])),
        // More frames out of place (RFC 9113 §5.1, §6).
        case("frames", "data_on_idle_stream", |s| cat(&[frame(DATA, END_STREAM, s + 2, b"x"), response(s, b"hello")])),
        case("frames", "rst_on_idle_stream", |s| cat(&[rst_stream(s + 2, CANCEL), response(s, b"hello")])),
        case("frames", "window_update_on_idle_stream", |s| cat(&[window_update(s + 4, 10), response(s, b"hello")])),
        case("frames", "rst_bad_length", |s| cat(&[frame(RST_STREAM, 0, s, &[0, 0, 0]), response(s, b"hello")])),
        case("frames", "priority_bad_length", |s| cat(&[frame(PRIORITY_FRAME, 0, s, &[0, 0, 0, 0]), response(s, b"hello")])).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), "RFC 9113 §6.3: a PRIORITY frame not 5 bytes long is a stream error of type FRAME_SIZE_ERROR; courier resets the stream, h2 closes the connection"),
        case("frames", "priority_self_dependency", |s| {
            let mut h = s.to_be_bytes().to_vec();
            h.push(15);
            h.push(STATUS_200);
            cat(&[frame(HEADERS, END_HEADERS | PRIORITY, s, &h), hello(s)])
        }).allow(Allowed::H2Refuses(Class::Stream, 200, b"hello"), "RFC 7540 §5.3.1 made a stream depending on itself a stream error; RFC 9113 §5.3.2 deprecates the priority fields and courier skips them unread on purpose (frame/decode.rs), h2 still resets the stream"),
        case("frames", "goaway_on_stream", |s| cat(&[frame(GOAWAY, 0, s, &[0, 0, 0, 1, 0, 0, 0, 0]), response(s, b"hello")])),
        case("frames", "ping_ack_unsolicited", |s| cat(&[ping(true, *b"87654321"), response(s, b"hello")])),
        case("frames", "reserved_bit_in_stream_id", |s| {
            // Receivers ignore the reserved bit (RFC 9113 §4.1).
            let r = s | 0x8000_0000;
            cat(&[frame(HEADERS, END_HEADERS, r, &[STATUS_200]), frame(DATA, END_STREAM, r, b"hello")])
        }),
        case("frames", "data_padded_zero", |s| cat(&[head(s), frame(DATA, END_STREAM | PADDED, s, b"\0hello")])),
        case("frames", "headers_pad_too_long", |s| cat(&[frame(HEADERS, END_HEADERS | PADDED, s, &[9, STATUS_200]), hello(s)])),
        case("frames", "empty_data_frames", |s| {
            let mut out = head(s);
            for _ in 0..50 {
                out.extend(frame(DATA, 0, s, b""));
            }
            out.extend(hello(s));
            out
        }),
        case("frames", "end_stream_headers_with_continuation", |s| cat(&[frame(HEADERS, END_STREAM, s, &[STATUS_200]), frame(CONTINUATION, END_HEADERS, s, &field("x-a", b"1"))])),
        // Flow control and SETTINGS, more.
        case("settings", "window_update_overflow_connection", |s| cat(&[window_update(0, 0x7fff_ffff), response(s, b"hello")])),
        case("settings", "window_update_overflow_stream", |s| cat(&[window_update(s, 0x7fff_ffff), response(s, b"hello")])).allow(Allowed::CourierRefuses(Class::Stream, ErrorKind::Protocol), "RFC 9113 §6.9.1: a WINDOW_UPDATE taking a stream's window past 2^31-1 MUST end the stream with FLOW_CONTROL_ERROR; courier resets it, h2 ignores it on a stream it has finished sending on"),
        case("settings", "window_update_bad_length", |s| cat(&[frame(WINDOW_UPDATE, 0, 0, &[0, 0, 1]), response(s, b"hello")])),
        case("settings", "settings_ack_with_payload", |s| cat(&[frame(SETTINGS, ACK, 0, &[0, 3, 0, 0, 0, 1]), response(s, b"hello")])),
        case("settings", "header_table_size_zero", |s| cat(&[settings(&[(0x1, 0)]), response(s, b"hello")])),
        case("settings", "max_concurrent_streams_zero", |s| cat(&[settings(&[(SETTINGS_MAX_CONCURRENT_STREAMS, 0)]), response(s, b"hello")])),
        case("trailers", "trailers_empty_block", |s| cat(&[head(s), frame(DATA, 0, s, b"hello"), headers(s, END_STREAM, &[])])),
    ]
}
