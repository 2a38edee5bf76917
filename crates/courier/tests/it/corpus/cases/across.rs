//! State carried from one response to the next on one connection: every
//! case sends `/hostile` several times, one request after another, and
//! checks each outcome and which connection it came on. HTTP/2: a kept
//! head replayed (a block seen twice in a row is copied, not decoded) whose
//! Content-Length then disagrees with the DATA, HPACK table entries evicted
//! or never inserted and referenced on a later response, a table size
//! update past the client's limit on a later response, answers on streams
//! the client never opened or has not opened yet. HTTP/1.1 keep-alive: a
//! later response whose Content-Length is not its body's, and a response to
//! a request not sent yet. After a framing or connection error the pool
//! must hand out a fresh connection; after a stream error (HTTP/2's
//! malformed response, RFC 9113 §8.1.1) the connection is kept, and its
//! header table stays in step with the server's.

use courier::ErrorKind::*;

use super::{block_200, cat, data, evil, h2_headers, ok, resp, w};
use crate::corpus::case::{Case, Class::Across, Expect, On, Step};
use crate::support::h2::{hpack_int, hpack_str, STATUS_200};

/// The client's header table (SETTINGS_HEADER_TABLE_SIZE: it sends none,
/// so the default, RFC 9113 §6.5.2).
const TABLE: usize = 4096;

/// A response head that is the same block every time (literals not
/// indexed): the third time it comes, the client replays the kept head.
fn same_head(stream: u32, length: &[u8]) -> Vec<u8> {
    let block = block_200(&[("server", b"corpus"), ("content-length", length)]);
    h2_headers(stream, &block, false)
}

/// `head` and `body` in one DATA frame that ends the stream.
fn answer(head: Vec<u8>, stream: u32, body: &[u8]) -> Vec<Step> {
    vec![w(cat(&[&head, &data(stream, body, true)]))]
}

/// A head block inserting `x-a: 1` into the table (dynamic index 62).
fn inserting() -> Vec<u8> {
    let mut block = vec![STATUS_200, 0x40];
    hpack_str(b"x-a", &mut block);
    hpack_str(b"1", &mut block);
    block
}

/// A head block of table size updates, then `:status: 200` and `rest`.
fn resized(sizes: &[usize], rest: &[u8]) -> Vec<u8> {
    let mut block = Vec::new();
    for size in sizes {
        hpack_int(0x20, 5, *size, &mut block);
    }
    block.push(STATUS_200);
    block.extend_from_slice(rest);
    block
}

/// An h2 case whose first response is `one` (inserting `x-a: 1`) and
/// whose second is the head `second` with `two`.
fn second_head(name: &'static str, second: Vec<u8>) -> Case {
    Case::h2_turns(name, Across, move |turn, s| match turn {
        0 => answer(h2_headers(s, &inserting(), false), s, b"one"),
        _ => answer(h2_headers(s, &second, false), s, b"two"),
    })
    .ok(200, b"one")
}

/// The same head (Content-Length 5) three times, the third replayed with
/// `third` as its DATA: a malformed response, a stream error; the
/// connection goes on, and the same head again is a good response.
fn replayed_head_length(name: &'static str, third: &'static [u8]) -> Case {
    Case::h2_turns(name, Across, move |turn, s| {
        let body: &[u8] = if turn == 2 { third } else { b"hello" };
        answer(same_head(s, b"5"), s, body)
    })
    .ok(200, b"hello")
    .then(On::Same, Expect::ok(200, b"hello"))
    .then(On::Same, Expect::Error(Body))
    .then(On::Same, Expect::ok(200, b"hello"))
    .tls_too()
}

