//! The allowlist's pins hold courier to its own outcome: deliberately wrong
//! readings of allowlisted cases (a hang where courier resets the stream,
//! another error, another body) must be reported, not passed as the
//! allowed difference.

use courier::ErrorKind;

use super::harness::{compare, Answer, Class, Record, Second, Verdict};
use super::{corpus, expected, Expect};

fn expect_of(name: &str) -> Expect {
    corpus::corpus()
        .into_iter()
        .find(|c| c.name == name)
        .expect("the case exists")
        .expect
}

fn read(status: u16, body: &[u8]) -> Result<Answer, Class> {
    Ok(Answer {
        status,
        headers: Vec::new(),
        body: body.to_vec(),
        trailers: None,
    })
}

fn record(first: Result<Answer, Class>, second: Second, kind: Option<ErrorKind>) -> Record {
    Record {
        first,
        second,
        kind,
    }
}

/// Whether the case named accepts these readings.
fn accepts(name: &str, courier: &Record, h2: &Record) -> bool {
    let verdict = compare(courier, h2);
    expected(expect_of(name), courier, h2, &verdict)
}

#[test]
fn a_courier_hang_where_it_resets_the_stream_is_reported() {
    let h2 = record(read(200, b"hello"), Second::Reused, None);
    let reset = record(
        Err(Class::Stream),
        Second::Reused,
        Some(ErrorKind::Protocol),
    );
    assert!(accepts("request_pseudo", &reset, &h2));
    let hang = record(
        Err(Class::Timeout),
        Second::Reused,
        Some(ErrorKind::Timeout),
    );
    assert_eq!(compare(&hang, &h2), Verdict::CourierRefuses);
    assert!(!accepts("request_pseudo", &hang, &h2));
    let closed = record(
        Err(Class::Connection),
        Second::Redialed,
        Some(ErrorKind::ConnectionClosed),
    );
    assert!(!accepts("request_pseudo", &closed, &h2));
}

#[test]
fn courier_reading_another_answer_where_h2_refuses_is_reported() {
    let h2 = record(Err(Class::Stream), Second::Reused, None);
    let right = record(read(200, b"hello"), Second::Reused, None);
    assert!(accepts("priority_self_dependency", &right, &h2));
    let wrong = record(read(200, b"hel"), Second::Reused, None);
    assert_eq!(compare(&wrong, &h2), Verdict::H2Refuses);
    assert!(!accepts("priority_self_dependency", &wrong, &h2));
}

#[test]
fn both_failing_with_another_courier_kind_is_reported() {
    let h2 = record(Err(Class::Connection), Second::Redialed, None);
    let right = record(
        Err(Class::Stream),
        Second::Reused,
        Some(ErrorKind::Protocol),
    );
    assert!(accepts("data_before_headers", &right, &h2));
    let timeout = record(
        Err(Class::Timeout),
        Second::Reused,
        Some(ErrorKind::Timeout),
    );
    assert!(matches!(compare(&timeout, &h2), Verdict::BothFail(..)));
    assert!(!accepts("data_before_headers", &timeout, &h2));
}

#[test]
fn a_retry_against_another_h2_failure_is_reported() {
    let courier = record(read(202, b"second"), Second::Reused, None);
    let refused = record(Err(Class::Refused), Second::Reused, None);
    assert!(accepts("rst_refused", &courier, &refused));
    let stream = record(Err(Class::Stream), Second::Reused, None);
    assert_eq!(compare(&courier, &stream), Verdict::CourierRetries);
    assert!(!accepts("rst_refused", &courier, &stream));
}
