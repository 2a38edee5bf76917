//! GOAWAY games (RFC 9113 §6.8): going away before answering, naming
//! streams in a growing order, going away mid-body, with error codes, or
//! closing with no word at all.

use courier::ErrorKind::*;

use super::{block_200, cat, data, h2_headers, w};
use crate::corpus::case::{Case, Class::Goaway, Step};
use crate::support::h2::{frame, goaway, ENHANCE_YOUR_CALM, GOAWAY, INTERNAL_ERROR, NO_ERROR};

fn answer(s: u32) -> Vec<u8> {
    cat(&[
        &h2_headers(s, &block_200(&[]), false),
        &data(s, b"hello", true),
    ])
}

pub fn cases() -> Vec<Case> {
    vec![
        Case::h2("goaway-0-every-time", Goaway, |_| {
            vec![w(goaway(0, NO_ERROR)), Step::Close]
        })
        .err(Refused)
        .tls_too(),
        Case::h2("goaway-then-answer", Goaway, |s| {
            vec![w(cat(&[&goaway(s, NO_ERROR), &answer(s)]))]
        })
        .ok(200, b"hello"),
        Case::h2("answer-then-goaway", Goaway, |s| {
            vec![w(cat(&[&answer(s), &goaway(s, NO_ERROR)])), Step::Close]
        })
        .ok(200, b"hello"),
        Case::h2("goaway-last-id-grows", Goaway, |s| {
            vec![w(cat(&[
                &goaway(s, NO_ERROR),
                &goaway(0x7fff_ffff, NO_ERROR),
                &answer(s),
            ]))]
        })
        .ok(200, b"hello"),
        Case::h2("goaway-error-mid-body", Goaway, |s| {
            vec![
                w(cat(&[
                    &h2_headers(s, &block_200(&[]), false),
                    &data(s, b"hel", false),
                    &goaway(s, INTERNAL_ERROR),
                ])),
                Step::Close,
            ]
        })
        .err(Body),
        Case::h2("goaway-calm-before-head", Goaway, |s| {
            vec![w(goaway(s, ENHANCE_YOUR_CALM)), Step::Close]
        })
        .err(ConnectionClosed),
        Case::h2("goaway-with-16k-debug", Goaway, |s| {
            let mut payload = s.to_be_bytes().to_vec();
            payload.extend(NO_ERROR.to_be_bytes());
            payload.extend(vec![b'd'; 16_000]);
            vec![w(cat(&[&frame(GOAWAY, 0, 0, &payload), &answer(s)]))]
        })
        .ok(200, b"hello"),
        Case::h2("goaway-flood", Goaway, |s| {
            vec![w(goaway(s, NO_ERROR).repeat(3000)), w(answer(s))]
        })
        .err(Protocol),
        Case::h2("close-before-head", Goaway, |_| vec![Step::Close]).err(ConnectionClosed),
        Case::h2("close-mid-body", Goaway, |s| {
            vec![
                w(cat(&[
                    &h2_headers(s, &block_200(&[]), false),
                    &data(s, b"hel", false),
                ])),
                Step::Close,
            ]
        })
        .err(Body),
        Case::h2("silent-after-request", Goaway, |_| vec![]).times_out(),
    ]
}