fn h2_cases() -> Vec<Case> {
    vec![
        // The kept head declares 5; the third response carries 11, or 2.
        replayed_head_length("h2-replayed-head-cl-shorter-than-data", b"hello world"),
        replayed_head_length("h2-replayed-head-cl-longer-than-data", b"hi"),
        // A replayed head's insertions: the same block four times (the
        // third and fourth replayed), each inserting `:status: 203`; the
        // fifth response's status is the oldest of the four (65), the
        // sixth's one past them (66). A replay that skipped or miscounted
        // its insertions would fail the fifth or pass the sixth.
        Case::h2_turns("hpack-replayed-head-insertions", Across, |turn, s| {
            let block = match turn {
                0..=3 => vec![0x48, 3, b'2', b'0', b'3'],
                4 => vec![0x80 | 65],
                _ => vec![0x80 | 66],
            };
            answer(h2_headers(s, &block, false), s, b"hello")
        })
        .ok(203, b"hello")
        .then(On::Same, Expect::ok(203, b"hello"))
        .then(On::Same, Expect::ok(203, b"hello"))
        .then(On::Same, Expect::ok(203, b"hello"))
        .then(On::Same, Expect::ok(203, b"hello"))
        .then(On::Same, Expect::Error(Protocol))
        .after(On::Fresh),
        // A block that only reads the table (`:status` from entry 62) is
        // replayed once seen twice; after a response inserts `:status: 202`
        // in front of it, the same bytes mean 202, and 63 is the old 203.
        // A replay that outlived the table it read would answer 203, 204.
        Case::h2_turns(
            "hpack-replayed-table-read-after-insert",
            Across,
            |turn, s| {
                let block = match turn {
                    0 => vec![0x48, 3, b'2', b'0', b'3'],
                    3 => vec![0x48, 3, b'2', b'0', b'2'],
                    5 => vec![0x80 | 63],
                    _ => vec![0x80 | 62],
                };
                answer(h2_headers(s, &block, false), s, b"hello")
            },
        )
        .ok(203, b"hello")
        .then(On::Same, Expect::ok(203, b"hello"))
        .then(On::Same, Expect::ok(203, b"hello"))
        .then(On::Same, Expect::ok(202, b"hello"))
        .then(On::Same, Expect::ok(202, b"hello"))
        .then(On::Same, Expect::ok(203, b"hello"))
        .tls_too(),
        // The same replayed read after a response empties the table: a
        // COMPRESSION_ERROR, not the entry the replay remembered.
        Case::h2_turns(
            "hpack-replayed-table-read-after-eviction",
            Across,
            |turn, s| {
                let block = match turn {
                    0 => vec![0x48, 3, b'2', b'0', b'3'],
                    3 => resized(&[0, TABLE], &[]),
                    _ => vec![0x80 | 62],
                };
                answer(h2_headers(s, &block, false), s, b"hello")
            },
        )
        .ok(203, b"hello")
        .then(On::Same, Expect::ok(203, b"hello"))
        .then(On::Same, Expect::ok(203, b"hello"))
        .then(On::Same, Expect::ok(200, b"hello"))
        .then(On::Same, Expect::Error(Protocol))
        .after(On::Fresh),
        // The control: the entry the first response inserted is there for
        // the second.
        second_head(
            "hpack-entry-referenced-next-response",
            vec![STATUS_200, 0x80 | 62],
        )
        .then(On::Same, Expect::ok(200, b"two")),
        // Emptied by a size update at the head of the second block, then
        // referenced in it: a COMPRESSION_ERROR, the connection is gone.
        second_head(
            "hpack-evicted-entry-referenced",
            resized(&[0, TABLE], &[0x80 | 62]),
        )
        .then(On::Same, Expect::Error(Protocol))
        .after(On::Fresh),
        // Emptied by the second response, referenced by the third.
        Case::h2_turns(
            "hpack-evicted-entry-referenced-later",
            Across,
            |turn, s| match turn {
                0 => answer(h2_headers(s, &inserting(), false), s, b"one"),
                1 => answer(h2_headers(s, &resized(&[0, TABLE], &[]), false), s, b"two"),
                _ => answer(h2_headers(s, &[STATUS_200, 0x80 | 62], false), s, b"three"),
            },
        )
        .ok(200, b"one")
        .then(On::Same, Expect::ok(200, b"two"))
        .then(On::Same, Expect::Error(Protocol))
        .after(On::Fresh),
        second_head(
            "hpack-size-update-over-limit-next-response",
            resized(&[TABLE + 1], &[]),
        )
        .then(On::Same, Expect::Error(Protocol))
        .after(On::Fresh),
        // One entry in the table: 62 is it, 63 is past its end.
        second_head(
            "hpack-index-past-table-next-response",
            vec![STATUS_200, 0x80 | 62, 0x80 | 63],
        )
        .then(On::Same, Expect::Error(Protocol))
        .after(On::Fresh),
        Case::h2_turns(
            "h2-second-response-on-unopened-stream",
            Across,
            |turn, s| {
                let on = if turn == 0 { s } else { s + 2 };
                answer(h2_headers(on, &block_200(&[]), false), on, b"hello")
            },
        )
        .ok(200, b"hello")
        .then(On::Same, Expect::Error(Protocol))
        .after(On::Fresh)
        .tls_too(),
        // An answer on the stream the next request will open, before it
        // opens it (an idle stream, RFC 9113 §5.1), in the write of the
        // first answer: the client reads it with that answer, and the
        // connection is gone by the time the next request is sent. (Written
        // later, it could cross the next request's HEADERS, and nothing on
        // the wire would tell an answer from a premature one.)
        Case::h2_turns("h2-response-before-request", Across, |turn, s| {
            let two = answer(h2_headers(s, &block_200(&[]), false), s, b"two");
            if turn > 0 {
                return two;
            }
            vec![w(cat(&[
                &h2_headers(s, &block_200(&[]), false),
                &data(s, b"one", true),
                &h2_headers(s + 2, &block_200(&[]), false),
                &data(s + 2, b"EVIL", true),
            ]))]
        })
        .ok(200, b"one")
        .then(On::Fresh, Expect::ok(200, b"two")),
        // A 204 (static index 9) with DATA, decoded and, the third time,
        // replayed: no content is allowed (RFC 9110 §15.3.5), so each is a
        // malformed response, a stream error, and the connection goes on.
        Case::h2_turns(
            "h2-204-with-data-decoded-and-replayed",
            Across,
            |turn, s| {
                let body: &[u8] = if turn % 2 == 0 { b"EVIL" } else { b"" };
                answer(h2_headers(s, &[0x89], false), s, body)
            },
        )
        .err(Body)
        .then(On::Same, Expect::ok(204, b""))
        .then(On::Same, Expect::Error(Body))
        .then(On::Same, Expect::ok(204, b""))
        .tls_too(),
        // A second answer on the first request's stream, now closed
        // (RFC 9113 §5.1: STREAM_CLOSED), as the second request waits.
        Case::h2_turns("h2-second-response-on-closed-stream", Across, |turn, s| {
            let on = if turn == 0 { s } else { s - 2 };
            answer(h2_headers(on, &block_200(&[]), false), on, b"hello")
        })
        .ok(200, b"hello")
        .then(On::Same, Expect::Error(Protocol))
        .after(On::Fresh),
    ]
}

