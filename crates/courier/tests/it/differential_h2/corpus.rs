//! The HTTP/2 cases: each the server's frames for the first request (on
//! stream `s`, 1), verbatim.

use courier::ErrorKind;

use super::harness::Class;
use super::{case, Allowed, Case};
use crate::support::h2::*;

/// A header block from its fields.
pub(super) fn block(fields: &[Vec<u8>]) -> Vec<u8> {
    fields.concat()
}

/// One HEADERS frame with END_HEADERS (and `flags`) carrying `fields`.
pub(super) fn headers(s: u32, flags: u8, fields: &[Vec<u8>]) -> Vec<u8> {
    frame(HEADERS, END_HEADERS | flags, s, &block(fields))
}

/// `:status: 200` and `x-case: h2`, one HEADERS frame, the stream left open.
pub(super) fn head(s: u32) -> Vec<u8> {
    headers(s, 0, &[status(200), field("x-case", b"h2")])
}

/// `head` then `fields`, then `hello` ending the stream.
pub(super) fn with(s: u32, fields: &[Vec<u8>]) -> Vec<u8> {
    let mut all = vec![status(200)];
    all.extend_from_slice(fields);
    let mut out = headers(s, 0, &all);
    out.extend(frame(DATA, END_STREAM, s, b"hello"));
    out
}

/// A head whose block is `fields` exactly, then `hello` ending the stream.
pub(super) fn raw_head(s: u32, fields: &[Vec<u8>]) -> Vec<u8> {
    let mut out = headers(s, 0, fields);
    out.extend(frame(DATA, END_STREAM, s, b"hello"));
    out
}

pub(super) fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

pub(super) fn hello(s: u32) -> Vec<u8> {
    frame(DATA, END_STREAM, s, b"hello")
}

/// RFC 9113 §8.1.1 makes a malformed response a stream error; h2 (which
/// checks names and values while decoding the block) closes the connection.
pub(super) const MALFORMED_STREAM: &str = "RFC 9113 §8.1.1/§8.2.1/§8.3.2: a malformed response head is a stream error of type PROTOCOL_ERROR; courier resets the stream and keeps the connection, h2 treats it as a connection error (GOAWAY)";

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
        }).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "pseudo_after_regular", |s| {
            raw_head(s, &[field("x-case", b"h2"), status(200)])
        }),
        case("malformed-head", "duplicate_status", |s| {
            raw_head(s, &[status(200), status(200)])
        }),
        case("malformed-head", "unknown_pseudo", |s| {
            with(s, &[field(":foo", b"1")])
        }).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "request_pseudo", |s| {
            with(s, &[field(":path", b"/")])
        }).allow(Allowed::CourierRefuses(Class::Stream, ErrorKind::Protocol), "RFC 9113 §8.3: request pseudo-header fields MUST NOT appear in responses (malformed, §8.1.1); courier resets the stream, h2 ignores :path"),
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
        }).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "status_99", |s| {
            raw_head(s, &[status(99)])
        }).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "status_1000", |s| {
            raw_head(s, &[status(1000)])
        }).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "status_two_digits", |s| {
            raw_head(s, &[field(":status", b"20")])
        }).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "value_with_newline", |s| {
            with(s, &[field("x-a", b"a\nb")])
        }).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "empty_name", |s| {
            with(s, &[field("", b"v")])
        }).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "informational_end_stream", |s| {
            cat(&[
                headers(s, END_STREAM, &[status(100)]),
                response(s, b"hello"),
            ])
        }),
        case("malformed-head", "status_101", |s| cat(&[headers(s, 0, &[status(101)]), response(s, b"hello")])).allow(Allowed::CourierRefuses(Class::Stream, ErrorKind::Protocol), "RFC 9113 §8.6: HTTP/2 removes support for 101 (Switching Protocols); courier resets the stream, h2 skips it as any other 1xx and reads the final response"),
        case("malformed-head", "status_199_then_final", |s| cat(&[headers(s, 0, &[status(199)]), response(s, b"hello")])),
        case("malformed-head", "status_020", |s| raw_head(s, &[field(":status", b"020")])).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "value_leading_space", |s| with(s, &[field("x-a", b" v")])),
        case("malformed-head", "value_nul", |s| with(s, &[field("x-a", b"a\0b")])).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "value_obs_text", |s| with(s, &[field("x-a", b"caf\xc3\xa9")])),
        case("malformed-head", "name_with_space", |s| with(s, &[field("x a", b"1")])).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "name_with_colon", |s| with(s, &[field("x:a", b"1")])).allow(Allowed::BothFail(Class::Stream, ErrorKind::Protocol, Class::Connection), MALFORMED_STREAM),
        case("malformed-head", "large_header_over_continuations", |s| {
            // 100 KB in one value: over CONTINUATION frames of 16 KB.
            let mut block = status(200);
            block.extend(field("x-big", &vec![b'b'; 100_000]));
            let mut chunks = block.chunks(16_384).peekable();
            let mut out = frame(HEADERS, 0, s, chunks.next().unwrap());
            while let Some(chunk) = chunks.next() {
                let flags = if chunks.peek().is_none() { END_HEADERS } else { 0 };
                out.extend(frame(CONTINUATION, flags, s, chunk));
            }
            out.extend(hello(s));
            out
        }).allow(Allowed::CourierRefuses(Class::TooLarge, ErrorKind::HeadersTooLarge), "a 100 KB field list is over courier's max_response_headers_size (64 KiB by default, advertised as SETTINGS_MAX_HEADER_LIST_SIZE, RFC 9113 §6.5.2); h2's default limit is 16 MiB"),
        case("malformed-head", "many_headers", |s| {
            let mut fields = vec![status(200)];
            for i in 0..500 {
                fields.push(field(&format!("x-h{i}"), b"v"));
            }
            raw_head(s, &fields)
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
        }).allow(Allowed::CourierRefuses(Class::Body, ErrorKind::Body), "RFC 9110 §15.3.5: a 204 cannot contain content; courier holds it to a length of 0, so DATA with a payload is a malformed response (RFC 9113 §8.1.1) and fails the body, as over HTTP/3; h2 hands the DATA over as the body"),
        case("length", "data_on_304", |s| {
            cat(&[
                headers(s, 0, &[status(304), field("content-length", b"5")]),
                hello(s),
            ])
        }).allow(Allowed::CourierRefuses(Class::Body, ErrorKind::Body), "RFC 9110 §15.4.5: a 304 cannot contain content (its content-length describes the selected representation); courier holds it to a length of 0 and fails the body, as over HTTP/3; h2 hands the DATA over as the body"),
        case("length", "cl_plus_sign", |s| cat(&[head_200_declaring(s, "+5"), hello(s)])),
        case("length", "cl_negative", |s| cat(&[head_200_declaring(s, "-1"), hello(s)])),
        case("length", "cl_leading_zero", |s| cat(&[head_200_declaring(s, "05"), hello(s)])),
        case("length", "cl_list", |s| cat(&[head_200_declaring(s, "5, 5"), hello(s)])),
        case("length", "cl_huge", |s| cat(&[head_200_declaring(s, "99999999999999999999"), hello(s)])),
    ]
    .into_iter()
    .chain(super::frames::cases())
    .collect()
}
