//! The allowlist's pins hold courier to its own outcome: deliberately wrong
//! readings of allowlisted cases (courier desyncing, hanging, failing
//! another way) must be reported, not passed as the allowed difference.

use courier::fuzzing::{Http1Answer, Http1Outcome, Http1Read};
use courier::ErrorKind;

use super::harness::{self, CourierRecord, First, Record, Refusal, Second, Verdict};
use super::{corpus, pinned, Allowed, Case, Expect};

fn case_named(name: &str) -> Case {
    corpus::corpus()
        .into_iter()
        .find(|c| c.name == name)
        .expect("the case exists")
}

/// A courier record whose two readings agree on `answer`.
fn courier(answer: Http1Answer, second: Option<Http1Answer>, record: Record) -> CourierRecord {
    CourierRecord {
        record,
        outcome: Http1Outcome {
            first: answer.clone(),
            pooled: second.is_some(),
            second,
        },
        read: Http1Read {
            answer,
            reusable: false,
            unread: Vec::new(),
        },
    }
}

fn hello_answer() -> Http1Answer {
    Http1Answer::Response {
        status: 200,
        headers: 1,
        body: Ok(b"hello".to_vec()),
    }
}

fn hello_record(second: Second) -> Record {
    Record {
        first: First::Response {
            status: 200,
            body: Ok(b"hello".to_vec()),
        },
        second,
    }
}

#[test]
fn a_courier_desync_on_a_hyper_wrong_case_is_reported() {
    let case = case_named("te_chunked_comma_empty");
    assert!(matches!(
        case.expect,
        Expect::Allowed(Allowed::HyperWrong(_), _)
    ));
    let hyper = Record {
        first: First::Response {
            status: 200,
            body: Err(harness::BodyEnd::Timeout),
        },
        second: Second::NotReused,
    };
    let desync = Second::Desync("Response { status: 200 }".into());
    let wrong = courier(hello_answer(), None, hello_record(desync));
    let verdict = harness::compare(&wrong, &hyper);
    assert!(matches!(verdict, Verdict::Framing(_)), "{verdict:?}");
    assert!(pinned(&case, &wrong, &hyper, &verdict).is_err());
    // And against the corrected bytes' reading, whatever the pin says.
    let right = courier(hello_answer(), None, hello_record(Second::Served));
    let fixed_verdict = harness::compare(&right, &hello_record(Second::Served));
    let found = harness::known_wrong_verdict(
        &wrong,
        &right,
        &hello_record(Second::Served),
        &fixed_verdict,
    );
    assert!(found.is_err(), "{found:?}");
    // The right reading passes both.
    let verdict = harness::compare(&right, &hyper);
    assert_eq!(pinned(&case, &right, &hyper, &verdict), Ok(()));
    let ok = harness::known_wrong_verdict(
        &right,
        &right,
        &hello_record(Second::Served),
        &fixed_verdict,
    );
    assert_eq!(ok, Ok(()));
}

#[test]
fn courier_refusing_another_way_than_pinned_is_reported() {
    let case = case_named("te_space_inside_coding");
    let hyper = hello_record(Second::Served);
    let refused = |kind| {
        let record = Record {
            first: First::Refused(match kind {
                ErrorKind::Protocol => Refusal::Malformed,
                ErrorKind::Timeout => Refusal::Timeout,
                _ => Refusal::Other,
            }),
            second: Second::NotReused,
        };
        courier(Http1Answer::Refused(kind), None, record)
    };
    for (kind, ok) in [
        (ErrorKind::Protocol, true),
        (ErrorKind::Timeout, false),
        (ErrorKind::Body, false),
    ] {
        let c = refused(kind);
        let verdict = harness::compare(&c, &hyper);
        assert_eq!(verdict, Verdict::CourierRefuses);
        assert_eq!(pinned(&case, &c, &hyper, &verdict).is_ok(), ok, "{kind:?}");
    }
}

#[test]
fn courier_reading_another_body_where_hyper_refuses_is_reported() {
    let case = case_named("te_chunked_in_http10");
    let hyper = Record {
        first: First::Refused(Refusal::Malformed),
        second: Second::NotReused,
    };
    let wrong_body = Http1Answer::Response {
        status: 200,
        headers: 1,
        body: Ok(b"5\r\nhello\r\n0\r\n\r\n".to_vec()),
    };
    let record = Record {
        first: First::Response {
            status: 200,
            body: Ok(b"5\r\nhello\r\n0\r\n\r\n".to_vec()),
        },
        second: Second::NotReused,
    };
    let wrong = courier(wrong_body, None, record);
    let verdict = harness::compare(&wrong, &hyper);
    assert_eq!(verdict, Verdict::HyperRefuses);
    assert!(pinned(&case, &wrong, &hyper, &verdict).is_err());
    let right = courier(hello_answer(), None, hello_record(Second::NotReused));
    assert_eq!(pinned(&case, &right, &hyper, &verdict), Ok(()));
}

#[test]
fn empty_codings_are_corrected_line_by_line() {
    let known = |bytes: &[u8]| harness::hyper_known_wrong(bytes).map(|k| k.corrected);
    assert_eq!(
        known(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, ,\r\n\r\n0\r\n\r\n").as_deref(),
        Some(&b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"[..])
    );
    assert_eq!(
        known(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: ,\r\n\r\n0\r\n\r\n")
            .as_deref(),
        Some(&b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"[..])
    );
    assert_eq!(
        known(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked,\n\r\n0\r\n\r\n").as_deref(),
        Some(&b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\n\r\n0\r\n\r\n"[..])
    );
    assert_eq!(
        known(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
        None
    );
}