fn h1_cases() -> Vec<Case> {
    let first = || vec![w(ok(b"one"))];
    vec![
        // "lo" is left over: the response is the declared 3 bytes, and the
        // connection is not pooled.
        Case::h1_turns(
            "h1-keepalive-cl-shorter-than-body",
            Across,
            vec![
                first(),
                vec![w(resp("HTTP/1.1 200 OK", &["content-length: 3"], b"hello"))],
            ],
        )
        .ok(200, b"one")
        .then(On::Same, Expect::ok(200, b"hel"))
        .after(On::Fresh)
        .tls_too(),
        Case::h1_turns(
            "h1-keepalive-cl-longer-than-body",
            Across,
            vec![
                first(),
                vec![
                    w(resp("HTTP/1.1 200 OK", &["content-length: 10"], b"hello")),
                    Step::Close,
                ],
            ],
        )
        .ok(200, b"one")
        .then(On::Same, Expect::Error(Body))
        .after(On::Fresh)
        .tls_too(),
        Case::h1_turns(
            "h1-keepalive-cl-longer-than-body-then-stall",
            Across,
            vec![
                first(),
                vec![w(resp(
                    "HTTP/1.1 200 OK",
                    &["content-length: 10"],
                    b"hello",
                ))],
            ],
        )
        .ok(200, b"one")
        .then(On::Same, Expect::Error(Timeout))
        .after(On::Fresh)
        .slow(),
        // A response to the next request, before it is sent: with the first
        // response, and later, on the idle connection.
        Case::h1_turns(
            "h1-response-before-request",
            Across,
            vec![vec![w(cat(&[&ok(b"one"), &evil()]))], vec![w(ok(b"two"))]],
        )
        .ok(200, b"one")
        .then(On::Fresh, Expect::ok(200, b"two"))
        .tls_too(),
        Case::h1_turns(
            "h1-response-before-request-while-idle",
            Across,
            vec![
                vec![
                    w(ok(b"one")),
                    // The server's pace is the behaviour under test: the
                    // client has the connection back in its pool.
                    Step::Pause(std::time::Duration::from_millis(50)),
                    w(evil()),
                ],
                vec![w(ok(b"two"))],
            ],
        )
        .ok(200, b"one")
        .then(On::Fresh, Expect::ok(200, b"two")),
    ]
}

pub fn cases() -> Vec<Case> {
    let mut cases = h2_cases();
    cases.extend(h1_cases());
    cases
}
