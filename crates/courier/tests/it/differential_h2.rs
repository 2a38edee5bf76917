//! Differential test of HTTP/2 responses: each case's frames are read by
//! courier and by the `h2` crate's client (see `differential_h2/harness.rs`),
//! each reduced to one record (the answer, or the class of its failure, and
//! whether a next request got exactly the next answer), and compared. courier
//! has its own HTTP/2 implementation; h2 is the one most of the Rust
//! ecosystem runs, so where the two read the same frames differently one of
//! them is wrong or the two differ in policy. A difference of policy (one
//! side refuses what the other accepts, or closes the connection where the
//! other keeps it) must be listed with its RFC 9113 reason in the case
//! itself; one listed that no longer happens fails too, so the list stays
//! true.

mod corpus;
mod frames;
mod h2_reader;
mod harness;
mod record;

use courier::ErrorKind;
use harness::{Class, Frames, Record, Second, Verdict};

/// What a case expects of the comparison.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Agree,
    /// A known difference, with its reason.
    Allowed(Allowed, &'static str),
}

/// The allowlistable kinds of disagreement (see [`Verdict`]). Each pins
/// courier's own outcome (its class of failure and exact error kind, or
/// what it read) as well as h2's, so a change on courier's side (a hang
/// where it resets the stream, another error) fails the case even where
/// h2's reading stays the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Allowed {
    /// courier fails the request (this class, this error kind); h2 reads it.
    CourierRefuses(Class, ErrorKind),
    /// h2 fails the request (this class); courier reads this status and
    /// body and keeps the connection. Only for a documented choice of
    /// courier's (never for a wrong read).
    H2Refuses(Class, u16, &'static [u8]),
    /// Both fail: courier with this class and error kind, h2 with this class.
    BothFail(Class, ErrorKind, Class),
    /// courier retries and reads the next answer; h2 fails with this class.
    CourierRetries(Class),
    /// The same first answer, read whole; courier opens a new connection
    /// for the next request, h2 keeps its own.
    CourierCloses,
    /// Both fail the same way (this class, courier's error kind); h2 opens a
    /// new connection for the next request, courier keeps its own.
    H2Closes(Class, ErrorKind),
}

struct Case {
    class: &'static str,
    name: &'static str,
    frames: Frames,
    /// The server closes the connection after the case's frames.
    close: bool,
    expect: Expect,
}

fn case(class: &'static str, name: &'static str, frames: Frames) -> Case {
    Case {
        class,
        name,
        frames,
        close: false,
        expect: Expect::Agree,
    }
}

impl Case {
    fn closing(mut self) -> Case {
        self.close = true;
        self
    }

    fn allow(mut self, kind: Allowed, reason: &'static str) -> Case {
        self.expect = Expect::Allowed(kind, reason);
        self
    }
}

/// Whether a case's outcome is the one it expects (its verdict, and the
/// pins of its allowlist entry).
fn expected(expect: Expect, courier: &Record, h2: &Record, verdict: &Verdict) -> bool {
    let kind = match expect {
        Expect::Agree => return *verdict == Verdict::Agree,
        Expect::Allowed(kind, _) => kind,
    };
    let fails = |record: &Record, class: Class| record.first == Err(class);
    let courier_fails = |class, kind| fails(courier, class) && courier.kind == Some(kind);
    match (kind, verdict) {
        (Allowed::CourierRefuses(class, kind), Verdict::CourierRefuses) => {
            courier_fails(class, kind)
        }
        (Allowed::H2Refuses(class, status, body), Verdict::H2Refuses) => {
            fails(h2, class)
                && courier.second == Second::Reused
                && matches!(&courier.first, Ok(a) if a.status == status && a.body == body)
        }
        (Allowed::BothFail(class, kind, h2_class), Verdict::BothFail(..)) => {
            courier_fails(class, kind) && fails(h2, h2_class)
        }
        (Allowed::CourierRetries(class), Verdict::CourierRetries) => fails(h2, class),
        (Allowed::CourierCloses, Verdict::CourierCloses) => courier.first.is_ok(),
        (Allowed::H2Closes(class, kind), Verdict::H2Closes) => courier_fails(class, kind),
        _ => false,
    }
}

#[tokio::test]
async fn courier_and_h2_agree_on_responses() {
    let cases = corpus::corpus();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    let (mut agree, mut allowed) = (0, 0);
    for case in &cases {
        let (courier, h2, verdict) = harness::run(case.frames, case.close).await;
        let ok = expected(case.expect, &courier, &h2, &verdict);
        match (ok, case.expect) {
            (true, Expect::Agree) => agree += 1,
            (true, Expect::Allowed(..)) => allowed += 1,
            (false, _) => {}
        }
        if std::env::var_os("DIFFERENTIAL_VERBOSE").is_some() || !ok {
            let reason = match case.expect {
                Expect::Allowed(_, reason) => reason,
                Expect::Agree => "",
            };
            eprintln!(
                "{} {}: {verdict:?} {reason}\n  courier {courier:?}\n  h2      {h2:?}",
                case.class, case.name
            );
        }
        if !ok {
            failures.push(format!(
                "{}: expected {:?}, got {verdict:?}",
                case.name, case.expect
            ));
        }
    }
    eprintln!(
        "HTTP/2 differential: {} cases, {} agree, {allowed} allowlisted, {} failed, in {:?}",
        cases.len(),
        agree,
        failures.len(),
        started.elapsed()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

mod pins;

#[test]
fn case_names_are_unique() {
    let cases = corpus::corpus();
    let mut names: Vec<_> = cases.iter().map(|c| c.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len());
}
